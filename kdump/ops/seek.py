"""`seek-by-time`: the offset a broker's ListOffsets request would answer, read from the files.

Mirrors `UnifiedLog.fetchOffsetByTimestamp`, `LogSegment.findOffsetByTimestamp` and
`FileRecords.searchForTimestamp` (Kafka 3.8) for a time t >= 0:

1. the segment is the first, in offset order, whose largest timestamp is >= t. The largest
   timestamp is the segment's `maxTimestampSoFar` (the last time index entry, or the running value
   of the active segment); when that is -1 (an empty time index: magic v0 data or no data) the
   broker uses the `.log` file's modification time instead. No qualifying segment: no answer;
2. only that segment is searched: the time index gives the largest entry (T', O) with T' <= t,
   the offset index turns max(O, log start offset) into a position, and batches are read from
   there: the answer is the first record, in offset order, of a batch whose maxTimestamp >= t, with
   timestamp >= t and offset >= the log start offset. The broker does not go on to later segments.

`earliest` is the log start offset (`log-start-offset-checkpoint`, never below the first segment's
base offset, as `LogLoader` loads it); `latest` is the log end offset, with the high watermark of
`replication-offset-checkpoint`; `max-timestamp` follows KAFKA-16310: the first segment holding the
largest `maxTimestampSoFar`, the first batch there whose maxTimestamp equals it, and the first
record of that batch carrying it.

Cost follows the indexes, not the partition: a handful of index slots are read in place (binary
search over the mapped file, never decoding it whole) and a few batches are framed per segment the
rule walks through. Nothing is trusted blindly, since index files carry no checksum:

- a sample of each index's slots must rise with the slot, and zero slots at the end are accepted
  only as an active segment's preallocation (both files sized from one `segment.index.bytes`);
- an offset index position must start a valid batch holding offsets at or below the one looked up
  (reading from there cannot skip the batch holding it);
- a time index entry (T, O) must be what the broker writes: the batch holding O carries T and no
  batch read before it does; and no batch the offset index points at after O may carry more than
  the last entry's T (the broker offers the time index its running maximum with every offset
  index entry), which catches a truncated or stale time index whatever the order of timestamps.

An index that fails is reported with the `index-*`/`time-index-*` finding verify uses, and a scan
of the log replaces it, so the answer is the one a broker with sound indexes gives. What these
checks cannot see without reading the whole segment: an entry rewritten to name a real batch and
its real timestamp where the broker would not have put it, in a stretch no check reads.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Generic, Literal, NamedTuple, TypeVar

from kdump.errors import DecodeError, KdumpError
from kdump.findings import Finding, Severity, make_finding
from kdump.formats import checkpoints
from kdump.formats.batch import BatchHeader
from kdump.formats.constants import MAGIC_POSITION, V2_HEADER_SIZE
from kdump.formats.offset_index import ENTRY_SIZE as OFFSET_ENTRY_SIZE
from kdump.formats.offset_index import OffsetIndexEntry, offset_index_entry_at, offset_index_entry_count
from kdump.formats.time_index import ENTRY_SIZE as TIME_ENTRY_SIZE
from kdump.formats.time_index import TimeIndexEntry, time_index_entry_at, time_index_entry_count
from kdump.model.partition import PartitionDir
from kdump.model.segment import Segment
from kdump.scan.events import ScanMode, ScanSummary
from kdump.scan.log_scanner import decode_batch_records, plausible_entry_at, scan_log
from kdump.scan.source import open_buffer, read_small_file

SpecialTarget = Literal["earliest", "latest", "max-timestamp"]
SeekTarget = int | SpecialTarget
SPECIAL_TARGETS: tuple[SpecialTarget, ...] = ("earliest", "latest", "max-timestamp")

LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"

# Index slots sampled to check an index's order before it is used (see `_IndexFile.sample`).
_SAMPLES = 8
_V0_NOTE = "magic v0 data carries no timestamps: the broker finds no offset by time in it"
_INT64 = struct.Struct(">q")
# Where a v2 batch header keeps maxTimestamp, and a v1 message its timestamp (kdump.formats.batch).
_V2_MAX_TIMESTAMP_POSITION = 35
_V1_TIMESTAMP_POSITION = 18
# A tail scan keeps up to this many batch headers, to find the batch holding an offset in it.
_KEEP_BATCHES = 256
# Scan findings below this severity (offset gaps after compaction, ...) are normal and not "met".
_SCAN_FINDING_FLOOR = Severity.WARNING


@dataclass(frozen=True, slots=True)
class LogDirCheckpoints:
    """What seek needs of a log dir's checkpoint files, keyed by (topic, partition)."""

    log_start_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    high_watermarks: dict[tuple[str, int], int] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()


def load_log_dir_checkpoints(log_dir_path: Path | None) -> LogDirCheckpoints:
    """Read `log-start-offset-checkpoint` and `replication-offset-checkpoint`; damage is a finding."""
    if log_dir_path is None:
        return LogDirCheckpoints()
    maps: list[dict[tuple[str, int], int]] = []
    findings: list[Finding] = []
    for name in (LOG_START_OFFSET_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT):
        path = log_dir_path / name
        values: dict[tuple[str, int], int] = {}
        maps.append(values)
        if not path.is_file():
            continue
        try:
            decoded = checkpoints.decode_offset_checkpoint(read_small_file(path))
        except (DecodeError, ValueError) as exc:
            findings.append(make_finding("checkpoint-corrupt", str(path), str(exc)))
            continue
        except KdumpError as exc:
            findings.append(make_finding("unreadable-file", str(path), str(exc)))
            continue
        for entry in decoded.entries:
            values[(entry.topic, entry.partition)] = entry.offset
    return LogDirCheckpoints(maps[0], maps[1], tuple(findings))


@dataclass(frozen=True, slots=True)
class SeekResult:
    """One partition's answer. `offset` is None when there is none (not an error).

    `target` is "timestamp" (with `target_timestamp`), "earliest", "latest" or "max-timestamp".
    `segment` and `position` locate the batch holding the answer (for `latest`: the end of the
    valid log, where the next batch goes). `used_index` says the chosen segment's indexes gave the
    start position; `scan_fallback` that some index failed its checks and a scan replaced it;
    `used_mtime` that the chosen segment's largest timestamp is its file's modification time.
    """

    partition: str
    target: str
    target_timestamp: int | None
    offset: int | None
    timestamp: int | None
    leader_epoch: int | None
    segment: str | None
    position: int | None
    used_index: bool
    scan_fallback: bool
    used_mtime: bool
    segment_largest_timestamp: int | None
    log_start_offset: int | None
    log_end_offset: int | None
    high_watermark: int | None
    findings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()
    segments_examined: int = 0
    index_entries_read: int = 0
    batches_read: int = 0

    @property
    def answered(self) -> bool:
        """Whether there is an offset (a null answer is still an answer)."""
        return self.offset is not None

    def to_row(self) -> dict[str, Any]:
        """The JSON object of `kdump seek-by-time --format json` (documented in its man page)."""
        return {
            "type": "seek",
            "file": self.partition,
            "partition": self.partition,
            "target": self.target,
            "target_timestamp": self.target_timestamp,
            "offset": self.offset,
            "timestamp": self.timestamp,
            "leader_epoch": self.leader_epoch,
            "segment": self.segment,
            "position": self.position,
            "used_index": self.used_index,
            "scan_fallback": self.scan_fallback,
            "used_mtime": self.used_mtime,
            "segment_largest_timestamp": self.segment_largest_timestamp,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "high_watermark": self.high_watermark,
            "notes": list(self.notes),
            "findings": [
                {
                    "code": f.code,
                    "severity": f.severity.label,
                    "file": f.file,
                    "position": f.position,
                    "offset": f.offset,
                    "message": f.message,
                    "repair": f.repair,
                }
                for f in self.findings
            ],
            "cost": {
                "segments_examined": self.segments_examined,
                "index_entries_read": self.index_entries_read,
                "batches_read": self.batches_read,
            },
        }


def seek_partition(
    part: PartitionDir,
    target: SeekTarget,
    *,
    log_dir_path: Path | None = None,
    label: str | None = None,
    log_dir_checkpoints: LogDirCheckpoints | None = None,
) -> SeekResult:
    """Answer a ListOffsets-style query for one partition directory from its files.

    Args:
        part: the partition directory.
        target: a time in epoch milliseconds (>= 0), or "earliest", "latest", "max-timestamp".
        log_dir_path: the log dir holding the checkpoint files (None: none are read).
        label: how to name the partition in the result (default: its path).
        log_dir_checkpoints: checkpoints already loaded (to read them once for many partitions).

    Raises:
        ValueError: a negative time or an unknown target name.
        PathError: a `.log` file cannot be read.
    """
    if isinstance(target, bool) or (isinstance(target, int) and target < 0):
        raise ValueError(f"a target time must be epoch milliseconds >= 0, not {target!r}")
    if not isinstance(target, int) and target not in SPECIAL_TARGETS:
        raise ValueError(f"unknown seek target {target!r}")
    ckpt = log_dir_checkpoints if log_dir_checkpoints is not None else load_log_dir_checkpoints(log_dir_path)
    run = _Run(part, ckpt, label or str(part.path))
    if isinstance(target, int):
        return run.seek_time(target)
    if target == "earliest":
        return run.seek_earliest()
    if target == "latest":
        return run.seek_latest()
    return run.seek_max_timestamp()


# --- the search ---------------------------------------------------------------------------------


class _Tail(NamedTuple):
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
        if not self.batches or (_low_offset(self.batches[0]) or 0) > offset:
            return None, -1
        before = -1
        for h in self.batches:
            if h.last_offset >= offset:
                return h, before
            before = max(before, h.max_timestamp)
        return None, -1


class _SegmentMax(NamedTuple):
    """A segment's largest timestamp as the broker sees it, and where it comes from."""

    timestamp: int  # maxTimestampSoFar, or the file's modification time when used_mtime
    used_mtime: bool
    max_timestamp_so_far: int  # -1 when the segment has no timestamps
    max_batch: BatchHeader | None  # the first batch carrying max_timestamp_so_far, when known
    saw_v0: bool


E = TypeVar("E", OffsetIndexEntry, TimeIndexEntry)


class _IndexFile(Generic[E]):
    """An index file mapped in place; slots are read one at a time and counted."""

    def __init__(
        self, buf: memoryview, count: int, read: Callable[[memoryview, int, int], E], base: int, run: _Run
    ) -> None:
        self.buf = buf
        self.count = count
        self._read: Callable[[memoryview, int, int], E] = read
        self._base = base
        self._run = run

    def entry(self, slot: int) -> E:
        self._run.index_entries_read += 1
        return self._read(self.buf, slot, self._base)

    def sample(self) -> list[tuple[int, E]]:
        """About ten slots spread over the entries, the first and the last two included.

        A sound index rises with the slot; a shuffled, reversed or overwritten one almost never
        passes this sample, and the entries a lookup then uses are checked against the log anyway.
        """
        n: int = self.count
        if n == 0:
            return []
        slots = {0, n - 1, max(0, n - 2), *(n * k // _SAMPLES for k in range(1, _SAMPLES))}
        return [(i, self.entry(i)) for i in sorted(slots)]

    def search(self, key: Callable[[E], int], target: int) -> tuple[int, list[tuple[int, E]]]:
        """Largest slot whose key is <= target (-1 for none), and the slots probed on the way.

        `AbstractIndex.indexSlotRangeFor` biases its binary search to a warm tail to spare page
        faults; on a sorted index both land on the same slot, and this one also returns its probes
        (which always include the slot found and the one after it) so their order can be checked.
        """
        low, high, found = 0, self.count - 1, -1
        probes: list[tuple[int, E]] = []
        while low <= high:
            mid = (low + high) // 2
            e = self.entry(mid)
            probes.append((mid, e))
            if key(e) <= target:
                found, low = mid, mid + 1
            else:
                high = mid - 1
        return found, probes


class _SegmentView:
    """One segment's files, mapped on first use and unmapped with `stack`, and what was learned."""

    def __init__(self, run: _Run, seg: Segment, next_base: int | None, stack: ExitStack) -> None:
        assert seg.log is not None
        self.run = run
        self.seg = seg
        self.base = seg.base_offset
        self.next_base = next_base
        self.is_last = next_base is None
        self.stack = stack
        self.log_path = seg.log
        self.label = str(seg.log)
        run.segments_examined += 1

    @cached_property
    def log(self) -> memoryview:
        return self.stack.enter_context(open_buffer(self.log_path))

    def _open_index(
        self, path: Path | None, missing_code: str, entry_size: int, kind: str
    ) -> memoryview | None:
        run = self.run
        if path is None:
            run.fallback(
                missing_code,
                str(self.log_path.with_suffix(f".{kind}")),
                f"segment {self.seg.name} has no .{kind} file; the log is scanned instead",
            )
            return None
        try:
            buf = self.stack.enter_context(open_buffer(path))
        except KdumpError as exc:
            run.fallback("unreadable-file", str(path), f"{exc}; the log is scanned instead")
            return None
        if len(buf) % entry_size:
            # Kafka's sanity check rejects it and recovery rebuilds it: do not trust any slot.
            run.fallback(
                "index-size-invalid",
                str(path),
                f"{len(buf)} bytes is not a multiple of {entry_size}; the log is scanned instead",
                position=len(buf) - len(buf) % entry_size,
            )
            return None
        return buf

    def _tail_ok(self, path: Path, count: int, slots: int, entry_size: int, code: str) -> bool:
        """Whether zero slots after `count` entries are a broker's preallocation (reported as info).

        Only the active segment's index files are preallocated, both from one `segment.index.bytes`
        (the `.index` rounded down to 8 bytes, the `.timeindex` to 12), and the broker trims them when
        the segment rolls. Zeros anywhere else are lost entries: reported, and the index not used.
        """
        if count == slots:
            return True
        if self.is_last and self._preallocated_pair():
            self.run.add(
                make_finding(
                    "index-preallocated-tail",
                    str(path),
                    f"{slots - count} preallocated slots after {count} entries (an active segment)",
                    position=count * entry_size,
                    slots=slots - count,
                )
            )
            return True
        self.run.fallback(
            code,
            str(path),
            f"entry {count} is zero after {count} entries, yet the file is not an active segment's "
            f"preallocated index: entries are lost; the log is scanned instead",
            position=count * entry_size,
        )
        return False

    def _preallocated_pair(self) -> bool:
        index, tindex = self.seg.index, self.seg.timeindex
        if index is None or tindex is None:
            return False
        try:
            index_size, tindex_size = index.stat().st_size, tindex.stat().st_size
        except OSError:
            return False
        # Some maxIndexSize M gives index_size = M - M % 8 and tindex_size = M - M % 12.
        return any(m - m % 12 == tindex_size for m in range(index_size, index_size + 8))

    @cached_property
    def offset_index(self) -> _IndexFile[OffsetIndexEntry] | None:
        return self._load_index(
            self.seg.index,
            ("index-missing", "index", "index-not-monotonic"),
            OFFSET_ENTRY_SIZE,
            offset_index_entry_count,
            offset_index_entry_at,
            lambda e: (e.offset, e.position),
            ("offset", "position"),
            strict_second=True,
        )

    @cached_property
    def time_index(self) -> _IndexFile[TimeIndexEntry] | None:
        return self._load_index(
            self.seg.timeindex,
            ("time-index-missing", "timeindex", "time-index-out-of-order"),
            TIME_ENTRY_SIZE,
            time_index_entry_count,
            time_index_entry_at,
            lambda e: (e.timestamp, e.offset),
            ("timestamp", "offset"),
            strict_second=False,
        )

    def _load_index(
        self,
        path: Path | None,
        codes: tuple[str, str, str],
        entry_size: int,
        count_entries: Callable[[memoryview], int],
        entry_at: Callable[[memoryview, int, int], E],
        key: Callable[[E], tuple[int, int]],
        names: tuple[str, str],
        *,
        strict_second: bool,
    ) -> _IndexFile[E] | None:
        """Open an offset or time index and check it enough to use it; None means scan instead.

        `codes` are the finding codes for a missing file, the file kind and an out-of-order entry;
        `names` name the two fields of an entry in the messages.
        """
        missing_code, kind, order_code = codes
        buf = self._open_index(path, missing_code, entry_size, kind)
        if buf is None:
            return None
        assert path is not None
        count = count_entries(buf)
        self.run.index_entries_read += _probes_for_count(len(buf) // entry_size, count)
        if not self._tail_ok(path, count, len(buf) // entry_size, entry_size, order_code):
            return None
        idx = _IndexFile(buf, count, entry_at, self.base, self.run)
        bad = _out_of_order(idx.sample(), key, strict_second=strict_second, floor=self.base)
        if bad is not None:
            first, second = key(bad[1])
            self.run.fallback(
                order_code,
                str(path),
                f"entry {bad[0]} ({names[0]} {first}, {names[1]} {second}) is out of order with "
                f"the other entries; the log is scanned instead",
                position=bad[0] * entry_size,
                offset=bad[1].offset,
            )
            return None
        return idx

    @property
    def index_label(self) -> str:
        return str(self.seg.index) if self.seg.index else str(self.log_path.with_suffix(".index"))

    @property
    def time_index_label(self) -> str:
        return str(self.seg.timeindex) if self.seg.timeindex else str(self.log_path.with_suffix(".timeindex"))

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
        ):
            if isinstance(ev, BatchHeader):
                self.run.batches_read += 1
                yield ev
            elif isinstance(ev, Finding):
                if ev.severity >= _SCAN_FINDING_FLOOR:
                    self.run.add(ev)
            elif isinstance(ev, ScanSummary) and summary_out is not None:
                summary_out.append(ev)

    def header_at(self, position: int) -> BatchHeader | None:
        """The batch starting at `position`, if a checksum-valid one does."""
        log = self.log
        if position < 0 or not plausible_entry_at(log, position, len(log)):
            return None
        for h in self.batches_from(position):
            return h
        return None

    def scan_tail(self, position: int) -> _Tail:
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
        return _Tail(position, first, best, best_batch, last, valid_end, v0, batches)

    @cached_property
    def mtime_ms(self) -> int:
        # Java's File.lastModified(): milliseconds, truncated.
        return self.log_path.stat().st_mtime_ns // 1_000_000

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
        bad = _out_of_order(probes, lambda e: (e.offset, e.position), strict_second=True, floor=self.base)
        if bad is not None:
            i, e = bad
            self.run.fallback(
                "index-not-monotonic",
                self.index_label,
                f"entry {i} (offset {e.offset}, position {e.position}) is out of order with its neighbours; "
                f"the log is scanned from its start instead",
                position=i * OFFSET_ENTRY_SIZE,
                offset=e.offset,
            )
            return 0, None
        if slot < 0:
            return 0, None
        entry = next(e for i, e in probes if i == slot)
        header = self.check_offset_entry(slot, entry, target_offset)
        if header is None:
            return 0, None
        return entry.position, header

    def check_offset_entry(
        self, slot: int, entry: OffsetIndexEntry, target_offset: int
    ) -> BatchHeader | None:
        """The batch at an offset index entry's position, or None (reported) when it cannot be trusted."""
        header = None
        if 0 <= entry.position < len(self.log):
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
        if not 0 <= entry.position < len(self.log):
            self.run.fallback(
                "index-entry-beyond-log",
                self.index_label,
                f"entry for offset {entry.offset} points at position {entry.position}, past the log's end "
                f"{len(self.log)}; the log is scanned from its start instead",
                position=at,
                offset=entry.offset,
                log_position=entry.position,
            )
            return False
        low = None if header is None else _low_offset(header)
        if header is None or header.position != entry.position or low is None or low > target_offset:
            what = (
                "is not the start of a valid batch"
                if header is None or header.position != entry.position
                else f"holds a batch starting at offset {low}, above {target_offset}"
            )
            self.run.fallback(
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

    # -- the largest timestamp --

    @cached_property
    def tail(self) -> _Tail:
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
            self.run.fallback(
                "index-not-monotonic",
                self.index_label,
                f"last entry's offset {entry.offset} is below the base offset {self.base}; "
                f"the log is scanned from its start instead",
                position=slot * OFFSET_ENTRY_SIZE,
                offset=entry.offset,
            )
            return self.scan_tail(0)
        if 0 <= entry.position < len(self.log) and plausible_entry_at(
            self.log, entry.position, len(self.log)
        ):
            tail = self.scan_tail(entry.position)
            if self._offset_entry_ok(slot, entry, tail.first_batch, entry.offset):
                return tail
        else:
            self._offset_entry_ok(slot, entry, None, entry.offset)
        return self.scan_tail(0)

    @cached_property
    def full(self) -> _Tail:
        return self.tail if self.tail.start == 0 else self.scan_tail(0)

    @cached_property
    def largest(self) -> _SegmentMax:
        """`LogSegment.largestTimestamp`, with every time index slot it relies on checked."""
        run = self.run
        tidx = self.time_index
        if tidx is None:
            return self._from_scan(self.full)
        if tidx.count == 0:
            tail = self.tail
            if tail.max_timestamp < 0:
                # Nothing carries a timestamp (magic v0 data, or no data): the broker's own rule.
                return _SegmentMax(self.mtime_ms, True, -1, None, tail.saw_v0)
            if self.is_last and tail.start == 0:
                # An active segment smaller than index.interval.bytes: not indexed yet, and the
                # broker's in-memory maxTimestampSoFar is what the batches say.
                return _SegmentMax(tail.max_timestamp, False, tail.max_timestamp, tail.max_batch, tail.saw_v0)
            run.fallback(
                "time-index-mismatch",
                self.time_index_label,
                f"the time index is empty, yet batches carry timestamps up to {tail.max_timestamp}; a broker "
                f"would use the file's modification time, kdump scans the log instead",
            )
            return self._from_scan(self.full)
        slot = tidx.count - 1
        last = tidx.entry(slot)
        upper = self.next_base
        problem: tuple[str, str] | None = None
        held = None
        if not self.base <= last.offset or (upper is not None and last.offset >= upper):
            problem = (
                "time-index-offset-not-found",
                f"last entry's offset {last.offset} is outside this segment's offsets",
            )
        else:
            # The broker's final entry usually names a batch of the tail, which is scanned anyway.
            held, before = self.tail.holding(last.offset)
            if held is None:
                held, before = self.holding_and_before(last.offset)
            problem = _time_entry_problem(held, last, before) or self._later_indexed_batches_problem(last)
        if problem is not None:
            run.fallback(
                problem[0],
                self.time_index_label,
                f"{problem[1]}; the log is scanned instead",
                position=slot * TIME_ENTRY_SIZE,
                offset=last.offset,
            )
            return self._from_scan(self.full)
        tail = self.tail
        if tail.max_timestamp > last.timestamp:
            if self.is_last:
                # The active segment's running maximum lives in memory until the next index entry.
                return _SegmentMax(tail.max_timestamp, False, tail.max_timestamp, tail.max_batch, tail.saw_v0)
            where = tail.max_batch.position if tail.max_batch is not None else tail.start
            run.fallback(
                "time-index-mismatch",
                self.time_index_label,
                f"the batch at position {where} carries timestamp {tail.max_timestamp}, above the last "
                f"entry's {last.timestamp}: the closed segment's final entry is missing; the log is scanned "
                f"instead",
                position=slot * TIME_ENTRY_SIZE,
                offset=last.offset,
            )
            return self._from_scan(self.full)
        return _SegmentMax(last.timestamp, False, last.timestamp, held, tail.saw_v0)

    def _later_indexed_batches_problem(self, last: TimeIndexEntry) -> tuple[str, str] | None:
        """Check the time index's last entry against batches the offset index points at after it.

        The broker writes both indexes together: with each offset index entry it offers the time
        index the running maximum, which now includes the batch at that entry's position. So no
        such batch may carry more than the time index's last timestamp; one that does shows time
        index entries were lost (a truncated or stale file), whatever the order of the records.
        A few such batches, spread out, are peeked at (their maxTimestamp field only).
        """
        idx = self.offset_index
        if idx is None or idx.count == 0:
            return None
        slot, _ = idx.search(lambda e: e.offset, last.offset)
        later = range(slot + 1, idx.count)
        if not later:
            return None
        picks = sorted({later[len(later) * k // _SAMPLES] for k in range(_SAMPLES)} | {later[-1]})
        for i in picks:
            entry = idx.entry(i)
            ts = self.peek_max_timestamp(entry.position)
            if ts is not None and ts > last.timestamp:
                return (
                    "time-index-mismatch",
                    f"the batch at position {entry.position} (offset index entry for offset {entry.offset}) "
                    f"carries maxTimestamp {ts}, above the time index's last entry (timestamp "
                    f"{last.timestamp}, offset {last.offset}): time index entries are missing",
                )
        return None

    def peek_max_timestamp(self, position: int) -> int | None:
        """The maxTimestamp field of the entry at `position`, unchecked (None when it has none)."""
        log = self.log
        if position < 0 or position + V2_HEADER_SIZE > len(log):
            return None
        self.run.batches_read += 1
        magic = log[position + MAGIC_POSITION]
        if magic == 2:
            return int(_INT64.unpack_from(log, position + _V2_MAX_TIMESTAMP_POSITION)[0])
        if magic == 1:
            return int(_INT64.unpack_from(log, position + _V1_TIMESTAMP_POSITION)[0])
        return None

    def _from_scan(self, scan: _Tail) -> _SegmentMax:
        if scan.max_timestamp < 0:
            return _SegmentMax(self.mtime_ms, True, -1, None, scan.saw_v0)
        return _SegmentMax(scan.max_timestamp, False, scan.max_timestamp, scan.max_batch, scan.saw_v0)

    # -- the time index, checked --

    def start_for_time(self, t: int) -> tuple[int, BatchHeader | None]:
        """`timeIndex.lookup(t)`, checked: the offset (and, when found, its batch) to read from.

        A time index entry (T, O) promises that no record up to offset O carries a timestamp above
        T, and that the batch holding O brought T. The second half is checked against the log; an
        entry that fails it is reported, and the search starts at the segment's base offset.
        """
        tidx = self.time_index
        if tidx is None or tidx.count == 0:
            return self.base, None
        slot, probes = tidx.search(lambda e: e.timestamp, t)
        bad = _out_of_order(probes, lambda e: (e.timestamp, e.offset), strict_second=False, floor=self.base)
        if bad is not None:
            i, e = bad
            self.run.fallback(
                "time-index-out-of-order",
                self.time_index_label,
                f"entry {i} (timestamp {e.timestamp}, offset {e.offset}) is out of order with its "
                f"neighbours; the segment is searched from its start instead",
                position=i * TIME_ENTRY_SIZE,
                offset=e.offset,
            )
            return self.base, None
        if slot < 0:
            return self.base, None
        entry = next(e for i, e in probes if i == slot)
        if self.next_base is not None and entry.offset >= self.next_base:
            problem: tuple[str, str] | None = (
                "time-index-offset-not-found",
                f"entry's offset {entry.offset} is beyond this segment",
            )
            held = None
        else:
            held, before = self.holding_and_before(entry.offset)
            problem = _time_entry_problem(held, entry, before)
        if problem is not None:
            self.run.fallback(
                problem[0],
                self.time_index_label,
                f"{problem[1]}; the segment is searched from its start instead",
                position=slot * TIME_ENTRY_SIZE,
                offset=entry.offset,
            )
            return self.base, None
        return entry.offset, held


def _time_entry_problem(
    held: BatchHeader | None, entry: TimeIndexEntry, before: int
) -> tuple[str, str] | None:
    """Why a time index entry is not what the broker writes for this log, or None when it is.

    The broker writes (maxTimestampSoFar, offsetOfMaxTimestampSoFar): the batch holding the offset
    is the first to carry that timestamp, so it carries it, and every batch before it (`before`
    is the largest maxTimestamp of those read on the way) carries less.
    """
    if held is None:
        return "time-index-offset-not-found", f"entry's offset {entry.offset} is not in the valid log"
    low = _low_offset(held)
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


def _low_offset(h: BatchHeader) -> int | None:
    return h.base_offset if h.base_offset is not None else h.last_offset


def _probes_for_count(slots: int, count: int) -> int:
    """Slots `*_entry_count` read: the last one, plus a binary search when there is a tail."""
    if slots <= 1:
        return 0
    if count == slots:
        return 1
    return 1 + max(1, (slots - 1).bit_length())


def _out_of_order(
    probes: list[tuple[int, E]],
    keys: Callable[[E], tuple[int, int]],
    *,
    strict_second: bool,
    floor: int,
) -> tuple[int, E] | None:
    """The first probed slot that breaks the index's order (keys rising with the slot), if any.

    The first key must rise strictly (offsets of `.index`, timestamps of `.timeindex`); the second
    rises strictly for `.index` positions and never falls for `.timeindex` offsets. Every entry's
    offset is at or above the base offset.
    """
    prev: tuple[int, int] | None = None
    for slot, e in sorted(probes, key=lambda p: p[0]):
        k = keys(e)
        if e.offset < floor:
            return slot, e
        if prev is not None and (k[0] <= prev[0] or (k[1] <= prev[1] if strict_second else k[1] < prev[1])):
            return slot, e
        prev = k
    return None


class _Run:
    """One partition's query: its segments, findings, notes and cost counters."""

    def __init__(self, part: PartitionDir, ckpt: LogDirCheckpoints, label: str) -> None:
        self.part = part
        self.label = label
        self.segments = [s for s in part.segments if s.log is not None]
        self.findings: list[Finding] = []
        self._seen: set[tuple[str, str, int | None, int | None]] = set()
        self.notes: list[str] = []
        self.fallbacks = 0
        self.segments_examined = 0
        self.index_entries_read = 0
        self.batches_read = 0
        key = (part.topic, part.partition)
        self.high_watermark: int | None = None
        checkpoint_start: int | None = None
        if key[0] is not None and key[1] is not None:
            tp = (key[0], key[1])
            self.high_watermark = ckpt.high_watermarks.get(tp)
            checkpoint_start = ckpt.log_start_offsets.get(tp)
        for f in ckpt.findings:
            self.add(f)
        first_base = self.segments[0].base_offset if self.segments else None
        # LogLoader: logStartOffset = max(checkpointed value, first segment's base offset).
        if first_base is None:
            self.log_start_offset = checkpoint_start
        elif checkpoint_start is None:
            self.log_start_offset = first_base
        else:
            self.log_start_offset = max(checkpoint_start, first_base)

    def add(self, f: Finding) -> None:
        key = (f.code, f.file, f.position, f.offset)
        if key not in self._seen:
            self._seen.add(key)
            self.findings.append(f)

    def fallback(self, code: str, file: str, message: str, **kw: Any) -> None:
        self.fallbacks += 1
        self.add(make_finding(code, file, message, **kw))

    def view(self, i: int, stack: ExitStack) -> _SegmentView:
        nxt = self.segments[i + 1].base_offset if i + 1 < len(self.segments) else None
        return _SegmentView(self, self.segments[i], nxt, stack)

    def result(self, target: str, target_timestamp: int | None, **kw: Any) -> SeekResult:
        fields: dict[str, Any] = {
            "offset": None,
            "timestamp": None,
            "leader_epoch": None,
            "segment": None,
            "position": None,
            "used_index": False,
            "used_mtime": False,
            "segment_largest_timestamp": None,
            "log_end_offset": None,
        }
        fields.update(kw)
        return SeekResult(
            partition=self.label,
            target=target,
            target_timestamp=target_timestamp,
            scan_fallback=self.fallbacks > 0,
            log_start_offset=self.log_start_offset,
            high_watermark=self.high_watermark,
            findings=tuple(self.findings),
            notes=tuple(self.notes),
            segments_examined=self.segments_examined,
            index_entries_read=self.index_entries_read,
            batches_read=self.batches_read,
            **fields,
        )

    def _no_segments(self, target: str, t: int | None) -> SeekResult:
        self.notes.append("the partition directory holds no segments")
        return self.result(target, t)

    # -- a time --

    def seek_time(self, t: int) -> SeekResult:
        if not self.segments:
            return self._no_segments("timestamp", t)
        lso = self.log_start_offset
        assert lso is not None
        for i in range(len(self.segments)):
            with ExitStack() as stack:
                sv = self.view(i, stack)
                largest = sv.largest
                if largest.timestamp < t:
                    continue
                return self._search(sv, t, lso, largest)
        self.notes.append(f"every segment's largest timestamp is before {t}: no record is at or after it")
        return self.result("timestamp", t, used_index=self.fallbacks == 0)

    def _search(self, sv: _SegmentView, t: int, lso: int, largest: _SegmentMax) -> SeekResult:
        if largest.used_mtime:
            what = "magic v0 data carries no timestamps" if largest.saw_v0 else "no batch carries a timestamp"
            self.notes.append(
                f"segment {sv.seg.name}: {what}, so like the broker its largest timestamp is the .log file's "
                f"modification time ({largest.timestamp}), which chose it"
            )
        fallbacks = self.fallbacks
        start_offset, held = sv.start_for_time(t)
        lookup = max(start_offset, lso)
        if held is not None and lookup == start_offset:
            # The checked batch holding O: the broker's offset index lookup lands at or before it,
            # and nothing between can qualify (every batch before it has a smaller maxTimestamp).
            position = held.position
        else:
            position, _ = sv.locate(lookup)
        # Both indexes of this segment were there and every entry used passed its checks.
        used_index = self.fallbacks == fallbacks and sv.time_index is not None and sv.offset_index is not None
        saw_v0 = False
        for h in sv.batches_from(position):
            saw_v0 = saw_v0 or h.magic == 0
            if h.max_timestamp < t or h.last_offset < lso:
                continue
            records, found = decode_batch_records(sv.log, h, sv.label)
            for f in found:
                self.add(f)
            for r in records:
                if r.timestamp >= t and r.offset >= lso:
                    self._note_high_watermark(r.offset)
                    return self.result(
                        "timestamp",
                        t,
                        offset=r.offset,
                        timestamp=r.timestamp,
                        leader_epoch=h.partition_leader_epoch if h.partition_leader_epoch >= 0 else None,
                        segment=sv.label,
                        position=h.position,
                        used_index=used_index,
                        used_mtime=largest.used_mtime,
                        segment_largest_timestamp=largest.timestamp,
                    )
        if saw_v0 or largest.saw_v0:
            self.notes.append("magic v0 data carries no timestamps: the broker finds no offset by time in it")
        self.notes.append(
            f"no record of segment {sv.seg.name} is at or after {t}; like the broker, later segments are not "
            f"searched"
        )
        return self.result(
            "timestamp",
            t,
            segment=sv.label,
            used_index=used_index,
            used_mtime=largest.used_mtime,
            segment_largest_timestamp=largest.timestamp,
        )

    def _note_high_watermark(self, offset: int) -> None:
        hw = self.high_watermark
        if hw is not None and offset >= hw:
            self.notes.append(
                f"offset {offset} is at or above the checkpointed high watermark {hw}: a broker answers "
                f"consumers with none until it is committed"
            )

    # -- the special targets --

    def seek_earliest(self) -> SeekResult:
        if not self.segments:
            return self._no_segments("earliest", None)
        lso = self.log_start_offset
        assert lso is not None
        # The segment holding the log start offset, then later ones: where a fetch from it reads.
        first = max(i for i, s in enumerate(self.segments) if s.base_offset <= lso or i == 0)
        for i in range(first, len(self.segments)):
            with ExitStack() as stack:
                sv = self.view(i, stack)
                h = sv.batch_holding(lso) if i == first else next(sv.batches_from(0), None)
                if h is not None:
                    return self.result(
                        "earliest",
                        None,
                        offset=lso,
                        segment=sv.label,
                        position=h.position,
                        used_index=self.fallbacks == 0,
                    )
        self.notes.append(f"no batch holds offset {lso} or any later one")
        return self.result("earliest", None, offset=lso, used_index=self.fallbacks == 0)

    def seek_latest(self) -> SeekResult:
        if not self.segments:
            return self._no_segments("latest", None)
        with ExitStack() as stack:
            sv = self.view(len(self.segments) - 1, stack)
            tail = sv.tail
            last = tail.last_batch
            # LogSegment.readNextOffset: the last batch's next offset, or the base offset when empty.
            leo = sv.base if last is None else last.last_offset + 1
            lso = self.log_start_offset
            if lso is not None and lso > leo:
                self.notes.append(
                    f"the log start offset {lso} is above the log end {leo}: a broker deletes the segments "
                    f"and starts the log at {lso}"
                )
                leo = lso
            if self.high_watermark is not None and self.high_watermark > leo:
                self.notes.append(
                    f"the checkpointed high watermark {self.high_watermark} is above the log end offset {leo}"
                )
            return self.result(
                "latest",
                None,
                offset=leo,
                segment=sv.label,
                position=tail.valid_end,
                used_index=self.fallbacks == 0,
                log_end_offset=leo,
            )

    def seek_max_timestamp(self) -> SeekResult:
        if not self.segments:
            return self._no_segments("max-timestamp", None)
        best: tuple[int, int, _SegmentMax] | None = None  # (max timestamp, segment number, facts)
        saw_v0 = False
        for i in range(len(self.segments)):
            with ExitStack() as stack:
                largest = self.view(i, stack).largest
                saw_v0 = saw_v0 or largest.saw_v0
                # maxBy(_.maxTimestampSoFar): the first segment wins ties; no mtime here.
                if best is None or largest.max_timestamp_so_far > best[0]:
                    best = (largest.max_timestamp_so_far, i, largest)
        assert best is not None
        ts, i, largest = best
        if ts < 0:
            self.notes.append(
                f"{_V0_NOTE}; no batch carries a timestamp" if saw_v0 else "no batch carries a timestamp"
            )
            return self.result("max-timestamp", None)
        with ExitStack() as stack:
            sv = self.view(i, stack)
            self.segments_examined -= 1  # seen already, in the pass above
            h = largest.max_batch
            if h is None or h.max_timestamp != ts:
                h = next((b for b in sv.batches_from(0) if b.max_timestamp == ts), None)
            if h is None:
                self.notes.append(f"no batch of segment {sv.seg.name} carries the timestamp {ts}")
                return self.result("max-timestamp", None, segment=sv.label, segment_largest_timestamp=ts)
            records, found = decode_batch_records(sv.log, h, sv.label)
            for f in found:
                self.add(f)
            # RecordBatch.offsetOfMaxTimestamp: the first record carrying the batch's maxTimestamp.
            r = next((r for r in records if r.timestamp == ts), None)
            if r is None:
                self.notes.append(
                    f"the batch at position {h.position} has maxTimestamp {ts} but no record carries it: "
                    f"the broker answers none"
                )
                return self.result("max-timestamp", None, segment=sv.label, segment_largest_timestamp=ts)
            return self.result(
                "max-timestamp",
                None,
                offset=r.offset,
                timestamp=r.timestamp,
                leader_epoch=h.partition_leader_epoch if h.partition_leader_epoch >= 0 else None,
                segment=sv.label,
                position=h.position,
                used_index=self.fallbacks == 0,
                segment_largest_timestamp=ts,
            )
