"""What the broker does with one partition directory at start (LogManager.loadLog, LogLoader, UnifiedLog).

* `-delete` directories are loaded and then deleted (after `file.delete.delay.ms`); `-stray` ones are kept
  aside; `-future` ones are loaded as the target of a move between log dirs.
* Without the clean-shutdown marker every segment from the one holding the recovery point on is re-read
  (`LogSegment.recover`): its offset and time indexes are rebuilt, the producer state is rebuilt from the
  newest snapshot at or below the recovery point, and the log is cut at the first entry recovery rejects,
  with every later segment (the trim-tail plan's cut, `kdump.ops.repair.trim`).
* With the marker nothing is re-read; the log end is the last segment's next offset.
* The log start offset is the larger of the log-start-offset checkpoint's and the first segment's base.
* On a KRaft broker, once the metadata image is loaded, a log whose topic id the image does not know, or
  whose partition is not assigned to this broker, is a stray replica: renamed `<topic>-<p>.<uuid>-stray`
  and not served. A partition assigned here with no directory is created empty.
* Leftovers: `.cleaned` and `.deleted` files are deleted, a `.swap` replaces the segment it names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kdump.errors import CorruptFieldError, DecodeError
from kdump.formats.batch import BatchHeader
from kdump.formats.checkpoints import decode_leader_epoch_checkpoint, decode_partition_metadata
from kdump.model.partition import PartitionDir
from kdump.model.segment import Segment
from kdump.ops.checks.open_txns import TRANSACTION_STATE_TOPIC
from kdump.ops.forecast.logdirs import LogDirState
from kdump.ops.forecast.transactions import OpenTransaction, open_transactions
from kdump.ops.metadata import MetadataImage
from kdump.ops.repair.trim import plan_partition
from kdump.scan import ScanMode, ScanSummary


@dataclass(slots=True)
class PartitionForecast:
    """One partition of one log dir after the broker's start."""

    log_dir: str
    dir: str
    topic: str
    partition: int
    action: str  # load, recover, stray, pending-delete, future, create-empty, offline
    topic_id: str | None = None
    image_topic_id: str | None = None
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    old_log_end_offset: int | None = None
    removed: tuple[int, int] | None = None  # offsets the start-up removes (first, last)
    removed_bytes: int = 0
    reread_segments: list[str] = field(default_factory=list)
    reread_bytes: int = 0
    rebuilt_indexes: list[str] = field(default_factory=list)
    rebuilt_snapshots: bool = False
    deleted_files: list[str] = field(default_factory=list)
    epoch_start_offsets: dict[int, int] = field(default_factory=dict)
    served: bool = True
    reason: str = ""
    ongoing: dict[int, int] = field(default_factory=dict)  # producer id -> open transaction's first offset
    open_transactions: list[OpenTransaction] = field(default_factory=list)  # `ongoing`, judged

    @property
    def loses(self) -> bool:
        """The start-up removes or sets aside records of this partition (a partition created empty
        loses only when this broker was its only replica: no other holds its records)."""
        if self.action == "create-empty":
            return self.only_replica
        return self.removed is not None or (self.action in ("stray", "pending-delete") and self.has_data)

    only_replica: bool = False

    has_data: bool = False

    @property
    def last_stable_offset(self) -> int | None:
        """Where READ_COMMITTED consumers stop: the first offset of the earliest open transaction."""
        firsts = [t.first_offset for t in self.open_transactions] or list(self.ongoing.values())
        return min([*firsts, self.log_end_offset]) if self.log_end_offset is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "partition",
            "log_dir": self.log_dir,
            "dir": self.dir,
            "topic": self.topic,
            "partition": self.partition,
            "action": self.action,
            "served": self.served,
            "topic_id": self.topic_id,
            "image_topic_id": self.image_topic_id,
            "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset,
            "old_log_end_offset": self.old_log_end_offset,
            "removed": list(self.removed) if self.removed else None,
            "removed_bytes": self.removed_bytes,
            "only_replica": self.only_replica,
            "reread_segments": self.reread_segments,
            "reread_bytes": self.reread_bytes,
            "rebuilt_indexes": self.rebuilt_indexes,
            "rebuilt_producer_snapshots": self.rebuilt_snapshots,
            "deleted_files": self.deleted_files,
            "epoch_start_offsets": {str(k): v for k, v in self.epoch_start_offsets.items()},
            "last_stable_offset": self.last_stable_offset,
            "open_transactions": [t.to_dict() for t in self.open_transactions],
            "reason": self.reason,
        }


def _summary(seg: Segment, start: int = 0) -> ScanSummary | None:
    summary = None
    if seg.log is None:
        return None
    for ev in seg.scan(mode=ScanMode.RECOVERY, start=start):
        if isinstance(ev, ScanSummary):
            summary = ev
    return summary


def _last_indexed_position(seg: Segment) -> int:
    """The position of the offset index's last entry: `LogSegment.readNextOffset` reads the batches
    from there on, not the whole segment (0 where there is no index or no entry: a zero entry, as a
    preallocated index's tail, names position 0 too)."""
    if seg.index is None:
        return 0
    try:
        with seg.index.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < 8:
                return 0
            f.seek(size - size % 8 - 8)
            position = int.from_bytes(f.read(8)[4:], "big", signed=True)
    except OSError:
        return 0
    return max(position, 0)


def _log_end(part: PartitionDir) -> int:
    """The last segment's next offset (readNextOffset): its last batch's next, or its base when empty."""
    for i in range(len(part.segments) - 1, -1, -1):
        seg = part.segments[i]
        start = _last_indexed_position(seg)
        s = _summary(seg, start)
        if start and (s is None or s.last_offset is None or s.valid_bytes < s.size):
            s = _summary(seg)  # an index entry that names no batch boundary: read it all
        if s is not None and s.last_offset is not None:
            return s.last_offset + 1
        if i == len(part.segments) - 1 and s is not None:
            return seg.base_offset
    return 0


def _recovered_end(unflushed: list[Segment]) -> int | None:
    """Where recovery re-reads `unflushed` without cutting anything: the log end its reading gives
    (one pass over each segment; None when a segment fails it, and trim-tail's plan then says where
    the cut is)."""
    end: int | None = None
    for i, seg in enumerate(unflushed):
        s = _summary(seg)
        if s is None:
            continue
        if s.valid_bytes < s.size:
            return None
        if s.last_offset is not None:
            end = s.last_offset + 1
        elif i == len(unflushed) - 1:
            end = seg.base_offset  # readNextOffset of an empty last segment: its base
    return end


def _forensic_end(part: PartitionDir) -> int:
    """The offset after the last batch a forensic scan finds (past any damage) in the newest segment
    that holds one."""
    for seg in reversed(part.segments):
        if seg.log is None:
            continue
        last = max((ev.last_offset for ev in seg.scan() if isinstance(ev, BatchHeader)), default=None)
        if last is not None:
            return last + 1
    return 0


def _torn_next_offset(path: Path, position: int) -> int | None:
    """The offset after a torn v2 batch, from its header (base offset + lastOffsetDelta + 1)."""
    with path.open("rb") as f:
        f.seek(position)
        head = f.read(27)
    if len(head) < 27 or head[16] != 2:
        return None
    return int.from_bytes(head[0:8], "big", signed=True) + int.from_bytes(head[23:27], "big", signed=True) + 1


def topic_id_of(part: PartitionDir) -> str | None:
    path = part.partition_metadata
    if path is None:
        return None
    try:
        return decode_partition_metadata(path.read_bytes()).topic_id
    except (CorruptFieldError, DecodeError, OSError, UnicodeDecodeError):
        return None


def _epochs(part: PartitionDir, end: int) -> dict[int, int]:
    path = part.leader_epoch_checkpoint
    if path is None:
        return {}
    try:
        entries = decode_leader_epoch_checkpoint(path.read_bytes()).entries
    except (CorruptFieldError, DecodeError, OSError, UnicodeDecodeError):
        return {}
    return {e.epoch: e.start_offset for e in entries if e.start_offset < end or e.start_offset == 0}


def forecast_partition(
    part: PartitionDir, state: LogDirState, image: MetadataImage | None, node: int | None
) -> PartitionForecast:
    """What the broker does with `part` of log dir `state` at start."""
    assert part.topic is not None
    assert part.partition is not None
    status = part.path.name.rsplit("-", 1)[-1] if "." in part.path.name else ""
    fc = PartitionForecast(str(state.path), part.path.name, part.topic, part.partition, "load")
    fc.topic_id = topic_id_of(part)
    fc.has_data = part.log_bytes > 0
    fc.deleted_files = [str(p) for p in part.leftovers if not p.name.endswith(".swap")]
    key = (part.topic, part.partition)
    # Recovery (LogLoader.recoverLog): segments from the one holding the recovery point on.
    if not state.clean_shutdown and part.segments:
        rp = state.recovery_points.get(key, 0)
        first = max((i for i, s in enumerate(part.segments) if s.base_offset <= rp), default=0)
        unflushed = part.segments[first:]
        fc.reread_segments = [str(s.log) for s in unflushed if s.log is not None]
        fc.reread_bytes = sum(s.log.stat().st_size for s in unflushed if s.log is not None)
        fc.rebuilt_indexes = [str(s.log.with_suffix(".index")) for s in unflushed if s.log is not None]
        fc.rebuilt_snapshots = True
        clean_end = _recovered_end(unflushed) if unflushed[-1] is part.segments[-1] else None
        plan = (
            None if clean_end is not None else plan_partition(replace(part, segments=unflushed), state.path)
        )
        if plan is None:
            fc.action = "recover"
            fc.reason = f"no clean-shutdown marker: re-reads from the recovery point {rp}"
            fc.log_end_offset = fc.old_log_end_offset = clean_end
        elif plan.needed:
            fc.action = "recover"
            fc.removed_bytes = plan.backed_up_bytes
            fc.old_log_end_offset = plan.old_log_end_offset
            fc.log_end_offset = plan.new_log_end_offset
            new_end = (
                plan.new_log_end_offset
                if plan.new_log_end_offset is not None
                else (plan.segment.base_offset if plan.segment else 0)
            )
            # What was there before: the last offset any readable batch of the tail holds (a forensic
            # scan reads past the damage), or the torn batch's own header.
            ends = [plan.old_log_end_offset or 0, _forensic_end(part)]
            if plan.segment is not None and plan.segment.log is not None:
                ends.append(_torn_next_offset(plan.segment.log, plan.cut_position) or 0)
            old_end = max(ends)
            fc.old_log_end_offset = old_end
            # A torn batch's last offset may be unreadable: the loss then starts at the cut, end unknown.
            fc.removed = (new_end, old_end - 1 if old_end is not None and old_end > new_end else new_end)
            fc.log_end_offset = new_end
            fc.reason = f"recovery cuts the log at {plan.segment.log if plan.segment else ''}:{plan.cut_position}: {plan.reason}"
        else:
            fc.action = "recover"
            fc.reason = f"no clean-shutdown marker: re-reads from the recovery point {rp}"
    else:
        fc.rebuilt_indexes = [
            str(s.log.with_suffix(".index")) for s in part.segments if s.log is not None and s.index is None
        ]
    if fc.log_end_offset is None:
        fc.log_end_offset = _log_end(part)
        fc.old_log_end_offset = fc.log_end_offset
    if part.topic != TRANSACTION_STATE_TOPIC:
        fc.ongoing = open_transactions(part, fc.log_end_offset)
    first_base = part.segments[0].base_offset if part.segments else 0
    fc.log_start_offset = max(state.log_starts.get(key, 0), first_base)
    fc.epoch_start_offsets = _epochs(part, fc.log_end_offset)
    if status == "delete":
        fc.action, fc.served = "pending-delete", False
        fc.reason = "a -delete directory: loaded, then deleted after file.delete.delay.ms"
    elif status == "future":
        fc.action, fc.served = "future", False
        fc.reason = "a -future directory: the target of a log dir move, resumed"
    elif status == "stray":
        fc.action, fc.served = "stray", False
        fc.reason = "already set aside as stray: kept, not served"
    elif image is not None and state.kraft:
        topic = image.topics.get(fc.topic_id) if fc.topic_id else None
        named = image.topic_by_name(part.topic)
        fc.image_topic_id = named.topic_id if named else None
        if fc.topic_id is None:
            # Without a topic id the log matches no topic of the image: 4.4 sets it aside (oracle).
            fc.action, fc.served = "stray", False
            fc.reason = "no readable partition.metadata, so no topic id: renamed -stray, not served"
        elif topic is None or part.partition not in topic.partitions:
            fc.action, fc.served = "stray", False
            fc.reason = (
                f"topic id {fc.topic_id} is not in the metadata"
                + (f" (the topic {part.topic} now has id {named.topic_id})" if named else "")
                + ": renamed -stray, not served"
            )
        elif node is not None and node not in topic.partitions[part.partition].replicas:
            fc.action, fc.served = "stray", False
            fc.reason = f"not assigned to node {node} (replicas {topic.partitions[part.partition].replicas}): renamed -stray"
    if not fc.served and fc.action in ("stray", "pending-delete") and fc.has_data:
        fc.removed = (
            (fc.log_start_offset, fc.log_end_offset - 1) if fc.log_end_offset > fc.log_start_offset else None
        )
    return fc


def created_empty(log_dir: str, topic: str, partition: int, topic_id: str) -> PartitionForecast:
    """A partition the image assigns here with no directory: the broker creates it empty."""
    return PartitionForecast(
        log_dir, f"{topic}-{partition}", topic, partition, "create-empty", topic_id=topic_id,
        image_topic_id=topic_id, log_start_offset=0, log_end_offset=0,
        reason="assigned to this broker but missing on disk: created empty",
    )  # fmt: skip


def partition_path(log_dir: Path, topic: str, partition: int) -> Path:
    return log_dir / f"{topic}-{partition}"
