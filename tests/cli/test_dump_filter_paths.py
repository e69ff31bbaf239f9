"""Filtered dumps on the compiled path and on the reference path: byte-identical stdout.

Every filter of `kdump dump` (offsets, times, key, producer, control and transactional batches,
`--max-bytes`, `--where`), with and without `--records`, in every format, on real partitions of
the corpus (v2 with transactions, legacy and mixed formats, an internal topic) and on damaged
ones, run with the compiled batch walk and record path and without them (what
`KDUMP_PURE_PYTHON=1` selects). A summary counts the records of the batches read and every
finding of decoding them, whatever the filter shows.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from kdump.formats import fast_records, fast_walk
from kdump.model.partition import PartitionDir

Kdump = Callable[..., Result]
REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples" / "damaged"
needs_compiled = pytest.mark.skipif(
    fast_records.compiled is None or fast_walk.compiled is None,
    reason="the compiled record path and batch walk are not built here",
)
needs_jq = pytest.mark.skipif(importlib.util.find_spec("jq") is None, reason="--where needs jq")
FORMATS = ("text", "json", "rich")


def _times(part: Path) -> tuple[int, int]:
    """Two timestamps inside the partition's range: its first batch's and one a third of the way."""
    stamps = [
        ev.max_timestamp
        for seg in PartitionDir.load(part).segments
        for ev in seg.scan()
        if hasattr(ev, "max_timestamp") and getattr(ev, "crc_ok", False)
    ]
    return stamps[0], stamps[len(stamps) // 3]


def _filters(part: Path) -> list[list[str]]:
    low, high = _times(part)
    return [
        ["--from-offset", "100", "--to-offset", "164"],
        ["--from-offset", "600"],
        ["--to-offset", "40"],
        ["--from-time", str(low + 1), "--to-time", str(high)],
        ["--to-time", str(low)],
        ["--key", "k-5"],
        ["--producer-id", "3"],
        ["--control-only"],
        ["--transactional-only"],
        ["--max-bytes", "50000"],
        ["--max-bytes", "30000", "--from-offset", "50"],
    ]


def _both(kdump: Kdump, args: list[str]) -> tuple[Result, Result]:
    fast = kdump(*args)
    saved = fast_records.compiled, fast_walk.compiled
    fast_records.compiled = fast_walk.compiled = None
    try:
        ref = kdump(*args)
    finally:
        fast_records.compiled, fast_walk.compiled = saved
    return fast, ref


def _partitions(corpus_root: Path) -> list[Path]:
    parts = [
        corpus_root / "kafka-3.8.0" / "txn-1",
        corpus_root / "kafka-3.8.0" / "__consumer_offsets-0",
        corpus_root / "kafka-3.8.0-zk-legacy" / "mixed-formats-0",
        SAMPLES / "torn-tail-0",
        SAMPLES / "bad-crc-0",
    ]
    assert all(p.is_dir() for p in parts), parts
    return parts


def _check(kdump: Kdump, args: list[str]) -> int:
    fast, ref = _both(kdump, args)
    assert fast.exit_code == ref.exit_code, args
    assert fast.stdout == ref.stdout, args
    return fast.stdout.count("\n")


@needs_compiled
@pytest.mark.parametrize("records", [False, True], ids=["batches", "records"])
def test_every_filter_and_format_gives_the_same_bytes(kdump: Kdump, corpus_root: Path, records: bool) -> None:
    lines = 0
    # Without records both paths run the same batch-level scan: two partitions suffice there.
    parts = _partitions(corpus_root)
    for part in parts if records else parts[::3]:
        for flt in _filters(part):
            for fmt in FORMATS:
                extra = ["--records"] if records else []
                lines += _check(kdump, ["dump", "--jobs", "1", "--format", fmt, *extra, *flt, str(part)])
    assert lines > 500


@needs_compiled
@needs_jq
@pytest.mark.parametrize("jobs", ["1", "0"])
def test_where_gives_the_same_bytes(kdump: Kdump, corpus_root: Path, jobs: str) -> None:
    for part in _partitions(corpus_root):
        for fmt in FORMATS:
            _check(kdump, ["dump", "--jobs", jobs, "--format", fmt, "--where", ".offset % 7 == 0", str(part)])
            _check(
                kdump,
                [
                    "dump",
                    "--jobs",
                    jobs,
                    "--format",
                    fmt,
                    "--where",
                    ".key != null",
                    "--to-offset",
                    "300",
                    str(part),
                ],
            )


@needs_compiled
def test_summary_counts_the_records_read_not_the_records_shown(kdump: Kdump, corpus_root: Path) -> None:
    """The summary of a filtered dump says first what it showed, then the counts of the same read
    unfiltered (the batches read, their records): 10 batches and 65 records for the last segment of
    txn-1, with the records of key k-5 shown."""
    seg = sorted((corpus_root / "kafka-3.8.0" / "txn-1").glob("*.log"))[-1]
    whole = kdump("dump", "--records", "--jobs", "1", "--format", "text", str(seg))
    some = kdump("dump", "--records", "--jobs", "1", "--format", "text", "--key", "k-5", str(seg))
    assert whole.exit_code == some.exit_code == 0
    [summary] = [line for line in whole.stdout.splitlines() if line.startswith("Summary: ")]
    [filtered] = [line for line in some.stdout.splitlines() if line.startswith("Summary: ")]
    shown = some.stdout.count("| offset: ")
    assert shown < whole.stdout.count("| offset: ")
    assert filtered.startswith(
        f"Summary: shown {some.stdout.count(chr(10) + 'baseOffset: ')} batches, {shown} records"
    )
    assert filtered.endswith("; of " + summary.removeprefix("Summary: "))


@needs_compiled
def test_pure_python_environment_gives_the_same_bytes(corpus_root: Path) -> None:
    """The switch as users throw it: `KDUMP_PURE_PYTHON=1` in the environment of a new process."""
    part = corpus_root / "kafka-3.8.0" / "txn-1"
    env = {k: v for k, v in os.environ.items() if k != "KDUMP_PURE_PYTHON"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    base = int(sorted(part.glob("*.log"))[0].name.split(".")[0])  # the subset keeps only a late segment
    for args in (
        ["--records", "--from-offset", str(base + 13), "--to-offset", str(base + 14)],
        ["--records", "--format", "json", "--producer-id", "3", "--to-offset", str(base + 200)],
        ["--records", "--key", "k-5"],
    ):
        out = [
            subprocess.run(
                [sys.executable, "-m", "kdump", "dump", *args, str(part)],
                env={**env, **extra},
                capture_output=True,
                check=True,
                timeout=120,
            ).stdout
            for extra in ({}, {"KDUMP_PURE_PYTHON": "1"})
        ]
        assert out[0] == out[1], args
        assert b"Summary: " in out[0] or b'"type":"summary"' in out[0], out[0]
