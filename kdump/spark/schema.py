"""The columns of the `kdump` Spark data source, at each level, as Spark DDL and as Arrow types.

`level=records` starts with exactly the columns of Spark's built-in `kafka` source, in its order and
with its types (`KafkaRecordToRowConverter` with headers included): `key`, `value`, `topic`,
`partition`, `offset`, `timestamp`, `timestampType`, `headers`. Every column is nullable; `headers`
is null, not an empty array, for a record without headers; `timestampType` is -1 (v0, no timestamp),
0 (CreateTime) or 1 (LogAppendTime); a v0 record's timestamp is -1 ms, as the Kafka consumer reports
it. The forensic columns that follow describe the batch holding the record.

`level=batches` has one row per batch (or legacy message), `level=findings` one row per verify
finding with the fields of verify's JSON rows (the code-specific extras gathered in `details`, a
JSON object), plus the verify report (`target`, `scope`) the finding belongs to.

The Arrow schema is what Spark's Python data source reader checks each `RecordBatch` against
(`to_arrow_schema(schema, timezone="UTC")`); it is built here from the same table, with no pyspark
import, and a test keeps the two in step.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from kdump.findings import Finding
from kdump.formats.kafka_sink import KAFKA_COLUMNS
from kdump.render.rows import finding_row

FORENSIC_COLUMNS: tuple[tuple[str, str], ...] = (
    ("segment", "STRING"),  # the .log file
    ("batchPosition", "BIGINT"),  # byte position of the batch in the .log
    ("baseOffset", "BIGINT"),  # the batch's first offset (a legacy message's own offset)
    ("lastOffset", "BIGINT"),
    ("producerId", "BIGINT"),
    ("producerEpoch", "SMALLINT"),
    ("baseSequence", "INT"),
    ("isTransactional", "BOOLEAN"),
    ("isControl", "BOOLEAN"),
    ("partitionLeaderEpoch", "INT"),
    ("codec", "STRING"),  # none, gzip, snappy, lz4, zstd, unknown(N)
    ("crcOk", "BOOLEAN"),
    ("magic", "TINYINT"),
)
"""Per-batch facts appended to every record row."""

RECORD_COLUMNS = KAFKA_COLUMNS + FORENSIC_COLUMNS

PAYLOAD_COLUMNS: tuple[tuple[str, str], ...] = (
    ("keySchemaId", "INT"),  # the schema id the key names (wire-format prefix or header), or null
    ("valueSchemaId", "INT"),
    ("keyJson", "STRING"),  # the decoded key as JSON text, null where it stays raw
    ("valueJson", "STRING"),
)
"""Appended to record rows when keys or values are decoded (options keyType, valueType)."""

BATCH_COLUMNS: tuple[tuple[str, str], ...] = (
    ("topic", "STRING"),
    ("partition", "INT"),
    ("segment", "STRING"),
    ("batchPosition", "BIGINT"),
    ("baseOffset", "BIGINT"),
    ("lastOffset", "BIGINT"),
    ("count", "INT"),  # records in the batch (null for a legacy message)
    ("size", "INT"),  # bytes, log overhead included
    ("magic", "TINYINT"),
    ("crc", "BIGINT"),
    ("computedCrc", "BIGINT"),
    ("crcOk", "BOOLEAN"),
    ("codec", "STRING"),
    ("timestampType", "INT"),
    ("baseTimestamp", "TIMESTAMP"),
    ("maxTimestamp", "TIMESTAMP"),
    ("producerId", "BIGINT"),
    ("producerEpoch", "SMALLINT"),
    ("baseSequence", "INT"),
    ("lastSequence", "INT"),
    ("partitionLeaderEpoch", "INT"),
    ("isTransactional", "BOOLEAN"),
    ("isControl", "BOOLEAN"),
    ("deleteHorizonMs", "BIGINT"),
)

FINDING_COLUMNS: tuple[tuple[str, str], ...] = (
    ("type", "STRING"),  # always "finding"
    ("file", "STRING"),
    ("code", "STRING"),
    ("severity", "STRING"),
    ("position", "BIGINT"),
    ("offset", "BIGINT"),
    ("message", "STRING"),
    ("repair", "STRING"),
    ("details", "STRING"),  # JSON object of the code-specific fields, "{}" when none
    ("target", "STRING"),  # the verify report: a partition directory, or a file given alone
    ("scope", "STRING"),  # "partition" or "file"
)
"""Verify's JSON finding fields (`kdump.render.rows.finding_row`), then the report they belong to."""

LEVELS: dict[str, tuple[tuple[str, str], ...]] = {
    "records": RECORD_COLUMNS,
    "batches": BATCH_COLUMNS,
    "findings": FINDING_COLUMNS,
}


def ddl(columns: tuple[tuple[str, str], ...]) -> str:
    """A Spark DDL schema string: `` `key` BINARY, `value` BINARY, ...``."""
    return ", ".join(f"`{name}` {kind}" for name, kind in columns)


def column_names(columns: tuple[tuple[str, str], ...]) -> list[str]:
    """The column names, in order."""
    return [name for name, _ in columns]


def arrow_schema(columns: tuple[tuple[str, str], ...]) -> Any:
    """The Arrow schema Spark expects for these columns (`pyarrow.Schema`); imports pyarrow."""
    import pyarrow as pa

    return pa.schema([pa.field(name, _arrow_type(kind), nullable=True) for name, kind in columns])


def headers_arrow_type() -> Any:
    """`list<element: struct<key: string, value: binary>>`, as Spark converts the headers array."""
    return _arrow_type("ARRAY<STRUCT<key: STRING, value: BINARY>>")


def _arrow_type(kind: str) -> Any:
    import pyarrow as pa

    simple = {
        "BINARY": pa.binary(),
        "STRING": pa.string(),
        "BOOLEAN": pa.bool_(),
        "TINYINT": pa.int8(),
        "SMALLINT": pa.int16(),
        "INT": pa.int32(),
        "BIGINT": pa.int64(),
        "TIMESTAMP": pa.timestamp("us", tz="UTC"),
    }
    if kind in simple:
        return simple[kind]
    if kind == "ARRAY<STRUCT<key: STRING, value: BINARY>>":
        struct = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
        return pa.list_(pa.field("element", struct, nullable=True))
    raise ValueError(f"no Arrow type for {kind}")


_FINDING_FIXED = ("type", "file", "code", "severity", "position", "offset", "message", "repair")


def finding_rows(findings: Iterable[Finding], target: str, scope: str) -> list[dict[str, Any]]:
    """Findings as rows of `FINDING_COLUMNS`: verify's JSON fields, the extras as a JSON `details`."""
    out = []
    for f in findings:
        row = finding_row(f)
        extra = {k: v for k, v in row.items() if k not in _FINDING_FIXED}
        fixed = {k: row[k] for k in _FINDING_FIXED}
        out.append({**fixed, "details": json.dumps(extra, default=str), "target": target, "scope": scope})
    return out
