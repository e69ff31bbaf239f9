"""Run every case of the corruption matrix (`corruption_matrix.py`) on the real segments.

Each case must give exactly the finding codes, at the byte positions, that the catalog's rules predict from
the damaged header (for the bytes no checksum covers too), the same recovery point (`valid_bytes`) in every
scan mode, and, after a checksum failure, the next batch still read. Segments only the full corpus holds
skip when only the bundled subset is present.
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corruption_matrix as cm

from kdump.findings import Finding
from kdump.formats.constants import Codec
from kdump.formats.records import NewRecord, build_legacy_entry
from kdump.scan import scan_log


def _run(kind: str, subject: cm.Subject, root: Path) -> list[cm.Result]:
    if not (root / subject.rel).is_file():
        pytest.skip(f"{subject.rel} is only in the full corpus")
    results = cm.subject_results(subject, root, kind)
    assert results
    failures = [r for r in results if not r.ok]
    report = "\n".join(f"{r.case.description}: {'; '.join(r.problems)}" for r in failures[:20])
    assert not failures, (
        f"{len(failures)} of {len(results)} cases differ from the expected outcome:\n{report}"
    )
    return results


@pytest.mark.parametrize("subject", cm.FLIP_SUBJECTS, ids=lambda s: s.key)
def test_bit_flip_in_every_header_byte(subject: cm.Subject, corpus_root: Path) -> None:
    results = _run("flip", subject, corpus_root)
    # Every byte of the header of every damaged entry was flipped at least once.
    by_entry: dict[int, set[int]] = {}
    for r in results:
        byte = int(r.case.description.split(" of byte ")[1].split(" ")[0])
        by_entry.setdefault(r.case.position, set()).add(byte)
    for position, flipped in by_entry.items():
        if subject.key.startswith("v2"):
            assert flipped == set(range(61)), position
        else:
            assert set(range(18)) <= flipped, position


@pytest.mark.parametrize("subject", cm.TRUNCATE_SUBJECTS, ids=lambda s: s.key)
def test_truncation_at_every_byte_of_the_last_batch(subject: cm.Subject, corpus_root: Path) -> None:
    results = _run("truncate", subject, corpus_root)
    last_size = len(results)
    assert sorted(int(r.case.description.rsplit("+", 1)[1]) for r in results) == list(range(last_size))


@pytest.mark.parametrize("subject", cm.TAIL_SUBJECTS, ids=lambda s: s.key)
def test_zero_and_garbage_tails(subject: cm.Subject, corpus_root: Path) -> None:
    results = _run("tail", subject, corpus_root)
    assert len(results) == len(cm.ZERO_TAILS) + len(cm.GARBAGE_TAILS) * len(cm.GARBAGE_SEEDS)


def test_every_codec_and_magic_is_damaged(corpus_root: Path) -> None:
    """The subset alone covers v2 with every codec, v0 and v1; the full corpus every legacy codec too."""
    flips = {s.key for s in cm.available(cm.FLIP_SUBJECTS, corpus_root)}
    assert {"v2-none", "v2-gzip", "v2-snappy", "v2-lz4", "v2-zstd", "v2-txn", "v0-none", "v1-lz4"} <= flips
    truncations = {s.key for s in cm.available(cm.TRUNCATE_SUBJECTS, corpus_root)}
    assert {"v2-none", "v2-gzip", "v2-snappy", "v2-lz4", "v2-zstd", "v0-none", "v1-lz4"} <= truncations


def test_the_table_and_the_readme_markers(corpus_root: Path, tmp_path: Path) -> None:
    subject = cm.FLIP_SUBJECTS[3]  # v2 snappy: 2 batches, in the subset
    results = cm.subject_results(subject, corpus_root, "flip") + cm.subject_results(
        cm.TAIL_SUBJECTS[0], corpus_root, "tail"
    )
    table = cm.markdown_table(results, "test", corpus_root)
    assert "| v2 `crc` (17-20) | yes |" in table
    assert "| v2 `baseOffset` (bytes 0-7) | **no** |" in table
    assert f"{len(results)} cases, {len(results)} as expected." in table
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n## Reliability\n\n{cm.START_MARKER}\nstale table\n{cm.END_MARKER}\n\nafter\n")
    cm.write_readme(table, readme)
    text = readme.read_text()
    assert text.startswith("# x\n\n## Reliability\n\n")
    assert text.endswith(f"{cm.END_MARKER}\n\nafter\n")
    assert "stale table" not in text
    assert table in text
    cm.write_readme(table, readme)
    assert readme.read_text() == text


def test_v0_wrapper_offset_below_the_segment_base() -> None:
    """Regression (found by the matrix): a v0 wrapper's own offset is its last one and its checksum does not
    cover it; below the segment's base it was not reported, as the inner (absolute) offsets were above."""
    recs = [NewRecord(b"k", b"v" * 10, 0) for _ in range(3)]
    wrapper = bytearray(build_legacy_entry(100, recs, magic=0, codec=Codec.GZIP))
    struct.pack_into(">q", wrapper, 0, 7)  # the wrapper's offset falls to 7; its inner messages say 100..102
    findings = [e for e in scan_log(bytes(wrapper), base_offset=100) if isinstance(e, Finding)]
    assert [(f.code, f.position, f.offset) for f in findings] == [
        ("offset-below-base", 0, 7),
        ("wrapper-offset-mismatch", 0, 7),  # 7 is not its last inner message's offset, 102
    ]
