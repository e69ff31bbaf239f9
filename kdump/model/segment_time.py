"""A segment's times, checked: `LogSegment.largestTimestamp` and `TimeIndex.lookup`.

The time index is trusted only as far as the log confirms it. A time index entry (T, O) must be
what the broker writes: the batch holding O carries T and no batch read before it does; and no
batch the offset index points at after the last entry may carry more than its T (the broker offers
the time index its running maximum with every offset index entry), which catches a truncated or
stale time index whatever the order of timestamps. An entry that fails is reported through the
view's ledger, and the log is scanned (or searched from the segment's start) instead.

What these checks cannot see without reading the whole segment: an entry rewritten to name a real
batch and its real timestamp where the broker would not have put it, in a stretch no check reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from kdump.formats.batch import BatchHeader
from kdump.formats.time_index import ENTRY_SIZE as TIME_ENTRY_SIZE
from kdump.formats.time_index import TimeIndexEntry
from kdump.model.index_view import SAMPLES, out_of_order
from kdump.model.segment_view import LogTail, low_offset

if TYPE_CHECKING:
    from kdump.model.segment_view import SegmentView

__all__ = ["SegmentMax", "largest_timestamp", "start_for_time", "time_entry_problem"]


class SegmentMax(NamedTuple):
    """A segment's largest timestamp as the broker sees it, and where it comes from."""

    timestamp: int  # maxTimestampSoFar, or the file's modification time when used_mtime
    used_mtime: bool
    max_timestamp_so_far: int  # -1 when the segment has no timestamps
    max_batch: BatchHeader | None  # the first batch carrying max_timestamp_so_far, when known
    saw_v0: bool


def largest_timestamp(view: SegmentView) -> SegmentMax:
    """`LogSegment.largestTimestamp`, with every time index slot it relies on checked."""
    run = view.ledger
    tidx = view.time_index
    if tidx is None:
        return _from_scan(view, view.full)
    if tidx.count == 0:
        tail = view.tail
        if tail.max_timestamp < 0:
            # Nothing carries a timestamp (magic v0 data, or no data): the broker's own rule.
            return SegmentMax(view.mtime_ms, True, -1, None, tail.saw_v0)
        if view.is_last and tail.start == 0:
            # An active segment smaller than index.interval.bytes: not indexed yet, and the
            # broker's in-memory maxTimestampSoFar is what the batches say.
            return SegmentMax(tail.max_timestamp, False, tail.max_timestamp, tail.max_batch, tail.saw_v0)
        run.fallback(
            "time-index-mismatch",
            view.time_index_label,
            f"the time index is empty, yet batches carry timestamps up to {tail.max_timestamp}; a broker "
            f"would use the file's modification time, kdump scans the log instead",
        )
        return _from_scan(view, view.full)
    slot = tidx.count - 1
    last = tidx.entry(slot)
    upper = view.next_base
    problem: tuple[str, str] | None = None
    held = None
    if not view.base <= last.offset or (upper is not None and last.offset >= upper):
        problem = (
            "time-index-offset-not-found",
            f"last entry's offset {last.offset} is outside this segment's offsets",
        )
    else:
        # The broker's final entry usually names a batch of the tail, which is scanned anyway.
        held, before = view.tail.holding(last.offset)
        if held is None:
            held, before = view.holding_and_before(last.offset)
        problem = time_entry_problem(held, last, before) or _later_indexed_batches_problem(view, last)
    if problem is not None:
        run.fallback(
            problem[0],
            view.time_index_label,
            f"{problem[1]}; the log is scanned instead",
            position=slot * TIME_ENTRY_SIZE,
            offset=last.offset,
        )
        return _from_scan(view, view.full)
    tail = view.tail
    if tail.max_timestamp > last.timestamp:
        if view.is_last:
            # The active segment's running maximum lives in memory until the next index entry.
            return SegmentMax(tail.max_timestamp, False, tail.max_timestamp, tail.max_batch, tail.saw_v0)
        where = tail.max_batch.position if tail.max_batch is not None else tail.start
        run.fallback(
            "time-index-mismatch",
            view.time_index_label,
            f"the batch at position {where} carries timestamp {tail.max_timestamp}, above the last "
            f"entry's {last.timestamp}: the closed segment's final entry is missing; the log is scanned "
            f"instead",
            position=slot * TIME_ENTRY_SIZE,
            offset=last.offset,
        )
        return _from_scan(view, view.full)
    return SegmentMax(last.timestamp, False, last.timestamp, held, tail.saw_v0)


def _later_indexed_batches_problem(view: SegmentView, last: TimeIndexEntry) -> tuple[str, str] | None:
    """Check the time index's last entry against batches the offset index points at after it.

    The broker writes both indexes together: with each offset index entry it offers the time
    index the running maximum, which now includes the batch at that entry's position. So no
    such batch may carry more than the time index's last timestamp; one that does shows time
    index entries were lost (a truncated or stale file), whatever the order of the records.
    A few such batches, spread out, are peeked at (their maxTimestamp field only).
    """
    idx = view.offset_index
    if idx is None or idx.count == 0:
        return None
    slot, _ = idx.search(lambda e: e.offset, last.offset)
    later = range(slot + 1, idx.count)
    if not later:
        return None
    picks = sorted({later[len(later) * k // SAMPLES] for k in range(SAMPLES)} | {later[-1]})
    for i in picks:
        entry = idx.entry(i)
        ts = view.peek_max_timestamp(entry.position)
        if ts is not None and ts > last.timestamp:
            return (
                "time-index-mismatch",
                f"the batch at position {entry.position} (offset index entry for offset {entry.offset}) "
                f"carries maxTimestamp {ts}, above the time index's last entry (timestamp "
                f"{last.timestamp}, offset {last.offset}): time index entries are missing",
            )
    return None


def _from_scan(view: SegmentView, scan: LogTail) -> SegmentMax:
    if scan.max_timestamp < 0:
        return SegmentMax(view.mtime_ms, True, -1, None, scan.saw_v0)
    return SegmentMax(scan.max_timestamp, False, scan.max_timestamp, scan.max_batch, scan.saw_v0)


def start_for_time(view: SegmentView, t: int) -> tuple[int, BatchHeader | None]:
    """`timeIndex.lookup(t)`, checked: the offset (and, when found, its batch) to read from.

    A time index entry (T, O) promises that no record up to offset O carries a timestamp above
    T, and that the batch holding O brought T. The second half is checked against the log; an
    entry that fails it is reported, and the search starts at the segment's base offset.
    """
    tidx = view.time_index
    if tidx is None or tidx.count == 0:
        return view.base, None
    slot, probes = tidx.search(lambda e: e.timestamp, t)
    bad = out_of_order(probes, lambda e: (e.timestamp, e.offset), strict_second=False, floor=view.base)
    if bad is not None:
        i, e = bad
        view.ledger.fallback(
            "time-index-out-of-order",
            view.time_index_label,
            f"entry {i} (timestamp {e.timestamp}, offset {e.offset}) is out of order with its "
            f"neighbours; the segment is searched from its start instead",
            position=i * TIME_ENTRY_SIZE,
            offset=e.offset,
        )
        return view.base, None
    if slot < 0:
        return view.base, None
    entry = next(e for i, e in probes if i == slot)
    if view.next_base is not None and entry.offset >= view.next_base:
        problem: tuple[str, str] | None = (
            "time-index-offset-not-found",
            f"entry's offset {entry.offset} is beyond this segment",
        )
        held = None
    else:
        held, before = view.holding_and_before(entry.offset)
        problem = time_entry_problem(held, entry, before)
    if problem is not None:
        view.ledger.fallback(
            problem[0],
            view.time_index_label,
            f"{problem[1]}; the segment is searched from its start instead",
            position=slot * TIME_ENTRY_SIZE,
            offset=entry.offset,
        )
        return view.base, None
    return entry.offset, held


def time_entry_problem(
    held: BatchHeader | None, entry: TimeIndexEntry, before: int
) -> tuple[str, str] | None:
    """Why a time index entry is not what the broker writes for this log, or None when it is.

    The broker writes (maxTimestampSoFar, offsetOfMaxTimestampSoFar): the batch holding the offset
    is the first to carry that timestamp, so it carries it, and every batch before it (`before`
    is the largest maxTimestamp of those read on the way) carries less.
    """
    if held is None:
        return "time-index-offset-not-found", f"entry's offset {entry.offset} is not in the valid log"
    low = low_offset(held)
    if low is None or low > entry.offset:
        return "time-index-offset-not-found", f"entry's offset {entry.offset} falls in a gap between batches"
    if held.max_timestamp != entry.timestamp:
        return (
            "time-index-mismatch",
            f"entry (timestamp {entry.timestamp}, offset {entry.offset}) but the batch holding that offset "
            f"carries maxTimestamp {held.max_timestamp}",
        )
    if before >= entry.timestamp:
        return (
            "time-index-mismatch",
            f"entry (timestamp {entry.timestamp}, offset {entry.offset}) but an earlier batch already "
            f"carries maxTimestamp {before}",
        )
    return None
