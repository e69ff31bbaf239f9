"""The data source decodes keys and values as `kdump dump` does, and filters with `where`."""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

pytest.importorskip("fastavro", reason="decoding payloads needs the payloads extra")

from builders import SegmentBuilder
from payload_producer import schema_value, schemas_key

from kdump.formats.constants import Codec
from kdump.formats.records import NewRecord

AVRO = {
    "type": "record",
    "name": "P",
    "fields": [{"name": "n", "type": "long"}, {"name": "who", "type": "string"}],
}


def _value(i: int) -> bytes:
    import fastavro

    b = io.BytesIO()
    fastavro.schemaless_writer(b, fastavro.parse_schema(AVRO), {"n": i, "who": f"w{i % 3}"})
    return b"\x00\x00\x00\x00\x09" + b.getvalue()


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    root = tmp_path / "logdir"
    seg = SegmentBuilder()
    for start in range(0, 60, 20):
        seg.add_v2(
            [
                NewRecord(struct.pack(">i", i), _value(i), 1_700_000_000_000 + i, ())
                for i in range(start, start + 20)
            ],
            codec=Codec.ZSTD,
        )
    seg.add_v2([NewRecord(b"k", b"\x00\x00\x00\x00\x09\xff", 1_700_000_000_100, ())])  # does not decode
    seg.write(root / "orders-0")
    schemas = SegmentBuilder()
    key = schemas_key("SCHEMA", "orders-value", 1)
    value = schema_value("orders-value", 1, 9, "AVRO", [], json.dumps(AVRO), False)
    schemas.add_v2([NewRecord(key, value, 1_700_000_000_000, ())])
    schemas.write(root / "_schemas-0")
    return root


def test_decoded_columns_equal_dump(spark: Any, log_dir: Path, kdump: Callable[..., Result]) -> None:
    df = (
        spark.read.format("kdump")
        .option("valueType", "registry")
        .option("keyType", "int32")
        .load(str(log_dir / "orders-0"))
    )
    assert df.columns[-4:] == ["keySchemaId", "valueSchemaId", "keyJson", "valueJson"]
    rows = sorted(df.select("offset", "keySchemaId", "valueSchemaId", "keyJson", "valueJson").collect())
    dumped = [
        json.loads(line)
        for line in kdump(
            "dump",
            "--format",
            "json",
            "--value-type",
            "registry",
            "--key-type",
            "int32",
            str(log_dir / "orders-0"),
        ).stdout.splitlines()
    ]
    records = [r for r in dumped if r["type"] == "record"]
    assert len(rows) == len(records) == 61
    for row, rec in zip(rows, records, strict=True):
        assert row["offset"] == rec["offset"]
        assert row["valueSchemaId"] == rec["value_schema_id"] == 9
        assert row["keySchemaId"] is None
        if rec["key_format"] is None:
            assert row["keyJson"] is None  # the last key is no int32: raw
        else:
            assert json.loads(row["keyJson"]) == rec["key"]
        if rec["value_format"] is None:
            assert row["valueJson"] is None  # shown raw: the one that does not decode
        else:
            assert json.loads(row["valueJson"]) == rec["value"]


def test_where_keeps_what_dump_keeps(spark: Any, log_dir: Path) -> None:
    df = (
        spark.read.format("kdump")
        .option("valueType", "registry")
        .option("where", '.value.who == "w1" and .value.n > 30')
        .load(str(log_dir))
    )
    got = sorted(r["offset"] for r in df.select("offset").collect())
    assert got == [i for i in range(31, 60) if i % 3 == 1]
