"""Reading a `kdump` task on an executor: the rows of its slices or units, as Arrow batches.

Records and batch headers come from the one scanner over each slice (`_scan_slice`); per-batch
columns are built once per batch and repeated (`_RecordChunk`); findings are verify's, row for row.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate, chain
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kdump.errors import PathError
from kdump.findings import make_finding
from kdump.formats.batch import BatchHeader
from kdump.model.log_dir import discover
from kdump.ops.checks.segment import check_segment
from kdump.ops.checks.verify import file_report, partition_report
from kdump.render import fast_lines
from kdump.render.rows import codec_label
from kdump.scan.batch_checks import decode_batch_records
from kdump.scan.log_scanner import scan_log
from kdump.spark.arrow_records import run_record_arrays
from kdump.spark.options import Bounds
from kdump.spark.planning import FindingsUnit, SegmentSlice
from kdump.spark.ranged import SliceBuffer, open_slice
from kdump.spark.schema import (
    BATCH_COLUMNS,
    FINDING_COLUMNS,
    RECORD_COLUMNS,
    arrow_schema,
    finding_rows,
    headers_arrow_type,
)

__all__ = ["read_batches", "read_findings", "read_records"]

log = logging.getLogger("kdump.spark")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# Timestamps in ms whose microsecond value still fits an int64 (Spark's TimestampType).
_TS_MS_MIN, _TS_MS_MAX = _INT64_MIN // 1000 + 1, _INT64_MAX // 1000


def _timestamps(ms: Sequence[int]) -> Any:
    """Epoch milliseconds as Spark timestamps (microseconds, UTC); null where out of range."""
    arr = pa.array(ms, pa.int64())
    try:
        us = pc.multiply_checked(arr, 1000)
    except pa.ArrowInvalid:
        us = pa.array([v * 1000 if _TS_MS_MIN <= v <= _TS_MS_MAX else None for v in ms], pa.int64())
    return us.cast(pa.timestamp("us", tz="UTC"))


def _header_keys(keys: list[bytes]) -> Any:
    arr = pa.array(keys, pa.binary())
    try:
        return arr.cast(pa.string())
    except pa.ArrowInvalid:
        # Kafka decodes header keys as UTF-8, replacing what does not decode.
        return pa.array([k.decode("utf-8", "replace") for k in keys], pa.string())


def _headers(hdrs: Sequence[tuple[tuple[bytes, bytes | None], ...]]) -> Any:
    """Record headers as Spark's `array<struct<key, value>>`; null (not empty) for a record with none."""
    htype = _HEADERS_TYPE
    lengths = [len(h) for h in hdrs]
    if not any(lengths):
        return pa.nulls(len(hdrs), htype)
    hkeys, hvalues = zip(*chain.from_iterable(hdrs), strict=True)
    keys = _header_keys(list(hkeys))
    values = pa.array(hvalues, pa.binary())
    struct = pa.StructArray.from_arrays([keys, values], fields=list(htype.value_type))
    offsets = pa.array(list(accumulate(lengths, initial=0)), pa.int32())
    mask = pa.array([n == 0 for n in lengths], pa.bool_())
    return pa.ListArray.from_arrays(offsets, struct, type=htype, mask=mask)


# Per-batch columns of record rows (repeated for each record of the batch), and their types.
_RECORD_BATCH_FIELDS: tuple[tuple[str, Callable[[SegmentSlice, BatchHeader], Any], Any], ...] = (
    ("topic", lambda s, h: s.topic, pa.string()),
    ("partition", lambda s, h: s.partition, pa.int32()),
    ("timestampType", lambda s, h: h.timestamp_type, pa.int32()),
    ("segment", lambda s, h: s.log, pa.string()),
    ("batchPosition", lambda s, h: h.position, pa.int64()),
    ("baseOffset", lambda s, h: h.last_offset if h.base_offset is None else h.base_offset, pa.int64()),
    ("lastOffset", lambda s, h: h.last_offset, pa.int64()),
    ("producerId", lambda s, h: h.producer_id, pa.int64()),
    ("producerEpoch", lambda s, h: h.producer_epoch, pa.int16()),
    ("baseSequence", lambda s, h: h.base_sequence, pa.int32()),
    ("isTransactional", lambda s, h: h.is_transactional, pa.bool_()),
    ("isControl", lambda s, h: h.is_control, pa.bool_()),
    ("partitionLeaderEpoch", lambda s, h: h.partition_leader_epoch, pa.int32()),
    ("codec", lambda s, h: codec_label(h.compression), pa.string()),
    ("crcOk", lambda s, h: h.crc_ok, pa.bool_()),
    ("magic", lambda s, h: h.magic, pa.int8()),
)
_RECORD_SCHEMA = arrow_schema(RECORD_COLUMNS)
_BATCH_SCHEMA = arrow_schema(BATCH_COLUMNS)
_FINDING_SCHEMA = arrow_schema(FINDING_COLUMNS)
_HEADERS_TYPE = headers_arrow_type()
_BATCH_STRUCT = pa.struct([pa.field(name, kind) for name, _, kind in _RECORD_BATCH_FIELDS])


def _per_batch_struct(batches: Sequence[tuple[SegmentSlice, BatchHeader]]) -> Any:
    """The per-batch columns of record rows, one struct per batch (repeated per record by `take`)."""
    return pa.StructArray.from_arrays(
        [pa.array([get(s, h) for s, h in batches], kind) for _, get, kind in _RECORD_BATCH_FIELDS],
        fields=list(_BATCH_STRUCT),
    )


class _RecordChunk:
    """Records of whole batches (of one or more slices) gathered until an Arrow batch is due."""

    __slots__ = ("batches", "index", "records")

    def __init__(self) -> None:
        self.records: list[Any] = []
        self.index: list[int] = []
        self.batches: list[tuple[SegmentSlice, BatchHeader]] = []

    def add(self, part: SegmentSlice, h: BatchHeader, records: list[Any]) -> None:
        self.index.extend([len(self.batches)] * len(records))
        self.batches.append((part, h))
        self.records.extend(records)

    def to_arrow(self) -> Any:
        """One `RecordBatch` of `RECORD_COLUMNS`: per-record columns from the records, per-batch
        columns built once per batch and repeated with a single `take`."""
        offsets, timestamps, keys, values, headers = list(zip(*self.records, strict=False))[:5]
        per_batch = _per_batch_struct(self.batches)
        repeated = dict(
            zip(_BATCH_STRUCT.names, per_batch.take(pa.array(self.index, pa.int32())).flatten(), strict=True)
        )
        columns = {
            "key": pa.array(keys, pa.binary()),
            "value": pa.array(values, pa.binary()),
            "offset": pa.array(offsets, pa.int64()),
            "timestamp": _timestamps(timestamps),
            "headers": _headers(headers),
            **repeated,
        }
        return pa.RecordBatch.from_arrays(
            [columns[name] for name in _RECORD_SCHEMA.names], schema=_RECORD_SCHEMA
        )


def _scan_slice(sliced: SliceBuffer, part: SegmentSlice) -> Iterator[BatchHeader]:
    """The batch headers of a slice, in position order (forensic scan, resyncing past damage).

    The scan sees the whole file, so a length field is judged as a whole-file scan judges it, and
    a resync lands where it would; the slice owns the batches that start before its end. A stored
    slice is scanned while it arrives (`ready`).
    """
    end = part.end
    events = scan_log(
        sliced.view, file=part.log, base_offset=part.base_offset, start=part.start, ready=sliced.ready
    )
    for ev in events:
        if type(ev) is BatchHeader:
            if end is not None and ev.position >= end:
                return
            yield ev


def _readable_slices(slices: Iterable[SegmentSlice]) -> Iterator[tuple[SegmentSlice, SliceBuffer]]:
    """Each slice with its open buffer (valid until the next one is asked for). A file that cannot
    be opened or read is skipped, with a warning: the rows of a slice are what could be read."""
    for part in slices:
        try:
            with open_slice(part.log, part.start, part.end) as sliced:
                yield part, sliced
        except PathError as exc:
            log.warning("kdump: cannot read %s: %s", part.log, exc)


def _headers_of(sliced: SliceBuffer, part: SegmentSlice) -> Iterator[BatchHeader]:
    """`_scan_slice`, ending the slice (with a warning) where a stored file stops being readable."""
    try:
        yield from _scan_slice(sliced, part)
    except PathError as exc:
        log.warning("kdump: cannot read %s: %s", part.log, exc)


def _readable_batches(
    slices: Iterable[SegmentSlice],
) -> Iterator[tuple[SegmentSlice, memoryview, BatchHeader]]:
    """Every batch of the slices, with its open buffer."""
    for part, sliced in _readable_slices(slices):
        for h in _headers_of(sliced, part):
            yield part, sliced.view, h


def _runs(headers: Iterable[BatchHeader], rows: int) -> Iterator[list[BatchHeader]]:
    """Consecutive batches in runs of about `rows` records: what the compiled path decodes at once
    (a run's decompressed payloads are held together, so runs are bounded)."""
    run: list[BatchHeader] = []
    n = 0
    for h in headers:
        run.append(h)
        n += h.count if h.count is not None and h.count > 0 else 1
        if n >= rows:
            yield run
            run, n = [], 0
    if run:
        yield run


def _kept_rows(arrays: dict[str, Any], bounds: Bounds) -> Any | None:
    """The mask of the rows that pass `bounds`, judged as `Bounds.keeps_record` judges one record;
    None when the bounds do not bound records."""
    if not bounds.on_records:
        return None
    offsets = arrays["offset"]
    masks = []
    if bounds.offset_lo is not None:
        masks.append(pc.greater_equal(offsets, bounds.offset_lo))
    if bounds.offset_hi is not None:
        masks.append(pc.less_equal(offsets, bounds.offset_hi))
    if bounds.ts_lo_us is not None or bounds.ts_hi_us is not None:
        us = arrays["timestamp"].cast(pa.int64())
        if bounds.ts_lo_us is not None:
            masks.append(pc.greater_equal(us, bounds.ts_lo_us))
        if bounds.ts_hi_us is not None:
            masks.append(pc.less_equal(us, bounds.ts_hi_us))
    mask = masks[0]
    for m in masks[1:]:
        mask = pc.and_(mask, m)
    return mask


def _compiled_rows(
    part: SegmentSlice, batches: list[BatchHeader], arrays: dict[str, Any], bounds: Bounds
) -> Any:
    """One `RecordBatch` of `RECORD_COLUMNS` from the compiled path's arrays of a run of batches,
    filtered by `bounds`; None when no row passes."""
    per_batch = _per_batch_struct([(part, h) for h in batches])
    columns = {
        **{name: arrays[name] for name in ("key", "value", "offset", "timestamp", "headers")},
        **dict(zip(_BATCH_STRUCT.names, per_batch.take(arrays["batch_index"]).flatten(), strict=True)),
    }
    rb = pa.RecordBatch.from_arrays([columns[name] for name in _RECORD_SCHEMA.names], schema=_RECORD_SCHEMA)
    mask = _kept_rows(arrays, bounds)
    if mask is not None:
        rb = rb.filter(mask)
    return rb if rb.num_rows else None


def read_records(slices: Iterable[SegmentSlice], bounds: Bounds, batch_rows: int) -> Iterator[Any]:
    """Arrow batches of the records of the slices of one task.

    Clean v2 data batches go through the compiled path (`arrow_records.run_record_arrays`: Arrow
    arrays straight from its buffers, no Python object per record); whatever it declines (damage,
    control and legacy batches, values Arrow cannot hold exactly) is decoded the reference way.
    Rows keep the batches' order either way.
    """
    exact = bounds.on_records
    compiled = fast_lines.enabled()
    chunk = _RecordChunk()
    for part, sliced in _readable_slices(slices):
        buf = sliced.view
        headers: Iterable[BatchHeader] = _headers_of(sliced, part)
        if exact:
            headers = (h for h in headers if bounds.keeps_batch(h))
        for run in _runs(headers, batch_rows):
            for item in run_record_arrays(buf, run) if compiled else run:
                if not isinstance(item, BatchHeader):
                    if chunk.records:
                        yield chunk.to_arrow()
                        chunk = _RecordChunk()
                    rb = _compiled_rows(part, *item, bounds)
                    if rb is not None:
                        yield rb
                    continue
                records, _findings = decode_batch_records(buf, item, part.log)
                if exact:
                    records = [r for r in records if bounds.keeps_record(r.offset, r.timestamp)]
                if not records:
                    continue
                chunk.add(part, item, records)
                if len(chunk.records) >= batch_rows:
                    yield chunk.to_arrow()
                    chunk = _RecordChunk()
    if chunk.records:
        yield chunk.to_arrow()


def read_batches(slices: Iterable[SegmentSlice], batch_rows: int) -> Iterator[Any]:
    """Arrow batches of the batch headers of the slices of one task."""
    headers: list[tuple[SegmentSlice, BatchHeader]] = []
    for part, _buf, h in _readable_batches(slices):
        headers.append((part, h))
        if len(headers) >= batch_rows:
            yield _batches_to_arrow(headers)
            headers = []
    if headers:
        yield _batches_to_arrow(headers)


def _batches_to_arrow(rows: list[tuple[SegmentSlice, BatchHeader]]) -> Any:
    hs = [h for _, h in rows]
    columns = [
        pa.array([s.topic for s, _ in rows], pa.string()),
        pa.array([s.partition for s, _ in rows], pa.int32()),
        pa.array([s.log for s, _ in rows], pa.string()),
        pa.array([h.position for h in hs], pa.int64()),
        pa.array([h.base_offset if h.base_offset is not None else h.last_offset for h in hs], pa.int64()),
        pa.array([h.last_offset for h in hs], pa.int64()),
        pa.array([h.count for h in hs], pa.int32()),
        pa.array([h.size for h in hs], pa.int32()),
        pa.array([h.magic for h in hs], pa.int8()),
        pa.array([h.crc for h in hs], pa.int64()),
        pa.array([h.computed_crc for h in hs], pa.int64()),
        pa.array([h.crc_ok for h in hs], pa.bool_()),
        pa.array([codec_label(h.compression) for h in hs], pa.string()),
        pa.array([h.timestamp_type for h in hs], pa.int32()),
        _timestamps([h.base_timestamp for h in hs]),
        _timestamps([h.max_timestamp for h in hs]),
        pa.array([h.producer_id for h in hs], pa.int64()),
        pa.array([h.producer_epoch for h in hs], pa.int16()),
        pa.array([h.base_sequence for h in hs], pa.int32()),
        pa.array([h.last_sequence for h in hs], pa.int32()),
        pa.array([h.partition_leader_epoch for h in hs], pa.int32()),
        pa.array([h.is_transactional for h in hs], pa.bool_()),
        pa.array([h.is_control for h in hs], pa.bool_()),
        pa.array([h.delete_horizon_ms for h in hs], pa.int64()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=_BATCH_SCHEMA)


def read_findings(unit: FindingsUnit, deep: bool) -> Iterator[Any]:
    """One Arrow batch of the findings of one verify unit."""
    if unit.kind == "entries":
        rows = finding_rows(list(unit.problems), unit.label, unit.scope)
    elif unit.kind == "unreadable":
        f = make_finding("unreadable-file", unit.path, unit.error)
        rows = finding_rows([f], unit.label, "file")
    elif unit.kind == "file":
        target = dataclasses.replace(discover(unit.path), given=unit.label)
        results = [check_segment(s, deep=deep) for s in target.segments]
        report = file_report(target, results)
        rows = finding_rows(report.findings, report.label, report.kind)
    else:
        assert unit.part is not None
        results = [check_segment(s, deep=deep) for s in unit.part.segments]
        report = partition_report(unit.part, results, unit.label)
        rows = finding_rows(report.findings, report.label, report.kind)
    if rows:
        yield pa.RecordBatch.from_pylist(rows, schema=_FINDING_SCHEMA)
