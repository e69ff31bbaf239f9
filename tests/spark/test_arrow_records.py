"""`spark.arrow_records`: a batch's record columns built from the compiled path's buffers are the
same Arrow arrays the data source's reference read (`read_records` with the compiled path off)
builds, value for value; and `read_records` gives the same table either way."""

from __future__ import annotations

from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")

from builders import SegmentBuilder, records  # noqa: E402

from kdump.formats import fast_records  # noqa: E402
from kdump.formats.batch import BatchHeader  # noqa: E402
from kdump.formats.constants import Codec  # noqa: E402
from kdump.formats.records import NewRecord  # noqa: E402
from kdump.scan.log_scanner import scan_log  # noqa: E402
from kdump.scan.source import open_buffer  # noqa: E402
from kdump.spark import arrow_rows  # noqa: E402
from kdump.spark import datasource as ds  # noqa: E402
from kdump.spark.arrow_records import batch_record_arrays, run_record_arrays  # noqa: E402

COLUMNS = ("key", "value", "offset", "timestamp", "headers")

pytestmark = pytest.mark.skipif(fast_records.compiled is None, reason="the compiled record path is not built")


def _segment(tmp_path: Path) -> Path:
    seg = SegmentBuilder(base_offset=0)
    for codec in Codec:
        seg.add_v2(records(6, value_size=30), codec=codec)
    seg.add_v2([NewRecord(None, b"", 5, ()), NewRecord(b"", None, 6, ((b"k", None), (b"k2", b"\xff")))])
    seg.add_v2(records(3, key=False), log_append_time=1_800_000_000_000)
    seg.add_v2(records(2, start_ts=-5))  # negative timestamps, still in Spark's range
    seg.add_marker(1, commit=True)  # a control batch: declined, read the reference way
    seg.add_v2([NewRecord(b"k", b"v", 7, ((b"\xff-not-utf8", b"v"),))])  # declined: key not UTF-8
    seg.add_v2(records(2, start_ts=9))
    return seg.write(tmp_path / "t-0")


def _read(slices: list[ds.SegmentSlice], bounds: ds.Bounds, rows: int, compiled: bool) -> object:
    """The table `read_records` gives, through the compiled path or the reference one."""
    with pytest.MonkeyPatch.context() as mp:
        if not compiled:
            mp.setattr(arrow_rows.fast_lines, "enabled", lambda: False)
        return pa.Table.from_batches(
            list(ds.read_records(slices, bounds, rows)), schema=arrow_rows._RECORD_SCHEMA
        )


def _reference(log: Path) -> object:
    return _read([ds.SegmentSlice(str(log), 0, "t", 0)], ds.Bounds(), 10**6, compiled=False)


def _check(built: dict[str, list[object]], reference: object) -> None:
    for c in COLUMNS:
        got = pa.concat_arrays(built[c])
        want = reference[c].combine_chunks()  # type: ignore[index]
        assert got.type == want.type, c
        assert got.equals(want), c


def test_arrays_match_the_reference_read(tmp_path: Path) -> None:
    log = _segment(tmp_path)
    reference = _reference(log)
    built: dict[str, list[object]] = {c: [] for c in COLUMNS}
    declined = runs = 0
    with open_buffer(log) as buf:
        headers = [ev for ev in scan_log(buf, file=str(log), base_offset=0) if type(ev) is BatchHeader]
        for item in run_record_arrays(buf, headers):
            if isinstance(item, BatchHeader):
                declined += 1
                # The reference rows of a declined batch, taken from the reference read.
                rows = reference.filter(pa.compute.equal(reference["batchPosition"], item.position))
                for c in COLUMNS:
                    built[c].extend(rows[c].chunks)
                continue
            batches, arrays = item
            runs += 1
            positions = pa.array([h.position for h in batches], pa.int64()).take(arrays["batch_index"])
            start = sum(len(a) for a in built["offset"])
            assert positions.equals(reference["batchPosition"].combine_chunks().slice(start, len(positions)))
            for c in COLUMNS:
                built[c].append(arrays[c])
    assert declined == 2  # the control batch and the batch with a header key that is not UTF-8
    assert runs == 2  # the clean batches before the marker in one run, the last one in another
    _check(built, reference)


def test_one_batch_at_a_time(tmp_path: Path) -> None:
    log = _segment(tmp_path)
    reference = _reference(log)
    built: dict[str, list[object]] = {c: [] for c in COLUMNS}
    with open_buffer(log) as buf:
        for ev in scan_log(buf, file=str(log), base_offset=0):
            if type(ev) is not BatchHeader:
                continue
            arrays = batch_record_arrays(buf, ev)
            if arrays is None:
                rows = reference.filter(pa.compute.equal(reference["batchPosition"], ev.position))
                arrays = {c: rows[c].combine_chunks() for c in COLUMNS}
            for c in COLUMNS:
                built[c].append(arrays[c])
    _check(built, reference)


BOUNDS = [
    ds.Bounds(),
    ds.Bounds(offset_lo=3, offset_hi=40),
    ds.Bounds(ts_lo_us=7_000, ts_hi_us=1_800_000_000_000_000),
    ds.Bounds(offset_lo=10**9),
]


@pytest.mark.parametrize("bounds", BOUNDS, ids=["all", "offsets", "timestamps", "none-pass"])
@pytest.mark.parametrize("rows", [1, 7, 10_000])
def test_read_records_is_the_same_table_either_way(tmp_path: Path, bounds: ds.Bounds, rows: int) -> None:
    log = _segment(tmp_path)
    slices = [ds.SegmentSlice(str(log), 0, "t", 0)]
    fast = _read(slices, bounds, rows, compiled=True)
    reference = _read(slices, bounds, rows, compiled=False)
    assert fast.num_rows == reference.num_rows  # type: ignore[attr-defined]
    assert fast.equals(reference)  # type: ignore[attr-defined]
    if bounds == ds.Bounds():
        assert reference.num_rows > 40  # type: ignore[attr-defined]


def test_read_records_is_the_same_table_on_the_corpus(corpus_root: Path) -> None:
    from kdump.model.log_dir import discover

    slices = []
    for d in sorted(p for p in corpus_root.iterdir() if p.is_dir() and p.name.startswith("kafka-")):
        for part in discover(str(d)).partitions():
            slices += [
                ds.SegmentSlice(str(s.log), s.base_offset, part.topic or "", part.partition or 0)
                for s in part.segments
                if s.log is not None
            ]
    assert slices
    for bounds in BOUNDS[:2]:
        fast = _read(slices, bounds, 500, compiled=True)
        reference = _read(slices, bounds, 500, compiled=False)
        assert fast.equals(reference)  # type: ignore[attr-defined]
