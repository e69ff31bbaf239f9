"""Time index (`<base>.timeindex`): a sparse map from timestamps to the Kafka offsets that reach them.

Mirrors `org.apache.kafka.storage.internals.log.TimeIndex` (with `AbstractIndex`).

On-disk structure: a flat array of 12-byte slots, big-endian, no header, no checksum.

| field           | type  | meaning                                                             |
|-----------------|-------|---------------------------------------------------------------------|
| timestamp       | int64 | largest record timestamp (ms) seen in the segment up to this offset |
| relative_offset | int32 | Kafka offset minus the segment's base offset: the last offset of    |
|                 |       | the batch that brought that timestamp                               |

So an entry (T, O) says that every record with a timestamp above T lies after offset O. Writers append
only when the timestamp grows, so a sound file has strictly increasing timestamps and non-decreasing
offsets. Magic v0 data has no timestamps and leaves the file empty.

Like the offset index, the active segment's file is preallocated (`segment.index.bytes` rounded down to a
multiple of 12; Kafka keeps the last slot free for the entry written at roll time) and trimmed on roll or
close, so a crashed or live copy ends in all-zero slots. `DumpLogSegments` stops at the first slot
`i > 0` whose offset equals the base offset; `decode_time_index` splits the file at the same slot.
"""

from __future__ import annotations

import struct
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from kdump.errors import CorruptFieldError
from kdump.formats.constants import MAX_RELATIVE_OFFSET
from kdump.formats.index_slots import count_before_zero_tail, walk_slots

if TYPE_CHECKING:
    import mmap
    from typing import TypeAlias

    _Buffer: TypeAlias = bytes | bytearray | memoryview | mmap.mmap

__all__ = [
    "ENTRY_SIZE",
    "TimeIndexContents",
    "TimeIndexEntry",
    "decode_time_index",
    "encode_time_index",
    "lookup_timestamp",
    "time_index_entry_at",
    "time_index_entry_count",
]

ENTRY_SIZE = 12
_ENTRY = struct.Struct(">qi")
assert _ENTRY.size == ENTRY_SIZE

_MIN_INT64 = -(2**63)
_MAX_INT64 = 2**63 - 1
# Zero-tail checks compare fixed-size chunks so a 10 MiB preallocated tail is never copied whole.
_ZERO_CHUNK = bytes(64 * 1024)


class TimeIndexEntry(NamedTuple):
    """One slot, with the relative offset already added to the segment's base offset."""

    timestamp: int
    offset: int


@dataclass(frozen=True, slots=True)
class TimeIndexContents:
    """What a `.timeindex` file holds, split where Kafka's dump tool stops reading."""

    base_offset: int
    # Slots before the preallocated tail, in file order (Kafka's dump prints exactly these).
    entries: tuple[TimeIndexEntry, ...]
    # Slots from the first slot i > 0 whose offset is the base offset through the last full slot.
    zero_tail_entries: int
    # Whether every byte of those tail slots is zero; True when there is no tail.
    zero_tail_is_zero: bool
    # Bytes after the last full slot (file length % 12); Kafka's sanity check rejects a non-zero value.
    trailing_bytes: int
    # Full slots in the file (file length // 12): Kafka's own entry count, tail included.
    slot_count: int
    # The last full slot, tail included: Kafka's sanity check compares its timestamp with slot 0's and
    # its offset with the base offset, which is why a zero tail fails that check.
    last_slot: TimeIndexEntry | None

    @property
    def has_zero_tail(self) -> bool:
        return self.zero_tail_entries > 0


def decode_time_index(buf: _Buffer, base_offset: int) -> TimeIndexContents:
    """Decode a time index; never raises for any byte content."""
    walk = walk_slots(buf, _ENTRY, 1, lambda f: TimeIndexEntry(f[0], base_offset + f[1]))
    return TimeIndexContents(
        base_offset=base_offset,
        entries=tuple(walk.entries),
        zero_tail_entries=walk.slot_count - walk.tail_start,
        zero_tail_is_zero=walk.tail_is_zero,
        trailing_bytes=walk.trailing_bytes,
        slot_count=walk.slot_count,
        last_slot=walk.last_slot,
    )


def encode_time_index(entries: Iterable[TimeIndexEntry | tuple[int, int]], base_offset: int) -> bytes:
    """Serialise entries (absolute offsets) exactly as the broker lays them out, without preallocation.

    Ordering is the caller's business; a relative offset outside 0..2**31-1 or a timestamp outside
    int64 raises `CorruptFieldError`, as no broker could have written it.
    """
    out = bytearray()
    for timestamp, offset in entries:
        relative_offset = offset - base_offset
        if not 0 <= relative_offset <= MAX_RELATIVE_OFFSET:
            raise CorruptFieldError(
                f"Offset {offset} is outside the range an index with base offset {base_offset} can hold "
                f"(relative offset {relative_offset} not in 0..{MAX_RELATIVE_OFFSET})"
            )
        if not _MIN_INT64 <= timestamp <= _MAX_INT64:
            raise CorruptFieldError(f"Timestamp {timestamp} of offset {offset} does not fit an int64")
        out += _ENTRY.pack(timestamp, relative_offset)
    return bytes(out)


def lookup_timestamp(entries: Sequence[TimeIndexEntry], target_timestamp: int) -> TimeIndexEntry | None:
    """The entry with the largest timestamp <= `target_timestamp`, or None when every entry is above it.

    Binary search, so `entries` must be sorted by timestamp, as a sound index is. Kafka answers "no
    entry" with (-1, base offset); callers wanting that fall back on their own.
    """
    slot = bisect_right(entries, target_timestamp, key=_entry_timestamp)
    return entries[slot - 1] if slot else None


def time_index_entry_at(buf: _Buffer, slot: int, base_offset: int) -> TimeIndexEntry:
    """Read one slot in place (no decoding of the rest of the file); the caller keeps `slot` in range."""
    timestamp, relative_offset = _ENTRY.unpack_from(buf, slot * ENTRY_SIZE)
    return TimeIndexEntry(timestamp, base_offset + relative_offset)


def time_index_entry_count(buf: _Buffer) -> int:
    """Slots before the preallocated zero tail, found by binary search (see `index_slots`)."""
    return count_before_zero_tail(buf, ENTRY_SIZE, _relative_offset_at)


def _relative_offset_at(buf: _Buffer, slot: int) -> int:
    relative_offset: int = _ENTRY.unpack_from(buf, slot * ENTRY_SIZE)[1]
    return relative_offset


def _entry_timestamp(entry: TimeIndexEntry) -> int:
    return entry.timestamp
