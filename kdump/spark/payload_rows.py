"""Record rows with keys and values decoded (`keyType`, `valueType`, schema sources) and `where`.

The rows are those of `level=records` plus four columns: `keySchemaId` and `valueSchemaId` (the
schema ids the key and value name), `keyJson` and `valueJson` (the decoded key and value as JSON
text; null where they stay raw). `where` keeps the records whose JSON object, as `kdump dump
--format json` prints it, satisfies the jq expression. Each Python worker builds its decoder once
from the options (the driver resolved the `_schemas` partitions into them).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from kdump.formats.batch import BatchHeader
from kdump.ops.dump.payload_events import RAW, PayloadOptions, PayloadRecord
from kdump.ops.payloads.decode import registered_decoder
from kdump.render import jsonl
from kdump.scan.batch_checks import decode_batch_records
from kdump.spark.arrow_rows import _headers_of, _readable_slices, _RecordChunk
from kdump.spark.options import Bounds
from kdump.spark.planning import SegmentSlice
from kdump.spark.schema import PAYLOAD_COLUMNS, RECORD_COLUMNS, arrow_schema

_SCHEMA = arrow_schema(RECORD_COLUMNS + PAYLOAD_COLUMNS)


class _PayloadChunk(_RecordChunk):
    """Records of whole batches with their decoded keys and values."""

    __slots__ = ("decoded",)

    def __init__(self) -> None:
        super().__init__()
        self.decoded: list[tuple[int | None, int | None, str | None, str | None]] = []

    def to_arrow(self) -> Any:
        base = super().to_arrow()
        key_ids, value_ids, keys, values = (list(c) for c in zip(*self.decoded, strict=True))
        extra = [
            pa.array(key_ids, pa.int32()),
            pa.array(value_ids, pa.int32()),
            pa.array(keys, pa.string()),
            pa.array(values, pa.string()),
        ]
        return pa.RecordBatch.from_arrays([*base.columns, *extra], schema=_SCHEMA)


def _text(b: bytes | None) -> str | None:
    return None if b is None else b.decode("utf-8")


def read_payload_records(
    slices: Iterable[SegmentSlice], bounds: Bounds, batch_rows: int, options: PayloadOptions
) -> Iterator[Any]:
    """Arrow batches of the records of the slices, keys and values decoded, `where` applied."""
    decoder = registered_decoder(options) if options.decoding else None
    keep = None
    if options.where is not None:
        from kdump.ops.payloads.where import compile_where

        keep = compile_where(options.where)
    chunk = _PayloadChunk()
    for part, sliced in _readable_slices(slices):
        buf = sliced.view
        file_json = json.dumps(part.log)
        for h in _headers_of(sliced, part):
            if not bounds.keeps_batch(h):
                continue
            records, _ = decode_batch_records(buf, h, part.log)
            kept: list[Any] = []
            for r in records:
                if bounds.on_records and not bounds.keeps_record(r.offset, r.timestamp):
                    continue
                if decoder is None or h.is_control:
                    pr = PayloadRecord(r, RAW, RAW)
                else:
                    pr = decoder.decode(r, h, part.log)[0]
                if keep is not None and not keep(_line(pr, h, file_json, options, decoder is not None)):
                    continue
                kept.append(r)
                chunk.decoded.append(
                    (pr.key.schema_id, pr.value.schema_id, _text(pr.key.json), _text(pr.value.json))
                )
            if kept:
                chunk.add(part, h, kept)
            if len(chunk.records) >= batch_rows:
                yield chunk.to_arrow()
                chunk = _PayloadChunk()
    if chunk.records:
        yield chunk.to_arrow()


def _line(pr: PayloadRecord, h: BatchHeader, file_json: str, options: PayloadOptions, decoded: bool) -> str:
    """The record's JSON line as `kdump dump --format json` prints it (what `where` judges)."""
    if not decoded:
        return jsonl.record_line(pr.record, h, file_json, options.encoding)
    return jsonl.payload_record_line(pr, h, file_json, options.encoding)
