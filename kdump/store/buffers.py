"""Stored files as buffers the scanner reads: an anonymous mapping filled by ranged reads.

The scanner and the decoders take a buffer of the whole file (`kdump.scan.source.open_buffer`).
For a stored file that buffer is an anonymous mapping of the file's size: untouched pages cost no
memory, so a Spark task that fills only its slice (`fill`) holds only its slice, while positions
match the file's. The mapping is handed out through a ctypes view, so the scanner does not take
it for a file mapping whose scanned pages it may release (here, released pages would read as zeros).
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
from collections.abc import Iterator
from contextlib import contextmanager

from kdump.store.readers import RangedReader, open_reader

_FILL_CHUNK = 16 << 20


class SparseBuffer:
    """A file-sized buffer of which only the filled ranges hold the file's bytes."""

    def __init__(self, reader: RangedReader, size: int | None = None) -> None:
        self.reader = reader
        self.size = reader.size if size is None else min(size, reader.size)
        self._map = mmap.mmap(-1, self.size) if self.size else None
        self._array = (ctypes.c_ubyte * self.size).from_buffer(self._map) if self._map is not None else None
        self.view = memoryview(self._array).cast("B") if self._array is not None else memoryview(b"")
        self.filled: list[tuple[int, int]] = []

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

    def close(self) -> None:
        """Release the mapping and the reader."""
        self.view.release()
        self._array = None
        if self._map is not None:
            # A slice still held by a caller (a record's key, say) keeps the mapping alive until
            # it is collected, as for a mapped file.
            with contextlib.suppress(BufferError):
                self._map.close()
        self.reader.close()


@contextmanager
def sparse_buffer(location: str, max_bytes: int | None = None) -> Iterator[SparseBuffer]:
    """An empty file-sized buffer of a stored file, to fill by ranges.

    Raises:
        PathError: the file cannot be opened.
    """
    buffer = SparseBuffer(open_reader(location), max_bytes)
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
