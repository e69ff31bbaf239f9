"""The compiled batch walk: runs of clean v2 batches framed, bounded and checksummed in C.

`kdump/formats/_fastwalk.c` walks consecutive entries for as long as each is a whole, checksum-valid
v2 batch that passes exactly the checks under which the scanner (`scan.log_scanner.scan_log`) has
nothing to report, and hands back at the first entry that is anything else; the scanner reads that
one itself. It is optional like the record path (`fast_records`): where it was not built, or with
`KDUMP_PURE_PYTHON=1`, `compiled` is None and the scanner walks every entry in Python, which stays the
reference (tests/scan/test_fast_walk.py holds the two event streams identical).

A run is a `BatchRun`: its batches' header fields as columns (no object per batch), with what the
scanner's summary needs of them. `BatchRun.headers()` gives the very `BatchHeader`s the reference
scan would have yielded for those batches.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import NamedTuple

from kdump.formats.batch import BatchHeader
from kdump.formats.fast_records import load_compiled

Buffer = bytes | bytearray | memoryview

# Column numbers of BatchRun.columns (the order of the C walk's output).
(
    POSITION,
    BASE_OFFSET,
    LAST_OFFSET,
    COUNT,
    SIZE,
    CRC,
    ATTRIBUTES,
    BASE_TIMESTAMP,
    MAX_TIMESTAMP,
    PRODUCER_ID,
    PRODUCER_EPOCH,
    BASE_SEQUENCE,
    LEADER_EPOCH,
) = range(13)
N_COLUMNS = 13

# Batches per call: bounds a run's columns (104 bytes a batch) whatever the batches' size.
MAX_RUN = 32768
_INT64_MAX = (1 << 63) - 1


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# Threads of a walk: above 1, a helper thread walks the second half of each window (its reads and
# checksums on another core). 2 where this process may run on two cores or more;
# forked workers that each have a core set it to 1 (`set_threads`).
_threads = min(2, _cores())
# The bytes of a window from which it gets a helper (None: the compiled default).
_thread_bytes: int | None = None


def set_threads(threads: int, thread_bytes: int | None = None) -> None:
    """Whether walks use a helper thread (threads > 1) and from how many bytes of a window (None: the
    compiled module's threshold; tests force it low)."""
    global _threads, _thread_bytes
    _threads = max(1, threads)
    _thread_bytes = thread_bytes


def threads() -> int:
    return _threads


def thread_bytes() -> int | None:
    return _thread_bytes


# The compiled module, or None for the reference path (tests set it to None to compare the two).
compiled: ModuleType | None = load_compiled("_fastwalk")


class BatchRun(NamedTuple):
    """Consecutive checksum-valid v2 batches that passed the scanner's checks with nothing to say.

    `columns` holds `n` int64s per column (see the column numbers above), column after column.
    `records` is the sum of their record counts; `max_timestamp` the largest max timestamp and
    `offset_of_max_timestamp` the last offset of the first batch that has it; `attributes_or` every
    batch's attributes or-ed (a run with no transactional bit needs no per-batch look).
    """

    n: int
    start: int
    end: int
    columns: bytes
    records: int
    max_timestamp: int
    offset_of_max_timestamp: int
    attributes_or: int
    last_offset: int

    def column(self, k: int) -> list[int]:
        """One column as a list of ints."""
        n = self.n
        view = memoryview(self.columns).cast("q")
        return view[k * n : (k + 1) * n].tolist()

    def value(self, k: int, i: int) -> int:
        """Column `k` of the i-th batch."""
        at = (k * self.n + i) * 8
        return int.from_bytes(self.columns[at : at + 8], sys.byteorder, signed=True)

    def headers(self) -> list[BatchHeader]:
        """The `BatchHeader` of each batch, equal to what `decode_v2_header` gives."""
        assert compiled is not None
        out: list[BatchHeader] = compiled.headers(self.columns, self.n, BatchHeader)
        return out


class WalkState(NamedTuple):
    """Where a walk ended: the scanner's running previous last offset and leader epoch."""

    prev_last: int
    prev_epoch: int


def walk_prev_of_first(buf: Buffer, end: int, base_offset: int | None) -> int | None:
    """The offset a file's first batch may be walked as following (`walk`'s `prev_last`): the file
    name's offset - 1 where the first entry starts at the file name's offset (the broker's every
    segment). The reference's checks of a first batch (below the base, above it, past 2^31-1 of
    it) are then the walk's of a batch following that offset. None where the scanner reads the
    first batch itself (no name to go by, another offset, too few bytes, the walk off)."""
    if compiled is None or base_offset is None or not 0 <= base_offset <= _INT64_MAX or end < 8:
        return None
    first = int.from_bytes(buf[:8], "big", signed=True)
    return base_offset - 1 if first == base_offset else None


def walk(
    buf: Buffer,
    pos: int,
    end: int,
    limit: int,
    soft_stop: int,
    prev_last: int,
    prev_epoch: int,
    base_offset: int | None,
    release_from: int = -1,
    fd: int = -1,
) -> tuple[BatchRun, WalkState] | None:
    """Walk from `pos` (an entry boundary) while batches are clean; entries must end by `limit`.

    `end` is where the scan's bytes end (it decides framing, as in the scanner); `limit` <= `end` is
    how far the bytes are ready; no batch starts at or after `soft_stop`. Returns None when the walk
    is off or took no batch. `release_from` >= 0 (`buf` a read-only mmap's, <= `pos`): the pages of
    `buf[release_from:pos]` are handed back (MADV_DONTNEED) during the walk, off the calling thread
    where a helper runs; done even when the walk takes no batch. `fd` >= 0 (`buf` a read-only mmap's,
    whole): the descriptor of the file it maps, read with `pread` instead of through the mapping.
    """
    if compiled is None or not -1 <= prev_last < _INT64_MAX:
        return None
    if base_offset is not None and not 0 <= base_offset <= _INT64_MAX:
        return None
    # The threshold is passed only where set: else the compiled module's own default holds.
    threshold = {} if _thread_bytes is None else {"thread_bytes": _thread_bytes}
    walked = compiled.walk_v2(
        buf,
        pos,
        end,
        limit,
        soft_stop,
        prev_last,
        prev_epoch,
        base_offset,
        MAX_RUN,
        _threads,
        release_from=release_from,
        fd=fd,
        **threshold,
    )
    n, new_pos, last, epoch, columns, records, max_ts, off_max, attrs = walked
    if n == 0:
        return None
    return BatchRun(n, pos, new_pos, columns, records, max_ts, off_max, attrs, last), WalkState(last, epoch)
