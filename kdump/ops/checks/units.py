"""Verify of many partitions on every core: whole partitions dealt to forked workers in chunks.

A broker's log dir holds thousands of partitions of a few small segments each. Sent one segment per
task to a process pool, each task cost the owner more (a pickled `Segment` out, a `SegmentResult`
back, a future, the feeder thread) than the worker spent checking it, and the owner also ran every
partition's checks: with 10,000 partitions, verify on 2 cores took 1.6 times as long as in one
process. Here the workers are forked once the plan is made, so they already hold it: a task is a
range of units (partitions, files given alone), a worker checks their segments and runs the
partition checks itself, and only the small reports come back, in order. Chunks are dealt by
weight (log bytes plus a fixed cost per partition and segment), several per worker, so that a
slow chunk does not leave the other cores idle.

Used only where no unit is a large share of the whole: a partition of a few big segments is spread
segment by segment instead (`verify.check_segments`).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from typing import Any

# What a partition and each of its segments cost beyond their bytes (listing, opening, the partition
# checks), in bytes of log the walk reads in the same time.
UNIT_COST = 256 << 10
# Chunks per worker: enough that the last ones even out the workers' ends.
CHUNKS_PER_JOB = 16
# The most one unit may weigh (as a share of all) for whole units to be dealt.
LARGEST_SHARE = 0.1

# The units and their report function while a pool runs: set before the workers are forked, read by them.
_WORK: list[tuple[Sequence[Any], Callable[[Any], Any]]] = []


def worth_dealing(weights: Sequence[int], jobs: int) -> bool:
    """Whether to deal whole units: enough of them, none a large share of the work."""
    total = sum(weights)
    return jobs > 1 and len(weights) >= jobs * 4 and max(weights, default=0) <= total * LARGEST_SHARE


def deal(weights: Sequence[int], chunks: int) -> list[tuple[int, int]]:
    """Consecutive ranges of units, of about equal weight, at most about `chunks` of them."""
    target = max(1, sum(weights) // max(1, chunks))
    out: list[tuple[int, int]] = []
    start, held = 0, 0
    for i, w in enumerate(weights):
        held += w
        if held >= target:
            out.append((start, i + 1))
            start, held = i + 1, 0
    if start < len(weights):
        out.append((start, len(weights)))
    return out


def ramp(count: int, steady: int) -> list[tuple[int, int]]:
    """Consecutive ranges of `count` units of unknown weight: 1, 2, 4, ... units, then `steady` at a
    time. The first report is back after one unit, not after a whole range: a log dir of big
    partitions shows its first lines (and its progress) within one partition's check."""
    out: list[tuple[int, int]] = []
    start, size = 0, 1
    while start < count:
        end = min(count, start + size)
        out.append((start, end))
        start, size = end, min(max(1, steady), size * 2)
    return out


def _run_chunk(span: tuple[int, int]) -> list[Any]:
    units, report = _WORK[-1]
    return [report(units[i]) for i in range(*span)]


def reports_on_workers(
    units: Sequence[Any],
    weights: Sequence[int],
    jobs: int,
    report: Callable[[Any], Any],
    chunks: int | None = None,
) -> Iterator[Any] | None:
    """`report(unit)` for every unit, in order, on `jobs` forked workers, dealt in about `chunks`
    ranges (default `CHUNKS_PER_JOB` per worker); None where no pool can be had (the caller then
    works in this process)."""
    return reports_in_spans(units, deal(weights, chunks or jobs * CHUNKS_PER_JOB), jobs, report)


def reports_in_spans(
    units: Sequence[Any], spans: list[tuple[int, int]], jobs: int, report: Callable[[Any], Any]
) -> Iterator[Any] | None:
    """`report(unit)` for every unit, in order, each range of `spans` a task for one of `jobs` forked
    workers; None where no pool can be had."""
    from kdump.ops.common.workers import process_pools_work

    if not process_pools_work():
        return None
    return _reports(units, spans, jobs, report)


def _reports(
    units: Sequence[Any], spans: list[tuple[int, int]], jobs: int, report: Callable[[Any], Any]
) -> Iterator[Any]:
    from kdump.ops.common.workers import worker_pool

    _WORK.append((units, report))
    # The plan (10,000 partitions: some 40 MB of objects) is read by the workers, never changed:
    # frozen, the workers' collector neither walks it nor copies its pages on the way. (Left frozen
    # where something was frozen before: `kdump.cli` freezes its imports and exits.)
    frozen_before = gc.get_freeze_count()
    gc.freeze()
    try:
        # The workers fork here, holding `_WORK`; on Ctrl-C or an early stop they are terminated.
        with worker_pool(min(jobs, len(spans))) as pool:
            for chunk in pool.map(_run_chunk, spans):
                yield from chunk
    finally:
        _WORK.pop()
        if not frozen_before:
            gc.unfreeze()
