"""The records of one batch as Arrow arrays, from the compiled record path's buffers.

No Python object per record: the compiled path (`formats.fast_records.columns_v2`) lays keys,
values, offsets, timestamps and headers out in Arrow's own buffer layout, and this module wraps
those buffers in arrays of the data source's record schema (`spark.schema.RECORD_COLUMNS`: key,
value, offset, timestamp, headers). Whatever this cannot build exactly as the data source's
reference path does (a damaged, control or legacy batch, a timestamp out of Spark's range, a header
key that is not UTF-8), it declines with None, and the caller decodes the batch the reference way
(`decode_batch_records`).
"""

from __future__ import annotations

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


def batch_record_arrays(buf: Buffer, h: BatchHeader) -> dict[str, Any] | None:
    """The per-record columns of a clean batch (`key`, `value`, `offset`, `timestamp`, `headers`),
    each an Arrow array of the data source's type; None to decode the batch the reference way."""
    data = payload_of(buf, h)
    if data is None:
        return None
    cols = fast_records.columns_v2(data, h)
    if cols is None:
        return None
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
    }
