"""Checks of a partition's and a log dir's state files: producer snapshots and the text files.

Each returns findings, never raises: a file that cannot be read is `unreadable-file`, one that
does not decode as the broker reads it `snapshot-corrupt` or `checkpoint-corrupt`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from kdump.errors import DecodeError, KdumpError
from kdump.findings import Finding, make_finding
from kdump.formats import checkpoints
from kdump.formats.producer_snapshot import decode_producer_snapshot
from kdump.model.partition import PartitionDir
from kdump.ops.segment_check import SegmentResult
from kdump.ops.tiered import LogStartCheckpoints
from kdump.scan.source import read_small_file


def check_snapshot(path: Path) -> list[Finding]:
    """A producer state snapshot decodes and its checksum holds."""
    try:
        snap = decode_producer_snapshot(read_small_file(path))
    except (DecodeError, ValueError) as exc:
        return [make_finding("snapshot-corrupt", str(path), str(exc))]
    except KdumpError as exc:
        return [make_finding("unreadable-file", str(path), str(exc))]
    if not snap.crc_ok:
        return [
            make_finding(
                "snapshot-corrupt",
                str(path),
                f"stored crc {snap.stored_crc} differs from computed crc {snap.computed_crc}",
                position=2,
            )
        ]
    return []


TEXT_DECODERS = {
    "leader-epoch-checkpoint": checkpoints.decode_leader_epoch_checkpoint,
    "offset-checkpoint": checkpoints.decode_offset_checkpoint,
    "partition-metadata": checkpoints.decode_partition_metadata,
    "meta-properties": checkpoints.decode_meta_properties,
}


def check_text_state(path: Path, kind: str) -> list[Finding]:
    """A text state file (checkpoint, partition.metadata, meta.properties) decodes as the broker reads it."""
    try:
        TEXT_DECODERS[kind](read_small_file(path))
    except (DecodeError, ValueError) as exc:
        return [make_finding("checkpoint-corrupt", str(path), str(exc))]
    except KdumpError as exc:
        return [make_finding("unreadable-file", str(path), str(exc))]
    return []


def check_leader_epochs(part: PartitionDir, results: Sequence[SegmentResult]) -> Iterator[Finding]:
    """The partition's leader-epoch-checkpoint against the leader epochs its batches carry.

    Batches below the log start offset (the log dir's `log-start-offset-checkpoint`: DeleteRecords,
    retention inside a segment) are no longer part of the log: the broker truncates its epoch cache
    from the start there (`LeaderEpochFileCache.truncateFromStart`), dropping the epochs that end
    below it and moving the start of the epoch it falls in up to it.
    """
    path = part.leader_epoch_checkpoint
    if path is None:
        return
    try:
        checkpoint = checkpoints.decode_leader_epoch_checkpoint(read_small_file(path))
    except (DecodeError, KdumpError, ValueError) as exc:
        yield make_finding("checkpoint-corrupt", str(path), str(exc))
        return
    starts = {e.epoch: e.start_offset for e in checkpoint.entries}
    seen: dict[int, int] = {}
    for r in results:
        for epoch, first in r.epochs:
            seen.setdefault(epoch, first)
    log_end = max(
        (r.summary.last_offset for r in results if r.summary and r.summary.last_offset is not None),
        default=None,
    )
    for epoch, first in sorted(_above_log_start(part, seen, log_end).items()):
        if epoch not in starts:
            yield make_finding(
                "leader-epoch-mismatch",
                str(path),
                f"batches from offset {first} carry leader epoch {epoch}, which the checkpoint does not list",
                offset=first,
            )
        elif starts[epoch] > first:
            yield make_finding(
                "leader-epoch-mismatch",
                str(path),
                f"the checkpoint starts epoch {epoch} at offset {starts[epoch]}, but batches carry it from {first}",
                offset=first,
            )
    # A --max-bytes read does not know the log end: epochs past what it read are not judged.
    if log_end is not None and not any(r.summary is not None and r.summary.partial for r in results):
        for e in checkpoint.entries:
            if e.start_offset > log_end + 1:
                yield make_finding(
                    "leader-epoch-mismatch",
                    str(path),
                    f"the checkpoint starts epoch {e.epoch} at offset {e.start_offset}, past the log end {log_end + 1}",
                    offset=e.start_offset,
                )


def _above_log_start(part: PartitionDir, seen: dict[int, int], log_end: int | None) -> dict[int, int]:
    """The first offset of each epoch at or above the log start offset (epochs wholly below it go)."""
    if part.topic is None or part.partition is None:
        return seen
    log_start = LogStartCheckpoints().get(part.path.parent, part.topic, part.partition)
    if log_start is None:
        return seen
    ordered = sorted(seen.items(), key=lambda kv: kv[1])
    out: dict[int, int] = {}
    for i, (epoch, first) in enumerate(ordered):
        end = ordered[i + 1][1] if i + 1 < len(ordered) else (None if log_end is None else log_end + 1)
        if first < log_start and end is not None and end <= log_start:
            continue
        out[epoch] = max(first, log_start)
    return out
