"""Deep checks of a compiled walk's run of batches, for scans that check records without yielding them.

`scan_log(batch_runs=True, deep=True)` (verify --deep) needs to know what each batch's records say,
not the records themselves. The data batches of a `BatchRun` are asked of the compiled record path's
check (does `decode_v2` find them clean?) a chunk of batches a call (`check_v2_run`): uncompressed
payloads in place, single-frame zstd ones listed in C and decompressed in one tight loop, other
codecs decompressed one batch at a time; chunks go to a few threads (the codecs and the checks
release the GIL, so decompression takes every core). A batch that is not found clean, or whose
payload the one-shot decompression below does not take, goes to the reference
(`decode_batch_records`), and the run is cut there so its findings stand right after it, where the
reference scan puts them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from kdump.errors import CodecError
from kdump.findings import Finding
from kdump.formats import codecs, fast_records, fast_walk
from kdump.formats.batch import BatchHeader
from kdump.formats.codecs import DEFAULT_MAX_DECOMPRESSED_SIZE, decompress
from kdump.formats.constants import TIMESTAMP_TYPE_MASK, V2_HEADER_SIZE, Codec

if TYPE_CHECKING:
    # Imported with the first pool (it brings logging and queue): a shallow scan never needs them.
    from concurrent.futures import ThreadPoolExecutor

Buffer = bytes | bytearray | memoryview
_Codecs = tuple[Callable[[bytes], bytes | None] | None, Callable[[Buffer, bytes], list[bytes]] | None]
DecodeBatch = Callable[[Buffer, BatchHeader, str], tuple[Sequence[object], list[Finding]]]

# Batches per task: enough to make a task's overhead small, few enough to spread a run over cores.
CHUNK = 256
CHUNK_BYTES = 1 << 20
_POOL: list[ThreadPoolExecutor] = []
_POOL_LOCK = threading.Lock()


def _pool() -> ThreadPoolExecutor | None:
    workers = min(4, os.cpu_count() or 1)
    if workers < 2:
        return None
    with _POOL_LOCK:
        if not _POOL:
            from concurrent.futures import ThreadPoolExecutor

            _POOL.append(ThreadPoolExecutor(workers, thread_name_prefix="kdump-deep"))
        return _POOL[0]


# A forked worker starts without the parent's threads: it makes its own pool when it needs one.
os.register_at_fork(after_in_child=_POOL.clear)


def sub_run(run: fast_walk.BatchRun, i: int, j: int) -> fast_walk.BatchRun:
    """Batches i..j-1 of a run, as a run of their own."""
    if i == 0 and j == run.n:
        return run
    n = run.n
    view = memoryview(run.columns).cast("q")
    columns = b"".join(view[k * n + i : k * n + j].tobytes() for k in range(fast_walk.N_COLUMNS))
    part = fast_walk.BatchRun(j - i, 0, 0, columns, 0, -1, 0, 0, 0)
    positions, sizes = part.column(fast_walk.POSITION), part.column(fast_walk.SIZE)
    counts, lasts = part.column(fast_walk.COUNT), part.column(fast_walk.LAST_OFFSET)
    attrs, max_ts = part.column(fast_walk.ATTRIBUTES), part.column(fast_walk.MAX_TIMESTAMP)
    best = max(range(j - i), key=lambda k: (max_ts[k], -k))
    attributes_or = 0
    for a in attrs:
        attributes_or |= a
    return part._replace(
        start=positions[0],
        end=positions[-1] + sizes[-1],
        records=sum(counts),
        max_timestamp=max_ts[best],
        offset_of_max_timestamp=lasts[best],
        attributes_or=attributes_or,
        last_offset=lasts[-1],
    )


# Each thread's zstd decompression context (a context serves one thread at a time), kept from run to
# run: both zstd paths below use it.
_ZSTD_CONTEXT = threading.local()


def _thread_decompressor(zstandard: Any) -> Any:
    dctx = getattr(_ZSTD_CONTEXT, "dctx", None)
    if dctx is None:
        dctx = _ZSTD_CONTEXT.dctx = zstandard.ZstdDecompressor()
    return dctx


def _zstd_one_shot() -> Callable[[bytes], bytes | None] | None:
    """zstd's one-shot path of `codecs.decompress` (a single frame that states its size): the same
    bytes it returns; None for any other payload (the reference then decompresses it)."""
    try:
        zstandard = codecs.load("zstandard")
    except CodecError:  # missing or broken: the reference path says so, as a finding
        return None
    limit = DEFAULT_MAX_DECOMPRESSED_SIZE

    def one_shot(raw: bytes) -> bytes | None:
        dctx = _thread_decompressor(zstandard)
        try:
            size = zstandard.frame_content_size(raw)
            if 0 <= size <= limit:
                return bytes(dctx.decompress(raw, max_output_size=limit, allow_extra_data=False))
        except zstandard.ZstdError:
            pass
        return None

    return one_shot


def _zstd_many() -> Callable[[Buffer, bytes], list[bytes]] | None:
    """The payloads that `segments` (offset and length pairs in the buffer, each a single frame that
    states its size: `zstd_frames`) decompressed, in one tight loop: a call per frame of the zstd
    binding's one-shot decompression, into buffers of the heap it reuses. (The binding's own batch
    call, `multi_decompress_to_buffer`, was slower here: fresh pages for its output, a context per
    call.) None when zstd is not there: every batch then takes the one-shot path, which reports it."""
    try:
        zstandard = codecs.load("zstandard")
    except CodecError:
        return None

    def many(buf: Buffer, segments: bytes) -> list[bytes]:
        one = _thread_decompressor(zstandard).decompress
        pairs = memoryview(segments).cast("Q")
        view = memoryview(buf)
        return [one(view[at : at + size]) for at, size in zip(pairs[0::2], pairs[1::2], strict=True)]

    return many


# At most this many bytes decompressed for one chunk by `many` (a payload that would pass it takes
# the one-shot path): bounds what a chunk holds at once, whatever sizes the frames state.
MANY_MAX_BYTES = 64 << 20


class _Columns:
    """The columns of a run that the Python side reads, as lists, made the first time they are asked
    for: a run whose batches all pass in C needs none of them."""

    def __init__(self, run: fast_walk.BatchRun) -> None:
        self.run = run
        self.lists: tuple[list[int], ...] | None = None
        self.lock = threading.Lock()

    def get(self) -> tuple[list[int], ...]:
        """Position, size, attributes, count, base offset, last offset, base and max timestamp."""
        with self.lock:
            if self.lists is None:
                self.lists = tuple(
                    self.run.column(k)
                    for k in (
                        fast_walk.POSITION,
                        fast_walk.SIZE,
                        fast_walk.ATTRIBUTES,
                        fast_walk.COUNT,
                        fast_walk.BASE_OFFSET,
                        fast_walk.LAST_OFFSET,
                        fast_walk.BASE_TIMESTAMP,
                        fast_walk.MAX_TIMESTAMP,
                    )
                )
            return self.lists


def _clean_flags(
    buf: Buffer, run: fast_walk.BatchRun, cols: _Columns, lo: int, hi: int, codec_calls: _Codecs
) -> bytes | bytearray:
    """For batches lo..hi-1 of a run: whether each is a data batch the compiled check finds clean
    (1) or needs the reference (0).

    Uncompressed batches are checked in place and single-frame zstd ones decompressed in one tight
    loop (`zstd_frames` lists them), then all checked in one compiled call; the others (and all
    of the loop's when a frame fails it) are decompressed one by one by the path before it.
    """
    compiled = fast_records.compiled
    if compiled is None:
        return bytes(hi - lo)
    zstd, many = codec_calls
    index, datas = b"", []
    if many is not None and run.attributes_or & Codec.ZSTD:
        index, segments = compiled.zstd_frames(buf, run.columns, run.n, lo, hi, MANY_MAX_BYTES)
        if index:
            try:
                datas = many(buf, segments)
            except Exception:  # a frame it refuses, no memory: one by one below, as before
                index, datas = b"", []
    flags: bytes = compiled.check_v2_run(buf, run.columns, run.n, lo, hi, index, datas)
    if 2 not in flags:
        return flags
    out = bytearray(flags)
    k = out.find(2)
    while k >= 0:
        out[k] = _clean_one(buf, cols.get(), lo + k, zstd)
        k = out.find(2, k + 1)
    return out


def _clean_one(
    buf: Buffer, cols: tuple[list[int], ...], k: int, zstd: Callable[[bytes], bytes | None] | None
) -> bool:
    """Whether batch k, a compressed data batch, decompresses and is found clean by the compiled check."""
    assert fast_records.compiled is not None
    positions, sizes, attrs, counts, bases, lasts, base_ts, max_ts = cols
    a = attrs[k]
    codec = a & 0x07
    pos = positions[k]
    payload = buf[pos + V2_HEADER_SIZE : pos + sizes[k]]
    data: Any
    try:
        if codec == Codec.ZSTD and zstd is not None:
            data = zstd(bytes(payload))
        elif codec == Codec.LZ4:
            data = _joined(codecs.lz4_blocks(payload))
        else:
            data = decompress(codec, payload, magic=2)
    except Exception:  # a codec's error, a missing codec, no memory: the reference reports it
        data = None
    log_append = bool(a & TIMESTAMP_TYPE_MASK)
    return data is not None and fast_records.compiled.check_v2(
        data, bases[k], lasts[k], base_ts[k], max_ts[k], log_append, counts[k], not log_append
    )


_LOCAL = threading.local()
_KEPT_BUFFER = 16 << 20


def _joined(parts: list[bytes | memoryview]) -> memoryview:
    """The parts copied end to end into this thread's buffer, kept from batch to batch: a new
    buffer per batch costs a page fault per 4 KiB written (most of lz4's cost on big batches).
    The view is valid until this thread's next call."""
    total = sum(len(p) for p in parts)
    if total > _KEPT_BUFFER:
        return memoryview(b"".join(parts))  # a rare giant batch: not kept for the next
    out: bytearray | None = getattr(_LOCAL, "out", None)
    if out is None or len(out) < total:
        out = _LOCAL.out = bytearray(max(total, 1 << 20))
    pos = 0
    for p in parts:
        out[pos : pos + len(p)] = p
        pos += len(p)
    return memoryview(out)[:total]


def _chunks(sizes: list[int]) -> list[tuple[int, int]]:
    """Runs of batches of about CHUNK_BYTES (at most CHUNK batches): the tasks of one run."""
    out = []
    lo = total = 0
    for k, size in enumerate(sizes):
        total += size
        if total >= CHUNK_BYTES or k + 1 - lo >= CHUNK:
            out.append((lo, k + 1))
            lo, total = k + 1, 0
    if lo < len(sizes):
        out.append((lo, len(sizes)))
    return out


def check_run_records(
    buf: Buffer, run: fast_walk.BatchRun, file: str, decode_batch: DecodeBatch
) -> Iterator[fast_walk.BatchRun | Finding | int]:
    """The run, cut after each batch whose records need the reference, with that batch's findings.

    Yields runs and findings in scan order, and ints: how many records the batches before held
    (the scanner's record count).
    """
    cols = _Columns(run)
    codec_calls = (_zstd_one_shot(), _zstd_many())
    if run.n <= CHUNK and run.end - run.start <= CHUNK_BYTES:
        clean = _clean_flags(buf, run, cols, 0, run.n, codec_calls)
    else:
        chunks = _chunks(cols.get()[1])
        pool = _pool() if len(chunks) > 1 else None
        if pool is None:
            clean = _clean_flags(buf, run, cols, 0, run.n, codec_calls)
        else:
            clean = bytearray()
            for flags in pool.map(lambda c: _clean_flags(buf, run, cols, c[0], c[1], codec_calls), chunks):
                clean += flags
    if 0 not in clean:
        yield run
        yield run.records
        return
    counts = cols.get()[3]
    cut = 0
    held = 0
    headers: list[BatchHeader] | None = None
    for k in range(run.n):
        if clean[k]:
            held += counts[k]
            continue
        if headers is None:
            headers = run.headers()
        records, findings = decode_batch(buf, headers[k], file)
        yield sub_run(run, cut, k + 1)
        yield held + len(records)
        held = 0
        cut = k + 1
        yield from findings
    if cut < run.n:
        yield sub_run(run, cut, run.n)
    yield held
