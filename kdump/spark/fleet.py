"""Fleet verify: `kdump verify --engine spark`, the checks of local verify spread over a Spark cluster.

The work is cut exactly as local verify cuts it (`kdump.ops.verify.verify_targets`): every segment
is checked on its own by `check_segment`, one Spark task per segment (segments under 4 MiB share a
task, as the data source packs them), biggest first. The results are then grouped per partition
directory (a shuffle keyed by the unit's index) and the partition-level checks run on the executors
through the same `partition_report` / `file_report`. The driver only lists the directories and
collects the reports, so the findings, their order and the summary are those of local verify on the
same data.

Paths are opened by the executors as given: on a cluster they must be absolute and readable there
(a shared or mounted filesystem), and the executors need kdump installed (`PYSPARK_PYTHON`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from kdump.model.log_dir import Target
from kdump.model.partition import PartitionDir
from kdump.model.segment import Segment
from kdump.ops.segment_check import SegmentResult, check_segment
from kdump.ops.verify import PartitionReport, Plan, VerifyOptions, assemble, plan_verify, unit_report
from kdump.spark.session import spark_session
from kdump.store.locations import archive_split, is_url
from kdump.store.queries import listing_findings

__all__ = ["FleetUnit", "fleet_units", "run_fleet_verify", "write_output"]

# More tasks than this and Spark puts several in one partition (its per-task overhead adds up).
MAX_SEGMENT_TASKS = 20_000

# (label, kind, path, partition directory or None, segments): one verify report each.
FleetUnit = tuple[str, str, Target, PartitionDir | None, list[Segment]]
_Meta = tuple[str, str, Target, PartitionDir | None]


def fleet_units(plans: Plan) -> list[FleetUnit]:
    """Verify's units, in its order: each partition directory of each target, or a file given alone."""
    units: list[FleetUnit] = []
    for _, plan_units in plans:
        for target, part, segments in plan_units:
            if part is None:
                units.append((target.given, "file", target, None, segments))
            else:
                units.append((str(part.path), "partition", target, part, segments))
    return units


def _check_tasks(
    tasks: Iterable[tuple[int, int, Segment]], deep: bool, max_bytes: int | None, trees: Any = None
) -> list[tuple[int, tuple[int, Any]]]:
    """Executor side: check segments; each result keyed by its unit, tagged with its place in the unit.

    Segments at URLs are checked by a few threads at once: each file costs requests whose latency
    would otherwise add up one after another (the scanning itself still takes turns).
    """
    if trees is not None:
        from kdump.store.trees import remember

        for tree in trees.value:  # before the tasks' paths are read
            remember(tree)
    tasks = list(tasks)

    def check(task: tuple[int, int, Segment]) -> tuple[int, tuple[int, Any]]:
        unit, index, segment = task
        return unit, (index, check_segment(segment, deep=deep, max_bytes=max_bytes))

    if len(tasks) > 1 and all(_at_url(t[2]) for t in tasks):
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=URL_THREADS) as pool:
            return list(pool.map(check, tasks))
    return [check(t) for t in tasks]


# Threads per task for segments at URLs (a compressed tarball's members share one stream: never).
URL_THREADS = 8


def _at_url(segment: Segment) -> bool:
    return _is_plain_url(str(segment.log))


def _is_plain_url(location: str) -> bool:
    """At a URL and not inside a tarball (a compressed tarball's members share one stream)."""
    return is_url(location) and archive_split(location) is None


def _unit_meta(item: tuple[int, _Meta]) -> tuple[int, tuple[int, Any]]:
    unit, meta = item
    return unit, (-1, meta)


def _build_report(item: tuple[int, Iterable[tuple[int, Any]]]) -> tuple[int, PartitionReport]:
    """Executor side: a unit's partition-level checks over its segments' results, in segment order."""
    unit, tagged = item
    ordered = sorted(tagged, key=lambda t: t[0])
    meta: _Meta = ordered[0][1]
    results: list[SegmentResult] = [r for i, r in ordered[1:]]
    _label, _kind, target, part = meta
    return unit, unit_report(target, part, results)


def _build_reports(
    items: Iterable[tuple[int, Iterable[tuple[int, Any]]]],
) -> list[tuple[int, PartitionReport]]:
    """Executor side: `_build_report` for the units of one Spark partition. Units at URLs are built
    by a few threads at once: their state files (checkpoints, snapshots, metadata) each cost
    requests whose latency would otherwise add up."""
    items = list(items)
    if len(items) > 1 and all(_unit_at_url(item) for item in items):
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=URL_THREADS) as pool:
            return list(pool.map(_build_report, items))
    return [_build_report(item) for item in items]


def _unit_at_url(item: tuple[int, Iterable[tuple[int, Any]]]) -> bool:
    meta = next((m for i, m in item[1] if i == -1), None)
    if meta is None:
        return False
    target: Target = meta[2]
    return _is_plain_url(str(target.path))


def _segment_size(s: Segment) -> int:
    try:
        return s.log.stat().st_size if s.log is not None else 0
    except OSError:
        return 0


def verify_units(sc: Any, units: Sequence[FleetUnit], options: VerifyOptions) -> list[PartitionReport]:
    """Run verify over `units` on a SparkContext; the reports come back in unit order."""
    if not units:
        return []
    from kdump.spark.datasource import DEFAULT_PACK_BYTES, pack

    sized = [
        (_segment_size(seg), (u, i, seg)) for u, unit in enumerate(units) for i, seg in enumerate(unit[4])
    ]
    # Biggest segments first, so a long task does not start last; small ones share a task.
    sized.sort(key=lambda t: -t[0])
    tasks = pack([t for _, t in sized], [n for n, _ in sized], DEFAULT_PACK_BYTES)
    metas = [(u, (label, kind, target, part)) for u, (label, kind, target, part, _segs) in enumerate(units)]
    parallelism = max(1, int(sc.defaultParallelism))
    meta_rdd = sc.parallelize(metas, min(len(metas), parallelism)).map(_unit_meta)
    if tasks:
        from kdump.store.paths import StoredPath, trees_sent_apart

        # The stored trees go once, as a broadcast; each task's paths leave them out.
        trees = {
            id(t): t
            for task in tasks
            for _u, _i, seg in task
            if isinstance(seg.log, StoredPath) and (t := seg.log.tree()) is not None
        }
        shared = sc.broadcast(list(trees.values())) if trees else None
        check = partial(_check_tasks, deep=options.deep, max_bytes=options.max_bytes, trees=shared)
        with trees_sent_apart():
            checked = sc.parallelize(tasks, min(len(tasks), MAX_SEGMENT_TASKS)).flatMap(check)
        tagged = checked.union(meta_rdd)
    else:
        tagged = meta_rdd
    groups = max(1, min(len(units), parallelism * 4))
    built = tagged.groupByKey(groups).mapPartitions(_build_reports).collect()
    return [report for _unit, report in sorted(built, key=lambda t: t[0])]


def run_fleet_verify(
    targets: Sequence[Target], options: VerifyOptions, *, master: str | None = None, output: str | None = None
) -> list[PartitionReport]:
    """Verify every partition of `targets` on Spark; write the findings to `output` when given.

    The reports are those of the local engine: one per partition or file, then the roll-up of
    each log dir, with the same coverage and nothing-to-check judgements.
    """
    plans = plan_verify(targets)
    units = fleet_units(plans)
    spark, created = spark_session(master, "verify --engine spark")
    try:
        leaves = verify_units(spark.sparkContext, units, options)
    finally:
        if created:
            spark.stop()
    reports = list(assemble(plans, iter(leaves), options))
    # What listing a stored tree found wrong (a damaged tarball) is reported first, as local verify does.
    listed = [
        PartitionReport(t.given, "file", f)
        for t in targets
        if (f := listing_findings(t.path, partitions=[p.path for p in t.partitions()]))
    ]
    reports = [*listed, *reports]
    if output is not None:
        write_output(reports, Path(output))
    return reports


def write_output(reports: Sequence[PartitionReport], directory: Path) -> None:
    """Write `findings.parquet`, `findings.jsonl` (verify's JSON rows) and `reports.jsonl` (summaries)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kdump.render.report import finding_rows as json_rows
    from kdump.render.report import report_summary_row
    from kdump.spark.schema import FINDING_COLUMNS, arrow_schema, finding_rows

    directory.mkdir(parents=True, exist_ok=True)
    rows = [row for r in reports for row in finding_rows(r.findings, r.label, r.kind)]
    table = pa.Table.from_pylist(rows, schema=arrow_schema(FINDING_COLUMNS))
    pq.write_table(table, directory / "findings.parquet")
    with open(directory / "findings.jsonl", "w", encoding="utf-8") as fh:
        for r in reports:
            for row in json_rows(r):
                fh.write(json.dumps(row, separators=(",", ":")) + "\n")
    with open(directory / "reports.jsonl", "w", encoding="utf-8") as fh:
        for r in reports:
            fh.write(json.dumps(report_summary_row(r), separators=(",", ":")) + "\n")
