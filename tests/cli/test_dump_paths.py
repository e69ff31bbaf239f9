"""Whole dumps through the compiled record path and through the reference path: byte-identical.

The reference is what `KDUMP_PURE_PYTHON=1` runs (the sequential Python renderers); the compiled
path renders clean batches in C and sends every other batch back to the reference. Compared on
every corpus partition, on legacy (v0/v1) segments of every codec, on control and transactional
batches, and on damaged segments, for `dump --records` (JSON and text, every encoding) and
`verify --deep`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from builders import SegmentBuilder, records
from click.testing import Result
from corpus import iter_log_segments, iter_partition_dirs
from corruptions import flip_body_byte, truncate_tail

from kdump.cli import dump as dump_cli
from kdump.formats import fast_records
from kdump.formats.batch import encode_v2_batch
from kdump.formats.constants import Codec
from kdump.formats.records import NewRecord, encode_v2_record

Kdump = Callable[..., Result]

needs_compiled = pytest.mark.skipif(
    fast_records.compiled is None, reason="the compiled record path is not built here"
)


def _both(kdump: Kdump, *args: str) -> tuple[Result, Result]:
    saved = fast_records.compiled
    fast_records.compiled = None
    try:
        ref = kdump(*args)
    finally:
        fast_records.compiled = saved
    return ref, kdump(*args)


def _same(kdump: Kdump, *args: str) -> None:
    ref, fast = _both(kdump, *args)
    assert fast.exit_code == ref.exit_code, args
    assert fast.stdout_bytes == ref.stdout_bytes, args
    assert fast.stderr_bytes == ref.stderr_bytes, args


def _corpus_segments(root: Path) -> list[list[str]]:
    """Every corpus segment (`.log`, and the `.log.deleted` leftovers), grouped by partition."""
    by_partition: dict[Path, list[str]] = {}
    for seg in iter_log_segments(root):
        by_partition.setdefault(seg.log_path.parent, []).append(str(seg.log_path))
    return list(by_partition.values())


def _corpus_partitions(root: Path) -> Iterator[Path]:
    for _corpus, part, _oracle in iter_partition_dirs(root):
        if any(part.glob("*.log")):
            yield part


@needs_compiled
@pytest.mark.parametrize("fmt", ["json", "text"])
def test_corpus_dumps_are_identical(kdump: Kdump, corpus_root: Path, fmt: str) -> None:
    groups = _corpus_segments(corpus_root)
    assert groups
    for segments in groups:
        _same(kdump, "dump", "--records", "--jobs", "1", "--format", fmt, *segments)


@needs_compiled
@pytest.mark.parametrize("encoding", ["hex", "base64"])
def test_corpus_dumps_in_other_encodings_are_identical(
    kdump: Kdump, corpus_root: Path, encoding: str
) -> None:
    for segments in _corpus_segments(corpus_root):
        _same(
            kdump, "dump", "--records", "--jobs", "1", "--format", "json", "--encoding", encoding, *segments
        )


@needs_compiled
def test_corpus_deep_verify_is_identical(kdump: Kdump, corpus_root: Path) -> None:
    for part in _corpus_partitions(corpus_root):
        _same(kdump, "verify", "--deep", "--format", "json", str(part))


@pytest.fixture
def assorted(tmp_path: Path) -> Path:
    """Legacy entries of every codec, v2 batches of every codec, control and transactional batches,
    LogAppendTime, headers with null values, and binary keys."""
    seg = SegmentBuilder(base_offset=0)
    for magic in (0, 1):
        for codec in (Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4):
            seg.add_legacy(records(3, value_size=20), magic=magic, codec=codec)
    for codec in Codec:
        seg.add_v2(records(5, value_size=50), codec=codec, producer_id=7, base_sequence=2**31 - 3)
    seg.add_v2(records(4), transactional=True, producer_id=9, producer_epoch=0)
    seg.add_marker(9, commit=False)
    seg.add_v2(records(2), log_append_time=1_800_000_000_000)
    odd = [
        NewRecord(None, None, 1_700_000_000_000, ((b"h", None), (b"\xff\xfe", b"\x00"))),
        NewRecord(b"", b'\xc3\x28 \xf0\x9f\x98\x80 "\\\n', 1_700_000_000_001),
    ]
    seg.add_v2(odd, codec=Codec.ZSTD)
    return seg.write(tmp_path / "assorted-0")


@needs_compiled
@pytest.mark.parametrize("encoding", ["utf8", "hex", "base64"])
@pytest.mark.parametrize("fmt", ["json", "text"])
def test_assorted_formats_are_identical(kdump: Kdump, assorted: Path, fmt: str, encoding: str) -> None:
    _same(kdump, "dump", "--records", "--jobs", "1", "--format", fmt, "--encoding", encoding, str(assorted))


def _damaged(tmp_path: Path) -> Path:
    seg = SegmentBuilder(base_offset=0)
    for _ in range(6):
        seg.add_v2(records(5), codec=Codec.LZ4)
    # Checksum-valid, yet its records do not add up: 3 records, header says 4.
    payload = b"".join(encode_v2_record(i, i, b"k", b"v") for i in range(3))
    batch = encode_v2_batch(
        base_offset=seg.next_offset,
        records_payload=payload,
        count=4,
        last_offset_delta=3,
        base_timestamp=1_700_000_000_000,
        max_timestamp=1_700_000_000_002,
    )
    seg._append(batch, 4, 1_700_000_000_002)
    seg.add_v2(records(5))
    log = seg.write(tmp_path / "damaged-0")
    (flip_body_byte(2) + truncate_tail(7)).apply(log)
    return log


@needs_compiled
@pytest.mark.parametrize("fmt", ["json", "text"])
def test_damaged_segments_are_identical(kdump: Kdump, tmp_path: Path, fmt: str) -> None:
    log = _damaged(tmp_path)
    _same(kdump, "dump", "--records", "--jobs", "1", "--format", fmt, str(log))
    _same(kdump, "verify", "--deep", "--format", "json", str(log))


@needs_compiled
def test_worker_processes_give_the_same_bytes(
    kdump: Kdump, assorted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dump_cli, "PARALLEL_MIN_BYTES", 0)
    for target in (assorted, _damaged(tmp_path)):
        ref, fast = _both(kdump, "dump", "--records", "--jobs", "2", "--format", "json", str(target))
        single = kdump("dump", "--records", "--jobs", "1", "--format", "json", str(target))
        assert fast.stdout_bytes == ref.stdout_bytes == single.stdout_bytes


@needs_compiled
def test_workers_write_their_chunks_in_turn(
    kdump: Kdump, assorted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a real output file, workers write chunks themselves, each in its turn."""
    from kdump.model.log_dir import discover
    from kdump.ops.dump.stream import DumpOptions, batch_events_for_expansion, dump_items
    from kdump.render import parallel

    monkeypatch.setattr(parallel, "CHUNK_BYTES", 500)  # many chunks, so the turns matter
    options = DumpOptions(records=True)
    for target, fmt in ((assorted, "json"), (_damaged(tmp_path), "text")):
        items = list(dump_items([discover(str(target))], options))
        logs = [(i.path, i.label, batch_events_for_expansion(i, options), i.decoder) for i in items]
        out_path = tmp_path / f"out.{fmt}"
        with open(out_path, "w", encoding="utf-8") as out:
            parallel.write_parallel(iter(logs), out, options=options, fmt=fmt, encoding="utf8", jobs=2)
        ref, _ = _both(kdump, "dump", "--records", "--jobs", "1", "--format", fmt, str(target))
        assert out_path.read_bytes() == ref.stdout_bytes
