"""Tiered partitions: which partitions are tiered, their two log start offsets, and the broker's epoch answers.

A partition is tiered when the broker has `remote.log.storage.system.enable=true` and its topic
`remote.storage.enable=true` (`UnifiedLog.isRemoteLogEnabled`; internal topics never are). The broker's
config is not on disk; a topic's is, in the KRaft metadata log (`kdump.ops.topic_config`), so kdump
takes a topic whose config enables remote storage as tiered.

For a tiered partition the broker loads (`LogLoader`):

- the **log start offset** from `log-start-offset-checkpoint` as it is (0 when the partition is not
  listed), even below the first local segment: the offsets between are in remote storage;
- the **local log start offset**: the larger of the log start offset and the first local segment's base.

Any other partition's log start offset is the checkpoint raised to the first segment's base.

The leader epoch answers of ListOffsets come from the partition's epoch cache, which the broker keeps in
`leader-epoch-checkpoint` (`LeaderEpochFileCache`: `earliestEntry`, `latestEpoch`, `epochForOffset`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kdump.errors import DecodeError, KdumpError
from kdump.formats import checkpoints
from kdump.model.partition import PartitionDir
from kdump.ops.remote_metadata import PartitionRemoteLog
from kdump.ops.topic_config import TopicConfigs
from kdump.scan.source import read_small_file

REMOTE_STORAGE_ENABLE = "remote.storage.enable"

EpochEntries = Sequence[tuple[int, int]]  # (epoch, start offset), as the checkpoint lists them


@dataclass(frozen=True, slots=True)
class Tiering:
    """Whether a partition is tiered, and how kdump knows (`source`: the metadata log, or why unknown)."""

    tiered: bool | None
    source: str


def tiering(part: PartitionDir, log_dir: Path | None, configs: TopicConfigs) -> Tiering:
    """Whether the broker treats this partition as tiered, from its topic's config in the metadata log."""
    if part.topic is None:
        return Tiering(False, "not a topic partition")
    if part.topic.startswith("__"):
        return Tiering(False, "internal topics are never tiered")
    meta = configs.source(log_dir)
    topic = configs.for_topic(part.topic, log_dir)
    if topic is None or meta is None:
        return Tiering(None, "no KRaft metadata log beside it says whether its topic enables remote storage")
    enabled = topic.get(REMOTE_STORAGE_ENABLE, "false").strip().lower() == "true"
    return Tiering(enabled, f"{REMOTE_STORAGE_ENABLE}={'true' if enabled else 'false'} in {meta}")


def broker_log_starts(
    checkpoint: int | None, first_base: int | None, tiered: bool
) -> tuple[int | None, int | None]:
    """(log start offset, local log start offset) as the broker loads them."""
    if tiered:
        start = checkpoint if checkpoint is not None else 0
        return start, start if first_base is None else max(start, first_base)
    if first_base is None:
        return checkpoint, checkpoint
    start = first_base if checkpoint is None else max(checkpoint, first_base)
    return start, start


def read_epoch_entries(part: PartitionDir) -> EpochEntries:
    """The partition's `leader-epoch-checkpoint` entries; none when it is absent or does not decode."""
    path = part.leader_epoch_checkpoint
    if path is None:
        return ()
    try:
        decoded = checkpoints.decode_leader_epoch_checkpoint(read_small_file(path))
    except (DecodeError, KdumpError, ValueError):
        return ()  # verify reports it (checkpoint-corrupt); the broker then starts an empty cache
    return tuple((e.epoch, e.start_offset) for e in decoded.entries)


def epoch_for_offset(entries: EpochEntries, offset: int) -> int | None:
    """`LeaderEpochFileCache.epochForOffset`: the epoch of the last entry starting at or before `offset`."""
    previous: int | None = None
    for epoch, start in entries:
        if start == offset:
            return epoch
        if start > offset:
            return previous
        previous = epoch
    return previous


def earliest_epoch(entries: EpochEntries, log_start_offset: int) -> int | None:
    """ListOffsets' epoch for `earliest`: the first entry's, when it starts at or before the log start."""
    if entries and entries[0][1] <= log_start_offset:
        return entries[0][0]
    return None


def latest_epoch(entries: EpochEntries) -> int | None:
    """`LeaderEpochFileCache.latestEpoch`."""
    return entries[-1][0] if entries else None


def highest_remote_offset(
    remote: PartitionRemoteLog | None, entries: EpochEntries, log_end_offset: int
) -> int:
    """`RemoteLogManager.findHighestRemoteOffset`: from the latest epoch down, the first epoch the remote
    metadata has a finished segment in gives the highest offset copied (bounded by the epoch's end in
    the local epoch cache); -1 when nothing is copied."""
    if remote is None:
        return -1
    for i in range(len(entries) - 1, -1, -1):
        epoch = entries[i][0]
        highest = remote.highest_offset_for_epoch(epoch)
        if highest is None:
            continue
        end = entries[i + 1][1] if i + 1 < len(entries) else log_end_offset
        return end - 1 if end <= highest else highest
    return -1
