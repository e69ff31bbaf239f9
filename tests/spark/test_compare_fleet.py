"""Fleet compare (`kdump compare --engine spark`) finds exactly the ranges local compare finds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from corruptions import make_log_dir
from replica_sets import append_foreign, batches, cut_at_batch, write_epochs

pytest.importorskip("pyspark", reason="pyspark not installed; install kdump[spark]")
pytest.importorskip("pyarrow", reason="pyarrow not installed; install kdump[spark]")

from kdump.cli import cli
from kdump.model.partition import PartitionDir
from kdump.ops.replicas.compare import compare_partition
from kdump.spark.compare import COLUMNS, comparison_rows, fleet_compare_frame

pytestmark = pytest.mark.spark


@pytest.fixture
def fleet(corpus_root: Path, tmp_path: Path) -> list[Path]:
    """Three brokers: txn-1 on all three (one lagging, one with an unclean-election conflict),
    c-none-0 on two that agree, timestamps-0 on one only."""
    base = corpus_root / "kafka-3.8.0"
    dirs = [
        make_log_dir(tmp_path / "b1", {"txn-1": base / "txn-1", "c-none-0": base / "c-none-0"}),
        make_log_dir(tmp_path / "b2", {"txn-1": base / "txn-1", "c-none-0": base / "c-none-0"}),
        make_log_dir(tmp_path / "b3", {"txn-1": base / "txn-1", "timestamps-0": base / "timestamps-0"}),
    ]
    for d in dirs:
        for p in d.rglob("*"):
            p.chmod(p.stat().st_mode | 0o200)
    cut_at_batch(dirs[1] / "txn-1", -2)
    cut = cut_at_batch(dirs[2] / "txn-1", -4)
    append_foreign(dirs[2] / "txn-1", base / "timestamps-0", 2, epoch=1)
    write_epochs(dirs[2] / "txn-1", [(0, batches(dirs[0] / "txn-1")[0][1].base_offset or 0), (1, cut)])
    return dirs


def local_rows(fleet: list[Path]) -> list[dict[str, Any]]:
    parts = [d / "txn-1" for d in fleet]
    result = compare_partition([PartitionDir.load(p) for p in parts], [str(p) for p in parts])
    return comparison_rows(result)


def key(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[name] for name, _ in COLUMNS)


def test_fleet_rows_are_local_rows(spark: Any, fleet: list[Path]) -> None:
    frame = fleet_compare_frame(spark, [str(d) for d in fleet])
    assert frame.columns == [name for name, _ in COLUMNS]
    rows = [r.asDict() for r in frame.collect()]
    expected = local_rows(fleet)
    assert expected, "the fleet was built to diverge"
    assert sorted(map(key, rows)) == sorted(map(key, expected))
    assert {r["kind"] for r in rows} == {"lag", "conflict"}
    assert {r["partition_dir"] for r in rows} == {"txn-1"}
    # "which partitions of which brokers disagree, and by how many records" is one query.
    totals = frame.groupBy("topic", "replica_a", "replica_b").sum("records_a", "records_b").collect()
    assert len(totals) == 3


def test_cli_engine_spark(spark: Any, fleet: list[Path]) -> None:
    runner = CliRunner()
    result = runner.invoke(
        cli, ["compare", "--engine", "spark", "--format", "json", *map(str, fleet)], catch_exceptions=False
    )
    assert result.exit_code == 1, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert {r["type"] for r in rows} == {"fleet-divergence"}
    assert sorted(key(r) for r in rows) == sorted(map(key, local_rows(fleet)))
    assert "no other replica of timestamps-0" in result.stderr
