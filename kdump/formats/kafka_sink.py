"""The columns of Spark's built-in `kafka` source, in its order: what records must look like to be
written back to a topic with its `kafka` sink (salvage's Parquet output, the Spark data source)."""

from __future__ import annotations

KAFKA_COLUMNS: tuple[tuple[str, str], ...] = (
    ("key", "BINARY"),
    ("value", "BINARY"),
    ("topic", "STRING"),
    ("partition", "INT"),
    ("offset", "BIGINT"),
    ("timestamp", "TIMESTAMP"),
    ("timestampType", "INT"),
    ("headers", "ARRAY<STRUCT<key: STRING, value: BINARY>>"),
)
