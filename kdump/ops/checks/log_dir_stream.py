"""`verify` of broker log dirs streamed: partitions listed, checked and reported a few at a time.

`verify_targets` plans every partition of every target before it checks one: at 100,000 partitions
the owner spent 12 s listing them, one after the other, and held 300 MB of path and segment objects
until the end. Here a log dir given (or found in a directory of log dirs) is listed by name only
(`discover(lazy=True)`, `Target.entries`: one `readdir`); its partition names are dealt in ranges
to forked workers, each of which lists, checks and reports its own partitions (the partition checks
and the tiered facts included) and sends back only the reports, in order. The owner prints each as
it comes and keeps only the log dir's running counts; no partition object outlives its check.

The output is the planned verify's, byte for byte: reports in the same order, the log dir's
roll-up with its entries' findings in the same places (a partition directory that cannot be listed
is the log dir's finding where its entry stands), partitions reached twice reported once. A log dir
of few partitions (`STREAM_MIN`) is loaded whole and goes through `verify_targets`, whose pool
spreads a few big partitions segment by segment; so does every target that is not a log dir.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kdump.findings import Finding, Severity
from kdump.model.entries import child, leftover_finding
from kdump.model.listing import HeldListing
from kdump.model.log_dir import Target, expand
from kdump.model.partition import PartitionDir
from kdump.ops.checks.report import PartitionReport, VerifyOptions, add_sums
from kdump.ops.checks.verify import (
    Plan,
    Progress,
    _check_one,
    _leaf_reports,
    account,
    add_counts,
    assemble,
    close_counts,
    plan_verify,
    rollup_check,
    rollup_head,
    unit_report,
)
from kdump.ops.tiered.partitions import LogStartCheckpoints, TieredContext, tiered_facts
from kdump.scan.held import holding, read_dir
from kdump.store.queries import listing_findings

if TYPE_CHECKING:
    from kdump.ops.metadata.stray import ImagesBeside

# Below this many partitions a log dir is planned whole (`verify_targets`): its objects are few, and
# a partition of big segments is then spread over the cores segment by segment.
STREAM_MIN = 256

# The most partitions dealt to a worker at once (their reports come back together).
CHUNK = 128

Outcome = PartitionReport | Finding


def _streamed(target: Target) -> int:
    """How many partitions `verify_streamed` checks of this target one by one as it lists them (a
    lazily listed log dir of STREAM_MIN partitions or more); 0 when it plans the target whole."""
    count = len(target.entries.names) if target.entries is not None else 0
    return count if count >= STREAM_MIN else 0


def streamed_partitions(targets: Iterable[Target]) -> int | None:
    """The partitions `verify_streamed` checks of these targets, when every one is a lazily listed
    log dir streamed partition by partition (its progress then comes one call per partition); None
    when some are checked otherwise (their progress comes in bytes, segment by segment)."""
    total = 0
    for target in expand(list(targets)):
        if target.kind == "log-dirs":
            continue  # its log dirs are in the list; it reports no progress of its own
        streamed = _streamed(target)
        if not streamed:
            return None
        total += streamed
    return total


def verify_streamed(
    targets: Iterable[Target],
    options: VerifyOptions,
    progress: Progress | None = None,
    tiered: TieredContext | None = None,
) -> Iterator[PartitionReport]:
    """`verify_targets`, with the log dirs listed lazily (`Target.entries`) streamed: the same
    reports, in the same order."""
    targets = list(targets)
    for target in targets:
        if all(t.entries is None for t in expand([target])):  # a lazy one is local: no listing damage
            damage = listing_findings(target.path, partitions=[p.path for p in target.partitions()])
            if damage:
                yield PartitionReport(target.given, "file", damage)
    ctx = tiered if tiered is not None else TieredContext()
    every = expand(targets)
    seen: set[Path] = set()
    dirs: set[Path] = set()
    rollups: dict[Path, PartitionReport] = {}
    for target in every:
        if not _streamed(target):
            if target.kind == "log-dirs":
                # Its partitions are its log dirs', each reported once already: its roll-up is left.
                plans: Plan = [] if target.path.resolve() in dirs else [(target, [])]
                dirs.add(target.path.resolve())
            else:
                plans = plan_verify([_loaded(target)], seen, dirs)
            yield from assemble(plans, _leaf_reports(plans, options, progress), options, ctx, rollups)
            continue
        if target.path.resolve() in dirs:
            continue
        dirs.add(target.path.resolve())
        # Which partitions were reported already matters only where another target could hold them.
        rollup = yield from _stream(target, options, ctx, progress, seen if len(every) > 1 else None)
        rollups[target.path.resolve()] = rollup
        yield rollup


def _loaded(target: Target) -> Target:
    """A lazily listed log dir with its partitions loaded (as `discover` loads them)."""
    entries = target.entries
    if entries is None:
        return target
    parts, failures = [], []
    for i, name in enumerate(entries.names):
        part = entries.load_partition(name)
        if isinstance(part, PartitionDir):
            parts.append(part)
        else:
            failures.append((i, part))
    problems = [*entries.problems_with(failures), *(leftover_finding(p) for p in entries.leftovers)]
    return replace(target, parts=tuple(parts), problems=tuple(problems), entries=None)


def _stream(
    target: Target,
    options: VerifyOptions,
    ctx: TieredContext,
    progress: Progress | None,
    seen: set[Path] | None,
) -> Generator[PartitionReport, None, PartitionReport]:
    """Each partition's report of a lazily listed log dir, in order; returns the log dir's roll-up."""
    entries = target.entries
    assert entries is not None
    todo = list(range(len(entries.names)))
    if seen is None and entries.probed:
        seen = set()  # a symlinked partition may be another entry of this log dir: checked once
    if seen is not None:
        real, planned = target.path.resolve(), []
        for i in todo:
            key = entries.resolved(i, real)
            if key not in seen:
                seen.add(key)
                planned.append(i)
        todo = planned
    sums = PartitionReport(str(target.path), target.kind)
    under = dict.fromkeys(Severity, 0)
    recognised = False
    failures: list[tuple[int, Finding]] = []
    for i, outcome in _outcomes(target, todo, options, ctx):
        if isinstance(outcome, Finding):
            failures.append((i, outcome))
            continue
        if progress is not None:
            progress(outcome.log_bytes)
        add_counts(sums, outcome, under)
        recognised = recognised or outcome.recognised
        yield outcome
    problems = [*entries.problems_with(failures), *(leftover_finding(p) for p in entries.leftovers)]
    report = rollup_head(target, problems, target.taken_as(len(entries.names) - len(failures)))
    report.recognised = bool(target.log_dir_files) or recognised
    add_sums(report, sums)  # the head's counts are zero: its partitions' sums become its own
    close_counts(report, under, rollup_check(target, options))
    return report


def _outcomes(
    target: Target, todo: list[int], options: VerifyOptions, ctx: TieredContext
) -> Iterator[tuple[int, Outcome]]:
    """Each partition's report (or the finding that it cannot be listed), in order: on forked
    workers where there are cores to share them."""
    check = _Checker(target, options, ctx)
    jobs = options.jobs or os.cpu_count() or 1
    if jobs > 1:
        from kdump.ops.checks import units as dealt

        # Ranges of at most CHUNK partitions: what a worker sends back at once, and what waits in
        # the owner while an earlier range is still being checked, stays small. Their sizes are
        # unknown until listed, so the first ranges are of 1, 2, 4, ... partitions: 128 partitions
        # of 20 MiB would hold back the first line for minutes of `--deep`.
        steady = min(CHUNK, len(todo) // (jobs * dealt.CHUNKS_PER_JOB))
        outcomes = dealt.reports_in_spans(todo, dealt.ramp(len(todo), steady), jobs, check)
        if outcomes is not None:
            yield from zip(todo, outcomes, strict=True)
            return
    for i in todo:
        yield i, check(i)


class _Checker:
    """Lists, checks and reports one partition of a log dir, by its index among the entry names
    (in whatever process: each keeps its own metadata images and checkpoints, read once there)."""

    def __init__(self, target: Target, options: VerifyOptions, ctx: TieredContext) -> None:
        assert target.entries is not None
        self.entries = target.entries
        self.log_dir = target.log_dir_path
        self.options = options
        self.ctx = ctx
        self.starts = LogStartCheckpoints()
        self.images: ImagesBeside = {}

    def __call__(self, i: int) -> Outcome:
        name = self.entries.names[i]
        # The partition's small files are read with its listing, in one call, and its checks read
        # them from there (`kdump.scan.held`): a few system calls a file instead of a dozen.
        path = child(self.entries.path, name)
        held = read_dir(path)
        with holding(held):
            listing = HeldListing(path, held) if held is not None else None
            part = self.entries.load_partition(name, listing, path)
            if not isinstance(part, PartitionDir):
                return part
            o = self.options
            results = [_check_one((s, o.deep, o.max_bytes, False, True)) for s in part.segments]
            report = unit_report(None, part, results, self.images)
            report.tiered = tiered_facts(part, self.log_dir, self.ctx, self.starts)
            report.findings.extend(report.tiered.gaps if report.tiered is not None else ())
        account(report, o)
        return report
