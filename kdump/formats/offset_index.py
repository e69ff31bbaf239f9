"""Offset index (`<base>.index`): a sparse map from Kafka offsets to byte positions in the `.log`.

Mirrors `org.apache.kafka.storage.internals.log.OffsetIndex` (with `AbstractIndex`).

On-disk structure: a flat array of 8-byte slots, big-endian, no header, no checksum.

| field             | type  | meaning                                                             |
|-------------------|-------|---------------------------------------------------------------------|
| relative_offset   | int32 | Kafka offset minus the segment's base offset (from the file name)   |
| position          | int32 | byte position in the sibling `.log` where a batch starts            |

Writers only append entries with strictly increasing offsets, each at most 2**31-1 above the base.
The broker preallocates the file of the active segment (`segment.index.bytes`, rounded down to a
multiple of 8) and trims it to `entries * 8` when the segment is rolled or closed; after a crash or a
copy of a live directory, the file therefore ends in a run of all-zero slots.

Kafka counts `file length // 8` slots. `DumpLogSegments` stops at the first slot `i > 0` whose relative
offset is 0, treating the rest as the preallocated tail; `decode_offset_index` draws the same line and
reports the tail separately (`zero_tail_entries`, and whether those bytes really are zero).
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
    "OffsetIndexContents",
    "OffsetIndexEntry",
    "decode_offset_index",
    "encode_offset_index",
    "lookup_offset",
    "offset_index_entry_at",
    "offset_index_entry_count",
]

ENTRY_SIZE = 8
_ENTRY = struct.Struct(">ii")
assert _ENTRY.size == ENTRY_SIZE

_MAX_POSITION = 2**31 - 1
# Zero-tail checks compare fixed-size chunks so a 10 MiB preallocated tail is never copied whole.
_ZERO_CHUNK = bytes(64 * 1024)


class OffsetIndexEntry(NamedTuple):
    """One slot, with the relative offset already added to the segment's base offset."""

    offset: int
    position: int


@dataclass(frozen=True, slots=True)
class OffsetIndexContents:
    """What an `.index` file holds, split where Kafka's dump tool stops reading."""

    base_offset: int
    # Slots before the preallocated tail, in file order (Kafka's dump prints exactly these).
    entries: tuple[OffsetIndexEntry, ...]
    # Slots from the first slot i > 0 whose relative offset is 0 through the last full slot.
    zero_tail_entries: int
    # Whether every byte of those tail slots is zero; True when there is no tail.
    zero_tail_is_zero: bool
    # Bytes after the last full slot (file length % 8); Kafka's sanity check rejects a non-zero value.
    trailing_bytes: int
    # Full slots in the file (file length // 8): Kafka's own entry count, tail included.
    slot_count: int
    # The last full slot, tail included, which Kafka's sanity check compares with the base offset.
    last_slot: OffsetIndexEntry | None

    @property
    def has_zero_tail(self) -> bool:
        return self.zero_tail_entries > 0


def decode_offset_index(buf: _Buffer, base_offset: int) -> OffsetIndexContents:
    """Decode an offset index; never raises for any byte content."""
    walk = walk_slots(buf, _ENTRY, 0, lambda f: OffsetIndexEntry(base_offset + f[0], f[1]))
    return OffsetIndexContents(
        base_offset=base_offset,
        entries=tuple(walk.entries),
        zero_tail_entries=walk.slot_count - walk.tail_start,
        zero_tail_is_zero=walk.tail_is_zero,
        trailing_bytes=walk.trailing_bytes,
        slot_count=walk.slot_count,
        last_slot=walk.last_slot,
    )


def encode_offset_index(entries: Iterable[OffsetIndexEntry | tuple[int, int]], base_offset: int) -> bytes:
    """Serialise entries (absolute offsets) exactly as the broker lays them out, without preallocation.

    Ordering is the caller's business (the broker only appends increasing offsets); a relative offset
    outside 0..2**31-1 or a position outside 0..2**31-1 raises `CorruptFieldError`, as no broker could
    have written it.
    """
    out = bytearray()
    for offset, position in entries:
        relative_offset = offset - base_offset
        if not 0 <= relative_offset <= MAX_RELATIVE_OFFSET:
            raise CorruptFieldError(
                f"Offset {offset} is outside the range an index with base offset {base_offset} can hold "
                f"(relative offset {relative_offset} not in 0..{MAX_RELATIVE_OFFSET})"
            )
        if not 0 <= position <= _MAX_POSITION:
            raise CorruptFieldError(f"Position {position} of offset {offset} is not in 0..{_MAX_POSITION}")
        out += _ENTRY.pack(relative_offset, position)
    return bytes(out)


def lookup_offset(entries: Sequence[OffsetIndexEntry], target_offset: int) -> OffsetIndexEntry | None:
    """The entry with the largest offset <= `target_offset`, or None when every entry is above it.

    Binary search, so `entries` must be sorted by offset, as a sound index is. Kafka answers "no entry"
    with (base offset, position 0); callers wanting that fall back on their own.
    """
    slot = bisect_right(entries, target_offset, key=_entry_offset)
    return entries[slot - 1] if slot else None


def offset_index_entry_at(buf: _Buffer, slot: int, base_offset: int) -> OffsetIndexEntry:
    """Read one slot in place (no decoding of the rest of the file); the caller keeps `slot` in range."""
    relative_offset, position = _ENTRY.unpack_from(buf, slot * ENTRY_SIZE)
    return OffsetIndexEntry(base_offset + relative_offset, position)


def offset_index_entry_count(buf: _Buffer) -> int:
    """Slots before the preallocated zero tail, found by binary search (see `index_slots`)."""
    return count_before_zero_tail(buf, ENTRY_SIZE, _relative_offset_at)


def _relative_offset_at(buf: _Buffer, slot: int) -> int:
    relative_offset: int = _ENTRY.unpack_from(buf, slot * ENTRY_SIZE)[0]
    return relative_offset


def _entry_offset(entry: OffsetIndexEntry) -> int:
    return entry.offset
