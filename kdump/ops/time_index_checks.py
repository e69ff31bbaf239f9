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

import struct
from collections.abc import Iterator, Sequence
from pathlib import Path

from kdump.errors import KdumpError
from kdump.findings import Finding, make_finding
from kdump.ops.segment_check import SegmentResult
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


def check_closed_time_indexes(results: Sequence[SegmentResult]) -> Iterator[Finding]:
    """Closed segments (all but the last) whose time index's last slot is below their batches'
    largest timestamp."""
    for r in results[:-1]:
        s, seg = r.summary, r.segment
        if s is None or seg.timeindex is None or s.partial or s.valid_bytes < s.size or s.max_timestamp < 0:
            continue  # nothing to compare, or damage of its own whose repair rebuilds the indexes
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
