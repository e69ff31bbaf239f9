"""Stored files as buffers the scanner reads: an anonymous mapping filled by ranged reads.

The scanner and the decoders take a buffer of the whole file (`kdump.scan.source.open_buffer`).
For a stored file that buffer is an anonymous mapping of the file's size: untouched pages cost no
memory, so a Spark task that fills only its slice (`fill`) holds only its slice, while positions
match the file's. The mapping is handed out through a ctypes view, so the scanner does not take
it for a file mapping whose scanned pages it may release (here, released pages would read as zeros).
"""

from __future__ import annotations

import contextlib
import mmap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from kdump.store.opening import open_reader
from kdump.store.readers import RangedReader

_FILL_CHUNK = 16 << 20


@dataclass(slots=True)
class ReleaseStats:
    """Bytes of stored files' buffers handed back after scanning (for tests and benchmarks)."""

    bytes: int = 0


RELEASED = ReleaseStats()
# The release function of each live buffer, by the id of the object its views export.
_RELEASERS: dict[int, Callable[[int, int], None]] = {}


def releaser(obj: object) -> Callable[[int, int], None] | None:
    """How to hand back the memory of a range of a stored file's buffer, given the object a
    memoryview of it exports (`memoryview.obj`); None for anything else."""
    return _RELEASERS.get(id(obj))


class SparseBuffer:
    """A file-sized buffer of which only the filled ranges hold the file's bytes."""

    def __init__(self, reader: RangedReader, size: int | None = None, *, releasable: bool = False) -> None:
        """`releasable`: a scan of it may hand back what it has passed (`release`); only for a
        reader that reads nothing behind its scan, filling ahead of it as it goes."""
        self.reader = reader
        self.size = reader.size if size is None else min(size, reader.size)
        import ctypes  # only for stored files: a local scan never builds one

        self._map = mmap.mmap(-1, self.size) if self.size else None
        self._array = (ctypes.c_ubyte * self.size).from_buffer(self._map) if self._map is not None else None
        self.view = memoryview(self._array).cast("B") if self._array is not None else memoryview(b"")
        self.filled: list[tuple[int, int]] = []
        if releasable and self._array is not None and hasattr(mmap, "MADV_DONTNEED"):
            _RELEASERS[id(self._array)] = self.release

    def fill(self, start: int, end: int) -> int:
        """Read [start, end) of the file into the buffer (clamped to it); returns the new end."""
        start, end = max(0, start), min(end, self.size)
        for lo, hi in self.filled:
            if lo <= start < hi:
                start = hi
            if lo < end <= hi:
                end = lo
        pos = start
        while pos < end:
            data = self.reader.read(pos, min(_FILL_CHUNK, end - pos))
            if not data:
                break
            self.view[pos : pos + len(data)] = data
            pos += len(data)
        if pos > start:
            self.filled.append((start, pos))
        return pos

    def release(self, start: int, end: int) -> None:
        """Hand back the memory of [start, end) (whole pages only): a scan that is past them keeps
        a constant footprint. Those bytes read as zeros until filled again."""
        page = mmap.PAGESIZE
        lo, hi = -(-max(0, start) // page) * page, (min(end, self.size) // page) * page
        if self._map is None or hi <= lo:
            return
        self._map.madvise(mmap.MADV_DONTNEED, lo, hi - lo)
        kept: list[tuple[int, int]] = []
        for a, b in self.filled:
            if b <= lo or a >= hi:
                kept.append((a, b))
                continue
            if a < lo:
                kept.append((a, lo))
            if b > hi:
                kept.append((hi, b))
        self.filled = kept
        RELEASED.bytes += hi - lo

    def close(self) -> None:
        """Release the mapping and the reader."""
        _RELEASERS.pop(id(self._array), None)
        self.view.release()
        self._array = None
        if self._map is not None:
            # A slice still held by a caller (a record's key, say) keeps the mapping alive until
            # it is collected, as for a mapped file.
            with contextlib.suppress(BufferError):
                self._map.close()
        self.reader.close()


@contextmanager
def sparse_buffer(
    location: str, max_bytes: int | None = None, *, releasable: bool = False
) -> Iterator[SparseBuffer]:
    """An empty file-sized buffer of a stored file, to fill by ranges (`releasable`: see
    `SparseBuffer`).

    Raises:
        PathError: the file cannot be opened.
    """
    buffer = SparseBuffer(open_reader(location), max_bytes, releasable=releasable)
    try:
        yield buffer
    finally:
        buffer.close()


@contextmanager
def open_stored_buffer(location: str, max_bytes: int | None = None) -> Iterator[memoryview]:
    """A stored file's bytes (at most `max_bytes` of its prefix), read whole.

    Raises:
        PathError: the file cannot be opened or read.
    """
    with sparse_buffer(location, max_bytes) as buffer:
        buffer.fill(0, buffer.size)
        yield buffer.view


def read_stored_file(location: str, limit: int) -> bytes:
    """A small stored file's bytes (checkpoints, snapshots); at most `limit + 1` bytes are read."""
    reader = open_reader(location)
    try:
        return reader.read(0, min(reader.size, limit + 1))
    finally:
        reader.close()
