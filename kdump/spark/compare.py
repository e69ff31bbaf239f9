"""Fleet compare: `kdump compare --engine spark LOGDIR...`, one row per divergent range.

The driver lists the log dirs and groups their partition directories by name (the same
topic-partition on every broker that hosts it); each replica set is compared on an executor by
the very function local `kdump compare` uses (`kdump.ops.replicas.compare.compare_partition`), biggest
sets first. What comes back is one flat row per divergent range of each pair of replicas, and one
per range a replica could not read, so "which partitions of which brokers disagree, and by how
many records" is one query over a hundred brokers:

    rows = fleet_compare_frame(spark, ["/mnt/broker1/kafka-logs", "/mnt/broker2/kafka-logs"])
    rows.groupBy("topic").agg(F.sum("records_a") + F.sum("records_b")).show()

As for fleet verify, paths are opened by the executors as given: on a cluster they must be
absolute and readable there (a shared or mounted filesystem, an object store mounted as one),
and the executors need kdump installed (`PYSPARK_PYTHON`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kdump.errors import KdumpError
from kdump.formats.filenames import parse_partition_dir_name
from kdump.model.log_dir import discover
from kdump.model.partition import PartitionDir
from kdump.ops.replicas.compare import PartitionComparison, compare_partition, group_replicas

__all__ = [
    "COLUMNS",
    "FleetComparison",
    "comparison_rows",
    "fleet_compare_frame",
    "fleet_groups",
    "run_fleet_compare",
]

# (name, Spark SQL type) of each column of a row.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("topic", "string"),
    ("partition", "int"),
    ("partition_dir", "string"),
    ("kind", "string"),
    ("first_offset", "bigint"),
    ("last_offset", "bigint"),
    ("replica_a", "string"),
    ("replica_b", "string"),
    ("records_a", "bigint"),
    ("records_b", "bigint"),
    ("leader_epochs_a", "array<int>"),
    ("leader_epochs_b", "array<int>"),
    ("reason", "string"),
)

Group = tuple[str, list[str]]


@dataclass(frozen=True, slots=True)
class FleetComparison:
    """What a fleet compare found: the rows, notes on what was left out, and whether a path given
    could not be read at all."""

    rows: list[dict[str, Any]]
    notes: list[str]
    unreadable: bool


def fleet_groups(paths: Sequence[str]) -> tuple[list[Group], list[str], bool]:
    """Replica sets across the log dirs (partition paths by name), notes on what was left out, and
    whether some path could not be read."""
    targets = []
    notes = []
    for p in paths:
        try:
            targets.append(discover(p))
        except KdumpError as exc:
            notes.append(str(exc))
    groups, more = group_replicas(targets)
    named = [(name, [str(d.path) for d in dirs]) for name, dirs in groups]
    return named, notes + more, len(targets) < len(paths)


def comparison_rows(result: PartitionComparison) -> list[dict[str, Any]]:
    """One flat row per divergent range (per pair of replicas) and per unreadable range."""
    parsed = parse_partition_dir_name(result.name)
    topic = parsed.topic if parsed is not None else None
    number = parsed.partition if parsed is not None else None
    rows = []
    for d in result.divergences:
        a, b = d.sides
        rows.append(
            {
                "topic": topic,
                "partition": number,
                "partition_dir": result.name,
                "kind": d.kind,
                "first_offset": d.first_offset,
                "last_offset": d.last_offset,
                "replica_a": a.replica,
                "replica_b": b.replica,
                "records_a": a.records,
                "records_b": b.records,
                "leader_epochs_a": list(a.epochs),
                "leader_epochs_b": list(b.epochs),
                "reason": d.reason,
            }
        )
    for u in result.uncomparable:
        rows.append(
            {
                "topic": topic,
                "partition": number,
                "partition_dir": result.name,
                "kind": "uncomparable",
                "first_offset": u.first_offset,
                "last_offset": u.last_offset,
                "replica_a": u.replica,
                "replica_b": None,
                "records_a": None,
                "records_b": None,
                "leader_epochs_a": [],
                "leader_epochs_b": [],
                "reason": f"{u.reason} in {u.file}",
            }
        )
    for f in result.findings:
        if f.code == "topic-id-mismatch":
            # Not replicas of one partition: never compared, never taken for agreement.
            rows.append(
                {
                    "topic": topic,
                    "partition": number,
                    "partition_dir": result.name,
                    "kind": "topic-id-mismatch",
                    "first_offset": None,
                    "last_offset": None,
                    "replica_a": f.details["other_replica"],
                    "replica_b": f.details["replica"],
                    "records_a": None,
                    "records_b": None,
                    "leader_epochs_a": [],
                    "leader_epochs_b": [],
                    "reason": f.message,
                }
            )
    return rows


def _compare_group(group: Group) -> list[dict[str, Any]]:
    """Executor side: compare one replica set."""
    _name, paths = group
    return comparison_rows(compare_partition([PartitionDir.load(Path(p)) for p in paths], paths))


def _group_size(group: Group) -> int:
    total = 0
    for p in group[1]:
        try:
            total += sum(e.stat().st_size for e in os.scandir(p) if e.name.endswith(".log"))
        except OSError:
            continue
    return total


def _rdd(spark: Any, paths: Sequence[str]) -> tuple[Any, list[str], bool]:
    groups, notes, unreadable = fleet_groups(paths)
    groups.sort(key=lambda g: -_group_size(g))
    sc = spark.sparkContext
    slices = max(1, min(len(groups), int(sc.defaultParallelism) * 4))
    return sc.parallelize(groups, slices).flatMap(_compare_group), notes, unreadable


def fleet_compare_frame(spark: Any, paths: Sequence[str]) -> Any:
    """A DataFrame of `COLUMNS`: one row per divergent or unreadable range across the log dirs."""
    rdd, _notes, _unreadable = _rdd(spark, paths)
    schema = ", ".join(f"{name} {kind}" for name, kind in COLUMNS)
    return spark.createDataFrame(rdd.map(lambda r: tuple(r[name] for name, _ in COLUMNS)), schema)


def run_fleet_compare(paths: Sequence[str], *, master: str | None = None) -> FleetComparison:
    """`kdump compare --engine spark`: the rows, collected on the driver in partition order."""
    from kdump.spark.session import spark_session

    spark, created = spark_session(master, "compare --engine spark")
    try:
        rdd, notes, unreadable = _rdd(spark, paths)
        rows: list[dict[str, Any]] = rdd.collect()
    finally:
        if created:
            spark.stop()
    rows.sort(key=lambda r: (r["partition_dir"], r["replica_a"] or "", r["first_offset"]))
    return FleetComparison(rows, notes, unreadable)
