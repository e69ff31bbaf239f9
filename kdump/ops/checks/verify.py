"""`verify`: every integrity check over segments, partitions and log dirs, in parallel.

Segments are checked independently (`check_segment`, spread over a process pool); the checks that
span segments (overlaps, transaction index, leader epochs, snapshots, leftovers) then run per
partition over the segments' results. Nothing is written anywhere.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kdump.findings import Finding, Severity, make_finding
from kdump.formats.filenames import parse_partition_dir_name
from kdump.model.entries import BROKER_LEFTOVER_KINDS, file_kind, leftover_finding
from kdump.model.log_dir import Target, expand
from kdump.model.partition import PartitionDir
from kdump.model.segment import Segment
from kdump.ops.checks.continuity import check_offset_holes, check_overlaps, cleanup_policy, salvage_first
from kdump.ops.checks.epochs import check_leader_epochs
from kdump.ops.checks.open_txns import check_open_transactions
from kdump.ops.checks.report import PartitionReport as PartitionReport
from kdump.ops.checks.report import VerifyOptions as VerifyOptions
from kdump.ops.checks.report import add_sums
from kdump.ops.checks.segment import SegmentResult, check_segment
from kdump.ops.checks.stale_index import lazy_active_index, soften_recovered_indexes
from kdump.ops.checks.state import TEXT_KINDS, check_snapshot, check_text_state
from kdump.ops.checks.strays import find_strays
from kdump.ops.checks.swaps import losing_swaps
from kdump.ops.checks.time_index import check_closed_time_indexes
from kdump.ops.checks.transactions import check_transactions
from kdump.ops.tiered.partitions import LogStartCheckpoints, TieredContext, tiered_facts
from kdump.store.queries import listing_findings, partition_listing_findings

if TYPE_CHECKING:
    from kdump.ops.metadata.stray import ImagesBeside

# Below this much log data a process pool costs more than it saves.
PARALLEL_THRESHOLD_BYTES = 16 << 20

Progress = Callable[[int], None]


Unit = tuple[Target, PartitionDir | None, list[Segment]]
Plan = list[tuple[Target, list[Unit]]]


def plan_verify(
    targets: Iterable[Target], seen: set[Path] | None = None, dirs: set[Path] | None = None
) -> Plan:
    """Verify's units, in order, per target (directories of log dirs expanded): each directory and
    partition directory (reached twice, by a path given twice or nested paths, only once: `seen`
    and `dirs` hold those already planned), or the segment(s) of a file given alone."""
    seen = set() if seen is None else seen
    dirs = set() if dirs is None else dirs
    plans: Plan = []
    for target in expand(list(targets)):
        if target.kind != "file" and target.path.resolve() in dirs:
            continue  # a directory reached twice (given alone and inside another) is listed once
        dirs.add(target.path.resolve())
        units: list[Unit] = []
        if target.kind == "file":
            units.append((target, None, list(target.segments)))
        for part in target.partitions():
            key = part.path.resolve()
            if key in seen:
                continue
            seen.add(key)
            units.append((target, part, part.segments))
        plans.append((target, units))
    return plans


def verify_targets(
    targets: Iterable[Target],
    options: VerifyOptions,
    progress: Progress | None = None,
    tiered: TieredContext | None = None,
) -> Iterator[PartitionReport]:
    """Verify every target; yields one report per partition (or per file given alone), in order,
    then one per log dir (and directory of log dirs) rolling up the partitions under it. `tiered`
    says where tiered partitions' configs and remote metadata are (default: each one's log dir)."""
    targets = list(targets)
    for target in targets:
        # What listing a stored tree found wrong (a damaged tarball) is a report of its own, first.
        damage = listing_findings(target.path, partitions=[p.path for p in target.partitions()])
        if damage:
            yield PartitionReport(target.given, "file", damage)
    plans = plan_verify(targets)
    yield from assemble(plans, _leaf_reports(plans, options, progress), options, tiered)


def _leaf_reports(
    plans: Plan, options: VerifyOptions, progress: Progress | None
) -> Iterator[PartitionReport]:
    """Each unit's report, in plan order: whole units dealt to workers when there are many of them
    (`kdump.ops.checks.units`), else segment by segment (on every core when they are big enough)."""
    units = [u for _, us in plans for u in us]
    images: ImagesBeside = {}  # each log dir's metadata image, replayed once (per process) for its partitions
    jobs = options.jobs or os.cpu_count() or 1
    if jobs > 1 and len(units) > 1:
        from kdump.ops.checks import units as dealt

        weights = [_unit_weight(u) for u in units]
        if dealt.worth_dealing(weights, jobs) and sum(weights) >= PARALLEL_THRESHOLD_BYTES:
            reports = dealt.reports_on_workers(
                units, weights, jobs, functools.partial(_report_unit, options, images)
            )
            if reports is not None:
                for report in reports:
                    if progress is not None:
                        progress(report.log_bytes)
                    yield report
                return
    results = iter(check_segments([s for *_, segs in units for s in segs], options, progress))
    for t, part, segs in units:
        yield unit_report(t, part, [next(results) for _ in segs], images)


def _unit_weight(unit: Unit) -> int:
    from kdump.ops.checks.units import UNIT_COST

    target, part, segs = unit
    return (part.log_bytes if part is not None else target.log_bytes) + UNIT_COST * (1 + len(segs))


def _report_unit(options: VerifyOptions, images: ImagesBeside, unit: Unit) -> PartitionReport:
    target, part, segs = unit
    return unit_report(
        target, part, [_check_one((s, options.deep, options.max_bytes, False, True)) for s in segs], images
    )


def unit_report(
    target: Target | None,
    part: PartitionDir | None,
    results: Sequence[SegmentResult],
    images: ImagesBeside | None = None,
) -> PartitionReport:
    """The report of one unit of a plan, from its segments' results. The target is read only for a
    file given alone (`part` None): a partition's report needs nothing of the log dir holding it."""
    if part is None:
        assert target is not None, "a file given alone is reported from its target"
        return file_report(target, results)
    report = partition_report(part, results, str(part.path), images)
    report.log_bytes = part.log_bytes
    return report


def assemble(
    plans: Plan,
    leaves: Iterator[PartitionReport],
    options: VerifyOptions,
    tiered: TieredContext | None = None,
    rollups: dict[Path, PartitionReport] | None = None,
) -> Iterator[PartitionReport]:
    """The reports of a plan, in order: each unit's (`leaves`, in plan order) with its coverage and
    tiered storage judged, then each directory target's roll-up (kept in `rollups`, by path, for the
    directory of log dirs holding it)."""
    rollups = {} if rollups is None else rollups
    ctx, starts = tiered if tiered is not None else TieredContext(), LogStartCheckpoints()
    for target, units in plans:
        done: list[PartitionReport] = []
        for unit_target, part, _ in units:
            report = next(leaves)
            report.tiered = tiered_facts(part, unit_target.log_dir_path, ctx, starts) if part else None
            report.findings.extend(report.tiered.gaps if report.tiered is not None else ())
            account(report, options)
            if target.kind == "partition":
                report.taken_as = target.taken_as()
                _nothing_to_check(report, options, partitions=1)
            done.append(report)
            yield report
        if target.kind in ("file", "partition"):
            continue
        children = [rollups.get(c.path.resolve()) for c in target.children]
        rollup = _rollup(target, done, children, options)
        rollups[target.path.resolve()] = rollup
        yield rollup


def account(report: PartitionReport, options: VerifyOptions) -> None:
    """Say when a leaf checked less than it held, unless --max-bytes asked for less."""
    report.limited = options.max_bytes is not None and report.checked_bytes < report.log_bytes
    if report.checked_bytes < report.log_bytes and not report.limited:
        report.findings.append(
            make_finding(
                "incomplete-check",
                report.label,
                f"checked {report.checked_bytes} of the {report.log_bytes} log bytes listed",
            )
        )


def _rollup(
    target: Target,
    leaves: list[PartitionReport],
    children: list[PartitionReport | None],
    options: VerifyOptions,
) -> PartitionReport:
    report = rollup_head(target, list(target.problems), target.taken_as())
    parts = [r for r in leaves if r.kind == "partition"] + [c for c in children if c is not None]
    # A formatted log dir with no partition (meta.properties, bootstrap.checkpoint) is a new or idle
    # broker's: healthy, as a log dir whose partitions hold only empty segments is.
    report.recognised = bool(target.log_dir_files) or any(r.recognised for r in parts)
    add_up(report, parts, rollup_check(target, options))
    return report


def rollup_check(target: Target, options: VerifyOptions) -> Callable[[PartitionReport], None] | None:
    """What judges a directory target's sums (none for a remote index cache given alone)."""
    if target.remote_index_cache == target.path:  # given on its own: no partition to miss
        return None
    return lambda r: _nothing_to_check(r, options, r.partitions)


def rollup_head(target: Target, problems: list[Finding], taken_as: str) -> PartitionReport:
    """A directory target's report before its partitions' counts: its own entries' findings."""
    report = PartitionReport(str(target.path), target.kind, problems, taken_as=taken_as)
    if target.kind == "log-dir":
        report.findings.extend(_check_log_dir_files(target))
    cache_alone = target.remote_index_cache == target.path  # given on its own: no partition to miss
    if target.remote_index_cache is not None:
        from kdump.ops.checks.remote_cache import remote_index_cache_report

        found, taken_as = remote_index_cache_report(target.remote_index_cache)
        report.findings.extend(found)
        report.taken_as = taken_as if cache_alone else report.taken_as
    return report


def add_up(
    report: PartitionReport, parts: Sequence[PartitionReport], check: Callable[[PartitionReport], None] | None
) -> None:
    """Add the counts under a roll-up to it; `check` judges the sums before the findings are counted."""
    under = dict.fromkeys(Severity, 0)
    for r in parts:
        add_counts(report, r, under)
    close_counts(report, under, check)


def add_counts(report: PartitionReport, r: PartitionReport, under: dict[Severity, int]) -> None:
    """Add one report's counts to a roll-up's, and its findings by severity to `under`."""
    add_sums(report, r)
    if r.is_leaf:
        # `total` of a leaf is its own findings by severity: counted in one pass over them (a
        # clean partition has none), not one pass per severity.
        for f in r.findings:
            under[Severity(f.severity)] += 1
        return
    for sev in Severity:
        under[sev] += r.total(sev)


def close_counts(
    report: PartitionReport, under: dict[Severity, int], check: Callable[[PartitionReport], None] | None
) -> None:
    """Judge a roll-up's sums (`check`), then count the findings under it (`under`) with its own."""
    if check is not None:
        check(report)
    for sev in Severity:
        report.under[sev] = report.count(sev) + under[sev]


def _nothing_to_check(report: PartitionReport, options: VerifyOptions, partitions: int) -> None:
    """A path where nothing a broker writes was recognised fails: a gate must not pass on an empty or
    wrong path.

    What a healthy broker keeps passes however little it holds: a freshly formatted log dir
    (`meta.properties`, `bootstrap.checkpoint`), partitions of new topics or idle followers (an empty
    active segment, state files only). `allow_empty` also accepts partition directories that hold
    nothing at all, never a path with no partition and no file of a broker's.
    """
    if report.recognised or (partitions and options.allow_empty):
        return
    if partitions == 0:
        why = "no partition directory and no file a broker writes"
    else:
        dirs = f"{partitions} partition directories" if partitions > 1 else "a partition directory"
        why = f"{dirs} but no file a broker writes"
    report.findings.append(
        make_finding(
            "nothing-to-check",
            report.label,
            f"{report.label} holds {why}: nothing to check"
            + ("" if partitions == 0 else " (--allow-empty accepts that)"),
        )
    )


def _check_log_dir_files(target: Target) -> list[Finding]:
    out: list[Finding] = []
    for p in target.log_dir_files:
        kind = file_kind(p)
        if kind in TEXT_KINDS:
            out.extend(check_text_state(p, kind))
    return out


def _check_one(args: tuple[Segment, bool, int | None, bool, bool]) -> SegmentResult:
    segment, deep, max_bytes, for_rebuild, judge_indexes = args
    if for_rebuild:
        # reindex needs the batches; the judgement of the index files only when it rewrites just
        # the ones verify finds wrong.
        return check_segment(
            segment, deep=deep, max_bytes=max_bytes, keep_spans=True, check_indexes=judge_indexes
        )
    return check_segment(segment, deep=deep, max_bytes=max_bytes)


def _segment_size(s: Segment) -> int:
    try:
        return s.log.stat().st_size if s.log is not None else 0
    except OSError:
        return 0


def check_segments(
    segments: Sequence[Segment],
    options: VerifyOptions,
    progress: Progress | None = None,
    *,
    for_rebuild: bool = False,
    judge_indexes: bool = True,
) -> Iterator[SegmentResult]:
    """Check segments in order, on every core when there is enough data to pay for the processes."""
    jobs = options.jobs or os.cpu_count() or 1
    tasks = [(s, options.deep, options.max_bytes, for_rebuild, judge_indexes) for s in segments]
    sizes = [_segment_size(s) for s in segments]
    if jobs > 1 and len(tasks) > 1 and sum(sizes) >= PARALLEL_THRESHOLD_BYTES:
        from kdump.ops.common.workers import process_pools_work, worker_pool

        # Without /dev/shm (a bare chroot) no pool can be made: the same results, in this process.
        if process_pools_work():
            # On Ctrl-C or an early stop the workers are terminated, not waited for.
            with worker_pool(min(jobs, len(tasks))) as pool:
                for result, size in zip(pool.map(_check_one, tasks), sizes, strict=True):
                    if progress is not None:
                        progress(size)
                    yield result
            return
    for task, size in zip(tasks, sizes, strict=True):
        result = _check_one(task)
        if progress is not None:
            progress(size)
        yield result


def tally(report: PartitionReport, results: Sequence[SegmentResult]) -> None:
    """Add segments' findings and counts to a report."""
    for r in results:
        report.findings.extend(r.findings)
        s = r.summary
        if s is None:
            continue
        report.checked_bytes += s.checked_bytes
        report.segments += 1
        report.batches += s.batch_count
        report.records += s.record_count
        report.uncounted += s.uncounted_batches
        report.size += s.size
        report.valid_bytes += s.valid_bytes
        if s.first_offset is not None and report.first_offset is None:
            report.first_offset, report.first_offset_known = s.first_offset, s.first_offset_known
        if s.last_offset is not None:
            report.last_offset = s.last_offset


def file_report(target: Target, results: Sequence[SegmentResult]) -> PartitionReport:
    """A report for one file given on its own."""
    report = PartitionReport(target.given, "file", list(target.problems), taken_as=target.taken_as())
    report.log_bytes = target.log_bytes
    tally(report, results)
    if results or target.problems:
        report.findings = salvage_first(report.findings, results)
        if target.note is not None or parse_partition_dir_name(target.path.resolve().parent.name) is None:
            # A segment outside a partition (a copy): its repairs name the file, not the directory.
            report.findings = [
                replace(f, details={**f.details, "repair_path": target.given}) for f in report.findings
            ]
        return report
    kind = file_kind(target.path)
    if kind == "snapshot":
        report.findings.extend(check_snapshot(target.path))
    elif kind in TEXT_KINDS:
        report.findings.extend(check_text_state(target.path, kind))
    elif kind not in BROKER_LEFTOVER_KINDS:  # the broker starts with those beside it: legal
        report.findings.append(
            make_finding(
                "nothing-to-check",
                target.given,
                f"{target.given} is {target.taken_as()}: kdump has nothing to check it against",
            )
        )
    return report


_MISSING = frozenset({"index-missing", "time-index-missing"})


# Below this much log data the active segment may have no .index yet (the broker default of
# `index.interval.bytes`; a topic that raises it only makes more segments legal, and is judged strictly).
def partition_report(
    part: PartitionDir, results: Sequence[SegmentResult], label: str, images: ImagesBeside | None = None
) -> PartitionReport:
    """Run the partition-level checks over the segments' results (`images`: the run's metadata images
    by log dir, see `topic_id_findings`)."""
    report = PartitionReport(label, "partition", list(part.problems), recognised=part.recognised)
    tally(report, results)
    # An index there but unreadable is that (unreadable-file), not missing: no reindex hint for it.
    unread = {x.file for x in part.problems if x.code == "unreadable-file"}
    unread.update(lazy_active_index(part, results))
    report.findings = [x for x in report.findings if not (x.code in _MISSING and x.file in unread)]
    strays = find_strays(results)
    if strays:
        # A stray copy is the whole problem: its files' own findings (offsets below its base, its
        # indexes, its name) and the overlap and holes it makes are what moving it out undoes.
        gone = {str(p) for st in strays for p in st.files}
        report.findings = [x for x in report.findings if x.file not in gone]
        report.findings.extend(st.finding for st in strays)
        results = [r for r in results if all(r is not st.result for st in strays)]
    f = report.findings
    f.extend(check_overlaps(results))
    f.extend(check_offset_holes(part, results))
    f.extend(check_transactions(results))
    f.extend(check_open_transactions(part, results))
    stale = list(check_closed_time_indexes(results, part.path))
    if stale:  # its zero tail is no preallocation the broker trims: drop the info that says it is
        files = {s.file for s in stale}
        f[:] = [x for x in f if not (x.code == "index-preallocated-tail" and x.file in files)]
        f.extend(stale)
    f.extend(check_leader_epochs(part, results))
    swaps = losing_swaps(part, results, cleanup_policy(part, results)[0]) if part.leftovers else []
    losing = {str(p) for sw in swaps for p in sw.files}
    f.extend(leftover_finding(p) for p in part.leftovers if str(p) not in losing)
    f.extend(sw.finding for sw in swaps)
    for p in part.orphan_indexes:
        f.append(
            make_finding("orphan-index", str(p), f"{p.name} has no {p.name.split('.')[0]}.log beside it")
        )
    for snap in part.snapshots.values():
        f.extend(check_snapshot(snap))
    f.extend(partition_listing_findings(part.path))
    if part.partition_metadata is not None:
        f.extend(check_text_state(part.partition_metadata, "partition-metadata", probed=True))
        if part.in_kraft_log_dir():  # a KRaft log dir: ids are checkable
            from kdump.ops.metadata.stray import topic_id_findings

            f.extend(topic_id_findings(part, images))
    report.findings = salvage_first(soften_recovered_indexes(f, results, part.path), results)
    return report
