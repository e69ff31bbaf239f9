"""The CI fuzz run: every target of `fuzz_targets.py`, driven by hypothesis for about a minute in all.

Each target starts from its seeds (real corpus fragments and files, built segments) and mutates them
(`fuzz_targets.fuzz_strategy`), so the inputs reach record decoding, decompression and the checks behind
the checksums, not just the first length field. The contracts (the scanner never raises and ends with one
summary; decoders raise only `DecodeError`; round trips hold) are asserted inside the targets.

`KDUMP_FUZZ_SCALE` multiplies every target's example budget (e.g. `KDUMP_FUZZ_SCALE=10` for a longer
local run); for hours, coverage-guided, use `run_long.py`. Every crash found becomes a regression test:
`REGRESSIONS` below (small inputs, named), files under `tests/fuzz/regressions/<target>/`, and any crash
file still waiting in `tests/fuzz/crashes/<target>/` are all replayed here (see `run_long.py`).
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fuzz_targets import TARGETS, fuzz_strategy, join_fields, seed_inputs  # noqa: E402

from kdump.formats.records import NewRecord, build_v2_batch  # noqa: E402

SCALE = float(os.environ.get("KDUMP_FUZZ_SCALE", "1"))

_BATCH = build_v2_batch(0, [NewRecord(b"k", b"v" * 20, 1_700_000_000_000)])
# A record whose offset delta is a 5-byte varint with bits beyond 32: Kafka reads -2**31, kdump read -2**34.
_RECORD_WITH_LONG_DELTA = bytes([20, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F, 1, 1, 0])

# (name, target, input): crashes and wrong behaviour the fuzzers found, kept as regression tests.
REGRESSIONS: list[tuple[str, str, bytes]] = [
    # A 2 GiB all-zero region used to cost one regex search at ~90 MB/s (27 s for 2 GiB, and as much
    # resident memory): the zero-tail check now compares chunks. Small here; test_memory_bound.py has
    # the 2 GiB file.
    ("zero-run-after-a-batch", "scan_log", _BATCH + bytes(3 << 20)),
    # The forensic resync search skips zero runs with the same chunked search (across chunk boundaries).
    ("resync-across-a-zero-run", "scan_log", _BATCH + b"\x01" * 20 + bytes((1 << 20) + 77) + _BATCH),
    # A 5-byte varint whose 5th byte carries bits beyond 32 decoded to up to 2**34 (Kafka wraps it to an
    # int, as a 10-byte varlong to a long): an offset delta or a length outside its field's range.
    ("varint-beyond-int32", "varint", bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x7F])),
    ("varlong-beyond-int64", "varint", bytes([0xFF] * 9 + [0x7F])),
    ("record-with-a-wrapping-offset-delta", "v2_records", struct.pack(">i", 1) + _RECORD_WITH_LONG_DELTA),
    # The harness's own false positive (atheris, offset_checkpoint): a line with leading whitespace reads, as
    # in Kafka's Java split, as an empty topic name, which the encoder rightly refuses to write back.
    ("checkpoint-line-with-leading-space", "offset_checkpoint", b"0\n2\nr 00 17\n 49 0\n"),
    ("empty-input", "scan_log", b""),
    ("empty-key-and-value", "consumer_offsets", join_fields(b"", b"")),
]


def _replay_files() -> list[tuple[str, Path]]:
    out = []
    for folder in (HERE / "regressions", HERE / "crashes"):
        if folder.is_dir():
            out += [(p.parent.name, p) for p in sorted(folder.glob("*/*")) if p.is_file()]
    return out


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_seeds_satisfy_the_contracts(name: str, corpus_root: Path) -> None:
    """Every seed, unmutated, passes its target (and there are seeds to start from)."""
    seeds = seed_inputs(name, corpus_root)
    assert seeds
    for seed in seeds:
        TARGETS[name].fn(seed)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzz(name: str, corpus_root: Path) -> None:
    target = TARGETS[name]
    seeds = seed_inputs(name, corpus_root)

    @settings(
        max_examples=max(1, int(target.examples * SCALE)),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
    @given(fuzz_strategy(seeds))
    def run(data: bytes) -> None:
        target.fn(data)

    run()


@pytest.mark.parametrize(("name", "target", "data"), REGRESSIONS, ids=[r[0] for r in REGRESSIONS])
def test_regression(name: str, target: str, data: bytes) -> None:
    TARGETS[target].fn(data)


def test_a_record_offset_delta_wraps_as_in_kafka() -> None:
    """Regression (found by the varint target): the wrapped delta, not a value no int32 holds."""
    from fuzz_targets import _v2_header

    from kdump.formats.records import decode_v2_records

    records, error = decode_v2_records(_RECORD_WITH_LONG_DELTA, _v2_header(1))
    assert error is None
    assert [r.offset for r in records] == [-(2**31)]


@pytest.mark.parametrize(("target", "path"), _replay_files(), ids=lambda v: str(v))
def test_crash_file_replays(target: str, path: Path) -> None:
    assert target in TARGETS, f"{path}: the directory must be named after a target"
    TARGETS[target].fn(path.read_bytes())


def test_long_run_harness_works(tmp_path: Path) -> None:
    """`run_long.py` (the documented hours-long command) runs a few seconds and finds nothing."""
    engine = "atheris" if _has_atheris() else "hypothesis"
    proc = subprocess.run(
        [
            sys.executable,
            str(HERE / "run_long.py"),
            "--seconds",
            "3",
            "--target",
            "scan_log_fixed_crc,codec_lz4",
            "--jobs",
            "2",
            "--engine",
            engine,
            "--workdir",
            str(tmp_path / "work"),
            "--crashes",
            str(tmp_path / "crashes"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no crashes" in proc.stdout
    if engine == "atheris":  # the corpus it grew, seeded from the real inputs
        assert len(list((tmp_path / "work" / "codec_lz4").iterdir())) >= len(seed_inputs("codec_lz4", None))


def _has_atheris() -> bool:
    try:
        import atheris  # noqa: F401
    except ImportError:
        return False
    return True
