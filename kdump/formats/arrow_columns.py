"""The records of runs of batches as Arrow arrays, from the compiled record path's buffers.

No Python object per record, and a handful of Arrow calls per run of batches rather than per
batch (a batch holds ~15 records; per-batch arrays cost more than the records they hold). The
compiled path (`formats.fast_records.columns_v2_many`) lays keys, values, offsets, timestamps and
headers out in Arrow's own buffer layout; this module wraps those buffers in arrays of the record
columns both the Spark data source and `salvage`'s `records.parquet` write (key, value, offset,
timestamp in microseconds UTC, headers as `list<struct<key: string, value: binary>>`, null for a
record without). Whatever this cannot build exactly as their reference paths do (a damaged,
control or legacy batch, a timestamp out of range, a header key that is not UTF-8), it declines,
and the caller decodes the batch the reference way (`decode_batch_records`).

pyarrow is imported on first use (the `spark` and `parquet` extras).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from kdump.errors import KdumpError
from kdump.formats import fast_records
from kdump.formats.batch import BatchHeader
from kdump.formats.codecs import decompress
from kdump.formats.constants import V2_HEADER_SIZE

Buffer = bytes | bytearray | memoryview


def payload_of(buf: Buffer, h: BatchHeader) -> Buffer | None:
    """The decompressed records of a batch the compiled path may take; None for any other, or when
    the payload does not decompress (the reference path reports why)."""
    if not fast_records.eligible(h):
        return None
    payload = buf[h.position + V2_HEADER_SIZE : h.position + h.size]
    try:
        return decompress(h.compression, payload, magic=2) if h.compression else payload
    except (KdumpError, MemoryError):
        return None


def headers_type() -> Any:
    """`list<element: struct<key: string, value: binary>>`, as Spark converts a headers array."""
    import pyarrow as pa

    header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
    return pa.list_(pa.field("element", header, nullable=True))


def _binary(col: fast_records.BinaryColumn, n: int, kind: Any = None) -> Any:
    import pyarrow as pa

    validity = pa.py_buffer(col.validity) if col.null_count else None
    return pa.Array.from_buffers(
        kind or pa.binary(),
        n,
        [validity, pa.py_buffer(col.offsets), pa.py_buffer(col.data)],
        null_count=col.null_count,
    )


def _helpers() -> Any:
    """The compiled module when it has the column helpers (`scale_i64`, `take_fixed`,
    `nonempty_validity`), else None: pyarrow.compute does their work (a build from before them)."""
    mod = fast_records.compiled
    return mod if mod is not None and hasattr(mod, "nonempty_validity") else None


def _headers(cols: fast_records.RecordColumns, kind: Any) -> Any:
    """`array<struct<key, value>>`, null (not empty) for a record with no headers."""
    import pyarrow as pa

    n = cols.rows
    cuts = pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(cols.header_offsets)])
    total = cuts[-1].as_py() if n else 0
    if total == 0:
        return pa.nulls(n, kind)
    keys = _binary(cols.header_keys, total, pa.string())
    keys.validate(full=True)  # raises on a key that is not UTF-8: the reference replaces its bytes
    values = _binary(cols.header_values, total)
    struct = pa.StructArray.from_arrays([keys, values], fields=list(kind.value_type))
    helpers = _helpers()
    if helpers is None:
        import pyarrow.compute as pc

        empty = pc.equal(cuts.slice(1), cuts.slice(0, n))
        return pa.ListArray.from_arrays(cuts, struct, type=kind, mask=empty)
    validity, nulls = helpers.nonempty_validity(cols.header_offsets, n)
    return pa.Array.from_buffers(
        kind,
        n,
        [pa.py_buffer(validity), pa.py_buffer(cols.header_offsets)],
        null_count=nulls,
        children=[struct],
    )


def _timestamps(cols: fast_records.RecordColumns) -> Any:
    """The records' timestamps in microseconds, UTC; None when one does not fit."""
    import pyarrow as pa

    kind = pa.timestamp("us", tz="UTC")
    n = cols.rows
    helpers = _helpers()
    if helpers is None:
        import pyarrow.compute as pc

        ms = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(cols.timestamps)])
        try:
            return pc.multiply_checked(ms, 1000).cast(kind)
        except pa.ArrowInvalid:
            return None
    us = helpers.scale_i64(cols.timestamps, 1000)
    return None if us is None else pa.Array.from_buffers(kind, n, [None, pa.py_buffer(us)])


def take_per_batch(values: bytes, width: int, index: bytes, kind: Any) -> Any:
    """Per-batch values (`width`-byte items, native order) repeated for each row by the rows'
    batch index (`RecordColumns.batch_index`): `pyarrow.compute.take`, without pyarrow.compute."""
    import pyarrow as pa

    n = len(index) // 4
    helpers = _helpers()
    if helpers is None:
        import pyarrow.compute as pc

        per_batch = pa.Array.from_buffers(kind, len(values) // width, [None, pa.py_buffer(values)])
        return pc.take(per_batch, pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(index)]))
    return pa.Array.from_buffers(kind, n, [None, pa.py_buffer(helpers.take_fixed(values, width, index))])


def record_arrays(cols: fast_records.RecordColumns) -> dict[str, Any] | None:
    """The run's per-record arrays (`key`, `value`, `offset`, `timestamp`, `headers`, and
    `batch_index`: for each row, the batch of the run that holds it); None when they cannot be
    built exactly."""
    import pyarrow as pa

    n = cols.rows
    try:
        timestamps = _timestamps(cols)
        headers = _headers(cols, headers_type())
    except (pa.ArrowInvalid, pa.ArrowException):
        return None
    if timestamps is None:
        return None
    return {
        "key": _binary(cols.keys, n),
        "value": _binary(cols.values, n),
        "offset": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(cols.offsets)]),
        "timestamp": timestamps,
        "headers": headers,
        "batch_index": pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(cols.batch_index)]),
    }


def run_record_arrays(
    buf: Buffer, headers: Sequence[BatchHeader]
) -> Iterator[tuple[list[BatchHeader], dict[str, Any]] | BatchHeader]:
    """The records of a run of batches of `buf`, in order, as few Arrow arrays as it takes.

    Yields either (batches, arrays): `record_arrays` of those batches' records; or a lone
    BatchHeader that must be decoded the reference way (`decode_batch_records`): damaged, control,
    legacy, or not buildable exactly.
    """
    i = 0
    while i < len(headers):
        run: list[tuple[Buffer, BatchHeader]] = []
        for h in headers[i:]:
            data = payload_of(buf, h)
            if data is None:
                break
            run.append((data, h))
        out = fast_records.columns_v2_many(run) if run else None
        taken = out[0] if out is not None else 0
        arrays = record_arrays(out[1]) if out is not None and taken else None
        if arrays is None and taken > 1:
            # Something in the run cannot be built exactly (a header key that is not UTF-8, a
            # timestamp beyond the range): the batches one by one, to find which.
            for h in headers[i : i + taken]:
                one = fast_records.columns_v2_many([(payload_of(buf, h) or b"", h)])
                built = record_arrays(one[1]) if one is not None and one[0] == 1 else None
                yield ([h], built) if built is not None else h
            i += taken
            continue
        if arrays is not None:
            yield [h for _, h in run[:taken]], arrays
            i += taken
            continue
        yield headers[i]
        i += 1
