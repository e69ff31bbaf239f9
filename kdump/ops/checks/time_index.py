"""verify's check of a closed segment's time index as the broker reads it: its last slot.

A closed segment's `.timeindex` is loaded with every whole 12-byte slot counted as an entry (no sanity
check at load; zero-filled slots count too), and the segment's largest timestamp is its last entry's
(`TimeIndex.lastEntry`, `LogSegment.largestTimestamp`). A broker always closes a segment with an entry
for its largest timestamp (at roll, and when recovery rebuilds it). Where the last slot says less, the
broker takes the segment for older than it is: `ListOffsets` by timestamp passes over it
(`UnifiedLog.fetchOffsetByTimestamp` looks for the first segment whose largest timestamp reaches the
target) and answers from a later segment, and time retention deletes it early. The active segment is
left alone: its preallocated tail is trimmed at roll, and recovery rebuilds it after a crash.
"""

from __future__ import annotations

import functools
import itertools
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path

from kdump.errors import KdumpError
from kdump.findings import Finding, make_finding
from kdump.formats.filenames import CLEAN_SHUTDOWN_FILE, parse_partition_dir_name
from kdump.ops.checks.segment import SegmentResult
from kdump.scan.source import open_buffer

_SLOT = 12


def _last_timestamp(path: Path) -> int | None:
    """The timestamp of the last whole slot (None when the file holds no whole slot)."""
    try:
        with open_buffer(path) as buf:
            slots = len(buf) // _SLOT
            if slots == 0:
                return None
            (timestamp,) = struct.unpack_from(">q", buf, (slots - 1) * _SLOT)
            return int(timestamp)
    except (KdumpError, OSError):
        return None  # the segment check reports an unreadable index


def recovered_from(partition: Path | None) -> int | None:
    """The offset from which the broker's next start recovers (rebuilds) the partition's segments:
    none after a clean shutdown, else from its recovery point (`recovery-point-offset-checkpoint`,
    0 when it has no entry). None where it recovers nothing or the log dir is not at hand."""
    parsed = parse_partition_dir_name(partition.name) if partition is not None else None
    if partition is None or parsed is None:
        return None
    log_dir = partition.parent
    checkpoint = log_dir / "recovery-point-offset-checkpoint"
    if (log_dir / CLEAN_SHUTDOWN_FILE).exists() or not checkpoint.is_file():
        return None
    try:
        st = checkpoint.stat()
    except OSError:
        return None
    offsets = _recovery_points(checkpoint, st.st_mtime_ns, st.st_size)
    if offsets is None:
        return None
    return offsets.get((parsed.topic, parsed.partition), 0)


@functools.lru_cache(maxsize=16)
def _recovery_points(path: Path, _mtime_ns: int, _size: int) -> dict[tuple[str, int], int] | None:
    """A log dir's recovery points, read once per file (not once per partition)."""
    from kdump.formats.checkpoints import decode_offset_checkpoint  # only where a log dir has one
    from kdump.scan.source import read_small_file

    try:
        entries = decode_offset_checkpoint(read_small_file(path)).entries
    except (KdumpError, ValueError):
        return None
    return {(e.topic, e.partition): e.offset for e in entries}


def check_closed_time_indexes(
    results: Sequence[SegmentResult], partition: Path | None = None
) -> Iterator[Finding]:
    """Closed segments (all but the last) whose time index's last slot is below their batches'
    largest timestamp, and which the broker's next start loads as they are: a segment it recovers
    (one reaching its recovery point, after an unclean stop: a copy of a running broker, whose
    rolled segment's index was copied before the roll trimmed it) gets its indexes rebuilt."""
    from kdump.store.locations import is_stored

    recovery: int | None = None
    for i, (r, nxt) in enumerate(itertools.pairwise(results)):
        s, seg = r.summary, r.segment
        if s is None or seg.timeindex is None or s.partial or s.valid_bytes < s.size or s.max_timestamp < 0:
            continue  # nothing to compare, or damage of its own whose repair rebuilds the indexes
        if is_stored(str(seg.timeindex)):
            continue  # a stored copy's files are fetched once, by the segment check (a known gap)
        if i == 0 or recovery is None:
            recovery = recovered_from(partition)  # read only where a closed segment is to be judged
        if recovery is not None and nxt.segment.base_offset > recovery:
            return  # this segment and those after it are recovered at start
        last = _last_timestamp(seg.timeindex)
        if last is None or last >= s.max_timestamp:
            continue  # an empty time index: the broker falls back to the file's modification time
        yield make_finding(
            "time-index-max-timestamp-low",
            str(seg.timeindex),
            f"the last slot says timestamp {last}, but the segment's batches reach {s.max_timestamp}: the broker "
            "takes that slot for the segment's largest timestamp, so ListOffsets by timestamp passes over this "
            "segment and answers from a later one, and time retention may delete it early",
            offset=s.offset_of_max_timestamp,
            log_timestamp=s.max_timestamp,
        )
