"""Where a segment's bytes come from: the seam between the segment reader and storage.

`kdump.model.segment_view` never opens a file itself: it asks a `ByteSource` for what it needs,
and it needs only three things of a file:

- `size()`: its length, which bounds every length field before it is trusted;
- `read(position, length)`: a range (an index slot, one batch at an index entry's position, the
  header fields of a batch). Positioning (`locate`, the Spark planner's split points) reads the
  `.log` through this alone, so a store read by ranges fetches a few KiB per lookup;
- `buffer()`: the whole file as one buffer, for index files, which are small and read in place;
- `lazy_buffer()`: a buffer of the whole file for the scans that walk the `.log` (`batches_from`,
  the tail of a segment), with the function that fills a range of it before it is read (None when
  the buffer is complete already): a stored `.log` is fetched only as far as a scan goes.

`MappedFile` is the local implementation: the file is memory-mapped once, on first use, and a
range is a slice of the mapping (no copy). `InMemory` serves bytes already held (a buffer a caller
mapped, an archive member). A remote store plugs in by providing `SourceOpener` (a callable from a
path to a source) whose sources answer `read` with ranged requests and `buffer` with the whole
object; the checks made on what they return are the same whatever the source.

Sources are context managers: `close()` releases the mapping (or the connection); a segment reader
closes the sources it opened when its `ExitStack` closes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from kdump.errors import PathError
from kdump.formats.batch import ENTRY_PREFIX
from kdump.formats.constants import LOG_OVERHEAD
from kdump.scan.source import open_buffer
from kdump.store.locations import is_stored

if TYPE_CHECKING:  # a stored file's readers load with the first one (a local file needs none)
    from kdump.store.buffers import SparseBuffer

__all__ = [
    "ByteSource",
    "InMemory",
    "MappedFile",
    "RangedSource",
    "SourceOpener",
    "fetch_ahead",
    "open_local",
]


@runtime_checkable
class ByteSource(Protocol):
    """The bytes of one file, however they are stored. Errors reading them raise `PathError`."""

    @property
    def label(self) -> str:
        """How findings name the file (a path, or a URL as the user gave it)."""
        ...

    def size(self) -> int:
        """The file's length in bytes."""
        ...

    def read(self, position: int, length: int) -> memoryview | bytes:
        """The bytes at `position` .. `position + length`, fewer only where the file ends."""
        ...

    def buffer(self) -> memoryview:
        """The whole file as one buffer, valid until `close()`."""
        ...

    def lazy_buffer(self) -> tuple[memoryview, Callable[[int, int], object] | None]:
        """A buffer of the whole file whose range [start, end) holds the file's bytes once
        `fill(start, end)` was called; `fill` is None when every byte is there already."""
        ...

    def modified_ms(self) -> int:
        """The modification time in epoch milliseconds, truncated (Java's `File.lastModified`)."""
        ...

    def close(self) -> None:
        """Release what the source holds; buffers it returned are no longer valid."""
        ...


SourceOpener = Callable[[Path], ByteSource]


class MappedFile:
    """A local file, memory-mapped read-only on first use (`kdump.scan.source.open_buffer`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stack = ExitStack()
        self._buf: memoryview | None = None

    @property
    def label(self) -> str:
        return str(self.path)

    def buffer(self) -> memoryview:
        if self._buf is None:
            self._buf = self._stack.enter_context(open_buffer(self.path))
        return self._buf

    def lazy_buffer(self) -> tuple[memoryview, Callable[[int, int], object] | None]:
        return self.buffer(), None

    def size(self) -> int:
        if self._buf is not None:
            return len(self._buf)
        try:
            return self.path.stat().st_size
        except OSError as exc:
            raise PathError(f"cannot read {self.path}: {exc.strerror or exc}") from exc

    def read(self, position: int, length: int) -> memoryview:
        buf = self.buffer()
        start = max(0, min(position, len(buf)))
        return buf[start : max(start, min(len(buf), position + length))]

    def modified_ms(self) -> int:
        try:
            return self.path.stat().st_mtime_ns // 1_000_000
        except OSError as exc:
            raise PathError(f"cannot read {self.path}: {exc.strerror or exc}") from exc

    def close(self) -> None:
        self._buf = None
        self._stack.close()

    def __enter__(self) -> MappedFile:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class InMemory:
    """Bytes already in hand (a buffer mapped by the caller, a member read from an archive)."""

    def __init__(self, data: memoryview | bytes, label: str, modified_ms: int = 0) -> None:
        self._data = memoryview(data)
        self._label = label
        self._mtime = modified_ms

    @property
    def label(self) -> str:
        return self._label

    def buffer(self) -> memoryview:
        return self._data

    def lazy_buffer(self) -> tuple[memoryview, Callable[[int, int], object] | None]:
        return self._data, None

    def size(self) -> int:
        return len(self._data)

    def read(self, position: int, length: int) -> memoryview:
        start = max(0, min(position, len(self._data)))
        return self._data[start : max(start, min(len(self._data), position + length))]

    def modified_ms(self) -> int:
        return self._mtime

    def close(self) -> None:
        """Nothing to release: the caller owns the bytes."""

    def __enter__(self) -> InMemory:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class RangedSource:
    """A stored file (at a URL, or a tarball's member) read by ranges: a lookup fetches only the
    bytes it asks for, a scan only as far as it goes (`lazy_buffer`); `buffer()` fetches the rest
    of the file, once."""

    def __init__(self, path: Path, *, forward_only: bool = False) -> None:
        """`forward_only`: the lazy buffer is read by one forward scan, which may hand back what
        it has passed (`kdump.store.buffers.SparseBuffer`)."""
        self._forward_only = forward_only
        from kdump.store.opening import open_reader

        self.path = path
        self._reader = open_reader(str(path))
        self._sparse: SparseBuffer | None = None
        self._complete = False
        try:
            st = path.stat()
        except OSError as exc:
            self._reader.close()
            raise PathError(f"cannot read {path}: {exc.strerror or exc}") from exc
        self._size = st.st_size
        self._mtime_ms = st.st_mtime_ns // 1_000_000

    @property
    def label(self) -> str:
        return str(self.path)

    def _buffer(self) -> SparseBuffer:
        if self._sparse is None:
            from kdump.store.buffers import SparseBuffer

            self._sparse = SparseBuffer(self._reader, self._size, releasable=self._forward_only)
        return self._sparse

    def buffer(self) -> memoryview:
        sb = self._buffer()
        if not self._complete:
            sb.fill(0, self._size)
            self._complete = True
        return sb.view

    def lazy_buffer(self) -> tuple[memoryview, Callable[[int, int], object] | None]:
        sb = self._buffer()
        return sb.view, (None if self._complete else sb.fill)

    def size(self) -> int:
        return self._size

    def read(self, position: int, length: int) -> memoryview | bytes:
        if self._complete and self._sparse is not None:
            start = max(0, min(position, self._size))
            return self._sparse.view[start : max(start, min(self._size, position + length))]
        end = min(self._size, position + length)
        return self._reader.read(position, end - position) if end > position >= 0 else b""

    def modified_ms(self) -> int:
        return self._mtime_ms

    def close(self) -> None:
        if self._sparse is not None:
            self._sparse.close()  # closes the reader too
            self._sparse = None
        else:
            self._reader.close()


# A stored file scanned from some position is fetched in requests of this size, doubling up to
# the largest: a lookup that reads a few batches fetches tens of KiB, a long scan takes few requests.
_FIRST_FETCH = 64 << 10
_LARGEST_FETCH = 16 << 20


def fetch_ahead(
    fill: Callable[[int, int], object] | None, position: int, size: int, first: int = _FIRST_FETCH
) -> Callable[[int], None] | None:
    """The scanner's `ready` hook (`scan_log(ready=...)`) for a scan from `position` of a lazily
    filled buffer of `size` bytes (`ByteSource.lazy_buffer`); None for a complete buffer. The first
    request fetches `first` bytes (or what is asked, if more), each next one twice as many."""
    if fill is None:
        return None
    state = [position, first]  # fetched up to, next request's size

    def ready(upto: int) -> None:
        if upto > state[0]:
            target = min(size, max(upto, state[0] + state[1]))
            fill(state[0], target)
            state[0], state[1] = target, min(_LARGEST_FETCH, state[1] * 2)

    return ready


def fetch_entry(fill: Callable[[int, int], object] | None, buf: memoryview, position: int) -> None:
    """Fill the log entry at `position` of a lazily filled buffer (`ByteSource.lazy_buffer`): its
    length field first, then the entry, bounded by the buffer (nothing for a complete buffer)."""
    size = len(buf)
    if fill is None or position < 0:
        return
    fill(position, min(size, position + ENTRY_PREFIX.size))
    if position + ENTRY_PREFIX.size <= size:
        length = ENTRY_PREFIX.unpack_from(buf, position)[1]
        fill(position, min(size, position + LOG_OVERHEAD + max(0, length)))


class _WholeScan:
    """`open_scan`'s context for a local file: its buffer, with no `ready` hook (all there)."""

    __slots__ = ("_opened",)

    def __init__(self, opened: AbstractContextManager[memoryview]) -> None:
        self._opened = opened

    def __enter__(self) -> tuple[memoryview, Callable[[int], None] | None]:
        return self._opened.__enter__(), None

    def __exit__(self, *exc: Any) -> bool | None:
        return self._opened.__exit__(*exc)


def open_scan(
    path: Path, max_bytes: int | None = None, *, probed: bool = False
) -> AbstractContextManager[tuple[memoryview, Callable[[int], None] | None]]:
    """A file's bytes for one forward scan, and the scanner's `ready` hook (None: all there).

    A local file is mapped, or read when of at most 512 KB (`open_buffer(read_small=True)`). A
    stored one is fetched ahead of the scan as it goes and the memory of what it has passed is
    handed back (`scan_log` releases it as it releases a mapped file's
    pages), so a scan of a stored segment has a constant footprint: the caller must read nothing
    behind the scan's position. A scan reads the whole file (or its first `max_bytes`): its first
    request fetches up to 16 MiB of it, so a file of that size or less costs one request.

    Raises:
        PathError: the file cannot be opened.
    """
    if not is_stored(path):
        # A plain object, not a generator's context: a log dir's partition opens one per segment.
        return _WholeScan(open_buffer(path, probed=probed, read_small=True))
    return _stored_scan(path, max_bytes)


@contextmanager
def _stored_scan(
    path: Path, max_bytes: int | None
) -> Iterator[tuple[memoryview, Callable[[int], None] | None]]:
    from kdump.store.buffers import sparse_buffer

    with sparse_buffer(str(path), releasable=True) as sb:
        first = _LARGEST_FETCH if max_bytes is None else max(1, min(_LARGEST_FETCH, max_bytes))
        yield sb.view, fetch_ahead(sb.fill, 0, sb.size, first)


def open_local(path: Path, *, forward_only: bool = False) -> ByteSource:
    """The default `SourceOpener`: a local file, mapped on first use; a stored one (a URL, a
    tarball's member), read by ranges (`forward_only`: see `RangedSource`)."""
    if is_stored(path):
        return RangedSource(path, forward_only=forward_only)
    return MappedFile(path)
