"""What a scan keeps in memory: the pages it has passed are handed back as it goes, and runs of zeros
are checked a chunk at a time, so a scan of a 1 GiB segment (or of its preallocated zero tail) stays
within a constant footprint."""

from __future__ import annotations

import mmap
import re
from collections.abc import Callable

Buffer = bytes | bytearray | memoryview

_NONZERO = re.compile(rb"[^\x00]")


EVICT_EVERY = 4 << 20
# The window of one call of the compiled walk over a file it reads through its descriptor (no pages
# mapped to hand back): fewer calls, and fewer helper threads started and joined.
READ_WINDOW = 16 << 20
# The walk reads batches of at least this size on average (its last run's) through the file's
# descriptor, two threads each checksumming half a window; smaller ones through the mapping, its
# helper mapping pages ahead: with 2 KB batches the walk waits on memory header by header, and
# splitting it made a 1 GiB segment slower (measured: tests/bench/README.md).
LARGE_BATCH = 64 << 10
# How far ahead of the compiled walk a buffer still being filled is asked to be ready: from 64 KiB,
# doubling with each run, to 8 MiB.
READY_FIRST = 64 << 10
READY_AHEAD = 8 << 20


def page_evicter(buf: Buffer) -> Callable[[int], None] | None:
    """For a memory-mapped buffer, a function that releases the pages before a position.

    Mapped pages of a file count as resident memory once touched; releasing them keeps a scan of
    a 1 GiB segment within a constant footprint (the pages stay in the page cache).
    """
    mm = buf.obj if isinstance(buf, memoryview) else None
    if isinstance(mm, (bytes, bytearray)):
        return None  # a file read into memory (`open_buffer(read_small=True)`): no pages to hand back
    if mm is not None and not isinstance(mm, mmap.mmap):
        # A stored file's buffer, filled as the scan goes (`scan_log(ready=...)`): its scanned
        # pages are handed back the same way, so a scan of a stored segment stays small too.
        from kdump.store.buffers import releaser

        release = releaser(mm)
        if release is None:
            return None
        released = 0

        def release_before(position: int) -> None:
            nonlocal released
            if position - released >= EVICT_EVERY:
                release(released, position)
                released = position

        return release_before
    if not isinstance(mm, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
        return None
    return MapEvicter(mm)


class MapEvicter:
    """Releases a mapped file's pages before a position, every `EVICT_EVERY` bytes.

    `done`: how far the pages are released. The scanner's compiled walk releases them too (its
    `release_from`, off the calling thread where the walk has a helper) and moves `done` on.
    """

    __slots__ = ("done", "mm")

    def __init__(self, mm: mmap.mmap) -> None:
        self.mm = mm
        self.done = 0

    def __call__(self, position: int) -> None:
        upto = (position // mmap.PAGESIZE) * mmap.PAGESIZE
        if upto - self.done >= EVICT_EVERY:
            try:
                self.mm.madvise(mmap.MADV_DONTNEED, self.done, upto - self.done)
            except (OSError, ValueError):
                return
            self.done = upto

    def passed(self, position: int) -> None:
        """The pages before `position` were released elsewhere (by the compiled walk)."""
        self.done = max(self.done, (position // mmap.PAGESIZE) * mmap.PAGESIZE)


# Zero runs are checked a chunk at a time: `re` scans at ~90 MB/s, so one regex search over a
# preallocated 1 GiB zero tail took ~13 s (27 s for a 2 GiB sparse file), while comparing 1 MiB copies
# against zeros runs at GB/s. (Found by tests/test_memory_bound.py.)
_ZEROS = bytes(1 << 20)
_ZERO_PROBE = 4096


def first_nonzero(
    buf: Buffer, start: int, end: int, evict: Callable[[int], None] | None = None
) -> int | None:
    """Position of the first non-zero byte in `start..end`, or None; `evict` releases mapped pages
    passed over, so a long zero run does not become resident memory."""
    probe = min(end, start + _ZERO_PROBE)
    m = _NONZERO.search(buf, start, probe)
    if m is not None:
        return m.start()
    pos = probe
    while pos < end:
        stop = min(end, pos + len(_ZEROS))
        chunk = bytes(buf[pos:stop])
        if chunk != _ZEROS[: stop - pos]:
            return pos + len(chunk) - len(chunk.lstrip(b"\x00"))
        pos = stop
        if evict is not None:
            evict(pos)
    return None


def all_zero(buf: Buffer, start: int, end: int, evict: Callable[[int], None] | None = None) -> bool:
    return first_nonzero(buf, start, end, evict) is None
