"""The compiled record path, and the switch between it and the pure-Python reference.

`kdump/formats/_fastrecords.c` decodes and renders the v2 records of one batch without a Python
object per field. It is an optional part of the install: where it was not built, or when the
environment sets `KDUMP_PURE_PYTHON=1`, `compiled` is None and every caller runs the reference path
(`records.decode_v2_records`, `render.jsonl`, `render.text`), which stays the definition of the
output. The compiled functions answer None ("decline") whenever a batch is anything but clean (a
record that does not decode, a count or size that does not add up, offsets outside the batch or out
of order, a max timestamp that differs, a varint longer than the common case): the caller then runs
the reference path on the same bytes, which reports what is wrong. So the fast path can only ever
be faster, never different (tests/formats/test_fast_records.py holds the two byte-identical).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import NamedTuple

from kdump.formats.batch import BatchHeader
from kdump.formats.constants import TimestampType
from kdump.formats.records import Record

PURE_PYTHON_ENV = "KDUMP_PURE_PYTHON"
Buffer = bytes | bytearray | memoryview


def load_compiled(name: str, package: str = "kdump.formats") -> ModuleType | None:
    """The compiled module `<package>.<name>`, or None: not built, or `KDUMP_PURE_PYTHON=1`."""
    if os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0"):
        return None
    try:
        return importlib.import_module(f"{package}.{name}")
    except ImportError:
        return None


# The compiled module, or None for the reference path (tests set it to None to compare the two).
compiled: ModuleType | None = load_compiled("_fastrecords")

FORMATS = {"json": 0, "text": 1}
ENCODINGS = {"utf8": 0, "hex": 1, "base64": 2}


def eligible(h: BatchHeader) -> bool:
    """Whether a batch may take the compiled path at all: a checksum-valid v2 data batch."""
    return h.crc_ok and h.magic == 2 and not h.is_control and 0 <= h.compression <= 4


def _check_max_ts(h: BatchHeader) -> bool:
    # The scanner compares the records' largest timestamp with the header's for CreateTime data.
    return h.timestamp_type == TimestampType.CREATE_TIME and not h.is_control


def decode_v2(data: Buffer, h: BatchHeader) -> tuple[list[Record], bool] | None:
    """The records of a v2 batch's decompressed payload, as `decode_v2_records` returns them.

    Returns:
        None when the compiled path is off or declines (run the reference); else the records and
        whether the scanner's record checks (offsets in range and increasing, max timestamp) pass.
    """
    if compiled is None or h.base_offset is None or h.count is None:
        return None
    out = compiled.decode_v2(
        data,
        Record,
        h.base_offset,
        h.last_offset,
        h.base_timestamp,
        h.max_timestamp,
        h.timestamp_type == TimestampType.LOG_APPEND_TIME,
        h.base_sequence,
        h.count,
        _check_max_ts(h),
    )
    if out is None:
        return None
    records, clean = out
    return records, clean  # Record instances, built in C


class BinaryColumn(NamedTuple):
    """An Arrow binary column's buffers: validity bitmap (LSB first), int32 offsets, data."""

    validity: bytes
    offsets: bytes
    data: bytes
    null_count: int


class RecordColumns(NamedTuple):
    """The records of a run of batches as Arrow-layout buffers (native byte order), no object per
    record.

    `header_offsets` (int32, `rows` + 1 of them) cut `header_keys` / `header_values` into each
    record's headers; a record without headers has an empty run. `batch_index` (int32, one per
    row) is the position in the run of the batch that holds the row.
    """

    rows: int
    offsets: bytes  # int64 each
    timestamps: bytes  # int64 each, epoch milliseconds
    keys: BinaryColumn
    values: BinaryColumn
    header_offsets: bytes
    header_keys: BinaryColumn
    header_values: BinaryColumn
    batch_index: bytes


def columns_v2_many(batches: list[tuple[Buffer, BatchHeader]]) -> tuple[int, RecordColumns] | None:
    """The records of clean v2 batches (decompressed payload, header) as one set of columns.

    Batches are taken in order until one is not clean.

    Returns:
        None when the compiled path is off; else how many batches were taken (the next one, if
        any, needs the reference path) and their records' columns.
    """
    if compiled is None:
        return None
    items = []
    for data, h in batches:
        if h.base_offset is None or h.count is None or not eligible(h):
            break
        items.append(
            (
                data,
                h.base_offset,
                h.last_offset,
                h.base_timestamp,
                h.max_timestamp,
                h.timestamp_type == TimestampType.LOG_APPEND_TIME,
                h.count,
                _check_max_ts(h),
            )
        )
    done, n, offsets, timestamps, keys, values, hoffsets, hkeys, hvalues, index = compiled.columns_v2_many(
        items
    )
    return done, RecordColumns(
        n,
        offsets,
        timestamps,
        BinaryColumn(*keys),
        BinaryColumn(*values),
        hoffsets,
        BinaryColumn(*hkeys),
        BinaryColumn(*hvalues),
        index,
    )


def columns_v2(data: Buffer, h: BatchHeader) -> RecordColumns | None:
    """The records of one clean v2 batch as columns (for Arrow), or None to run the reference."""
    out = columns_v2_many([(data, h)])
    if out is None or out[0] != 1:
        return None
    return out[1]
