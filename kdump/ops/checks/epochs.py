"""verify's check of a partition's `leader-epoch-checkpoint` against the leader epochs of its batches.

The broker's cache is the checkpoint as `LeaderEpochFileCache.truncateFromStart` leaves it at the
log start offset L: entries starting at or below L are dropped, the last of them kept with its start
moved up to L. A broker writes it so after DeleteRecords, retention, or (`__cluster_metadata`) a
snapshot that became the oldest; and it truncates again when it loads the log. So batches below L
are not judged, the epoch in force at L is compared as starting at L, and the checkpoint is compared
after the same truncation.

L is the log dir's `log-start-offset-checkpoint` entry, or for the metadata log its oldest
snapshot's offset, or else the first batch; raised to the checkpoint's own first start offset when
the batches agree that its epoch was in force there. The broker writes a truncated epoch checkpoint
at once but its log start checkpoint only once a minute (and at a clean shutdown, after which the
recorded start is trusted), and a partition may be given without its log dir: such a checkpoint is
exactly what a healthy broker leaves, so only what no truncation
explains is a mismatch (an epoch above the start missing or starting late, a first entry whose epoch
the batches did not have there, an entry past the log end).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from pathlib import Path

from kdump.errors import DecodeError, KdumpError
from kdump.findings import Finding, make_finding
from kdump.formats.filenames import CLEAN_SHUTDOWN_FILE
from kdump.model.partition import PartitionDir
from kdump.ops.checks.segment import SegmentResult
from kdump.scan.source import read_small_file

LOG_START_CHECKPOINT = "log-start-offset-checkpoint"

Entries = list[tuple[int, int]]  # (epoch, start offset)


def truncate_from_start(entries: Entries, start: int) -> Entries:
    """`LeaderEpochFileCache.truncateFromStart`: drop entries at or below `start`, keep the last of
    them with its start offset moved up to `start`."""
    below = [e for e in entries if e[1] <= start]
    above = [e for e in entries if e[1] > start]
    return [(below[-1][0], start), *above] if below else above


@functools.lru_cache(maxsize=16)
def _log_start_offsets(path: Path, _mtime_ns: int, _size: int) -> dict[tuple[str, int], int] | None:
    from kdump.formats import checkpoints  # loaded where a partition has a checkpoint to read

    try:
        decoded = checkpoints.decode_offset_checkpoint(read_small_file(path))
    except (DecodeError, KdumpError, ValueError):
        return None  # verify of the log dir reports the file itself; the broker then resets it
    return {(e.topic, e.partition): e.offset for e in decoded.entries}


def log_dir_log_start(part: PartitionDir) -> tuple[bool, int | None]:
    """(whether the log dir holding `part` has a readable log-start-offset-checkpoint, its entry)."""
    if part.log_dir_facts is not None and not part.log_dir_facts.there(LOG_START_CHECKPOINT):
        return False, None  # its log dir's listing found none: no look per partition
    path = part.path.parent / LOG_START_CHECKPOINT
    try:
        st = path.stat()
    except OSError:
        return False, None
    offsets = _log_start_offsets(path, st.st_mtime_ns, st.st_size)
    if offsets is None or part.topic is None or part.partition is None:
        return False, None
    return True, offsets.get((part.topic, part.partition))


def _oldest_snapshot(part: PartitionDir) -> int | None:
    offsets = []
    for p in part.kraft_checkpoints:
        head = p.name.split("-", 1)[0]
        if head.isdigit():
            offsets.append(int(head))
    return min(offsets, default=None)


def _in_force(seen: dict[int, int], offset: int) -> int | None:
    """The epoch of the batches at `offset`: the one whose first batch starts last at or before it."""
    before = [(first, epoch) for epoch, first in seen.items() if first <= offset]
    return max(before)[1] if before else None


def log_start_offset(part: PartitionDir, entries: Entries, seen: dict[int, int]) -> tuple[int | None, str]:
    """The log start offset the checkpoint is judged at, and where it comes from (for messages)."""
    first = min(seen.values(), default=None)
    start, source = first, "the first batch"
    has_file, recorded = log_dir_log_start(part)
    snapshot = _oldest_snapshot(part)
    if has_file and recorded is not None:
        start, source = (recorded if first is None else max(recorded, first)), f"the {LOG_START_CHECKPOINT}"
    elif snapshot is not None:
        start, source = (snapshot if first is None else max(snapshot, first)), "the oldest snapshot"
    # The broker flushes a truncated epoch checkpoint at once, its log start checkpoint once a
    # minute (and at a clean shutdown): unless the log dir was shut down cleanly, a checkpoint
    # truncated above the recorded start, at an offset where the batches had its first epoch in
    # force, is what it writes, and a lagging file does not contradict it.
    clean = has_file and recorded is not None and part.beside(CLEAN_SHUTDOWN_FILE)
    if (
        not clean
        and entries
        and start is not None
        and entries[0][1] > start
        and _in_force(seen, entries[0][1]) == entries[0][0]
    ):
        return entries[0][1], "the checkpoint's first entry, where the broker truncated it"
    return start, source


def check_leader_epochs(part: PartitionDir, results: Sequence[SegmentResult]) -> Iterator[Finding]:
    """The partition's leader-epoch-checkpoint against its batches' epochs (see the module docstring)."""
    path = part.leader_epoch_checkpoint
    if path is None:
        return
    from kdump.formats import checkpoints  # loaded where a partition has a checkpoint to read

    try:
        # Found a regular file by the partition's listing: opened without another look first.
        checkpoint = checkpoints.decode_leader_epoch_checkpoint(read_small_file(path, probed=True))
    except (DecodeError, KdumpError, ValueError) as exc:
        # Derived data: reindex rebuilds it from the batches (kdump.ops.repair.epoch_rebuild).
        yield make_finding(
            "checkpoint-corrupt", str(path), str(exc), repair="kdump reindex --apply PARTITION"
        )
        return
    entries = [(e.epoch, e.start_offset) for e in checkpoint.entries]
    seen: dict[int, int] = {}
    for r in results:
        for epoch, first in r.epochs:
            seen.setdefault(epoch, first)
    start, source = log_start_offset(part, entries, seen)
    log_end = max(
        (r.summary.last_offset for r in results if r.summary and r.summary.last_offset is not None),
        default=None,
    )
    if start is not None:
        entries = truncate_from_start(entries, start)
        in_force = _in_force(seen, start)
        seen = {epoch: first for epoch, first in seen.items() if first >= start}
        if in_force is not None and log_end is not None and log_end >= start:
            seen.setdefault(in_force, start)
    if log_end is None and not results_partial(results):
        yield from _log_gone(part, path, entries, start)
        return
    starts = dict(entries)
    below = f" (log start offset {start}, from {source})" if start is not None and start > 0 else ""
    for epoch, first in sorted(seen.items()):
        if epoch not in starts:
            yield make_finding(
                "leader-epoch-mismatch",
                str(path),
                f"batches from offset {first} carry leader epoch {epoch}, which the checkpoint does not list{below}",
                offset=first,
            )
        elif starts[epoch] > first:
            yield make_finding(
                "leader-epoch-mismatch",
                str(path),
                f"the checkpoint starts epoch {epoch} at offset {starts[epoch]}, but batches carry it from {first}"
                f"{below}",
                offset=first,
            )
    # A --max-bytes read does not know the log end: epochs past what it read are not judged.
    if log_end is not None and not any(r.summary is not None and r.summary.partial for r in results):
        for epoch, offset in entries:
            if offset > log_end + 1:
                yield make_finding(
                    "leader-epoch-mismatch",
                    str(path),
                    f"the checkpoint starts epoch {epoch} at offset {offset}, past the log end {log_end + 1}",
                    offset=offset,
                    past_log_end=True,
                )


def results_partial(results: Sequence[SegmentResult]) -> bool:
    """Whether a --max-bytes read stopped short of a segment's end."""
    return any(r.summary is not None and r.summary.partial for r in results)


def _log_gone(part: PartitionDir, path: Path, entries: Entries, start: int | None) -> Iterator[Finding]:
    """A partition with no batch, whose epoch checkpoint says offsets past its log start were written.

    The broker loads it as it is: its log end is the log start (the first, empty segment's base, or
    the recorded log start, or for the metadata log its newest snapshot), and it truncates the epoch
    cache there. Every offset the checkpoint vouches for above that is gone: for `__cluster_metadata`
    the node has no metadata left, and a dynamic quorum's node no voter set: it cannot start.
    """
    bases = [s.base_offset for s in part.segments]
    end = max([start or 0, *bases, *(_snapshot_ends(part))])
    past = [(epoch, offset) for epoch, offset in entries if offset > end]
    if not past:
        return
    epoch, offset = past[-1]
    what = "the metadata log" if part.name.startswith("__cluster_metadata") else "the partition"
    held = "no segment" if not part.segments else "only empty segments"
    yield make_finding(
        "log-missing",
        str(path),
        f"the checkpoint says leader epoch {epoch} began at offset {offset}, but {what} holds {held}"
        + (" and no snapshot" if not part.kraft_checkpoints else " and no snapshot that far")
        + f": the broker starts it empty at offset {end}, and offsets {end} to {offset} at least are gone",
        offset=end,
    )


def _snapshot_ends(part: PartitionDir) -> list[int]:
    heads = (p.name.split("-", 1)[0] for p in part.kraft_checkpoints)
    return [int(h) for h in heads if h.isdigit()]
