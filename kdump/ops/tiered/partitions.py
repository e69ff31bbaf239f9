"""Tiered partitions: which partitions are tiered, their two log start offsets, and the broker's epoch answers.

A partition is tiered when the broker has `remote.log.storage.system.enable=true` and its topic
`remote.storage.enable=true` (`UnifiedLog.isRemoteLogEnabled`; internal topics never are). The broker's
config is not on disk; a topic's is, in the KRaft metadata log (`kdump.ops.common.topic_config`), so kdump
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

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kdump.errors import DecodeError, KdumpError
from kdump.findings import Finding, make_finding
from kdump.model.partition import PartitionDir
from kdump.ops.common.topic_config import TopicConfigs
from kdump.scan.source import read_small_file

if TYPE_CHECKING:
    # Loaded only for a partition with remote metadata: a plain verify does not pay for the decoders
    # of the internal topics.
    from kdump.model.remote_store import RemoteStore
    from kdump.ops.tiered.remote_metadata import PartitionRemoteLog, RemoteLogMetadata

REMOTE_STORAGE_ENABLE = "remote.storage.enable"

EpochEntries = Sequence[tuple[int, int]]  # (epoch, start offset), as the checkpoint lists them


@dataclass(slots=True)
class TieredContext:
    """What tiered rules read besides a partition: topic configs, remote metadata, the remote store.

    `metadata_paths`: where `__remote_log_metadata` partitions are looked for (empty: the log dir
    holding each partition); `store_metadata_paths`: where a remote store's are looked for when no
    `metadata_paths` are given (the log dirs given beside it). Each set is loaded once.
    """

    configs: TopicConfigs = field(default_factory=TopicConfigs)
    metadata_paths: tuple[Path, ...] = ()
    store: RemoteStore | None = None
    store_metadata_paths: tuple[Path, ...] = ()
    _metadata: dict[tuple[Path, ...], RemoteLogMetadata] = field(default_factory=dict)

    def metadata_for(self, log_dir: Path | None) -> RemoteLogMetadata | None:
        """The replayed remote log metadata that speaks for a partition of `log_dir`."""
        return self._load(self.metadata_paths or ((log_dir,) if log_dir is not None else ()))

    def store_metadata(self) -> RemoteLogMetadata | None:
        """The replayed remote log metadata a remote store is checked against (None: none found)."""
        return self._load(self.metadata_paths or self.store_metadata_paths)

    def _load(self, paths: tuple[Path, ...]) -> RemoteLogMetadata | None:
        if not paths:
            return None
        if paths not in self._metadata:
            from kdump.ops.tiered.remote_metadata import load_remote_log_metadata

            self._metadata[paths] = load_remote_log_metadata(paths)
        meta = self._metadata[paths]
        return meta if meta.sources else None


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
    from kdump.formats.checkpoints import decode_leader_epoch_checkpoint

    try:
        decoded = decode_leader_epoch_checkpoint(read_small_file(path))
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


# ------------------------------------------------------------------------------------------------ verify


@dataclass(slots=True)
class LogStartCheckpoints:
    """`log-start-offset-checkpoint` of each log dir, read once."""

    _by_dir: dict[Path, dict[tuple[str, int], int]] = field(default_factory=dict)

    def get(self, log_dir: Path | None, topic: str, partition: int) -> int | None:
        if log_dir is None:
            return None
        if log_dir not in self._by_dir:
            values: dict[tuple[str, int], int] = {}
            path = log_dir / "log-start-offset-checkpoint"
            decoded = None
            if path.is_file():  # the checkpoints' decoders load only where there is one
                from kdump.formats.checkpoints import decode_offset_checkpoint

                with contextlib.suppress(
                    DecodeError, KdumpError, ValueError
                ):  # verify of the log dir reports it
                    decoded = decode_offset_checkpoint(read_small_file(path))
            for e in decoded.entries if decoded is not None else ():
                values[(e.topic, e.partition)] = e.offset
            self._by_dir[log_dir] = values
        return self._by_dir[log_dir].get((topic, partition))


@dataclass(frozen=True, slots=True)
class TieredFacts:
    """A partition's tiering as verify reports it: tiered or not (None: unknown), both log starts, and
    the holes in its remote log between them."""

    tiered: bool | None
    log_start_offset: int | None = None
    local_log_start_offset: int | None = None
    gaps: tuple[Finding, ...] = ()


def tiered_facts(
    part: PartitionDir, log_dir: Path | None, ctx: TieredContext, starts: LogStartCheckpoints
) -> TieredFacts | None:
    """A partition's log starts as the broker loads them and its remote coverage; None when its
    checkpoint is not below its first segment (then tiered or not makes no difference)."""
    if part.topic is None or part.partition is None or not part.segments:
        return None
    checkpoint = starts.get(log_dir, part.topic, part.partition)
    first_base = part.segments[0].base_offset
    if checkpoint is None or checkpoint >= first_base:
        return None
    facts = tiering(part, log_dir, ctx.configs)
    if not facts.tiered:
        return TieredFacts(facts.tiered)
    start, local = broker_log_starts(checkpoint, first_base, True)
    assert start is not None
    assert local is not None
    meta = ctx.metadata_for(log_dir)
    remote = (
        meta.for_partition(part.topic, part.partition, partition_topic_id(part)) if meta is not None else None
    )
    if remote is None:
        # The metadata of this partition is on another broker: nothing to check the remote part against.
        return TieredFacts(True, start, local)
    return TieredFacts(True, start, local, tuple(coverage_gaps(remote, start, local - 1, str(part.path))))


def partition_topic_id(part: PartitionDir) -> str | None:
    """The topic id in the partition's `partition.metadata`, if it decodes."""
    path = part.partition_metadata
    if path is None:
        return None
    from kdump.formats.checkpoints import decode_partition_metadata

    try:
        return decode_partition_metadata(read_small_file(path)).topic_id
    except (DecodeError, KdumpError, ValueError):
        return None


def coverage_gaps(remote: PartitionRemoteLog, low: int, high: int, label: str) -> list[Finding]:
    """Holes in [low, high] that no finished remote segment covers."""
    out: list[Finding] = []
    cursor = low
    for seg in remote.finished():
        if seg.end_offset < cursor:
            continue
        if seg.start_offset > cursor and cursor <= high:
            out.append(_gap(label, cursor, min(seg.start_offset - 1, high)))
        cursor = max(cursor, seg.end_offset + 1)
        if cursor > high:
            break
    if cursor <= high:
        out.append(_gap(label, cursor, high))
    return out


def _gap(label: str, low: int, high: int) -> Finding:
    return make_finding(
        "remote-log-gap",
        label,
        f"offsets {low}..{high} are in no remote segment whose copy finished: the broker answers fetches there "
        "with OffsetOutOfRange and consumers skip them",
        offset=low,
    )
