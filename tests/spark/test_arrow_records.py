"""`spark.arrow_records`: a batch's record columns built from the compiled path's buffers are the
same Arrow arrays the data source's reference read (`read_records`) builds, value for value."""

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


def _reference(log: Path) -> object:
    return pa.Table.from_batches(
        list(ds.read_records([ds.SegmentSlice(str(log), 0, "t", 0)], ds.Bounds(), 10**6))
    )


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
