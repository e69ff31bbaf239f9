"""What the offset index and the time index share: fixed-size slots, possibly a zero-filled tail.

A broker preallocates an index file to `segment.index.bytes` and fills slots as it appends, so an
active segment's index (or one left by a crash) ends in zero slots. Kafka's dump tool draws the line
at the first slot `i > 0` whose relative offset is 0; these helpers do the same, and go one step
further for a file of two or more slots that is zeros from its first byte: it holds no entry at all.
The broker never writes an all-zero first slot there: an offset index entry is appended only once
more than `index.interval.bytes` follow the last one, so never for the batch at position 0 (by
`LogSegment.append` and `LogSegment.recover` alike), and the time index gets its entries at the
same moments. Reading slot 0 of such a file as the entry (base offset, position 0) or (timestamp
0, base offset) would report damage in the index of every segment rolled moments before a copy.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

Buffer = bytes | bytearray | memoryview | mmap.mmap

_ZERO_CHUNK = bytes(64 << 10)
E = TypeVar("E")


def count_before_zero_tail(
    buf: Buffer, entry_size: int, relative_offset_at: Callable[[Buffer, int], int]
) -> int:
    """Slots before the preallocated zero tail, reading O(log n) slots instead of the whole file.

    A binary search: in a sound index every slot after the first tail slot is tail too, so a
    10 MiB preallocated file costs about 20 reads. A damaged index may hold a stray zero slot
    that a linear walk would stop at sooner; callers check the entries they use against the log.
    """
    slots = len(buf) // entry_size
    if slots <= 1 or relative_offset_at(buf, slots - 1) != 0:
        return slots
    low, high = 1, slots - 1  # high is known to be tail
    while low < high:
        mid = (low + high) // 2
        if relative_offset_at(buf, mid) == 0:
            high = mid
        else:
            low = mid + 1
    if low == 1 and bytes(buf[:entry_size]) == bytes(entry_size):
        return 0  # zeros from the first byte: a preallocated file with no entry yet
    return low


def is_all_zero(view: memoryview, start: int, stop: int) -> bool:
    """Whether `view[start:stop]` holds only zero bytes (compared in chunks, without one big copy)."""
    for chunk_start in range(start, stop, len(_ZERO_CHUNK)):
        chunk_stop = min(stop, chunk_start + len(_ZERO_CHUNK))
        if view[chunk_start:chunk_stop].tobytes() != _ZERO_CHUNK[: chunk_stop - chunk_start]:
            return False
    return True


@dataclass(frozen=True, slots=True)
class SlotWalk(Generic[E]):
    """The slots of an index file, split where Kafka's dump tool stops reading."""

    entries: list[E]  # slots before the tail, in file order
    tail_start: int  # first slot i > 0 whose relative offset is 0 (slot_count when none)
    slot_count: int  # full slots in the file, tail included
    trailing_bytes: int  # bytes after the last full slot
    last_slot: E | None  # the last full slot, tail included
    tail_is_zero: bool  # whether every byte of the tail slots is zero


def walk_slots(
    buf: Buffer, entry: struct.Struct, relative_field: int, make: Callable[[tuple[int, ...]], E]
) -> SlotWalk[E]:
    """Decode every full slot until Kafka's tail rule stops (never raises for any byte content).

    Args:
        entry: the slot layout; `relative_field` is the index of its relative offset.
        make: builds an entry from a slot's unpacked fields.
    """
    with memoryview(buf) as raw:
        view = raw.cast("B") if raw.format != "B" or raw.ndim != 1 else raw
        length = view.nbytes
        size = entry.size
        slot_count = length // size
        entries: list[E] = []
        tail_start = slot_count
        for slot, fields in enumerate(entry.iter_unpack(view[: slot_count * size])):
            if fields[relative_field] == 0 and slot > 0:
                tail_start = slot
                break
            entries.append(make(fields))
        last_slot = make(entry.unpack_from(view, (slot_count - 1) * size)) if slot_count else None
        tail_is_zero = is_all_zero(view, tail_start * size, slot_count * size)
        if tail_start == 1 < slot_count and tail_is_zero and is_all_zero(view, 0, size):
            # Zeros from the first byte: a preallocated file with no entry yet (see above).
            tail_start = 0
            entries.clear()
        if view is not raw:
            view.release()
    return SlotWalk(entries, tail_start, slot_count, length % size, last_slot, tail_is_zero)
