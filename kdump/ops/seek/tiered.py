"""`seek-by-time` on tiered storage: KIP-1005's `earliest-local` and `latest-tiered`, KIP-1023's
`earliest-pending-upload`, and times that fall in a partition's remote part.

Mirrors `UnifiedLog.fetchOffsetByTimestamp` and `RemoteLogManager.findOffsetByTimestamp` (Kafka 4.4):

- `earliest-local` (-4): on a tiered partition the local log start offset, with the epoch the epoch
  cache gives that offset; on any other partition exactly `earliest`;
- `latest-tiered` (-5): on a tiered partition the highest offset copied to remote storage
  (`findHighestRemoteOffset` over `__remote_log_metadata`, -1 when none), with its epoch; on any other
  partition none (the broker answers -1 with epoch -1);
- `earliest-pending-upload` (-6): the first offset not yet copied: max(highest copied + 1, log start
  offset); with nothing copied, `earliest` when the local log starts at the log start offset, else none;
- a time t on a tiered partition: the remote log is searched first, from the log start offset. From
  the epoch of the log start offset upwards through the epoch cache, the first finished remote segment
  (by start offset) of that epoch whose max timestamp is >= t and whose end offset is >= the log start
  offset is read as a local segment is (its time index, then its offset index, then its batches). No
  record there, or no such segment: the local log is searched from the local log start offset.

The remote segments come from `__remote_log_metadata` (a log dir's `__remote_log_metadata-N`, or the
ones named); their bytes from the remote store, when one is given. Where the answer needs bytes only
the remote store holds and none was given, or the metadata that would say is missing, there is no
offset and a note says why, never a guess.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kdump.model.index_view import ReadLedger
from kdump.model.partition import PartitionDir
from kdump.model.segment import Segment
from kdump.model.segment_time import largest_timestamp
from kdump.model.segment_view import SegmentView
from kdump.ops.tiered.partitions import (
    EpochEntries,
    TieredContext,
    Tiering,
    epoch_for_offset,
    highest_remote_offset,
    partition_topic_id,
    tiering,
)
from kdump.ops.tiered.remote_metadata import (
    PartitionRemoteLog,
    RemoteSegment,
)

if TYPE_CHECKING:
    from kdump.model.segment_time import SegmentMax
    from kdump.ops.seek.result import SeekResult

TIERED_TARGETS = ("earliest-local", "latest-tiered", "earliest-pending-upload")


class SeekRun(ReadLedger):
    """What the tiered answers need of one partition's query (`kdump.ops.seek.by_time` runs it, as a
    ledger of findings and cost): its state, and the local answers they fall back to."""

    ctx: TieredContext | None
    part: PartitionDir
    segments: list[Segment]
    notes: list[str]
    epochs: EpochEntries
    log_start_offset: int | None
    local_log_start_offset: int | None
    tiered: bool | None
    tiering: Tiering | None

    def view(self, i: int, stack: ExitStack) -> SegmentView:
        raise NotImplementedError

    def result(self, target: str, target_timestamp: int | None, **kw: Any) -> SeekResult:
        raise NotImplementedError

    def search_segment(self, sv: SegmentView, t: int, lso: int, largest: SegmentMax) -> SeekResult | None:
        raise NotImplementedError

    def seek_earliest(self, target: str = "earliest") -> SeekResult:
        raise NotImplementedError

    def start_answer(self, target: str, lso: int | None, epoch: int | None) -> SeekResult:
        raise NotImplementedError


def needs_tiering(target: object) -> bool:
    """Whether an answer for `target` depends on the partition being tiered."""
    return isinstance(target, str) and target in TIERED_TARGETS


def partition_tiering(part: PartitionDir, log_dir: Path | None, ctx: TieredContext | None) -> Tiering:
    """Whether the partition is tiered (unknown without a context to read topic configs from)."""
    if ctx is None:
        return Tiering(None, "no metadata log was consulted")
    return tiering(part, log_dir, ctx.configs)


def _remote_log(run: SeekRun) -> tuple[PartitionRemoteLog | None, str | None]:
    """The partition's remote log from the metadata, or why there is none to read."""
    if run.ctx is None or run.part.topic is None or run.part.partition is None:
        return None, "no __remote_log_metadata was consulted"
    meta = run.ctx.metadata_for(run.part.path.parent)
    if meta is None:
        return None, "no __remote_log_metadata partition beside it or named with --remote-log-metadata"
    remote = meta.for_partition(run.part.topic, run.part.partition, partition_topic_id(run.part))
    if remote is None:
        names = ", ".join(p.name for p in meta.sources)
        return None, f"the __remote_log_metadata partitions read ({names}) hold no record of this partition"
    return remote, None


def _log_end_offset(run: SeekRun) -> int | None:
    if not run.segments:
        return run.log_start_offset
    with ExitStack() as stack:
        sv = run.view(len(run.segments) - 1, stack)
        last = sv.tail.last_batch
        leo = sv.base if last is None else last.last_offset + 1
    lso = run.log_start_offset
    return max(leo, lso) if lso is not None else leo


def seek_tiered_target(run: SeekRun, target: str) -> SeekResult:
    """Answer `earliest-local`, `latest-tiered` or `earliest-pending-upload`."""
    if run.tiered is None:
        assert run.tiering is not None
        run.notes.append(f"cannot tell whether the partition is tiered: {run.tiering.source}")
        return run.result(target, None)
    if target == "earliest-local":
        if not run.tiered:
            return run.seek_earliest("earliest-local")
        local = run.local_log_start_offset
        epoch = epoch_for_offset(run.epochs, local) if local is not None else None
        return run.start_answer("earliest-local", local, epoch)
    if not run.tiered:
        run.notes.append("the partition is not tiered: the broker answers -1")
        return run.result(target, None)
    remote, why = _remote_log(run)
    if remote is None:
        run.notes.append(f"cannot tell what was copied to remote storage: {why}")
        return run.result(target, None)
    leo = _log_end_offset(run)
    assert leo is not None
    highest = highest_remote_offset(remote, run.epochs, leo)
    if target == "latest-tiered":
        if highest < 0:
            run.notes.append("nothing of the partition is copied to remote storage: the broker answers -1")
            return run.result(target, None, log_end_offset=leo)
        epoch = epoch_for_offset(run.epochs, highest)
        return run.result(target, None, offset=highest, leader_epoch=epoch, log_end_offset=leo)
    lso = run.log_start_offset
    assert lso is not None
    if highest < 0:
        if run.local_log_start_offset == lso:
            result = run.seek_earliest(target)
            return result
        run.notes.append("no copied segment is known and the local log starts above the log start offset")
        return run.result(target, None, log_end_offset=leo)
    pending = max(highest + 1, lso)
    return run.result(target, None, offset=pending, leader_epoch=epoch_for_offset(run.epochs, pending))


def remote_start_answer(run: SeekRun, target: str, offset: int, epoch: int | None) -> SeekResult:
    """An answer at an offset below the local log: the remote segment that holds it, where known."""
    remote, why = _remote_log(run)
    seg = None
    if remote is not None:
        seg = next((s for s in remote.finished() if s.start_offset <= offset <= s.end_offset), None)
    files = _remote_files(run, remote, seg) if seg is not None else None
    if seg is None:
        run.notes.append(f"offset {offset} is in remote storage" + (f" ({why})" if why else ""))
        return run.result(target, None, offset=offset, leader_epoch=epoch)
    if files is None:
        run.notes.append(
            f"offset {offset} is in remote segment {seg.segment_id} (offsets {seg.start_offset}..{seg.end_offset})"
        )
        return run.result(target, None, offset=offset, leader_epoch=epoch)
    with ExitStack() as stack:
        sv = SegmentView(files, None, stack, run, label=str(files.log))
        h = sv.batch_holding(offset)
        return run.result(
            target,
            None,
            offset=offset,
            leader_epoch=epoch,
            segment=sv.label,
            position=h.position if h is not None else None,
            used_index=run.fallbacks == 0,
        )


def _remote_files(run: SeekRun, remote: PartitionRemoteLog | None, seg: RemoteSegment) -> Segment | None:
    """The remote segment's files in the remote store given, as a `Segment`; None without them."""
    if run.ctx is None or run.ctx.store is None or remote is None:
        return None
    part = run.ctx.store.partition(remote.topic_id, remote.partition)
    files = part.segments.get(seg.segment_id) if part is not None else None
    if files is None or "log" not in files.files:
        return None
    return files.segment()


def _remote_candidates(
    remote: PartitionRemoteLog, entries: EpochEntries, t: int, lso: int
) -> list[RemoteSegment]:
    """The finished segments in the order the broker tries them: by epoch from the log start's, then
    by start offset, each once."""
    epoch = epoch_for_offset(entries, lso)
    if epoch is None:
        return []
    later = [e for e, _ in entries if e >= epoch]
    seen: set[str] = set()
    out: list[RemoteSegment] = []
    for e in later:
        for seg in remote.finished():
            if e in seg.leader_epochs and seg.segment_id not in seen:
                seen.add(seg.segment_id)
                if seg.max_timestamp >= t and seg.end_offset >= lso:
                    out.append(seg)
    return out


def remote_time_answer(run: SeekRun, t: int) -> SeekResult | None:
    """The broker's remote search for time `t`; None when the local log is to be searched instead."""
    lso = run.log_start_offset
    local = run.local_log_start_offset
    assert lso is not None
    assert local is not None
    remote, why = _remote_log(run)
    if remote is None:
        if lso < local:
            run.notes.append(f"offsets {lso}..{local - 1} are in remote storage and {why}: cannot answer")
            return run.result("timestamp", t)
        return None
    for seg in _remote_candidates(remote, run.epochs, t, lso):
        if seg.start_offset >= local:
            return None  # the same bytes are still local: the local search reads them
        files = _remote_files(run, remote, seg)
        if files is None:
            run.notes.append(
                f"the answer is in remote segment {seg.segment_id} (offsets {seg.start_offset}..{seg.end_offset}, "
                f"max timestamp {seg.max_timestamp}), which only the remote store holds: give it with --remote"
            )
            return run.result("timestamp", t)
        with ExitStack() as stack:
            sv = SegmentView(files, None, stack, run, label=str(files.log))
            found = run.search_segment(sv, t, lso, largest_timestamp(sv))
        if found is not None:
            return found
        run.notes.append(
            f"no record of remote segment {seg.segment_id} is at or after {t}: the local log is searched"
        )
        return None
    return None
