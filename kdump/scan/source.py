"""Opening files for reading: the one place kdump reads file contents.

Files are memory-mapped read-only, so a 1 GiB segment is paged in as it is scanned and never held
in memory; the mapping is shared with the page cache the broker uses. An empty file cannot be
mapped, so it becomes an empty buffer.

A file can change while it is read (a live broker truncates a follower's log, trims an index at a
roll, appends, deletes a segment by retention). A read of a mapped page the file no longer has
raises SIGBUS: the guard (`_mapguard.c`) turns it into zeros and notes where, and
`file_change(buf)` says what happened, for the caller to report as a finding
(file-shrank-while-read, file-replaced-while-read, file-grew-while-read).

Without the guard (an install without a compiler) nothing could catch that signal, so a file is not
mapped: it is read into memory with bounded positional reads (`_read_copy`). A read that comes back
short is where the file gave way, reported the same way; the copy cannot fault afterwards whatever
happens to the file. It costs the file's size in memory, the price of not dying.
"""

from __future__ import annotations

import contextlib
import importlib
import mmap
import os
import stat
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from kdump.errors import PathError
from kdump.scan.held import held_bytes
from kdump.store.locations import is_stored


def open_regular(path: str | os.PathLike[str], *, probed: bool = False) -> int:
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
    return _open_regular(path, probed)[0]


def _open_regular(path: str | os.PathLike[str], probed: bool = False) -> tuple[int, os.stat_result]:
    """`open_regular`, and the descriptor's `fstat` (one per file opened: callers need its size)."""
    try:
        # `probed`: the caller's own stat found a regular file (one look per entry); the open is
        # non-blocking and checked on the descriptor whatever was put there since.
        kind = None if probed else _kind(os.stat(path).st_mode)  # noqa: PTH116  (no Path per file)
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
    return fd, st


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


def _load_guard() -> Any:
    # Not a fast path but a safety net: KDUMP_PURE_PYTHON does not switch it off.
    try:
        # By name: a compiled module of this package, which imports nothing back (the layering
        # test would read a `from kdump.scan import` as this package importing itself).
        _mapguard = importlib.import_module("kdump.scan._mapguard")
    except ImportError:  # not built (no compiler): files are read into memory, never mapped
        return None
    return _mapguard


_guard = _load_guard()


@dataclass
class FileChange:
    """How a file changed while it was read: `code` is the finding's, `message` says what was
    checked and where it stopped."""

    code: str
    message: str


@dataclass
class _Watch:
    path: str
    fd: int
    size: int  # the bytes read (mapped)
    whole: bool  # the whole file was read (no max_bytes cut)
    identity: tuple[int, int]
    slot: int

    short: int = -1  # read into memory: where the reads came back short (-1: they did not)

    def change(self) -> FileChange | None:
        faulted = _guard.faulted(self.slot) if _guard is not None and self.slot >= 0 else self.short
        try:
            now = os.fstat(self.fd).st_size
        except OSError:
            now = self.size
        if faulted >= 0 or now < self.size:
            if faulted >= 0:
                where = (
                    f"checked as it was up to position {faulted}; the bytes from there on were gone "
                    "and read as zeros"
                )
            else:
                where = "its bytes were checked before they were cut"
            return FileChange(
                "file-shrank-while-read",
                f"{self.path} shrank from {self.size} to {now} bytes while kdump read it: {where}",
            )
        try:
            st = os.stat(self.path)  # noqa: PTH116  (no Path per file)
            there: tuple[int, int] | None = (st.st_dev, st.st_ino)
        except OSError:
            there = None
        if there != self.identity:
            what = "was deleted" if there is None else "was replaced by another file"
            return FileChange(
                "file-replaced-while-read",
                f"{self.path} {what} while kdump read it: the {self.size} bytes checked are the file it opened",
            )
        if self.whole and now > self.size:
            return FileChange(
                "file-grew-while-read",
                f"{self.path} grew from {self.size} to {now} bytes while kdump read it: "
                f"its first {self.size} bytes were checked, the {now - self.size} appended since were not",
            )
        return None


# The largest file `open_buffer(copy_small=True)` reads instead of mapping.
SMALL_COPY = 64 << 10
# The largest file `open_buffer(read_small=True)` reads instead of mapping: a map costs an
# `fstat`, a `dup`, page faults and an unmap; a 260 KB segment read costs 13% less CPU per
# partition of a log dir than mapped (in one process, page cache warm).
SMALL_READ = 512 << 10

# The files open_buffer has open, by the id of the view it yielded.
_WATCHED: dict[int, _Watch] = {}


def file_change(buf: object) -> FileChange | None:
    """How the file behind `buf` (a view `open_buffer` yielded, still open) changed since it was
    opened; None when it did not or `buf` is not such a view."""
    watch = _WATCHED.get(id(buf))
    return watch.change() if watch is not None else None


def mapped_fd(buf: object) -> int:
    """The descriptor of the file `buf` maps from its first byte (a view `open_buffer` yielded of a
    mapped file, still open), else -1. The compiled walk reads the file through it rather than
    through the mapping (`walk_v2`'s `fd`): the same bytes, without the mapping's page faults."""
    watch = _WATCHED.get(id(buf))
    return watch.fd if watch is not None and watch.slot >= 0 else -1


class _HeldView:
    """The context `open_buffer` gives for a held file (`kdump.scan.held`): its bytes, at most
    `max_bytes` of them, as a read-only view released at the end. A plain object, not a generator's
    context: a log dir's partition opens four files."""

    __slots__ = ("_cut", "_whole")

    def __init__(self, data: bytes, max_bytes: int | None) -> None:
        self._whole = memoryview(data)
        self._cut = self._whole if max_bytes is None or max_bytes >= len(data) else self._whole[:max_bytes]

    def __enter__(self) -> memoryview:
        return self._cut

    def __exit__(self, *exc: object) -> None:
        self._cut.release()
        self._whole.release()


def open_buffer(
    path: str | os.PathLike[str],
    max_bytes: int | None = None,
    *,
    span: tuple[int, int] | None = None,
    probed: bool = False,
    copy_small: bool = False,
    read_small: bool = False,
) -> AbstractContextManager[memoryview]:
    """Map `path` read-only and yield a memoryview of it (at most `max_bytes` of its prefix).

    A stored location (a URL, a tarball's member) is read into an anonymous mapping of the file's
    size instead (`kdump.store.buffers`): whole, or only the positions [start, end) of `span` when
    the caller reads nothing else (a chunk of batches); a local file is mapped whole either way.

    `probed`: a listing's stat found a regular file there (`open_regular`). `copy_small`: a file of
    at most `SMALL_COPY` bytes is read into memory instead (an index of a small segment: a mapping
    costs a map, a page fault and an unmap, several times a read of a few hundred bytes); a cut
    under the read is still said by `file_change`, as a shrink, with the bytes read kept.
    `read_small`: a file of at most `SMALL_READ` bytes is read into memory as an install without
    the guard reads every file (`_read_copy`: a cut under the reads reads as zeros and is said
    where): a small segment costs a read, not a map, a `dup`, an `fstat` and an unmap.

    A file of a directory held by `kdump.scan.held` (read whole with its listing) is not opened
    again: its bytes are the view.

    Raises:
        PathError: the file cannot be opened or mapped.
    """
    data = held_bytes(path)
    if data is not None:
        return _HeldView(data, max_bytes)
    return _open_buffer(path, max_bytes, span, probed, copy_small, read_small)


@contextmanager
def _open_buffer(
    path: str | os.PathLike[str],
    max_bytes: int | None,
    span: tuple[int, int] | None,
    probed: bool,
    copy_small: bool,
    read_small: bool,
) -> Iterator[memoryview]:
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
    fd, st = _open_regular(path, probed)
    mm: mmap.mmap | None = None
    view: memoryview | None = None
    slot = -1
    short = -1
    try:
        size = st.st_size
        if max_bytes is not None:
            size = min(size, max_bytes)
        if size == 0:
            view = memoryview(b"")
        elif copy_small and size <= SMALL_COPY:
            data = _read_upto(fd, size, size)
            view = memoryview(data)
            size = len(data)
        elif _guard is None or (read_small and size <= SMALL_READ):
            copy, got = _read_copy(fd, size, path)
            short = got if got < size else -1
            view = memoryview(copy).toreadonly()  # as read-only as a mapping
        else:
            try:
                mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
            except (OSError, ValueError) as exc:
                raise PathError(f"cannot map {path}: {exc}") from exc
            slot = _guard.register(mm)  # this branch is the guarded one: without it files are read
            view = memoryview(mm)
        _WATCHED[id(view)] = _Watch(
            os.fspath(path),
            fd,
            size,
            max_bytes is None or size < max_bytes,
            (st.st_dev, st.st_ino),
            slot,
            short,
        )
        yield view
    finally:
        if view is not None:
            _WATCHED.pop(id(view), None)
        if slot >= 0:
            _guard.unregister(slot)
        os.close(fd)
        if view is not None:
            view.release()
        if mm is not None:
            # A slice still exported by a caller keeps the mapping alive until it is collected.
            with contextlib.suppress(BufferError):
                mm.close()


# Reads of a copied file: 16 MiB at a time, so no single read asks for an unbounded length.
_READ_CHUNK = 16 << 20


def _read_copy(fd: int, size: int, path: str | os.PathLike[str]) -> tuple[bytearray, int]:
    """The first `size` bytes of `fd`, read into a new buffer; and how many the file still had
    (fewer when it shrank during the reads: the rest stays zeros, as a guarded mapping reads it)."""
    copy = bytearray(size)  # calloc'd: pages cost memory once written
    target = memoryview(copy)
    got = 0
    try:
        while got < size:
            n = os.preadv(fd, [target[got : min(size, got + _READ_CHUNK)]], got)
            if n <= 0:
                break
            got += n
    except OSError as exc:
        raise PathError(f"cannot read {path}: {exc.strerror or exc}") from exc
    finally:
        target.release()
    return copy, got


def read_small_file(path: str | os.PathLike[str], limit: int = 64 << 20, *, probed: bool = False) -> bytes:
    """Read a small file (checkpoints, snapshots, metadata) whole, refusing absurd sizes.
    `probed`: a listing's stat found a regular file there (`open_regular`). A file of a held
    directory (`kdump.scan.held`) is not read again."""
    data = held_bytes(path)
    if data is not None:
        if len(data) > limit:
            raise PathError(f"{path} is larger than {limit} bytes; not a file kdump reads whole")
        return data
    try:
        if is_stored(path):
            from kdump.store.buffers import read_stored_file

            data = read_stored_file(os.fspath(path), limit)
        else:
            fd, st = _open_regular(path, probed)
            try:
                data = _read_upto(fd, st.st_size, limit + 1)
            finally:
                os.close(fd)
    except OSError as exc:
        raise PathError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if len(data) > limit:
        raise PathError(f"{path} is larger than {limit} bytes; not a file kdump reads whole")
    return data


def _read_upto(fd: int, size: int, most: int) -> bytes:
    """The file's bytes, at most `most` of them. Asked for by its size (and one byte more, to see
    its end): a read of `most` bytes at once allocated the whole limit (64 MiB) for every 8-byte
    checkpoint, 0.2 ms a file."""
    parts: list[bytes] = []
    held = 0
    ask = min(most, size + 1)
    while held < most:
        want = min(ask, most - held)
        chunk = os.read(fd, want)
        if not chunk:
            break
        parts.append(chunk)
        held += len(chunk)
        if len(chunk) < want and held >= size:
            break  # short, with every byte its size said: its end (no further read of nothing)
        ask = max(ask, 1 << 16)  # a file that grew since its size was read
    return parts[0] if len(parts) == 1 else b"".join(parts)
