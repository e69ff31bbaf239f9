"""The JSON schema: one function per event type turns it into a flat dict (a JSON Lines object).

This module is the one definition of kdump's JSON field names (documented in `man/kdump.1`).
Every object has `type` and `file`. Keys, values and header values are strings in the chosen
encoding (`utf8` with invalid bytes escaped as `\\xNN`, `hex`, or `base64`) or null.
"""

from __future__ import annotations

import base64
import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kdump.findings import Finding
from kdump.formats.batch import BatchHeader
from kdump.formats.constants import CODEC_LABELS, ControlType, TimestampType
from kdump.formats.control import decode_control_key, decode_end_txn_marker
from kdump.formats.filenames import parse_partition_dir_name
from kdump.formats.records import Record
from kdump.ops.dump.files import Entry, FileStart
from kdump.ops.dump.payload_events import PayloadRecord
from kdump.scan.events import ScanSummary
from kdump.store.hints import repair_command

if TYPE_CHECKING:
    # Only for annotations: the internal-topic decoders cost ~10 ms to import at every start.
    from kdump.ops.dump.internal import InternalRecord

ENCODINGS = ("utf8", "hex", "base64")

BATCH_FIELDS = (
    "position",
    "base_offset",
    "last_offset",
    "count",
    "size",
    "magic",
    "crc",
    "crc_ok",
    "compression",
    "timestamp_type",
    "base_timestamp",
    "max_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "last_sequence",
    "partition_leader_epoch",
    "is_transactional",
    "is_control",
    "delete_horizon_ms",
)

RECORD_FIELDS = (
    "topic",
    "partition",
    "offset",
    "position",
    "timestamp",
    "timestamp_type",
    "key",
    "value",
    "headers",
    "sequence",
    "key_size",
    "value_size",
)


def encode_bytes(data: bytes | None, encoding: str) -> str | None:
    """Render key/value bytes as a string in `encoding`, or None for null."""
    if data is None:
        return None
    if encoding == "utf8":
        return data.decode("utf-8", "backslashreplace")
    if encoding == "hex":
        return data.hex()
    return base64.b64encode(data).decode("ascii")


def codec_label(codec: int) -> str:
    """Kafka's lower-case codec name, or `unknown(N)`."""
    return CODEC_LABELS.get(codec, f"unknown({codec})")


_TIMESTAMP_TYPE_LABELS = {t.value: t.label for t in TimestampType}


def timestamp_type_label(ts_type: int) -> str:
    """`CreateTime`, `LogAppendTime` or `NoTimestampType`."""
    # A dict, not TimestampType(ts_type): this runs once per batch of a dump.
    label = _TIMESTAMP_TYPE_LABELS.get(ts_type)
    return TimestampType(ts_type).label if label is None else label


def batch_row(h: BatchHeader, file: str) -> dict[str, Any]:
    """A batch (v2) or legacy entry."""
    return {
        "type": "batch",
        "file": file,
        "position": h.position,
        "base_offset": h.base_offset,
        "last_offset": h.last_offset,
        "count": h.count,
        "size": h.size,
        "magic": h.magic,
        "crc": h.crc,
        "crc_ok": h.crc_ok,
        "compression": codec_label(h.compression),
        "timestamp_type": timestamp_type_label(h.timestamp_type),
        "base_timestamp": h.base_timestamp,
        "max_timestamp": h.max_timestamp,
        "producer_id": h.producer_id,
        "producer_epoch": h.producer_epoch,
        "base_sequence": h.base_sequence,
        "last_sequence": h.last_sequence,
        "partition_leader_epoch": h.partition_leader_epoch,
        "is_transactional": h.is_transactional,
        "is_control": h.is_control,
        "delete_horizon_ms": h.delete_horizon_ms,
    }


def control_fields(r: Record) -> dict[str, Any] | None:
    """The decoded control marker of a control record, or None when it does not decode."""
    try:
        key = decode_control_key(r.key)
    except ValueError:
        return None
    out: dict[str, Any] = {"type": key.type_name, "version": key.version}
    if key.type in (ControlType.ABORT, ControlType.COMMIT):
        try:
            marker = decode_end_txn_marker(r.value)
        except ValueError:
            return out
        out["coordinator_epoch"] = marker.coordinator_epoch
    return out


@functools.lru_cache(maxsize=256)
def topic_partition(file: str) -> tuple[str | None, int | None]:
    """The topic and partition a log file belongs to, from its directory's name (`orders-3`, also
    `orders-3.<id>-delete`); (None, None) when that directory is not named as a partition."""
    if "://" not in file and "!" not in file:
        file = str(Path(file).absolute())
    parent = file.replace(os.sep, "/").rstrip("/").rsplit("/", 2)
    if len(parent) < 2:
        return None, None
    parsed = parse_partition_dir_name(parent[-2])
    return (None, None) if parsed is None else (parsed.topic, parsed.partition)


def record_row(r: Record, batch: BatchHeader | None, file: str, encoding: str) -> dict[str, Any]:
    """A record; `batch` is the batch that holds it (for its position and timestamp type)."""
    topic, partition = topic_partition(file)
    row: dict[str, Any] = {
        "type": "record",
        "file": file,
        "topic": topic,
        "partition": partition,
        "offset": r.offset,
        "position": batch.position if batch is not None else None,
        "timestamp": r.timestamp,
        "timestamp_type": timestamp_type_label(batch.timestamp_type) if batch is not None else None,
        "key": encode_bytes(r.key, encoding),
        "value": encode_bytes(r.value, encoding),
        "headers": [
            {"key": k.decode("utf-8", "backslashreplace"), "value": encode_bytes(v, encoding)}
            for k, v in r.headers
        ],
        "sequence": r.sequence,
        "key_size": -1 if r.key is None else len(r.key),
        "value_size": -1 if r.value is None else len(r.value),
    }
    if r.crc is not None:
        row["crc"] = r.crc
        row["crc_ok"] = r.crc_ok
    if batch is not None and batch.is_control:
        row["control"] = control_fields(r)
    return row


def internal_record_row(
    ir: InternalRecord, batch: BatchHeader | None, file: str, encoding: str
) -> dict[str, Any]:
    """A record of an internal topic: the record's fields plus what it decodes to."""
    row = record_row(ir.record, batch, file, encoding)
    row["decoded"] = ir.decoded.to_dict()
    return row


# The fields a record row gains when keys or values are decoded (`dump --key-type/--value-type`):
# the schema id each names (kcat's JSON has the same two keys) and the format it decoded as.
PAYLOAD_FIELDS = ("key_schema_id", "value_schema_id", "key_format", "value_format")


def payload_record_row(
    pr: PayloadRecord, batch: BatchHeader | None, file: str, encoding: str
) -> dict[str, Any]:
    """A record whose key and value were decoded: `key` and `value` hold the decoded values (JSON
    objects, not strings) where they decoded, else the raw text as in `record_row`; then the schema
    id each named (null when none) and the format it decoded as (null: shown raw)."""
    import json

    row = record_row(pr.record, batch, file, encoding)
    for side, decoded in (("key", pr.key), ("value", pr.value)):
        if decoded.json is not None:
            row[side] = json.loads(decoded.json)
    row["key_schema_id"] = pr.key.schema_id
    row["value_schema_id"] = pr.value.schema_id
    row["key_format"] = pr.key.format
    row["value_format"] = pr.value.format
    return row


def finding_row(f: Finding) -> dict[str, Any]:
    """A finding."""
    row: dict[str, Any] = {
        "type": "finding",
        "file": f.file,
        "code": f.code,
        "severity": f.severity.label,
        "position": f.position,
        "offset": f.offset,
        "message": f.message,
        "repair": repair_command(f),
    }
    for k, v in f.details.items():
        row.setdefault(k, v)
    return row


def summary_row(s: ScanSummary) -> dict[str, Any]:
    """The scanner's summary of one log file."""
    return {
        "type": "summary",
        "file": s.file,
        "size": s.size,
        "start": s.start,
        "valid_bytes": s.valid_bytes,
        "invalid_bytes": s.invalid_bytes,
        "scanned_bytes": s.scanned_bytes,
        "batch_count": s.batch_count,
        "valid_batch_count": s.valid_batch_count,
        # Null, never 0 or a guess, where batches' records were not decompressed (their codec is missing).
        "record_count": None if s.uncounted_batches else s.record_count,
        "records_counted": s.record_count,
        "uncounted_batches": s.uncounted_batches,
        "first_offset": s.first_offset if s.first_offset_known else None,
        "first_offset_at_most": None if s.first_offset_known else s.first_offset,
        "last_offset": s.last_offset,
        "max_timestamp": s.max_timestamp,
        "offset_of_max_timestamp": s.offset_of_max_timestamp,
        "stop_reason": str(s.stop_reason),
        "salvageable_batches": s.salvageable_batches,
        "findings": {"info": s.findings_info, "warning": s.findings_warning, "error": s.findings_error},
        "deep": s.deep,
        "partial": s.partial,
        "end_position": s.scanned_bytes,
        # A filtered dump only: what it showed of the file.
        **(
            {}
            if s.shown is None
            else {
                "shown": {
                    "batches": s.shown.batches,
                    "records": s.shown.records,
                    "first_offset": s.shown.first_offset,
                    "last_offset": s.shown.last_offset,
                }
            }
        ),
    }


def file_row(fs: FileStart) -> dict[str, Any]:
    """The start of a file."""
    return {"type": "file", "file": fs.file, "kind": fs.kind, "size": fs.size, "base_offset": fs.base_offset}


def entry_row(e: Entry) -> dict[str, Any]:
    """An entry of a non-log file; its type names what it is (`index-entry`, `aborted-txn`, ...)."""
    return {"type": e.kind, "file": e.file, **e.fields}
