"""`trim-tail`: the broker's tail recovery, planned and shown first, applied only when asked.

On restart after an unclean shutdown the broker recovers each unflushed segment
(`LogSegment.recover`): it truncates the segment at the first batch that fails `ensureValid()`
(size or checksum) or is incomplete at the end of the file, and deletes every later segment with
its indexes and producer snapshots (`LogLoader.recoverLog`), so the log ends at the cut.
`plan_trim_tail` computes that cut from the scanner's `valid_bytes` (the same figure in forensic
and recovery mode) and says what would go, including the valid batches a forensic resync still
finds after the cut and the later segments, which the broker would throw away (salvage them first).
Keeping the later segments (`drop_later_segments=False`) is the user's explicit choice: it leaves
a log with an offset hole, which no broker produces.

`--to-offset` mirrors `UnifiedLog.truncateTo`: the log is cut at the start of the first batch
whose last offset is at or above the offset (batches are never split), and later segments go.

Applying backs up every removed byte and moved file (`kdump restore` puts them back), rebuilds the
trimmed segment's indexes with the reindex rule from the bytes before the cut, moves the later
segments and snapshots aside, then truncates and fsyncs (the cut last, so a crash part way leaves
the damage in place and a second run finds the same cut and finishes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kdump.errors import CannotRepairError, KdumpError
from kdump.findings import Finding
from kdump.formats.batch import BatchHeader
from kdump.formats.checkpoints import (
    EpochEntry,
    decode_leader_epoch_checkpoint,
    encode_leader_epoch_checkpoint,
)
from kdump.model.log_dir import Target
from kdump.model.partition import PartitionDir
from kdump.model.segment import Segment
from kdump.ops.checks.segment import check_segment
from kdump.ops.checks.transactions import expected_aborts
from kdump.ops.repair.faults import undone_on_fault
from kdump.ops.repair.preflight import Need, Writable, check_room, same_filesystem
from kdump.ops.repair.reindex import DEFAULT_INDEX_INTERVAL_BYTES, FileChange, plan_segment, resolve_aborts
from kdump.ops.repair.safety import Journal, default_backup_dir, log_dir_lock
from kdump.scan.events import ScanSummary
from kdump.scan.log_scanner import scan_log
from kdump.scan.source import open_buffer, read_small_file


@dataclass(frozen=True, slots=True)
class TrimPlan:
    """What trim-tail would do to one partition (or segment).

    Every number is what applying the plan leaves: `new_log_end_offset` is the log end after it,
    `moved_files` the files that go whole into the backup (later segments with their indexes,
    producer snapshots past the new end), `backed_up_bytes` the bytes cut plus the bytes moved.
    """

    label: str
    root: Path
    log_dir: Path | None
    segment: Segment | None  # the segment to cut; None when nothing needs cutting
    size: int
    cut_position: int
    removed_bytes: int
    removed_batches: int
    removed_first_offset: int | None
    removed_last_offset: int | None
    removed_min_timestamp: int | None
    removed_max_timestamp: int | None
    salvageable_batches: int
    reason: str
    later_segments: tuple[Segment, ...]
    drop_later_segments: bool
    new_log_end_offset: int | None
    old_log_end_offset: int | None = None
    moved_files: tuple[Path, ...] = ()
    moved_bytes: int = 0
    epochs_dropped: int = 0  # leader-epoch-checkpoint entries that start at or past the new end
    hole: tuple[int, int] | None = None  # kept later segments: the offsets missing between
    later_log_bytes: int = 0  # bytes of the later segments' .log files
    to_offset: int | None = None  # --to-offset, when the cut is at an offset asked for

    @property
    def needed(self) -> bool:
        """Whether anything would change."""
        return self.removed_bytes > 0 or (self.drop_later_segments and bool(self.later_segments))

    @property
    def removed_segments(self) -> int:
        """How many whole segments go."""
        return len(self.later_segments) if self.drop_later_segments else 0

    @property
    def backed_up_bytes(self) -> int:
        """Bytes taken out of the partition into the backup: the cut tail and the files moved."""
        return self.removed_bytes + self.moved_bytes

    @property
    def offset_hole(self) -> tuple[int, int] | None:
        """The offsets missing in the middle of the log when later segments are kept."""
        return self.hole

    @property
    def salvage_first(self) -> bool:
        """Whether valid data lies past the cut, which the plan would take out of the log."""
        return self.salvageable_batches > 0 or (self.drop_later_segments and self.later_log_bytes > 0)

    def to_row(self) -> dict[str, object]:
        """The plan as a JSON object."""
        hole = self.offset_hole
        return {
            "type": "trim-plan",
            "file": None if self.segment is None else str(self.segment.log),
            "partition": self.label,
            "segment": None if self.segment is None else str(self.segment.log),
            "size": self.size,
            "cut_position": self.cut_position,
            "removed_bytes": self.removed_bytes,
            "removed_batches": self.removed_batches,
            "removed_first_offset": self.removed_first_offset,
            "removed_last_offset": self.removed_last_offset,
            "removed_min_timestamp": self.removed_min_timestamp,
            "removed_max_timestamp": self.removed_max_timestamp,
            "salvageable_batches": self.salvageable_batches,
            "reason": self.reason,
            "later_segments": [str(s.log) for s in self.later_segments],
            "drop_later_segments": self.drop_later_segments,
            "removed_segments": self.removed_segments,
            "moved_files": [str(p) for p in self.moved_files],
            "backed_up_bytes": self.backed_up_bytes,
            "old_log_end_offset": self.old_log_end_offset,
            "new_log_end_offset": self.new_log_end_offset,
            "offset_hole": None if hole is None else list(hole),
            "leader_epochs_dropped": self.epochs_dropped,
            "salvage_first": self.salvage_first,
        }


def _tail_facts(
    seg: Segment, cut: int
) -> tuple[int, int | None, int | None, int | None, int | None, int, str, ScanSummary]:
    """Batches after `cut` (forensic scan), and why the cut is where it is."""
    assert seg.log is not None
    batches = 0
    first = last = min_ts = max_ts = None
    salvage = 0
    reason = "end of file"
    summary: ScanSummary | None = None
    with open_buffer(seg.log) as buf:
        for ev in scan_log(buf, file=str(seg.log), base_offset=seg.base_offset):
            if isinstance(ev, BatchHeader) and ev.position >= cut:
                batches += 1
                if ev.crc_ok:
                    salvage += 1
                low = ev.base_offset if ev.base_offset is not None else ev.last_offset
                first = low if first is None else min(first, low)
                last = ev.last_offset if last is None else max(last, ev.last_offset)
                if ev.max_timestamp >= 0:
                    min_ts = ev.max_timestamp if min_ts is None else min(min_ts, ev.max_timestamp)
                    max_ts = ev.max_timestamp if max_ts is None else max(max_ts, ev.max_timestamp)
            elif isinstance(ev, ScanSummary):
                summary = ev
            elif isinstance(ev, Finding) and ev.position == cut and reason == "end of file":
                reason = f"{ev.code}: {ev.message}"
    assert summary is not None
    return batches, first, last, min_ts, max_ts, salvage, reason, summary


def plan_trim_tail(
    target: Target, *, to_offset: int | None = None, drop_later_segments: bool = True
) -> list[TrimPlan]:
    """Plan the trim for each partition of a target (or the one segment file given).

    As the broker's recovery does, the segments after the cut go too, unless
    `drop_later_segments=False` (the plan then names the offset hole that leaves)."""
    if target.kind == "file":
        # A segment file given alone is trimmed alone, whatever its name: a copy of a segment
        # (`copy.log`, taken as a segment by its content) is cut at its first invalid batch like any.
        segs = list(target.segments)
        if not segs:
            raise CannotRepairError(f"{target.given} is not a segment .log file; nothing was changed")
        return [_plan_segments(target.given, target.path.parent, target.log_dir_path, segs, to_offset, False)]
    return [
        _plan_segments(str(p.path), p.path, target.log_dir_path, p.segments, to_offset, drop_later_segments)
        for p in target.partitions()
    ]


def plan_partition(part: PartitionDir, log_dir: Path | None, **kwargs: object) -> TrimPlan:
    """Plan the trim of one partition directory."""
    return _plan_segments(str(part.path), part.path, log_dir, part.segments, **kwargs)  # type: ignore[arg-type]


def _recovery_summary(seg: Segment) -> ScanSummary:
    assert seg.log is not None
    summary = None
    with open_buffer(seg.log) as buf:
        for ev in scan_log(buf, file=str(seg.log), base_offset=seg.base_offset, resync=False):
            if isinstance(ev, ScanSummary):
                summary = ev
    assert summary is not None
    return summary


def _plan_segments(
    label: str,
    root: Path,
    log_dir: Path | None,
    segments: list[Segment],
    to_offset: int | None = None,
    drop_later_segments: bool = True,
) -> TrimPlan:
    chosen: Segment | None = None
    cut = 0
    size = 0
    later: tuple[Segment, ...] = ()
    for i, seg in enumerate(segments):
        assert seg.log is not None
        if to_offset is not None:
            if i + 1 < len(segments) and segments[i + 1].base_offset <= to_offset:
                continue
            pos, seg_size = _position_of_offset(seg, to_offset)
            chosen, cut, size, later = seg, pos, seg_size, tuple(segments[i + 1 :])
            drop_later_segments = True  # truncateTo removes everything after the offset
            break
        summary = _recovery_summary(seg)
        if summary.valid_bytes < summary.size:
            chosen, cut, size, later = seg, summary.valid_bytes, summary.size, tuple(segments[i + 1 :])
            break
    if chosen is None:
        return TrimPlan(
            label, root, log_dir, None, 0, 0, 0, 0, None, None, None, None, 0, "nothing to trim", (),
            drop_later_segments, None,
        )  # fmt: skip
    batches, first, last, min_ts, max_ts, salvage, reason, summary = _tail_facts(chosen, cut)
    if to_offset is not None:
        reason = f"truncate to offset {to_offset}"
    cut_end = _last_offset_before(chosen, cut) + 1
    old_end = _log_end(chosen, summary, later)
    new_end = cut_end if drop_later_segments or not later else old_end
    moved: list[Path] = []
    hole = None
    if later and not drop_later_segments and later[0].base_offset > cut_end:
        hole = (cut_end, later[0].base_offset - 1)
    if drop_later_segments:
        for seg in later:
            # The .log last: a run stopped part way leaves a segment the next run still finds.
            files = (seg.txnindex, seg.timeindex, seg.index, seg.log)
            moved.extend(p for p in files if p is not None and p.exists())
        moved.extend(snap for off, snap in sorted(_snapshots(root)) if off > cut_end)
    return TrimPlan(
        label,
        root,
        log_dir,
        chosen,
        size,
        cut,
        size - cut,
        batches,
        first,
        last,
        min_ts,
        max_ts,
        salvage,
        reason,
        later,
        drop_later_segments,
        new_end,
        old_end,
        tuple(moved),
        sum(_size(p) for p in moved),
        len(_epochs_past(root, cut_end)) if drop_later_segments else 0,
        hole,
        sum(_size(seg.log) for seg in later if seg.log is not None),
        to_offset,
    )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _snapshots(root: Path) -> list[tuple[int, Path]]:
    out = []
    for snap in root.glob("*.snapshot"):
        try:
            out.append((int(snap.name.split(".")[0]), snap))
        except ValueError:
            continue
    return out


def _log_end(chosen: Segment, summary: ScanSummary, later: tuple[Segment, ...]) -> int | None:
    """The log end offset before the trim: the end of the last segment that holds a valid batch
    (recovery's reading of it), or of the cut segment's forensic scan."""
    for seg in reversed(later):
        s = _recovery_summary(seg)
        if s.last_offset is not None:
            return s.last_offset + 1
    return None if summary.last_offset is None else summary.last_offset + 1


def _epochs_past(root: Path, end: int) -> list[EpochEntry]:
    """Leader-epoch-checkpoint entries the broker drops when its log ends at `end`
    (`LeaderEpochFileCache.truncateFromEnd`: those starting at or past it)."""
    path = root / "leader-epoch-checkpoint"
    try:
        entries = decode_leader_epoch_checkpoint(read_small_file(path)).entries
    except (OSError, KdumpError, ValueError):
        return []
    return [e for e in entries if e.start_offset >= end]


def _last_offset_before(seg: Segment, cut: int) -> int:
    assert seg.log is not None
    last = None
    with open_buffer(seg.log, cut) as buf:
        for ev in scan_log(buf, file=str(seg.log), resync=False):
            if isinstance(ev, BatchHeader) and ev.crc_ok:
                last = ev.last_offset
    return last if last is not None else seg.base_offset - 1


def _position_of_offset(seg: Segment, offset: int) -> tuple[int, int]:
    """Start of the first batch whose last offset is >= offset (`LogSegment.truncateTo`)."""
    assert seg.log is not None
    with open_buffer(seg.log) as buf:
        size = len(buf)
        for ev in scan_log(buf, file=str(seg.log), resync=False):
            if isinstance(ev, BatchHeader) and ev.last_offset >= offset:
                return ev.position, size
            if isinstance(ev, ScanSummary):
                return ev.valid_bytes, size
    return size, size


@dataclass(frozen=True, slots=True)
class TrimResult:
    """What an applied trim did."""

    backup_dir: Path | None
    truncated: Path | None
    removed_bytes: int
    moved: tuple[Path, ...]
    reindexed: tuple[Path, ...]


def apply_trim_tail(
    plan: TrimPlan, backup_dir: Path | None = None, interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
) -> TrimResult:
    """Carry out a plan: rebuild the indexes for the cut, truncate, move later segments aside (all backed up).

    Raises:
        CannotRepairError: the pre-flight found no room, a read-only or unwritable place; nothing changed.
        RepairFaultError: a write, rename or fsync failed part way; see kdump.ops.repair.faults.
    """
    if not plan.needed or plan.segment is None:
        return TrimResult(None, None, 0, (), ())
    seg = plan.segment
    assert seg.log is not None
    with log_dir_lock(plan.log_dir):
        bdir = backup_dir or default_backup_dir(plan.root, plan.log_dir)
        # The indexes are rebuilt from the bytes before the cut, and written BEFORE the log is cut:
        # a crash in between then leaves indexes that already match the trimmed log, and running
        # trim-tail again finds the same cut and finishes. (Cutting first left a window where the
        # log was trimmed but its indexes still pointed past the new end, and a second run had
        # nothing to trim, so nothing rebuilt them.) The prefix scan equals a scan after the cut.
        # Producer state for the .txnindex comes from every segment up to this one.
        earlier = [s for s in PartitionDir.load(plan.root).segments if s.base_offset < seg.base_offset]
        results = [check_segment(s) for s in earlier] + [
            check_segment(seg, keep_spans=True, max_bytes=plan.cut_position)
        ]
        aborts = expected_aborts(results)[-1]
        log_start = next(
            (r.summary.first_offset for r in results if r.summary and r.summary.first_offset is not None), 0
        )
        seg_plan = plan_segment(results[-1], resolve_aborts(aborts, results[-1], log_start), interval_bytes)
        epochs = _kept_epochs(plan)
        check_room("trim-tail", trim_needs(plan, bdir, seg_plan.changes, epochs), [Writable(seg.log)])
        rerun: list[str | Path] = ["kdump", "trim-tail", "--apply"]
        if plan.to_offset is not None:
            rerun += ["--to-offset", str(plan.to_offset)]
        if not plan.drop_later_segments:
            rerun.append("--keep-later-segments")
        if backup_dir is not None:
            rerun += ["--backup-dir", backup_dir]
        rerun += ["--index-interval-bytes", str(interval_bytes), plan.label]
        with undone_on_fault("trim-tail", plan.root, bdir, rerun):
            journal = Journal.create(bdir, plan.root, "trim-tail")
            reindexed = []
            for change in seg_plan.changes:
                journal.replace(change.path, change.data)
                reindexed.append(change.path)
            # The later segments, snapshots and epochs go BEFORE the cut: until the log is cut, a
            # second run finds the same damage and finishes the rest; once it is cut, nothing is left.
            moved: list[Path] = []
            if plan.drop_later_segments:
                for path in plan.moved_files:
                    if path.exists():
                        journal.move_out(path)
                        moved.append(path)
                # The broker's epoch cache forgets the epochs that start at or past the new log end.
                if epochs is not None:
                    journal.replace(plan.root / "leader-epoch-checkpoint", epochs)
                    reindexed.append(plan.root / "leader-epoch-checkpoint")
            journal.truncate(seg.log, plan.cut_position)
        return TrimResult(bdir, seg.log, plan.removed_bytes, tuple(moved), tuple(reindexed))


def _kept_epochs(plan: TrimPlan) -> bytes | None:
    """The new leader-epoch-checkpoint when the trim drops epochs from it (None: left as it is)."""
    end = plan.new_log_end_offset
    if not plan.drop_later_segments or end is None:
        return None
    dropped = _epochs_past(plan.root, end)
    if not dropped:
        return None
    path = plan.root / "leader-epoch-checkpoint"
    kept = [e for e in decode_leader_epoch_checkpoint(read_small_file(path)).entries if e not in dropped]
    return encode_leader_epoch_checkpoint(kept)


def trim_needs(
    plan: TrimPlan, backup_dir: Path, changes: Sequence[FileChange], epochs: bytes | None
) -> list[Need]:
    """Every new file an applied trim writes, by where it goes: the backup (the cut tail, a copy of
    each replaced file, the moved files when the backup is on another filesystem, where they cannot
    be hard links) and the partition (each rewritten file beside the old one until the rename)."""
    replaced = [c.path for c in changes if c.exists]
    new = [len(c.data) for c in changes]
    if epochs is not None:
        replaced.append(plan.root / "leader-epoch-checkpoint")
        new.append(len(epochs))
    backup = [plan.removed_bytes, *(_size(p) for p in replaced)]
    if plan.drop_later_segments and not same_filesystem(backup_dir, plan.root):
        backup += [_size(p) for p in plan.moved_files]
    return [
        Need(backup_dir, tuple(backup), "the backup"),
        Need(plan.root, tuple(new), "the rewritten files"),
    ]


def trim_estimate(plan: TrimPlan, backup_dir: Path) -> list[Need]:
    """What `trim_needs` will say, before the indexes are rebuilt: each of the cut segment's index
    files counted at its present size, as backed up and as rewritten (the rebuild of a shorter log
    is no larger). For a pre-flight over several partitions before the first is touched."""
    seg = plan.segment
    if not plan.needed or seg is None:
        return []
    indexes = tuple(_size(p) for p in (seg.index, seg.timeindex, seg.txnindex) if p is not None)
    ckpt = (_size(plan.root / "leader-epoch-checkpoint"),) if plan.epochs_dropped else ()
    return [
        *trim_needs(plan, backup_dir, (), None),
        Need(backup_dir, indexes + ckpt, "the backup"),
        Need(plan.root, indexes + ckpt, "the rewritten files"),
    ]
