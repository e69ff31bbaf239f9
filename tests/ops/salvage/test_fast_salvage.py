"""salvage on the compiled record path against the reference: the same records.jsonl and
records.parquet, byte for byte and row for row.

Clean batches are written from the compiled record path's buffers (lines rendered in C, Arrow
columns); the reference writes every record through `render.jsonl.record_line` and Python lists.
Compared on every corpus partition (undamaged, and with a flipped byte in the middle of its first
segment), and on a built partition of every codec with headers, nulls, a key that is not UTF-8,
control batches and LogAppendTime batches.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

import pytest
from builders import SegmentBuilder, records
from reference_path import reference_path

from kdump.formats import fast_records
from kdump.formats.constants import Codec
from kdump.formats.records import NewRecord
from kdump.model.partition import PartitionDir
from kdump.ops.salvage.output import salvage
from kdump.render.salvage import batch_lines, record_lines

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytestmark = pytest.mark.skipif(
    fast_records.compiled is None, reason="the compiled record path is not built here"
)


def _outputs(part: Path, out: Path, compiled: bool) -> tuple[bytes, object]:
    with contextlib.nullcontext() if compiled else reference_path():
        salvage(
            PartitionDir.load(part),
            out,
            record_line=record_lines(),
            batch_lines=batch_lines() if compiled else None,
        )
    jsonl = (out / "records.jsonl").read_bytes()
    table = pq.read_table(out / "records.parquet")
    return jsonl, table


def _same(part: Path, tmp: Path) -> int:
    tmp.mkdir(parents=True, exist_ok=True)
    got_lines, got_table = _outputs(part, tmp / "compiled", True)
    ref_lines, ref_table = _outputs(part, tmp / "reference", False)
    assert got_lines == ref_lines
    assert got_table.schema == ref_table.schema
    assert got_table.to_pylist() == ref_table.to_pylist()
    return got_lines.count(b"\n")


def test_a_built_partition_of_every_kind(tmp_path: Path) -> None:
    seg = SegmentBuilder(base_offset=0)
    for i, codec in enumerate(Codec):
        seg.add_v2(records(5 + i, value_size=50 * i + 1), codec=codec)
    seg.add_v2([NewRecord(b"\xff\xfek", None, 7, ((b"\xc3(", b"v"), (b"ok", None)))], codec=Codec.LZ4)
    seg.add_marker(3, commit=True)
    seg.add_v2([NewRecord(None, b"x", 9, ())], log_append_time=1_700_000_000_123)
    for _ in range(30):
        seg.add_v2(records(20, value_size=120), codec=Codec.ZSTD)
    part = tmp_path / "in" / "t-0"
    seg.write(part)
    assert _same(part, tmp_path / "out") > 600


def test_row_groups_across_segments_and_timestamp_types(tmp_path: Path) -> None:
    """A row group of clean batches from two segments, CreateTime and LogAppendTime: the columns
    of per-batch values (segment, position, timestampType) differ from row to row."""
    part = tmp_path / "in" / "t-0"
    first = SegmentBuilder(base_offset=0)
    for i in range(6):
        first.add_v2(records(4, value_size=30), log_append_time=1_700_000_000_000 + i if i % 2 else None)
    first.write(part)
    second = SegmentBuilder(base_offset=24)
    for _ in range(3):
        second.add_v2(records(3, value_size=10), codec=Codec.LZ4)
    second.write(part)
    assert _same(part, tmp_path / "out") == 33


def test_every_corpus_partition(corpus_root: Path, tmp_path: Path) -> None:
    lines = 0
    for i, part in enumerate(
        sorted(p for d in corpus_root.iterdir() if d.is_dir() for p in d.iterdir() if p.is_dir())
    ):
        if part.name in ("expected", "_logdir-files") or not any(part.glob("*.log")):
            continue
        lines += _same(part, tmp_path / f"{i}-whole")
        damaged = tmp_path / f"{i}-in" / part.name
        shutil.copytree(part, damaged)
        log = max(damaged.glob("*.log"), key=lambda p: p.stat().st_size)
        data = bytearray(log.read_bytes())
        if len(data) > 200:
            data[len(data) // 2] ^= 0x10
            log.chmod(0o644)
            log.write_bytes(bytes(data))
        lines += _same(damaged, tmp_path / f"{i}-damaged-out")
    assert lines > 0
