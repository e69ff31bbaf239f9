"""A partition directory's bounds as it stands, or after its log is cut at an offset (`trim-tail`).

The log start is the log dir's `log-start-offset-checkpoint` entry where it is above the first batch
(the broker takes the larger), else the first batch's base offset; the log end is the offset after the
last batch that the broker's recovery keeps; the epoch cache is the `leader-epoch-checkpoint` bounded by
both, as the log loader bounds it. Batches are read with the one scanner in recovery mode.
"""

from __future__ import annotations

from pathlib import Path

from kdump.errors import DecodeError
from kdump.formats.batch import BatchHeader
from kdump.formats.checkpoints import (
    decode_leader_epoch_checkpoint,
    decode_offset_checkpoint,
    decode_partition_metadata,
)
from kdump.formats.filenames import LOG_START_OFFSET_CHECKPOINT
from kdump.model.partition import PartitionDir
from kdump.ops.consumers.bounds import BatchSpan, PartitionBounds
from kdump.scan.events import ScanMode
from kdump.scan.log_scanner import scan_log
from kdump.scan.source import open_buffer, read_small_file


def read_batches(part: PartitionDir) -> list[BatchSpan]:
    """The batches the broker's recovery keeps, in offset order."""
    spans: list[BatchSpan] = []
    for seg in part.segments:
        if seg.log is None:
            continue
        with open_buffer(seg.log) as buf:
            for ev in scan_log(buf, file=str(seg.log), base_offset=seg.base_offset, mode=ScanMode.RECOVERY):
                if isinstance(ev, BatchHeader) and ev.crc_ok:
                    base = ev.base_offset if ev.base_offset is not None else ev.last_offset
                    count = ev.count if ev.count is not None else ev.last_offset - base + 1
                    spans.append(BatchSpan(base, ev.last_offset, count, ev.is_control))
    return spans


def _checkpointed_start(part: PartitionDir, log_dir: Path | None) -> int | None:
    if log_dir is None or part.topic is None:
        return None
    try:
        entries = decode_offset_checkpoint(read_small_file(log_dir / LOG_START_OFFSET_CHECKPOINT)).entries
    except (OSError, DecodeError):
        return None
    return next((e.offset for e in entries if (e.topic, e.partition) == (part.topic, part.partition)), None)


def _epochs(part: PartitionDir) -> dict[int, int]:
    path = part.leader_epoch_checkpoint
    if path is None:
        return {}
    try:
        return {
            e.epoch: e.start_offset for e in decode_leader_epoch_checkpoint(read_small_file(path)).entries
        }
    except (OSError, DecodeError):
        return {}


def _topic_id(part: PartitionDir) -> str | None:
    path = part.partition_metadata
    if path is None:
        return None
    try:
        return decode_partition_metadata(read_small_file(path)).topic_id
    except (OSError, DecodeError):
        return None


def partition_bounds(
    part: PartitionDir,
    log_dir: Path | None = None,
    *,
    cut_at: int | None = None,
    batches: list[BatchSpan] | None = None,
) -> PartitionBounds:
    """The partition's bounds now, or after its log is cut so that `cut_at` and every later offset go."""
    spans = read_batches(part) if batches is None else batches
    end = spans[-1].last_offset + 1 if spans else (part.segments[0].base_offset if part.segments else 0)
    start = spans[0].base_offset if spans else end
    checkpointed = _checkpointed_start(part, log_dir)
    if checkpointed is not None and checkpointed > start:
        start = min(checkpointed, end)
    removed = None
    removed_records = None
    if cut_at is not None and cut_at < end:
        gone = [s for s in spans if s.last_offset >= cut_at]
        spans = [s for s in spans if s.last_offset < cut_at]
        new_end = spans[-1].last_offset + 1 if spans else min(cut_at, end)
        removed = (new_end, end - 1)
        removed_records = sum(s.records for s in gone if not s.control)
        end = new_end
        start = min(start, end)
    spans = [s for s in spans if s.last_offset >= start]
    epochs = {e: o for e, o in _epochs(part).items() if o < end}
    below = [(e, o) for e, o in epochs.items() if o <= start]
    if below:
        floor = max(below)[0]
        epochs = {e: o for e, o in epochs.items() if o > start}
        epochs[floor] = start
    return PartitionBounds(
        log_start_offset=start,
        log_end_offset=end,
        removed=removed,
        epoch_start_offsets=dict(sorted(epochs.items())),
        batches=tuple(spans),
        topic_id=_topic_id(part),
        removed_records=removed_records,
    )
