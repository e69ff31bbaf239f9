"""One checked way into a segment: open its log and indexes, and give a checked position.

`SegmentView` owns "where do I start reading this segment for offset O (or time T)": the offset
index's answer (`OffsetIndex.lookup`), and the time index's (`TimeIndex.lookup`, in
`kdump.model.segment_time`, which reads the segment through a view), each checked against the log
before it is used:

- the index files are checked as `kdump.model.index_view` describes (size, order of a sample and
  of every slot a search probes, zero slots only as an active segment's preallocation);
- an offset index entry must point at the start of a checksum-valid batch whose first offset is at
  or below the one looked up, so reading from there cannot skip the batch holding it;
- a time index entry (T, O) must be what the broker writes: the batch holding O carries T and no
  batch before it does.

An index or entry that fails is reported once, with the `index-*`/`time-index-*` finding verify
uses, through the view's `ReadLedger`, and the answer falls back to the segment's start: a caller
scanning from there gets the right records, never a silently wrong start. `seek-by-time`,
`dump --from-offset` and the Spark planner's split points all position themselves here.

Bytes come from `ByteSource`s (`kdump.model.byte_source`), local files mapped by default.
Positioning reads the `.log` only by ranges (`read`), so a remote store fetches a few KiB per
lookup; scans from a position (`batches_from`, `tail`) use the whole buffer.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from kdump.findings import Finding, Severity
from kdump.formats.batch import BatchHeader
from kdump.formats.constants import HEADER_SIZE_UP_TO_MAGIC, LOG_OVERHEAD, MAGIC_POSITION, V2_HEADER_SIZE
from kdump.formats.offset_index import ENTRY_SIZE as OFFSET_ENTRY_SIZE
from kdump.formats.offset_index import OffsetIndexEntry, offset_index_entry_at, offset_index_entry_count
from kdump.formats.records import Record
from kdump.formats.time_index import ENTRY_SIZE as TIME_ENTRY_SIZE
from kdump.formats.time_index import TimeIndexEntry, time_index_entry_at, time_index_entry_count
from kdump.model.byte_source import ByteSource, SourceOpener, fetch_ahead, fetch_entry, open_local
from kdump.model.index_view import IndexFile, ReadLedger, load_index, out_of_order, preallocated_pair
from kdump.model.segment import Segment
from kdump.scan.batch_checks import decode_batch_records
from kdump.scan.events import ScanMode, ScanSummary
from kdump.scan.log_scanner import scan_log
from kdump.scan.resync import plausible_entry_at

__all__ = ["LogTail", "SegmentView", "low_offset"]

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
# Where a v2 batch header keeps maxTimestamp, and a v1 message its timestamp (kdump.formats.batch).
_V2_MAX_TIMESTAMP_POSITION = 35
_V1_TIMESTAMP_POSITION = 18
# A tail scan keeps up to this many batch headers, to find the batch holding an offset in it.
_KEEP_BATCHES = 256
# Scan findings below this severity (offset gaps after compaction, ...) are normal and not "met".
SCAN_FINDING_FLOOR = Severity.WARNING


def low_offset(h: BatchHeader) -> int | None:
    """A batch's first offset (a legacy message's own offset when the first is unknown)."""
    return h.base_offset if h.base_offset is not None else h.last_offset


class LogTail(NamedTuple):
    """What a scan of a segment's log found from some position to the end of its valid data."""

    start: int
    first_batch: BatchHeader | None
    max_timestamp: int
    # The first batch carrying `max_timestamp` (the broker's offsetOfMaxTimestampSoFar batch).
    max_batch: BatchHeader | None
    last_batch: BatchHeader | None
    valid_end: int
    saw_v0: bool
    # Every batch scanned, when there were few (a tail); () after a long scan, to bound memory.
    batches: tuple[BatchHeader, ...]

    def holding(self, offset: int) -> tuple[BatchHeader | None, int]:
        """The first batch whose last offset is >= `offset`, when this scan is known to hold it,
        and the largest maxTimestamp of the batches scanned before it (-1 for none)."""
        if not self.batches or (low_offset(self.batches[0]) or 0) > offset:
            return None, -1
        before = -1
        for h in self.batches:
            if h.last_offset >= offset:
                return h, before
            before = max(before, h.max_timestamp)
        return None, -1


class SegmentView:
    """One segment's files, opened on first use and closed with `stack`, and what was learned.

    Args:
        seg: the segment (its `.log` must exist).
        next_base: the next segment's base offset; None for the last (active) segment, whose
            index files may end in preallocated zero slots.
        stack: closes the sources this view opens.
        ledger: where findings and the cost counters go (shared by the views of one query).
        open_source: how a path becomes a `ByteSource` (local files mapped, by default).
        log_source: the `.log`'s bytes, when the caller holds them open already.
        label: how findings name the `.log` (default: the source's label, or its path).
    """

    def __init__(
        self,
        seg: Segment,
        next_base: int | None,
        stack: ExitStack,
        ledger: ReadLedger | None = None,
        *,
        open_source: SourceOpener = open_local,
        log_source: ByteSource | None = None,
        label: str | None = None,
    ) -> None:
        assert seg.log is not None
        self.ledger = ledger if ledger is not None else ReadLedger()
        self.seg = seg
        self.base = seg.base_offset
        self.next_base = next_base
        self.is_last = next_base is None
        self.stack = stack
        self.log_path = seg.log
        self._open_source = open_source
        self._log_source = log_source
        self.label = label or (log_source.label if log_source is not None else str(seg.log))
        self.ledger.segments_examined += 1

    # -- the files --

    def _source(self, path: Path) -> ByteSource:
        source = self._open_source(path)
        self.stack.callback(source.close)
        return source

    @cached_property
    def log_source(self) -> ByteSource:
        """The `.log` file's bytes."""
        return self._log_source if self._log_source is not None else self._source(self.log_path)

    @cached_property
    def _lazy_log(self) -> tuple[memoryview, Callable[[int, int], object] | None]:
        return self.log_source.lazy_buffer()

    @property
    def log(self) -> memoryview:
        """The `.log` as one buffer, for scans. A stored file holds only what was fetched: the
        batches a scan of this view yielded (`_scan`) and the entries `fetch_entry` fetched."""
        return self._lazy_log[0]

    def records_of(self, h: BatchHeader) -> tuple[list[Record], list[Finding]]:
        """The records of a batch of this segment (found by any view of it) and the findings of
        their decoding."""
        fetch_entry(self._lazy_log[1], self.log, h.position)
        return decode_batch_records(self.log, h, self.label)

    @cached_property
    def log_size(self) -> int:
        return self.log_source.size()

    @cached_property
    def _index_sources(self) -> tuple[ByteSource | None, ByteSource | None]:
        index, tindex = self.seg.index, self.seg.timeindex
        return (
            self._source(index) if index is not None else None,
            self._source(tindex) if tindex is not None else None,
        )

    def _preallocation_allowed(self) -> bool:
        return self.is_last and preallocated_pair(*self._index_sources)

    @cached_property
    def offset_index(self) -> IndexFile[OffsetIndexEntry] | None:
        """The `.index`, checked enough to search it; None (reported) when it cannot be used."""
        source = self._index_sources[0]
        if source is None:
            self._missing("index-missing", "index")
            return None
        return load_index(
            source,
            ledger=self.ledger,
            base=self.base,
            kind="index",
            entry_size=OFFSET_ENTRY_SIZE,
            count_entries=offset_index_entry_count,
            entry_at=offset_index_entry_at,
            key=lambda e: (e.offset, e.position),
            names=("offset", "position"),
            order_code="index-not-monotonic",
            strict_second=True,
            preallocation_allowed=self._preallocation_allowed,
        )

    @cached_property
    def time_index(self) -> IndexFile[TimeIndexEntry] | None:
        """The `.timeindex`, checked enough to search it; None (reported) when it cannot be used."""
        source = self._index_sources[1]
        if source is None:
            self._missing("time-index-missing", "timeindex")
            return None
        return load_index(
            source,
            ledger=self.ledger,
            base=self.base,
            kind="timeindex",
            entry_size=TIME_ENTRY_SIZE,
            count_entries=time_index_entry_count,
            entry_at=time_index_entry_at,
            key=lambda e: (e.timestamp, e.offset),
            names=("timestamp", "offset"),
            order_code="time-index-out-of-order",
            strict_second=False,
            preallocation_allowed=self._preallocation_allowed,
        )

    def _missing(self, code: str, kind: str) -> None:
        self.ledger.fallback(
            code,
            str(self.log_path.with_suffix(f".{kind}")),
            f"segment {self.seg.name} has no .{kind} file; the log is scanned instead",
        )

    @property
    def index_label(self) -> str:
        return str(self.seg.index) if self.seg.index else str(self.log_path.with_suffix(".index"))

    @property
    def time_index_label(self) -> str:
        return str(self.seg.timeindex) if self.seg.timeindex else str(self.log_path.with_suffix(".timeindex"))

    @cached_property
    def mtime_ms(self) -> int:
        # Java's File.lastModified(): milliseconds, truncated.
        return self.log_source.modified_ms()

    # -- reading the log --

    def batches_from(self, position: int) -> Iterator[BatchHeader]:
        """Checksum-valid batches from `position` to the end of the valid data (recovery's view)."""
        yield from self._scan(position, None)

    def _scan(self, position: int, summary_out: list[ScanSummary] | None) -> Iterator[BatchHeader]:
        for ev in scan_log(
            self.log,
            file=self.label,
            base_offset=self.base,
            mode=ScanMode.RECOVERY,
            start=position,
            resync=False,
            ready=fetch_ahead(self._lazy_log[1], position, self.log_size),
        ):
            if isinstance(ev, BatchHeader):
                self.ledger.batches_read += 1
                yield ev
            elif isinstance(ev, Finding):
                if ev.severity >= SCAN_FINDING_FLOOR:
                    self.ledger.add(ev)
            elif isinstance(ev, ScanSummary) and summary_out is not None:
                summary_out.append(ev)

    def header_at(self, position: int) -> BatchHeader | None:
        """The batch starting at `position`, if a checksum-valid one does (read by range)."""
        size = self.log_size
        if position < 0 or position + HEADER_SIZE_UP_TO_MAGIC >= size:
            return None
        source = self.log_source
        prefix = source.read(position, LOG_OVERHEAD)
        if len(prefix) < LOG_OVERHEAD:
            return None
        (length,) = _INT32.unpack_from(prefix, 8)
        if length < 0 or position + LOG_OVERHEAD + length > size:
            return None
        entry = source.read(position, LOG_OVERHEAD + length)
        if not plausible_entry_at(entry, 0, len(entry)):
            return None
        # The entry alone, scanned as the log scan would see it there: the header (a legacy
        # wrapper's first offset included) and the findings of its checks, moved to `position`.
        for ev in scan_log(
            entry, file=self.label, base_offset=self.base, mode=ScanMode.RECOVERY, resync=False
        ):
            if isinstance(ev, BatchHeader):
                self.ledger.batches_read += 1
                return ev._replace(position=position)
            if isinstance(ev, Finding) and ev.severity >= SCAN_FINDING_FLOOR:
                self.ledger.add(replace(ev, position=None if ev.position is None else ev.position + position))
        return None

    def scan_tail(self, position: int) -> LogTail:
        """Frame every batch from `position` to the end of the valid log."""
        best, best_batch, first, last, v0 = -1, None, None, None, False
        summaries: list[ScanSummary] = []
        kept: list[BatchHeader] = []
        for h in self._scan(position, summaries):
            if first is None:
                first = h
            if h.max_timestamp > best:
                best, best_batch = h.max_timestamp, h
            last = h
            v0 = v0 or h.magic == 0
            if len(kept) <= _KEEP_BATCHES:
                kept.append(h)
        valid_end = summaries[-1].valid_bytes if summaries else position
        batches = tuple(kept) if len(kept) <= _KEEP_BATCHES else ()
        return LogTail(position, first, best, best_batch, last, valid_end, v0, batches)

    def peek_max_timestamp(self, position: int) -> int | None:
        """The maxTimestamp field of the entry at `position`, unchecked (None when it has none)."""
        if position < 0 or position + V2_HEADER_SIZE > self.log_size:
            return None
        self.ledger.batches_read += 1
        head = self.log_source.read(position, V2_HEADER_SIZE)
        magic = head[MAGIC_POSITION]
        if magic == 2:
            return int(_INT64.unpack_from(head, _V2_MAX_TIMESTAMP_POSITION)[0])
        if magic == 1:
            return int(_INT64.unpack_from(head, _V1_TIMESTAMP_POSITION)[0])
        return None

    # -- the offset index, checked --

    def locate(self, target_offset: int) -> tuple[int, BatchHeader | None]:
        """`OffsetIndex.lookup(target).position`, checked: a batch start at or before the target.

        Returns the position and, when an entry was used, the batch starting there. An entry whose
        position is not a batch start, or whose batch starts above the target, would make the
        search skip records: it is reported and the log is read from its start instead.
        """
        idx = self.offset_index
        if idx is None or idx.count == 0:
            return 0, None
        slot, probes = idx.search(lambda e: e.offset, target_offset)
        if not self._probes_in_order(probes):
            return 0, None
        if slot < 0:
            return 0, None
        entry = next(e for i, e in probes if i == slot)
        header = self.check_offset_entry(slot, entry, target_offset)
        if header is None:
            return 0, None
        return entry.position, header

    def batch_start_at_or_before(self, position: int) -> tuple[int, BatchHeader] | None:
        """The last offset index entry at or before a byte position, checked: (position, batch).

        For splitting a segment at batch boundaries near `position`. None when no entry is at or
        before it; an entry that is not the start of a checksum-valid batch, or an index out of
        order, is reported and gives None too (the caller then walks the log).
        """
        idx = self.offset_index
        if idx is None or idx.count == 0:
            return None
        slot, probes = idx.search(lambda e: e.position, position)
        if not self._probes_in_order(probes) or slot < 0:
            return None
        entry = next(e for i, e in probes if i == slot)
        header = self.check_offset_entry(slot, entry, entry.offset)
        return None if header is None else (entry.position, header)

    def _probes_in_order(self, probes: list[tuple[int, OffsetIndexEntry]]) -> bool:
        bad = out_of_order(probes, lambda e: (e.offset, e.position), strict_second=True, floor=self.base)
        if bad is None:
            return True
        i, e = bad
        self.ledger.fallback(
            "index-not-monotonic",
            self.index_label,
            f"entry {i} (offset {e.offset}, position {e.position}) is out of order with its neighbours; "
            f"the log is scanned from its start instead",
            position=i * OFFSET_ENTRY_SIZE,
            offset=e.offset,
        )
        return False

    def check_offset_entry(
        self, slot: int, entry: OffsetIndexEntry, target_offset: int
    ) -> BatchHeader | None:
        """The batch at an offset index entry's position, or None (reported) when it cannot be trusted."""
        header = None
        if 0 <= entry.position < self.log_size:
            header = self.header_at(entry.position)
        return header if self._offset_entry_ok(slot, entry, header, target_offset) else None

    def _offset_entry_ok(
        self, slot: int, entry: OffsetIndexEntry, header: BatchHeader | None, target_offset: int
    ) -> bool:
        """Whether `header`, the batch read at the entry's position, makes the entry safe to use.

        Safe means the position starts a valid batch whose first offset is at or below the offset
        looked up: reading from there cannot skip the batch holding it (offsets rise with
        positions). Otherwise the entry is reported.
        """
        at = slot * OFFSET_ENTRY_SIZE
        size = self.log_size
        if not 0 <= entry.position < size:
            self.ledger.fallback(
                "index-entry-beyond-log",
                self.index_label,
                f"entry for offset {entry.offset} points at position {entry.position}, past the log's end "
                f"{size}; the log is scanned from its start instead",
                position=at,
                offset=entry.offset,
                log_position=entry.position,
            )
            return False
        low = None if header is None else low_offset(header)
        if header is None or header.position != entry.position or low is None or low > target_offset:
            what = (
                "is not the start of a valid batch"
                if header is None or header.position != entry.position
                else f"holds a batch starting at offset {low}, above {target_offset}"
            )
            self.ledger.fallback(
                "index-offset-mismatch",
                self.index_label,
                f"entry for offset {entry.offset}: position {entry.position} {what}; "
                f"the log is scanned from its start instead",
                position=at,
                offset=entry.offset,
                log_position=entry.position,
            )
            return False
        return True

    def batch_holding(self, offset: int) -> BatchHeader | None:
        """The first batch whose last offset is >= `offset` (what a fetch from it reads first)."""
        return self.holding_and_before(offset)[0]

    def holding_and_before(self, offset: int) -> tuple[BatchHeader | None, int]:
        """`batch_holding`, and the largest maxTimestamp of the batches read on the way to it."""
        position, header = self.locate(offset)
        if header is not None and header.last_offset >= offset:
            return header, -1
        before = -1
        for h in self.batches_from(position):
            if h.last_offset >= offset:
                return h, before
            before = max(before, h.max_timestamp)
        return None, -1

    # -- the end of the log --

    @cached_property
    def tail(self) -> LogTail:
        """The batches from the last offset index entry's to the end of the valid log.

        No time index entry covers the batches after that one yet in an active segment (the broker
        writes both indexes together), and the log end offset is the last one's next offset. The
        entry is checked on the scan's own first batch; a bad one means scanning from the start.
        """
        idx = self.offset_index
        if idx is None or idx.count == 0:
            return self.scan_tail(0)
        slot = idx.count - 1
        entry = idx.entry(slot)
        if entry.offset < self.base:
            self.ledger.fallback(
                "index-not-monotonic",
                self.index_label,
                f"last entry's offset {entry.offset} is below the base offset {self.base}; "
                f"the log is scanned from its start instead",
                position=slot * OFFSET_ENTRY_SIZE,
                offset=entry.offset,
            )
            return self.scan_tail(0)
        fetch_entry(self._lazy_log[1], self.log, entry.position)
        if 0 <= entry.position < self.log_size and plausible_entry_at(
            self.log, entry.position, len(self.log)
        ):
            tail = self.scan_tail(entry.position)
            if self._offset_entry_ok(slot, entry, tail.first_batch, entry.offset):
                return tail
        else:
            self._offset_entry_ok(slot, entry, None, entry.offset)
        return self.scan_tail(0)

    @cached_property
    def full(self) -> LogTail:
        """Every batch of the valid log (the tail's scan, when it started at 0)."""
        return self.tail if self.tail.start == 0 else self.scan_tail(0)
