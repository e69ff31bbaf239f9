"""`records.parquet` read by Spark: the rows of the `kdump` source, and what Spark's `kafka` sink takes.

No Kafka broker runs in the tests, so the sink itself is not exercised: the columns the replay
snippet hands it are checked against the types its writer validates (`KafkaWriter.validateQuery`:
topic string, key and value binary, headers `array<struct<key: string, value: binary>>`,
partition int).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from corruptions import copy_tree, flip_body_byte

from kdump.model.partition import PartitionDir
from kdump.ops.salvage.output import salvage
from kdump.render.salvage import record_lines
from kdump.spark.schema import KAFKA_COLUMNS, column_names

pytestmark = pytest.mark.spark


def test_parquet_rows_are_the_kdump_sources_rows_minus_the_damage(
    spark: Any, corpus_root: Path, tmp_path: Path
) -> None:
    from pyspark.sql.types import ArrayType, BinaryType, IntegerType, StringType, StructField, StructType

    part = copy_tree(corpus_root / "kafka-3.8.0" / "txn-1", tmp_path / "in" / "txn-1")
    log = sorted(part.glob("*.log"))[0]
    flip_body_byte(3).apply(log)
    result = salvage(PartitionDir.load(part), tmp_path / "out", record_line=record_lines())
    lost = result.plan.lost_offsets
    assert lost

    salvaged = spark.read.parquet(str(result.out / "records.parquet"))
    cols = column_names(KAFKA_COLUMNS)
    source = spark.read.format("kdump").load(str(part)).where("crcOk")
    for first, last in lost:
        source = source.where(f"offset < {first} OR offset > {last}")
    ours = sorted(salvaged.select(*cols).collect(), key=lambda r: r.offset)
    theirs = sorted(source.select(*cols).collect(), key=lambda r: r.offset)
    assert ours == theirs
    assert salvaged.where("isControl").count() == result.control_records > 0

    replay = salvaged.where("NOT isControl").select("key", "value", "headers", "topic", "partition")
    types = {f.name: f.dataType for f in replay.schema.fields}
    assert types == {
        "key": BinaryType(),
        "value": BinaryType(),
        "headers": ArrayType(
            StructType([StructField("key", StringType(), True), StructField("value", BinaryType(), True)]),
            True,
        ),
        "topic": StringType(),
        "partition": IntegerType(),
    }
