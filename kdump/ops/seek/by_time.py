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
base offset, as `LogLoader` loads it, except on a tiered partition: see `kdump.ops.tiered.partitions`); `latest`
is the log end offset, with the high watermark of `replication-offset-checkpoint`; `max-timestamp`
follows KAFKA-16310: the first segment holding the largest `maxTimestampSoFar`, the first batch there
whose maxTimestamp equals it, and the first record of that batch carrying it. The tiered-storage
targets (KIP-1005 `earliest-local` -4, `latest-tiered` -5, KIP-1023 `earliest-pending-upload` -6)
and times in a tiered partition's remote part follow `kdump.ops.seek.tiered`. Each answer's leader
epoch is the broker's: the batch's for a record, else from its epoch cache (`leader-epoch-checkpoint`).

Cost follows the indexes, not the partition: a handful of index slots are read in place and a few
batches are framed per segment the rule walks through. Every index entry used is checked against
the log first, by the one segment reader (`kdump.model.segment_view`, `kdump.model.segment_time`):
an index that fails is reported with the `index-*`/`time-index-*` finding verify uses, and a scan
of the log replaces it, so the answer is the one a broker with sound indexes gives. This module
keeps only the broker's rules: which segment, which record, and the special targets.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kdump.errors import DecodeError, KdumpError
from kdump.findings import Finding, make_finding
from kdump.formats import checkpoints
from kdump.formats.batch import BatchHeader
from kdump.model.partition import PartitionDir
from kdump.model.segment_time import SegmentMax, largest_timestamp, start_for_time
from kdump.model.segment_view import SegmentView
from kdump.ops.seek.result import SeekResult as SeekResult
from kdump.ops.seek.tiered import (
    SeekRun,
    needs_tiering,
    partition_tiering,
    remote_start_answer,
    remote_time_answer,
    seek_tiered_target,
)
from kdump.ops.tiered.partitions import (
    TieredContext,
    broker_log_starts,
    earliest_epoch,
    latest_epoch,
    read_epoch_entries,
)
from kdump.scan.source import read_small_file

SpecialTarget = Literal[
    "earliest", "latest", "max-timestamp", "earliest-local", "latest-tiered", "earliest-pending-upload"
]
SeekTarget = int | SpecialTarget
SPECIAL_TARGETS: tuple[SpecialTarget, ...] = (
    "earliest",
    "latest",
    "max-timestamp",
    "earliest-local",
    "latest-tiered",
    "earliest-pending-upload",
)

LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"

_V0_NOTE = "magic v0 data carries no timestamps: the broker finds no offset by time in it"


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


def seek_partition(
    part: PartitionDir,
    target: SeekTarget,
    *,
    log_dir_path: Path | None = None,
    label: str | None = None,
    log_dir_checkpoints: LogDirCheckpoints | None = None,
    tiered: TieredContext | None = None,
) -> SeekResult:
    """Answer a ListOffsets-style query for one partition directory from its files.

    Args:
        part: the partition directory.
        target: a time in epoch milliseconds (>= 0), or "earliest", "latest", "max-timestamp".
        log_dir_path: the log dir holding the checkpoint files (None: none are read).
        label: how to name the partition in the result (default: its path).
        log_dir_checkpoints: checkpoints already loaded (to read them once for many partitions).
        tiered: where topic configs, `__remote_log_metadata` and the remote store come from (None:
            the partition is taken as not tiered).

    Raises:
        ValueError: a negative time or an unknown target name.
        PathError: a `.log` file cannot be read.
    """
    if isinstance(target, bool) or (isinstance(target, int) and target < 0):
        raise ValueError(f"a target time must be epoch milliseconds >= 0, not {target!r}")
    if not isinstance(target, int) and target not in SPECIAL_TARGETS:
        raise ValueError(f"unknown seek target {target!r}")
    ckpt = log_dir_checkpoints if log_dir_checkpoints is not None else load_log_dir_checkpoints(log_dir_path)
    run = _Run(part, ckpt, label or str(part.path), tiered, log_dir_path, needs_tiering(target))
    if isinstance(target, int):
        return run.seek_time(target)
    if target == "earliest":
        return run.seek_earliest()
    if target == "latest":
        return run.seek_latest()
    if target == "max-timestamp":
        return run.seek_max_timestamp()
    return seek_tiered_target(run, target)


# --- the search ---------------------------------------------------------------------------------


class _Run(SeekRun):
    """One partition's query: its segments, notes, and (as a ledger) findings and cost counters."""

    def __init__(
        self,
        part: PartitionDir,
        ckpt: LogDirCheckpoints,
        label: str,
        ctx: TieredContext | None = None,
        log_dir: Path | None = None,
        needs_tiering: bool = False,
    ) -> None:
        super().__init__()
        self.ctx = ctx
        self.part = part
        self.label = label
        self.segments = [s for s in part.segments if s.log is not None]
        self.notes: list[str] = []
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
        self.epochs = read_epoch_entries(part)
        # Only a checkpoint below the first segment, or a tiered-storage target, needs the topic's config.
        below = checkpoint_start is not None and first_base is not None and checkpoint_start < first_base
        self.tiering = partition_tiering(part, log_dir, ctx) if (needs_tiering or below) else None
        self.tiered = self.tiering.tiered if self.tiering is not None else False
        if below and self.tiering is not None and self.tiered is None:
            self.notes.append(
                f"log-start-offset-checkpoint holds {checkpoint_start}, below the first segment {first_base}: "
                f"the broker keeps it on a tiered topic (the offsets between are in remote storage) and raises "
                f"it to {first_base} otherwise; {self.tiering.source}, so it was raised"
            )
        # LogLoader: logStartOffset = max(checkpointed value, first segment's base offset), except on a
        # tiered partition, which keeps the checkpoint.
        start, local = broker_log_starts(checkpoint_start, first_base, self.tiered is True)
        self.log_start_offset, self.local_log_start_offset = start, local

    def view(self, i: int, stack: ExitStack) -> SegmentView:
        nxt = self.segments[i + 1].base_offset if i + 1 < len(self.segments) else None
        return SegmentView(self.segments[i], nxt, stack, self)

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
            tiered=self.tiered,
            local_log_start_offset=self.local_log_start_offset,
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
        if self.tiered:
            # The broker asks the remote log first (from the log start offset), then the local log.
            remote = remote_time_answer(self, t)
            if remote is not None:
                return remote
        if not self.segments:
            return self._no_segments("timestamp", t)
        lso = self.local_log_start_offset
        assert lso is not None
        for i in range(len(self.segments)):
            with ExitStack() as stack:
                sv = self.view(i, stack)
                largest = largest_timestamp(sv)
                if largest.timestamp < t:
                    continue
                return self._search(sv, t, lso, largest)
        self.notes.append(f"every segment's largest timestamp is before {t}: no record is at or after it")
        return self.result("timestamp", t, used_index=self.fallbacks == 0)

    def _search(self, sv: SegmentView, t: int, lso: int, largest: SegmentMax) -> SeekResult:
        found = self.search_segment(sv, t, lso, largest)
        if found is not None:
            return found
        self.notes.append(
            f"no record of segment {sv.seg.name} is at or after {t}; like the broker, later segments are not "
            f"searched"
        )
        return self.result(
            "timestamp",
            t,
            segment=sv.label,
            used_index=self.fallbacks == 0 and sv.time_index is not None and sv.offset_index is not None,
            used_mtime=largest.used_mtime,
            segment_largest_timestamp=largest.timestamp,
        )

    def search_segment(self, sv: SegmentView, t: int, lso: int, largest: SegmentMax) -> SeekResult | None:
        """`LogSegment.findOffsetByTimestamp` (and, on a remote segment, `RemoteLogManager.lookupTimestamp`):
        the first record at or after `t` and at or above `lso`, from where the indexes say; None if none."""
        if largest.used_mtime:
            what = "magic v0 data carries no timestamps" if largest.saw_v0 else "no batch carries a timestamp"
            self.notes.append(
                f"segment {sv.seg.name}: {what}, so like the broker its largest timestamp is the .log file's "
                f"modification time ({largest.timestamp}), which chose it"
            )
        fallbacks = self.fallbacks
        start_offset, held = start_for_time(sv, t)
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
            records, found = sv.records_of(h)
            for f in found:
                self.add(f)
            if not records and self.undecompressed(h, found):
                return self.result("timestamp", t, segment=sv.label, position=h.position, unknown=True)
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
        return None

    def undecompressed(self, h: BatchHeader, found: list[Finding]) -> bool:
        """Whether the batch's records, which may hold the answer, cannot be decompressed here: then
        there is no answer (never `none`, which is one), and a note says why."""
        if not any(f.code == "codec-unavailable" for f in found):
            return False
        self.notes.append(
            f"the records of the batch at position {h.position} (offsets up to {h.last_offset}) cannot be "
            f"decompressed here, and the answer may be among them: it is unknown"
        )
        return True

    def _note_high_watermark(self, offset: int) -> None:
        hw = self.high_watermark
        if hw is not None and offset >= hw:
            self.notes.append(
                f"offset {offset} is at or above the checkpointed high watermark {hw}: a broker answers "
                f"consumers with none until it is committed"
            )

    # -- the special targets --

    def seek_earliest(self, target: str = "earliest") -> SeekResult:
        lso = self.log_start_offset
        epoch = earliest_epoch(self.epochs, lso) if lso is not None else None
        local = self.local_log_start_offset
        if self.tiered and lso is not None and local is not None and lso < local:
            return remote_start_answer(self, target, lso, epoch)
        return self.start_answer(target, lso, epoch)

    def start_answer(self, target: str, lso: int | None, epoch: int | None) -> SeekResult:
        """An answer at a (local) start offset: the segment and batch a fetch from it reads."""
        if not self.segments:
            return self._no_segments(target, None)
        assert lso is not None
        # The segment holding the log start offset, then later ones: where a fetch from it reads.
        first = max(i for i, s in enumerate(self.segments) if s.base_offset <= lso or i == 0)
        for i in range(first, len(self.segments)):
            with ExitStack() as stack:
                sv = self.view(i, stack)
                h = sv.batch_holding(lso) if i == first else next(sv.batches_from(0), None)
                if h is not None:
                    return self.result(
                        target,
                        None,
                        offset=lso,
                        leader_epoch=epoch,
                        segment=sv.label,
                        position=h.position,
                        used_index=self.fallbacks == 0,
                    )
        self.notes.append(f"no batch holds offset {lso} or any later one")
        return self.result(target, None, offset=lso, leader_epoch=epoch, used_index=self.fallbacks == 0)

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
                leader_epoch=latest_epoch(self.epochs),
                segment=sv.label,
                position=tail.valid_end,
                used_index=self.fallbacks == 0,
                log_end_offset=leo,
            )

    def seek_max_timestamp(self) -> SeekResult:
        if not self.segments:
            return self._no_segments("max-timestamp", None)
        best: tuple[int, int, SegmentMax] | None = None  # (max timestamp, segment number, facts)
        saw_v0 = False
        for i in range(len(self.segments)):
            with ExitStack() as stack:
                largest = largest_timestamp(self.view(i, stack))
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
            records, found = sv.records_of(h)
            for f in found:
                self.add(f)
            if not records and self.undecompressed(h, found):
                return self.result("max-timestamp", None, segment=sv.label, position=h.position, unknown=True)
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
