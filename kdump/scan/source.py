"""Opening files for reading: the one place kdump reads file contents.

Files are memory-mapped read-only, so a 1 GiB segment is paged in as it is scanned and never held
in memory; the mapping is shared with the page cache the broker uses. An empty file cannot be
mapped, so it becomes an empty buffer.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kdump.errors import PathError
from kdump.store.locations import is_stored


def open_regular(path: str | os.PathLike[str]) -> int:
    """Open a regular file for reading; refuse anything else without reading it.

    A FIFO, socket or device is never read: reading could block forever (a FIFO with no writer)
    or never end (/dev/zero). The type is checked before opening (lstat would miss a link to one,
    so stat), and the open itself is non-blocking, with the type checked again on the descriptor,
    so a FIFO put in the file's place in between cannot block either. A regular file whose size
    says empty but which has bytes, or cannot be read at all (/proc/self/mem, files of /proc and
    /sys), is not a file on disk either.

    Raises:
        PathError: the path cannot be opened, or is not a regular file (its message says what it is).
    """
    try:
        kind = _kind(Path(path).stat().st_mode)
        if kind is not None:
            raise PathError(f"{path} is a {kind}, not a regular file; it was not read")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0))
    except PathError:
        raise
    except OSError as exc:
        raise PathError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        kind = _kind(st.st_mode)
        if kind is not None:
            raise PathError(f"{path} is a {kind}, not a regular file; it was not read")
        if st.st_size == 0:
            try:
                probe = os.pread(fd, 1, 0)
            except OSError as exc:
                raise PathError(f"{path} is not a file on disk ({exc.strerror}); it was not read") from exc
            if probe:
                raise PathError(f"{path} says it is empty but is not: not a file on disk; it was not read")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _kind(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISDIR(mode):
        return "directory"
    return "device"


@contextmanager
def open_buffer(
    path: str | os.PathLike[str], max_bytes: int | None = None, *, span: tuple[int, int] | None = None
) -> Iterator[memoryview]:
    """Map `path` read-only and yield a memoryview of it (at most `max_bytes` of its prefix).

    A stored location (a URL, a tarball's member) is read into an anonymous mapping of the file's
    size instead (`kdump.store.buffers`): whole, or only the positions [start, end) of `span` when
    the caller reads nothing else (a chunk of batches); a local file is mapped whole either way.

    Raises:
        PathError: the file cannot be opened or mapped.
    """
    if is_stored(path):
        from kdump.store.buffers import open_stored_buffer, sparse_buffer

        if span is None:
            with open_stored_buffer(os.fspath(path), max_bytes) as stored:
                yield stored
            return
        with sparse_buffer(os.fspath(path), max_bytes) as sb:
            sb.fill(*span)
            yield sb.view
        return
    fd = open_regular(path)
    mm: mmap.mmap | None = None
    view: memoryview | None = None
    try:
        size = os.fstat(fd).st_size
        if max_bytes is not None:
            size = min(size, max_bytes)
        if size == 0:
            view = memoryview(b"")
        else:
            try:
                mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
            except (OSError, ValueError) as exc:
                raise PathError(f"cannot map {path}: {exc}") from exc
            view = memoryview(mm)
        yield view
    finally:
        os.close(fd)
        if view is not None:
            view.release()
        if mm is not None:
            # A slice still exported by a caller keeps the mapping alive until it is collected.
            with contextlib.suppress(BufferError):
                mm.close()


def read_small_file(path: str | os.PathLike[str], limit: int = 64 << 20) -> bytes:
    """Read a small file (checkpoints, snapshots, metadata) whole, refusing absurd sizes."""
    p = Path(path)
    try:
        if is_stored(path):
            from kdump.store.buffers import read_stored_file

            data = read_stored_file(os.fspath(path), limit)
        else:
            with os.fdopen(open_regular(p), "rb") as fh:
                data = fh.read(limit + 1)
    except OSError as exc:
        raise PathError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if len(data) > limit:
        raise PathError(f"{path} is larger than {limit} bytes; not a file kdump reads whole")
    return data
