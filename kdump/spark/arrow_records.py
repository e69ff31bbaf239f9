"""The records of runs of batches as Arrow arrays, from the compiled record path's buffers.

No Python object per record, and a handful of Arrow calls per run of batches rather than per
batch (a batch holds ~15 records; per-batch arrays cost more than the records they hold). The
compiled path (`formats.fast_records.columns_v2_many`) lays keys,
values, offsets, timestamps and headers out in Arrow's own buffer layout, and this module wraps
those buffers in arrays of the data source's record schema (`spark.schema.RECORD_COLUMNS`: key,
value, offset, timestamp, headers). Whatever this cannot build exactly as the data source's
reference path does (a damaged, control or legacy batch, a timestamp out of Spark's range, a header
key that is not UTF-8), it declines with None, and the caller decodes the batch the reference way
(`decode_batch_records`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kdump.formats import fast_records
from kdump.formats.batch import BatchHeader
from kdump.render.fast_lines import payload_of
from kdump.spark.schema import headers_arrow_type

Buffer = bytes | bytearray | memoryview

_HEADERS_TYPE = headers_arrow_type()


def _binary(col: fast_records.BinaryColumn, n: int, kind: Any = None) -> Any:
    validity = pa.py_buffer(col.validity) if col.null_count else None
    return pa.Array.from_buffers(
        kind or pa.binary(),
        n,
        [validity, pa.py_buffer(col.offsets), pa.py_buffer(col.data)],
        null_count=col.null_count,
    )


def _headers(cols: fast_records.RecordColumns) -> Any:
    """`array<struct<key, value>>`, null (not empty) for a record with no headers."""
    n = cols.rows
    cuts = pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(cols.header_offsets)])
    total = cuts[-1].as_py() if n else 0
    if total == 0:
        return pa.nulls(n, _HEADERS_TYPE)
    keys = _binary(cols.header_keys, total, pa.string())
    keys.validate(full=True)  # raises on a key that is not UTF-8: the reference replaces its bytes
    values = _binary(cols.header_values, total)
    struct = pa.StructArray.from_arrays([keys, values], fields=list(_HEADERS_TYPE.value_type))
    empty = pc.equal(cuts.slice(1), cuts.slice(0, n))
    return pa.ListArray.from_arrays(cuts, struct, type=_HEADERS_TYPE, mask=empty)


def _arrays(cols: fast_records.RecordColumns) -> dict[str, Any] | None:
    n = cols.rows
    try:
        ms = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(cols.timestamps)])
        timestamps = pc.multiply_checked(ms, 1000).cast(pa.timestamp("us", tz="UTC"))
        headers = _headers(cols)
    except (pa.ArrowInvalid, pa.ArrowException):
        return None
    return {
        "key": _binary(cols.keys, n),
        "value": _binary(cols.values, n),
        "offset": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(cols.offsets)]),
        "timestamp": timestamps,
        "headers": headers,
        "batch_index": pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(cols.batch_index)]),
    }


def batch_record_arrays(buf: Buffer, h: BatchHeader) -> dict[str, Any] | None:
    """The per-record columns of one clean batch (see `run_record_arrays`); None to decode the
    batch the reference way."""
    for item in run_record_arrays(buf, [h]):
        if isinstance(item, BatchHeader):
            return None
        return item[1]
    return None


def run_record_arrays(
    buf: Buffer, headers: Sequence[BatchHeader]
) -> Iterator[tuple[list[BatchHeader], dict[str, Any]] | BatchHeader]:
    """The records of a run of batches of `buf`, in order, as few Arrow arrays as it takes.

    Yields either (batches, arrays): the per-record columns `key`, `value`, `offset`, `timestamp`
    and `headers` of those batches' records, each an Arrow array of the data source's type, and
    `batch_index` (int32), for each row the position in `batches` of the batch that holds it (to
    repeat per-batch columns with one `take`); or a lone BatchHeader that must be decoded the
    reference way (`decode_batch_records`): damaged, control, legacy, or not buildable exactly.
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
        arrays = _arrays(out[1]) if out is not None and taken else None
        if arrays is None and taken > 1:
            # Something in the run cannot be built exactly (a header key that is not UTF-8, a
            # timestamp beyond Spark's range): the batches one by one, to find which.
            for h in headers[i : i + taken]:
                one = fast_records.columns_v2_many([(payload_of(buf, h) or b"", h)])
                built = _arrays(one[1]) if one is not None and one[0] == 1 else None
                yield ([h], built) if built is not None else h
            i += taken
            continue
        if arrays is not None:
            yield [h for _, h in run[:taken]], arrays
            i += taken
            continue
        yield headers[i]
        i += 1
