"""Fleet verify: `kdump verify --engine spark`, the checks of local verify spread over a Spark cluster.

The work is cut as local verify cuts it (`kdump.ops.checks.verify.verify_targets`): every segment is
checked on its own by `check_segment`, then the partition-level checks run over a unit's results
(`partition_report` / `file_report`, through `unit_report`). The units are dealt into tasks of
nearly equal bytes, `TASKS_PER_CORE` per core of the session (never under `MIN_TASK_BYTES`),
biggest first: a unit that fits in a task is checked whole there, report included; a unit bigger
than a task (a partition of many large segments) is spread segment by segment over tasks, and its
results are grouped back (a shuffle keyed by the unit's index) for its report, on the executors
too. Spark's cost per task (tens of milliseconds) is paid a few times per core, not once per
segment, and a fleet of partitions that each fit in a task needs no shuffle at all. The driver
only lists the directories and collects the reports, so the findings, their order and the summary
are those of local verify on the same data.

Paths are opened by the executors as given: on a cluster they must be absolute and readable there
(a shared or mounted filesystem), and the executors need kdump installed (`PYSPARK_PYTHON`).
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from kdump.model.log_dir import Target
from kdump.model.partition import PartitionDir
from kdump.model.segment import Segment
from kdump.ops.checks.segment import SegmentResult, check_segment
from kdump.ops.checks.verify import PartitionReport, Plan, VerifyOptions, assemble, plan_verify, unit_report
from kdump.spark.options import DEFAULT_PACK_BYTES
from kdump.spark.session import spark_session
from kdump.store.locations import archive_split, is_url
from kdump.store.queries import listing_findings

__all__ = ["FleetUnit", "fleet_units", "run_fleet_verify", "write_output"]

# More tasks than this and Spark puts several in one partition (its per-task overhead adds up).
MAX_SEGMENT_TASKS = 20_000

# Tasks per core a fleet's segments are dealt into: enough for cores that finish early to take
# another, few enough that Spark's cost per task (tens of milliseconds, a Python worker's round
# trip) stays small beside checking: one task per 10 MB segment made a fleet of 1,000 of them
# on 2 cores spend more time in Spark than in the checks.
TASKS_PER_CORE = 4
# ... but no task of fewer bytes than the data source packs into one (its `packBytes` default).
MIN_TASK_BYTES = DEFAULT_PACK_BYTES

# (label, kind, path, partition directory or None, segments): one verify report each.
FleetUnit = tuple[str, str, Target, PartitionDir | None, list[Segment]]
# What the report of a unit is built from besides its segments' results: the target only for a file
# given alone. A log dir's target lists all its partitions; sent with each of them, it made the
# shuffle carry (and the executors unpickle) the whole log dir once per partition.
_Meta = tuple[str, str, Target | None, PartitionDir | None]
_T = TypeVar("_T")


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


# Work items a task is dealt: a whole unit (its segments checked and its report built in the same
# task), or one segment of a unit too big for one task (its report built after a shuffle).
_Whole = tuple[int, _Meta, list[Segment]]  # (unit, meta, segments)
_Piece = tuple[int, int, Segment]  # (unit, place in the unit, segment)
# What a task hands on, keyed by unit: (-2, its report), (-1, its meta) or (place, segment result).
_Tagged = tuple[int, tuple[int, Any]]

# Threads per task for work at URLs (a compressed tarball's members share one stream: never).
URL_THREADS = 8


def _remember(trees: Any) -> None:
    """Executor side: adopt the broadcast stored trees, before any task's path is read."""
    if trees is not None:
        from kdump.store.trees import remember

        for tree in trees.value:
            remember(tree)


def _map_maybe_threaded(fn: Any, items: list[Any], at_url: bool) -> list[Any]:
    """`fn` over `items` in order; by a few threads at once when they are all at URLs, where each
    file costs requests whose latency would otherwise add up (the scanning still takes turns)."""
    if len(items) > 1 and at_url:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=URL_THREADS) as pool:
            return list(pool.map(fn, items))
    return [fn(item) for item in items]


def _check_tasks(
    items: Iterable[_Whole | _Piece], deep: bool, max_bytes: int | None, trees: Any = None
) -> list[_Tagged]:
    """Executor side: the work of one task. A whole unit's segments are checked and its report
    built here; a lone segment's result is keyed by its unit and tagged with its place in it."""
    _remember(trees)
    work = list(items)

    def check(segment: Segment) -> SegmentResult:
        return check_segment(segment, deep=deep, max_bytes=max_bytes)

    def run(item: _Whole | _Piece) -> _Tagged:
        if isinstance(item[2], Segment):
            unit, index, segment = item
            return unit, (index, check(segment))
        unit, meta, segments = item
        _label, _kind, target, part = meta
        results = _map_maybe_threaded(check, list(segments), len(work) == 1 and _meta_at_url(meta))
        return unit, (-2, unit_report(target, part, results))

    return _map_maybe_threaded(run, work, all(_item_at_url(item) for item in work))


def _item_at_url(item: _Whole | _Piece) -> bool:
    if isinstance(item[2], Segment):
        return _is_plain_url(str(item[2].log))
    meta: _Meta = item[1]
    return _meta_at_url(meta)


def _meta_at_url(meta: _Meta) -> bool:
    _label, _kind, target, part = meta
    where = part.path if part is not None else target.path if target is not None else ""
    return _is_plain_url(str(where))


def _is_plain_url(location: str) -> bool:
    """At a URL and not inside a tarball (a compressed tarball's members share one stream)."""
    return is_url(location) and archive_split(location) is None


def _unit_meta(item: tuple[int, _Meta]) -> _Tagged:
    unit, meta = item
    return unit, (-1, meta)


def _build_report(item: tuple[int, Iterable[tuple[int, Any]]]) -> tuple[int, PartitionReport]:
    """Executor side: a unit's partition-level checks over its segments' results, in segment order
    (a unit checked whole arrives with its report built)."""
    unit, tagged = item
    ordered = sorted(tagged, key=lambda t: t[0])
    if ordered[0][0] == -2:
        report: PartitionReport = ordered[0][1]
        return unit, report
    meta: _Meta = ordered[0][1]
    results: list[SegmentResult] = [r for i, r in ordered[1:]]
    _label, _kind, target, part = meta
    return unit, unit_report(target, part, results)


def _build_reports(
    items: Iterable[tuple[int, Iterable[tuple[int, Any]]]], trees: Any = None
) -> list[tuple[int, PartitionReport]]:
    """Executor side: `_build_report` for the units of one Spark partition. Units at URLs are built
    by a few threads at once: their state files (checkpoints, snapshots, metadata) each cost
    requests whose latency would otherwise add up."""
    _remember(trees)
    units = [(unit, list(tagged)) for unit, tagged in items]
    metas = [m for _u, tagged in units for i, m in tagged if i == -1]
    return _map_maybe_threaded(_build_report, units, bool(metas) and all(_meta_at_url(m) for m in metas))


def _segment_size(s: Segment) -> int:
    try:
        return s.log.stat().st_size if s.log is not None else 0
    except OSError:
        return 0


def task_bytes(total: int, parallelism: int) -> int:
    """About how many bytes of segments one task checks: `TASKS_PER_CORE` tasks per core for the
    whole fleet, but no fewer than `MIN_TASK_BYTES`."""
    return max(MIN_TASK_BYTES, -(-total // (max(1, parallelism) * TASKS_PER_CORE)))


def balance(items: Sequence[_T], sizes: Sequence[int], parallelism: int) -> list[tuple[_T, ...]]:
    """Deal `items` into tasks of about `task_bytes` each, biggest first, each to the task with the
    fewest bytes so far: the tasks come out of nearly equal size, in falling size, and an item of
    `task_bytes` or more has a task of its own."""
    if not items:
        return []
    total = sum(sizes)
    count = max(1, min(len(items), -(-total // task_bytes(total, parallelism))))
    bins: list[list[_T]] = [[] for _ in range(count)]
    loads = [(0, k) for k in range(count)]  # a heap of (bytes so far, task)
    for size, k in sorted(((n, k) for k, n in enumerate(sizes)), key=lambda t: -t[0]):
        load, b = heapq.heappop(loads)
        bins[b].append(items[k])
        heapq.heappush(loads, (load + size, b))
    return [tuple(bins[b]) for _load, b in sorted(loads, key=lambda t: -t[0]) if bins[b]]


def work_items(
    units: Sequence[FleetUnit], parallelism: int
) -> tuple[list[tuple[_Whole | _Piece, ...]], set[int]]:
    """The tasks of a fleet verify, and the units spread over several of them (checked segment by
    segment, their reports built after a shuffle). A unit that fits in a task goes whole."""
    sizes = [[_segment_size(seg) for seg in unit[4]] for unit in units]
    limit = task_bytes(sum(map(sum, sizes)), parallelism)
    items: list[_Whole | _Piece] = []
    item_sizes: list[int] = []
    split: set[int] = set()
    for u, ((label, kind, target, part, segments), seg_sizes) in enumerate(zip(units, sizes, strict=True)):
        if sum(seg_sizes) <= limit or len(segments) <= 1:
            items.append((u, _meta(label, kind, target, part), list(segments)))
            item_sizes.append(sum(seg_sizes))
            continue
        split.add(u)
        items.extend((u, i, seg) for i, seg in enumerate(segments))
        item_sizes.extend(seg_sizes)
    return balance(items, item_sizes, parallelism), split


def _meta(label: str, kind: str, target: Target, part: PartitionDir | None) -> _Meta:
    return label, kind, target if part is None else None, part


def verify_units(sc: Any, units: Sequence[FleetUnit], options: VerifyOptions) -> list[PartitionReport]:
    """Run verify over `units` on a SparkContext; the reports come back in unit order."""
    if not units:
        return []
    from kdump.store.paths import StoredPath, trees_sent_apart

    parallelism = max(1, int(sc.defaultParallelism))
    tasks, split = work_items(units, parallelism)
    # The stored trees go once, as a broadcast; each task's paths leave them out.
    trees = {
        id(t): t
        for _label, _kind, target, part, segments in units
        for path in (part.path if part is not None else target.path, *(seg.log for seg in segments))
        if isinstance(path, StoredPath) and (t := path.tree()) is not None
    }
    shared = sc.broadcast(list(trees.values())) if trees else None
    check = partial(_check_tasks, deep=options.deep, max_bytes=options.max_bytes, trees=shared)
    with trees_sent_apart():
        checked = sc.parallelize(tasks, min(len(tasks), MAX_SEGMENT_TASKS)).flatMap(check)
        if not split:
            # Every unit was checked whole: its report is ready, no shuffle.
            return [report for _unit, (_tag, report) in sorted(checked.collect(), key=lambda t: t[0])]
        metas = [(u, _meta(*units[u][:4])) for u in sorted(split)]
        meta_rdd = sc.parallelize(metas, min(len(metas), parallelism)).map(_unit_meta)
    groups = max(1, min(len(units), parallelism * 4))
    build = partial(_build_reports, trees=shared)
    built = checked.union(meta_rdd).groupByKey(groups).mapPartitions(build).collect()
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
