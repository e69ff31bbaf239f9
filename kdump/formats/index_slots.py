"""What the offset index and the time index share: fixed-size slots, possibly a zero-filled tail.

A broker preallocates an index file to `segment.index.bytes` and fills slots as it appends, so an
active segment's index (or one left by a crash) ends in zero slots. Kafka draws the line at the
first slot `i > 0` whose relative offset is 0 (`AbstractIndex`); these helpers do the same.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable

Buffer = bytes | bytearray | memoryview | mmap.mmap

_ZERO_CHUNK = bytes(64 << 10)


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
    return low


def is_all_zero(view: memoryview, start: int, stop: int) -> bool:
    """Whether `view[start:stop]` holds only zero bytes (compared in chunks, without one big copy)."""
    for chunk_start in range(start, stop, len(_ZERO_CHUNK)):
        chunk_stop = min(stop, chunk_start + len(_ZERO_CHUNK))
        if view[chunk_start:chunk_stop].tobytes() != _ZERO_CHUNK[: chunk_stop - chunk_start]:
            return False
    return True
