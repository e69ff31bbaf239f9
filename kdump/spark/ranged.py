"""What a Spark task reads of a stored segment: its slice, by ranged reads, never the whole file.

A local file is mapped whole, as before (the page cache makes untouched parts free). A stored file
(`s3://…`, a tarball's member) becomes a file-sized buffer (`kdump.store.buffers.SparseBuffer`)
holding only what the task needs, at the file's own positions, so the scanner and the planning
code run unchanged over it:

- a slice `[start, end)`: its bytes, the rest of the last batch that starts before `end`, and the
  header of the batch after it (where the slice's scan stops);
- split planning: the offset index (small, read whole) and the batches at the candidate positions
  the index gives; only when the index cannot be used does the driver read the whole file, to walk
  its length fields.
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise

from kdump.errors import KdumpError
from kdump.formats.batch import ENTRY_PREFIX
from kdump.formats.offset_index import decode_offset_index
from kdump.model.segment import Segment
from kdump.scan.resync import find_next_entry, plausible_entry_at
from kdump.scan.source import open_buffer
from kdump.store.buffers import SparseBuffer, sparse_buffer
from kdump.store.locations import is_stored

# Enough for any batch header (61 bytes for v2) and the legacy wrapper's fields.
_HEADER_BYTES = 64


@contextmanager
def open_slice_buffer(log: str, start: int, end: int | None) -> Iterator[memoryview]:
    """The buffer a task scans for the slice [start, end) of `log` (end None: to the end of the file),
    complete when it is handed out.

    Raises:
        PathError: the file cannot be opened or read.
    """
    with open_slice(log, start, end) as sliced:
        sliced.ready(sliced.view.nbytes)
        yield sliced.view


@dataclass(frozen=True, slots=True)
class SliceBuffer:
    """A slice's buffer and the `ready` function to give the scanner (`scan_log(ready=...)`): a
    stored slice is fetched while it is scanned."""

    view: memoryview
    ready: Callable[[int], None]


def _always_ready(_position: int) -> None:
    return None


@contextmanager
def open_slice(log: str, start: int, end: int | None) -> Iterator[SliceBuffer]:
    """The buffer of the slice [start, end) of `log`: mapped when local; when stored, filled by a
    background thread while the task scans what has arrived, so fetching overlaps decoding.

    Raises:
        PathError: the file cannot be opened or read (when stored, possibly from `ready`).
    """
    if not is_stored(log):
        with open_buffer(log) as buf:
            yield SliceBuffer(buf, _always_ready)
        return
    with sparse_buffer(log) as sb:
        fetch = _SliceFetch(sb, start, sb.size if end is None else min(end, sb.size))
        try:
            yield SliceBuffer(sb.view, fetch.ready)
        finally:
            fetch.stop()


# Ranged requests grow from this size: the scan starts on the first bytes soon, and the rest comes
# in few requests (each costs a round trip and, on some stores, a fixed overhead).
_FIRST_REQUEST = 8 << 20
_LARGEST_REQUEST = 32 << 20


class _SliceFetch:
    """Fills a slice's buffer in order on a thread; `ready(position)` waits for it."""

    def __init__(self, sb: SparseBuffer, start: int, stop: int) -> None:
        self._sb, self._start, self._stop = sb, start, stop
        self._filled = start  # bytes [start, _filled) are in the buffer
        self._done = False
        self._cancelled = False
        self._error: BaseException | None = None
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="kdump-slice-fetch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        sb, pos, step = self._sb, self._start, _FIRST_REQUEST
        try:
            while pos < self._stop and not self._cancelled:
                nxt = min(self._stop, pos + step)
                got = sb.fill(pos, nxt)
                with self._cond:
                    self._filled = max(self._filled, got)
                    self._cond.notify_all()
                if got < nxt:
                    break
                pos, step = nxt, min(_LARGEST_REQUEST, step * 2)
            if self._stop < sb.size and not self._cancelled:
                _fill_last_batch(sb, self._start, self._stop)
        except BaseException as exc:  # handed to the scanning thread by `ready`
            self._error = exc
        finally:
            with self._cond:
                self._done = True
                self._cond.notify_all()

    def ready(self, position: int) -> None:
        """Return once the buffer holds the slice's bytes below `position` (or all it will hold).

        Raises:
            PathError: fetching failed.
        """
        if position <= self._filled and self._error is None:
            return
        with self._cond:
            while not self._done and self._filled < position:
                self._cond.wait()
        if self._error is not None:
            raise self._error

    def stop(self) -> None:
        """Stop fetching (the scan is over, or gave up) and wait for the thread to leave the buffer."""
        self._cancelled = True
        self._thread.join()


def _fill_last_batch(sb: SparseBuffer, start: int, stop: int) -> None:
    """Complete the batch that starts before `stop` and runs past it; add the next batch's header.

    The walk follows the length fields as the scanner frames batches, resyncing past damage the way
    it does, so the batches the slice owns are whole in the buffer.
    """
    buf, size = sb.view, sb.size
    pos = start
    while pos < stop:
        if pos + 17 > stop:
            sb.fill(pos, pos + _HEADER_BYTES)
        if pos + 17 > size:
            return
        _offset, length, _magic = ENTRY_PREFIX.unpack_from(buf, pos)
        nxt = pos + 12 + length
        if length >= 14 and nxt <= size:
            if nxt > stop:
                sb.fill(stop, nxt)
            pos = nxt
            continue
        found = find_next_entry(buf, pos + 1, stop)
        if found is None:
            return
        pos = found
    sb.fill(pos, pos + _HEADER_BYTES)


@contextmanager
def open_split_buffer(seg: Segment, targets: Sequence[int]) -> Iterator[memoryview]:
    """The buffer split planning reads for a segment: mapped whole when local; when stored, the
    batches at the offset index's candidate positions for `targets` (or, when the index cannot
    give them, the whole file)."""
    assert seg.log is not None
    if not is_stored(seg.log):
        with open_buffer(seg.log) as buf:
            yield buf
        return
    with sparse_buffer(str(seg.log)) as sb:
        if not _fill_index_candidates(sb, seg, targets):
            sb.fill(0, sb.size)
        yield sb.view


def _fill_index_candidates(sb: SparseBuffer, seg: Segment, targets: Sequence[int]) -> bool:
    """Fetch the batch at each index position a split target falls on; False when the index cannot
    be used (missing, damaged, out of order, or a position that is not a valid batch)."""
    if seg.index is None:
        return False
    try:
        with open_buffer(seg.index) as ibuf:
            positions = [e.position for e in decode_offset_index(ibuf, seg.base_offset).entries]
    except KdumpError:
        return False
    if not positions or any(b <= a for a, b in pairwise(positions)):
        return False
    for t in targets:
        i = bisect_right(positions, t)
        if i == 0:
            continue
        p = positions[i - 1]
        sb.fill(p, p + _HEADER_BYTES)
        if p + 17 > sb.size:
            return False
        _offset, length, _magic = ENTRY_PREFIX.unpack_from(sb.view, p)
        sb.fill(p, p + 12 + max(0, length))
        if not plausible_entry_at(sb.view, p, sb.size):
            return False
    return True
