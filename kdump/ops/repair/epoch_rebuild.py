"""Rebuild a partition's unreadable `leader-epoch-checkpoint` from its batches, as `reindex` does indexes.

A checkpoint the broker cannot parse takes the log dir offline (`checkpoint-corrupt`). The cache it
stands for is derived data: each leader epoch with the first offset of its batches
(`LeaderEpochFileCache.assign` on every append), truncated from the start at the log start offset
(`truncateFromStart`). Rebuilt so, from the valid batches of the partition, it is the file the broker
would hold had it written every append, and the broker starts on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kdump.errors import DecodeError, KdumpError
from kdump.model.partition import PartitionDir
from kdump.ops.checks.epochs import log_start_offset, truncate_from_start
from kdump.ops.checks.segment import SegmentResult
from kdump.scan.source import read_small_file

KIND = "leader-epoch-checkpoint"


def unreadable_epoch_checkpoint(part: PartitionDir) -> Path | None:
    """The partition's leader-epoch-checkpoint when the broker could not parse it, else None."""
    from kdump.formats import checkpoints

    path = part.leader_epoch_checkpoint
    if path is None:
        return None
    try:
        checkpoints.decode_leader_epoch_checkpoint(read_small_file(path))
    except (DecodeError, KdumpError, ValueError):
        return path
    return None


def rebuilt_epochs(part: PartitionDir, results: Sequence[SegmentResult]) -> list[tuple[int, int]]:
    """(epoch, start offset) entries the broker's cache holds for these batches."""
    seen: dict[int, int] = {}
    for r in results:
        if r.summary is None:
            continue
        for epoch, first in r.epochs:
            seen.setdefault(epoch, first)
    entries: list[tuple[int, int]] = []
    for epoch, first in sorted(seen.items(), key=lambda kv: (kv[1], kv[0])):
        if epoch < 0 or (entries and epoch <= entries[-1][0]):
            continue  # the cache only takes a higher epoch (`assign` ignores a lower one)
        entries.append((epoch, first))
    start, _ = log_start_offset(part, entries, seen)
    return truncate_from_start(entries, start) if start is not None else entries


def encode(entries: Sequence[tuple[int, int]]) -> bytes:
    """The checkpoint's text, as `CheckpointFile` writes it."""
    from kdump.formats.checkpoints import encode_leader_epoch_checkpoint

    return encode_leader_epoch_checkpoint(entries)


def rebuild(part: PartitionDir, results: Sequence[SegmentResult]) -> tuple[Path, int, bytes] | None:
    """(path, entries, bytes) of the rebuilt checkpoint, where the partition's is unreadable."""
    path = unreadable_epoch_checkpoint(part)
    if path is None:
        return None
    entries = rebuilt_epochs(part, results)
    return path, len(entries), encode(entries)
