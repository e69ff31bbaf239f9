"""`scan_log`: walk the entries of a `.log` buffer and report what is there, in position order.

Framing follows the broker's file reader (`FileLogInputStream.nextBatch`):
1. fewer than 18 bytes left (`position + 17 >= end`): stop;
2. a length field below 14 is corrupt;
3. an entry whose length runs past the end of the file is a partial trailing batch;
4. magic 0/1 is a legacy message, 2 a v2 batch.

The broker's recovery (`LogSegment.recover`) then requires every entry to pass `ensureValid()`:
at least the format's minimum size and a matching checksum. The first entry that does not, or an
incomplete one at the end, is where it truncates; `ScanSummary.valid_bytes` is that position, the
same in both scan modes. In RECOVERY mode the scan stops there. In FORENSIC mode it keeps going past
a bad checksum while the length still frames the next entry, and once framing is lost it searches
forward for the next plausible entry (magic at +16, a length that fits, a matching checksum),
reporting the skipped range and the offsets lost.

A length field is never trusted before it is bounded by the bytes left in the buffer. Headers are
read in place; payloads are decompressed and records decoded only when `deep=True`.
"""

from __future__ import annotations

import mmap
import re
import struct
from collections.abc import Callable, Iterator
from typing import Literal, overload

from kdump.errors import (
    CodecError,
    CodecUnavailableError,
    MessageTooShortError,
    TruncatedError,
    WrapperOffsetError,
)
from kdump.findings import Finding, Severity, make_finding
from kdump.formats import fast_records, fast_walk
from kdump.formats.batch import (
    ENTRY_PREFIX,
    BatchHeader,
    decode_legacy_header,
    decode_v2_header,
    legacy_crc,
    v2_crc,
)
from kdump.formats.codecs import decompress
from kdump.formats.constants import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    MAX_RELATIVE_OFFSET,
    MIN_BATCH_LENGTH,
    V1_RECORD_OVERHEAD,
    V2_HEADER_SIZE,
    ControlType,
    TimestampType,
)
from kdump.formats.control import decode_control_key, decode_end_txn_marker
from kdump.formats.records import Record, decode_legacy_message, decode_legacy_records, decode_v2_records
from kdump.scan.events import Event, ScanMode, ScanSummary, StopReason
from kdump.scan.runs import check_run_records

Buffer = bytes | bytearray | memoryview

_NONZERO = re.compile(rb"[^\x00]")
_MAGIC_BYTE = re.compile(rb"[\x00-\x02]")
_LENGTH = struct.Struct(">i")


def _min_length(magic: int) -> int:
    """Smallest valid length field for a format (entry size minus the 12-byte log overhead)."""
    if magic == 2:
        return V2_HEADER_SIZE - LOG_OVERHEAD
    if magic == 1:
        return V1_RECORD_OVERHEAD
    return MIN_BATCH_LENGTH


_V2_FIELDS = struct.Struct(">qiibIhi8x8xqhii")  # through recordsCount, skipping the timestamps
_LEGACY_FIELDS = struct.Struct(">qiIbB")


def _structurally_plausible(buf: Buffer, q: int, length: int, magic: int) -> bool:
    """Cheap header checks that random bytes almost never pass, made before any checksum.

    Without them a resync through dense garbage would checksum every candidate's claimed length,
    which grows with the square of the garbage's size.
    """
    if magic == 2:
        if length < V2_HEADER_SIZE - LOG_OVERHEAD:
            return False
        base, _len, _epoch, _magic, _crc, attributes, delta, producer_id, producer_epoch, base_seq, count = (
            _V2_FIELDS.unpack_from(buf, q)
        )
        # Kafka writes attribute bits 7..15 as zero and codecs 0..4; offsets and counts are sane.
        return bool(
            attributes & ~0x7F == 0
            and attributes & 0x07 <= 4
            and base >= 0
            and 0 <= count <= delta + 1
            and producer_id >= -1
            and producer_epoch >= -1
            and base_seq >= -1
        )
    offset, _len, _crc, _magic, attributes = _LEGACY_FIELDS.unpack_from(buf, q)
    if offset < 0 or attributes & ~0x0F or attributes & 0x07 > 3:
        return False
    # A legacy message's key and value lengths account for its length exactly.
    pos = q + LOG_OVERHEAD + (V1_RECORD_OVERHEAD if magic == 1 else MIN_BATCH_LENGTH) - 8
    end = q + LOG_OVERHEAD + length
    (key_len,) = _LENGTH.unpack_from(buf, pos)
    if key_len < -1 or pos + 4 + max(key_len, 0) + 4 > end:
        return False
    (value_len,) = _LENGTH.unpack_from(buf, pos + 4 + max(key_len, 0))
    return bool(value_len >= -1 and pos + 8 + max(key_len, 0) + max(value_len, 0) == end)


def plausible_entry_at(buf: Buffer, q: int, end: int) -> bool:
    """Whether a checksum-valid entry with a sane header and length starts at `q` and ends by `end`."""
    if q + HEADER_SIZE_UP_TO_MAGIC >= end:
        return False
    magic = buf[q + 16]
    if magic > 2:
        return False
    (length,) = _LENGTH.unpack_from(buf, q + 8)
    if length < _min_length(magic) or q + LOG_OVERHEAD + length > end:
        return False
    if not _structurally_plausible(buf, q, length, magic):
        return False
    size = length + LOG_OVERHEAD
    stored = struct.unpack_from(">I", buf, q + (17 if magic == 2 else 12))[0]
    return bool(stored == (v2_crc(buf, q, size) if magic == 2 else legacy_crc(buf, q, size)))


def find_next_entry(buf: Buffer, start: int, end: int) -> int | None:
    """Search forward from `start` for the next plausible entry; None when there is none.

    Candidates need a magic byte 0..2 at +16 and a non-zero length field; runs of zeros are
    skipped in one step, so a large zeroed region costs one chunked pass, not one check per byte.
    """
    q = start
    while q + LOG_OVERHEAD + MIN_BATCH_LENGTH <= end:
        m = _MAGIC_BYTE.search(buf, q + 16, end)
        if m is None:
            return None
        q = m.start() - 16
        nz = _first_nonzero(buf, q + 8, end)
        if nz is None:
            return None
        if nz > q + 11:
            # The length field of any entry at q..nz-12 would be zero: jump past the zeros.
            q = nz - 11
            continue
        if plausible_entry_at(buf, q, end):
            return q
        q += 1
    return None


# Pages already scanned are handed back every this many bytes, so resident memory stays flat. A
# scan holds up to twice this many (a compiled walk stops at the next stride): at 16 MiB the scans
# of the partition `salvage` writes (its index rebuild, its verify) each peaked 33 MiB above the
# rest, at 4 MiB 9 MiB; a release costs a system call per stride, nothing per page.
EVICT_EVERY = 4 << 20
# How far ahead of the compiled walk a buffer still being filled is asked to be ready: from 64 KiB,
# doubling with each run, to 8 MiB.
READY_FIRST = 64 << 10
READY_AHEAD = 8 << 20


def _page_evicter(buf: Buffer) -> Callable[[int], None] | None:
    """For a memory-mapped buffer, a function that releases the pages before a position.

    Mapped pages of a file count as resident memory once touched; releasing them keeps a scan of
    a 1 GiB segment within a constant footprint (the pages stay in the page cache).
    """
    mm = buf.obj if isinstance(buf, memoryview) else None
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
    done = 0

    def evict(position: int) -> None:
        nonlocal done
        upto = (position // mmap.PAGESIZE) * mmap.PAGESIZE
        if upto - done >= EVICT_EVERY:
            try:
                mm.madvise(mmap.MADV_DONTNEED, done, upto - done)
            except (OSError, ValueError):
                return
            done = upto

    return evict


# Zero runs are checked a chunk at a time: `re` scans at ~90 MB/s, so one regex search over a
# preallocated 1 GiB zero tail took ~13 s (27 s for a 2 GiB sparse file), while comparing 1 MiB copies
# against zeros runs at GB/s. (Found by tests/test_memory_bound.py.)
_ZEROS = bytes(1 << 20)
_ZERO_PROBE = 4096


def _first_nonzero(
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


def _all_zero(buf: Buffer, start: int, end: int, evict: Callable[[int], None] | None = None) -> bool:
    return _first_nonzero(buf, start, end, evict) is None


# A segment holds at most this many offsets past its base: the index stores them as an int32.
_SEGMENT_OFFSET_SPAN = 1 << 31


def checked_offset(offset: int | None, last_valid: int | None, base_offset: int | None) -> int | None:
    """The offset a batch header that failed its check (or could not be checked) names, when it can be
    told apart from garbage: at or past the next offset (the last valid batch's, else the segment's
    base), within the span a segment can hold. None otherwise: an offset read from random bytes
    (9075011579598524882) is never reported as where the damage is."""
    floor = last_valid + 1 if last_valid is not None else base_offset
    if offset is None or floor is None:
        return None
    return offset if floor <= offset < floor + _SEGMENT_OFFSET_SPAN else None


@overload
def scan_log(
    buf: Buffer,
    *,
    file: str = "",
    base_offset: int | None = None,
    deep: bool = False,
    mode: ScanMode = ScanMode.FORENSIC,
    start: int = 0,
    max_bytes: int | None = None,
    resync: bool = True,
    ready: Callable[[int], None] | None = None,
    batch_runs: Literal[False] = False,
) -> Iterator[Event]: ...


@overload
def scan_log(
    buf: Buffer,
    *,
    file: str = "",
    base_offset: int | None = None,
    deep: bool = False,
    mode: ScanMode = ScanMode.FORENSIC,
    start: int = 0,
    max_bytes: int | None = None,
    resync: bool = True,
    ready: Callable[[int], None] | None = None,
    batch_runs: Literal[True],
) -> Iterator[Event | fast_walk.BatchRun]: ...


def scan_log(
    buf: Buffer,
    *,
    file: str = "",
    base_offset: int | None = None,
    deep: bool = False,
    mode: ScanMode = ScanMode.FORENSIC,
    start: int = 0,
    max_bytes: int | None = None,
    resync: bool = True,
    ready: Callable[[int], None] | None = None,
    batch_runs: bool = False,
) -> Iterator[Event | fast_walk.BatchRun]:
    """Scan the log entries of `buf`; yield batches, records (when `deep`), findings and a summary.

    Args:
        buf: the segment's bytes (a memoryview of a mapped file, or bytes).
        file: the path to name in findings.
        base_offset: the segment's base offset from its file name, to check offsets against.
        deep: also decompress and decode every record.
        mode: FORENSIC keeps going past damage, RECOVERY stops where the broker's recovery stops.
        start: position to start at (an entry boundary, e.g. from an index lookup).
        max_bytes: scan only this many bytes from `start` (a prefix, for live brokers).
        resync: in FORENSIC mode, search for the next plausible entry after framing is lost.
        ready: for a buffer still being filled (a stored file fetched while it is scanned), called
            with a position before any byte below it is read; it returns once those bytes are in
            `buf` (or will never be: the filling is over). Past damage it is asked for `end`.
        batch_runs: yield runs of clean v2 batches the compiled walk took as `BatchRun`s (columns,
            no object per batch) instead of a `BatchHeader` each; records are then never yielded
            (a deep scan still checks them and reports what they show, in the same place).

    Runs of clean v2 batches are walked by the compiled walk (`formats.fast_walk`) where it is
    built; it hands back at anything else, so the events are the reference's either way.
    """
    size = len(buf)
    end = size if max_bytes is None else min(size, start + max_bytes)
    limited = end < size
    forensic = mode == ScanMode.FORENSIC
    pos = start
    valid_end: int | None = None
    counts = {Severity.INFO: 0, Severity.WARNING: 0, Severity.ERROR: 0}
    batch_count = valid_batch_count = record_count = salvageable = 0
    uncounted = 0  # batches whose records were needed but whose codec is missing here: their records unknown
    first_offset: int | None = None
    first_offset_known = True
    last_offset: int | None = None
    max_ts = -1
    offset_of_max_ts: int | None = None
    prev_last: int | None = None
    prev_epoch = -1
    stop = StopReason.END
    evict = _page_evicter(buf)
    next_evict = start + EVICT_EVERY

    def tally(f: Finding) -> Finding:
        counts[f.severity] += 1
        return f

    walk = fast_walk.walk if fast_walk.compiled is not None else None
    ready_ahead = READY_FIRST
    while True:
        if walk is not None and prev_last is not None and pos < end:
            # The common case in bulk: runs of clean v2 batches, framed and checked in C.
            limit = end
            if ready is not None:
                # Ask ahead in growing steps: a scan its consumer stops early (a seek) fetches
                # little more than it read.
                limit = min(end, pos + ready_ahead)
                ready_ahead = min(ready_ahead * 2, READY_AHEAD)
                ready(limit)
            walked = walk(buf, pos, end, limit, pos + EVICT_EVERY, prev_last, prev_epoch, base_offset)
            if walked is not None:
                run, (prev_last, prev_epoch) = walked
                batch_count += run.n
                if valid_end is None:
                    valid_batch_count += run.n
                    if first_offset is None:
                        first_offset = run.column(fast_walk.BASE_OFFSET)[0]
                    last_offset = run.last_offset
                    if run.max_timestamp > max_ts:
                        max_ts = run.max_timestamp
                        offset_of_max_ts = run.offset_of_max_timestamp
                else:
                    salvageable += run.n
                if batch_runs and deep:
                    for part in check_run_records(buf, run, file, decode_batch_records):
                        if isinstance(part, int):
                            record_count += part
                        elif isinstance(part, Finding):
                            uncounted += part.code == "codec-unavailable"
                            yield tally(part)
                        else:
                            yield part
                elif batch_runs:
                    record_count += run.records
                    yield run
                elif deep:
                    for header in run.headers():
                        yield header
                        records, findings = decode_batch_records(buf, header, file)
                        for f in findings:
                            yield tally(f)
                        uncounted += _unavailable(findings)
                        record_count += len(records)
                        yield from records
                else:
                    record_count += run.records
                    yield from run.headers()
                pos = run.end
                if evict is not None and pos >= next_evict:
                    evict(pos)
                    next_evict = pos + EVICT_EVERY
                continue
        remaining = end - pos
        if remaining <= 0:
            stop = StopReason.LIMIT if limited else StopReason.END
            break
        if ready is not None:
            ready(min(end, pos + HEADER_SIZE_UP_TO_MAGIC))
        if remaining <= HEADER_SIZE_UP_TO_MAGIC:
            if ready is not None:
                ready(end)
            if limited:
                stop = StopReason.LIMIT
                break
            if valid_end is None:
                valid_end = pos
            if _all_zero(buf, pos, end, evict):
                stop = StopReason.ZERO_FILLED_TAIL
                yield tally(
                    make_finding(
                        "zero-filled-tail",
                        file,
                        f"{remaining} zero bytes at the end of the file",
                        position=pos,
                        size=remaining,
                    )
                )
            else:
                stop = StopReason.PARTIAL_TRAILING_BATCH
                yield tally(
                    make_finding(
                        "partial-trailing-batch",
                        file,
                        f"{remaining} bytes at the end of the file are too few for a batch header",
                        position=pos,
                        size=remaining,
                    )
                )
            break
        entry_offset, length, magic = ENTRY_PREFIX.unpack_from(buf, pos)
        if ready is not None:
            # The entry's own bytes when it fits; past damage, resyncing may read anywhere.
            fits = MIN_BATCH_LENGTH <= length <= remaining - LOG_OVERHEAD
            ready(pos + LOG_OVERHEAD + length if fits else end)
        problem: tuple[str, str] | None = None
        if length < MIN_BATCH_LENGTH:
            if not limited and _all_zero(buf, pos, end, evict):
                if valid_end is None:
                    valid_end = pos
                stop = StopReason.ZERO_FILLED_TAIL
                yield tally(
                    make_finding(
                        "zero-filled-tail",
                        file,
                        f"{remaining} zero bytes from here to the end of the file",
                        position=pos,
                        size=remaining,
                    )
                )
                break
            problem = (
                "invalid-batch-length",
                f"length field {length} is below the minimum record overhead (14)",
            )
        elif length > remaining - LOG_OVERHEAD:
            if limited:
                stop = StopReason.LIMIT
                break
            nxt = find_next_entry(buf, pos + 1, end) if forensic and resync else None
            if nxt is None:
                if valid_end is None:
                    valid_end = pos
                stop = StopReason.PARTIAL_TRAILING_BATCH
                yield tally(
                    make_finding(
                        "partial-trailing-batch",
                        file,
                        f"batch of {length + LOG_OVERHEAD} bytes runs {length + LOG_OVERHEAD - remaining} "
                        f"bytes past the end of the file",
                        position=pos,
                        offset=checked_offset(entry_offset, last_offset, base_offset),
                        size=remaining,
                        declared_size=length + LOG_OVERHEAD,
                    )
                )
                break
            problem = (
                "invalid-batch-length",
                f"length field {length} runs past the end of the file, yet a valid batch starts at {nxt}",
            )
        elif magic > 2 or magic < 0:
            problem = ("unsupported-magic", f"magic byte {magic} is not a known message format (0, 1, 2)")
        elif length < _min_length(magic):
            problem = (
                "invalid-batch-length",
                f"length field {length} is below the minimum {_min_length(magic)} for magic {magic}",
            )
        if problem is not None:
            if ready is not None:
                ready(end)
            if valid_end is None:
                valid_end = pos
            yield tally(make_finding(problem[0], file, problem[1], position=pos))
            if not forensic:
                stop = StopReason.CORRUPT_BATCH
                break
            nxt = find_next_entry(buf, pos + 1, end) if resync else None
            if nxt is None:
                stop = StopReason.FRAMING_LOST
                yield tally(
                    make_finding(
                        "skipped-bytes",
                        file,
                        f"no valid batch found in the {end - pos} bytes from here to the end of the "
                        + (
                            f"range read (position {end}; the rest of the file was not read)"
                            if limited
                            else "file"
                        ),
                        position=pos,
                        offset=None if prev_last is None else prev_last + 1,
                        end_position=end,
                        size=end - pos,
                    )
                )
                break
            next_base = ENTRY_PREFIX.unpack_from(buf, nxt)[0]
            lost = ""
            if prev_last is not None and buf[nxt + 16] == 2 and next_base > prev_last + 1:
                lost = f"; offsets {prev_last + 1}..{next_base - 1} are lost"
            yield tally(
                make_finding(
                    "skipped-bytes",
                    file,
                    f"skipped {nxt - pos} bytes to the next valid batch at position {nxt}{lost}",
                    position=pos,
                    offset=None if prev_last is None else prev_last + 1,
                    end_position=nxt,
                    size=nxt - pos,
                )
            )
            pos = nxt
            continue

        entry_size = length + LOG_OVERHEAD
        header = (
            decode_v2_header(buf, pos, entry_size)
            if magic == 2
            else decode_legacy_header(buf, pos, entry_size)
        )
        batch_count += 1
        legacy_records: tuple[list[Record], list[Finding]] | None = None
        if magic < 2 and header.compression and header.crc_ok:
            # A wrapper's first offset and record count need its inner messages; legacy data is
            # rare and small, so it is always decoded.
            legacy_records = decode_batch_records(buf, header, file)
            if legacy_records[0]:
                header = header._replace(base_offset=legacy_records[0][0].offset)
        if not header.crc_ok:
            if valid_end is None:
                valid_end = pos
            yield tally(
                make_finding(
                    "crc-mismatch",
                    file,
                    f"stored crc {header.crc} differs from computed crc {header.computed_crc}",
                    position=pos,
                    offset=checked_offset(
                        header.base_offset if header.base_offset is not None else header.last_offset,
                        last_offset if valid_end is None or valid_end == pos else None,
                        base_offset,
                    ),
                    stored_crc=header.crc,
                    computed_crc=header.computed_crc,
                )
            )
            if not forensic:
                stop = StopReason.CORRUPT_BATCH
                break
            # Offsets that continue the log are probably intact (the damage is elsewhere in the
            # batch): keep them, so the next batch is not reported as following a gap.
            hb = header.base_offset
            if prev_last is not None and hb == prev_last + 1 and header.last_offset >= hb:
                prev_last = header.last_offset
        else:
            # Most batches follow their predecessor exactly; the full checks run only otherwise.
            hb = header.base_offset
            if (
                hb is None
                or hb != (prev_last if prev_last is not None else -2) + 1
                or header.magic != 2
                or (base_offset is not None and header.last_offset - base_offset > MAX_RELATIVE_OFFSET)
                or not 0 <= (header.count or 0) <= header.last_offset - hb + 1
                or header.partition_leader_epoch < prev_epoch
                or header.compression > 4
            ):
                # Only a scan from the file's start can tell the segment's first batch: a read
                # that starts later (an index lookup, a split) judges only what it read.
                for f in _check_offsets(
                    header, file, base_offset, prev_last, prev_epoch, first_offset is None and start == 0
                ):
                    yield tally(f)
            prev_last = header.last_offset
            if header.partition_leader_epoch >= 0:
                prev_epoch = max(prev_epoch, header.partition_leader_epoch)
            if valid_end is None:
                valid_batch_count += 1
                if first_offset is None:
                    first_offset = (
                        header.base_offset if header.base_offset is not None else header.last_offset
                    )
                    # A wrapper that was not decompressed: its own offset is its last, its first unknown.
                    first_offset_known = header.base_offset is not None or not header.compression
                last_offset = header.last_offset
                if header.max_timestamp > max_ts:
                    max_ts = header.max_timestamp
                    offset_of_max_ts = header.last_offset
            else:
                salvageable += 1
        yield header
        if legacy_records is not None and not deep:
            # The wrapper was decoded anyway, for its offsets: what that shows about its offsets
            # is reported by the shallow scan too (the rest of its records' checks stay --deep).
            for f in legacy_records[1]:
                if f.code in WRAPPER_OFFSET_CODES or f.code == "codec-unavailable":
                    yield tally(f)
        if legacy_records is not None and not deep and _unavailable(legacy_records[1]):
            uncounted += 1  # never counted as 0 records: the wrapper's inner messages are unknown
        if deep:
            records, findings = legacy_records or decode_batch_records(buf, header, file)
            for f in findings:
                yield tally(f)
            uncounted += _unavailable(findings)  # its records were not decoded, so not counted
            record_count += len(records)
            if not batch_runs:
                yield from records
        elif header.count is not None and header.count > 0:
            record_count += header.count
        elif header.magic < 2:
            record_count += len(legacy_records[0]) if legacy_records else 1
        pos += entry_size
        if evict is not None and pos >= next_evict:
            evict(pos)
            next_evict = pos + EVICT_EVERY

    yield ScanSummary(
        file=file,
        size=size,
        start=start,
        valid_bytes=pos if valid_end is None else valid_end,
        scanned_bytes=pos,
        batch_count=batch_count,
        valid_batch_count=valid_batch_count,
        record_count=record_count,
        first_offset=first_offset,
        last_offset=last_offset,
        max_timestamp=max_ts,
        offset_of_max_timestamp=offset_of_max_ts,
        stop_reason=stop,
        salvageable_batches=salvageable,
        findings_info=counts[Severity.INFO],
        findings_warning=counts[Severity.WARNING],
        findings_error=counts[Severity.ERROR],
        deep=deep,
        uncounted_batches=uncounted,
        first_offset_known=first_offset_known,
    )


def _check_offsets(
    h: BatchHeader,
    file: str,
    base_offset: int | None,
    prev_last: int | None,
    prev_epoch: int,
    first: bool,
) -> Iterator[Finding]:
    """Offset, count and codec checks of a checksum-valid entry."""
    pos = h.position
    low = h.base_offset if h.base_offset is not None else h.last_offset
    if base_offset is not None:
        # The last offset too: a v0 wrapper's own offset (its last) is not covered by its checksum and
        # can fall below the segment while its inner, absolute offsets do not; the broker's recovery
        # rejects a batch whose last offset is not a relative offset. (Found by tests/matrix.)
        below = min(low, h.last_offset)
        if below < base_offset:
            yield make_finding(
                "offset-below-base",
                file,
                f"offset {below} is below the segment's base offset {base_offset}",
                position=pos,
                offset=below,
            )
        elif h.last_offset - base_offset > MAX_RELATIVE_OFFSET:
            yield make_finding(
                "offset-overflow",
                file,
                f"last offset {h.last_offset} is more than 2^31-1 above the base offset {base_offset}",
                position=pos,
                offset=h.last_offset,
            )
        elif first and h.base_offset is not None and h.base_offset > base_offset:
            yield make_finding(
                "segment-base-mismatch",
                file,
                f"first batch starts at offset {h.base_offset}, above the file name's {base_offset}",
                position=pos,
                offset=h.base_offset,
            )
    if prev_last is not None:
        if low <= prev_last:
            yield make_finding(
                "offset-regression",
                file,
                f"batch starts at offset {low}, not above the previous batch's last offset {prev_last}",
                position=pos,
                offset=low,
                previous_last_offset=prev_last,
            )
        elif h.base_offset is not None and h.base_offset > prev_last + 1:
            yield make_finding(
                "offset-gap",
                file,
                f"offsets {prev_last + 1}..{h.base_offset - 1} are absent",
                position=pos,
                offset=prev_last + 1,
                gap=h.base_offset - prev_last - 1,
            )
    if h.magic == 2:
        count = h.count or 0
        if count < 0 or (h.base_offset is not None and count > h.last_offset - h.base_offset + 1):
            yield make_finding(
                "record-count-mismatch",
                file,
                f"record count {count} does not fit offsets {h.base_offset}..{h.last_offset}",
                position=pos,
                offset=h.base_offset,
            )
        if 0 <= h.partition_leader_epoch < prev_epoch:
            yield make_finding(
                "leader-epoch-regression",
                file,
                f"partition leader epoch {h.partition_leader_epoch} is below the earlier {prev_epoch}",
                position=pos,
                offset=h.base_offset,
            )
    if h.compression > 4 or (h.magic < 2 and h.compression > 3):
        yield make_finding(
            "unknown-codec",
            file,
            f"compression type id {h.compression} is not defined for magic {h.magic}",
            position=pos,
            offset=low,
        )


# Findings of a legacy wrapper's offsets, which every scan reports (the wrapper is always decoded).
WRAPPER_OFFSET_CODES = frozenset({"wrapper-offset-mismatch", "inner-message-too-short"})


def _whole_record_count(data: bytes, h: BatchHeader) -> int | None:
    """How many records `data` holds when they decode cleanly to its very end, whatever the header's
    count says; None when they do not (a record is damaged, or garbage follows them)."""
    # Every record takes at least 7 bytes, so asking for more than len(data) reads up to the end.
    whole, error = decode_v2_records(data, h._replace(count=len(data) + 1))
    if isinstance(error, TruncatedError) and str(error).startswith(
        "Incorrect declared batch size, premature EOF"
    ):
        return len(whole)
    return None


def _unavailable(findings: list[Finding]) -> bool:
    return any(f.code == "codec-unavailable" for f in findings)


def decode_batch_records(buf: Buffer, h: BatchHeader, file: str) -> tuple[list[Record], list[Finding]]:
    """Decompress and decode one entry's records; damage becomes findings."""
    pos = h.position
    findings: list[Finding] = []
    offset = h.base_offset if h.base_offset is not None else h.last_offset
    if h.compression > 4 or (h.magic < 2 and h.compression > 3):
        # An undefined codec for the format (zstd in v0/v1 included) is reported once, as
        # unknown-codec by the header checks; there is nothing to decompress.
        return [], findings
    data = b""
    try:
        if h.magic == 2:
            payload = buf[pos + V2_HEADER_SIZE : pos + h.size]
            data = decompress(h.compression, payload, magic=2) if h.compression else bytes(payload)
            fast = fast_records.decode_v2(data, h) if h.crc_ok else None
            if fast is not None:
                # The compiled path decoded every record cleanly and, when it says so, checked what
                # the loops below check: nothing to report for a data batch.
                records, clean = fast
                if clean and not h.is_control:
                    return records, findings
                error = None
            else:
                records, error = decode_v2_records(data, h)
        else:
            entry = bytes(buf[pos : pos + h.size])
            inner = None
            if h.compression:
                value = decode_legacy_message(entry, 0)[6]
                if value is None:
                    raise CodecError("compressed wrapper message has a null value")
                inner = decompress(h.compression, value, magic=h.magic)
            records, error = decode_legacy_records(entry, h, inner)
    except CodecUnavailableError as exc:
        if h.magic == 2:
            what = f"its {h.count} records (offsets {h.base_offset}..{h.last_offset}, as its header says) were not checked"
        else:
            what = (
                f"its inner messages were not read: the last offset is {h.last_offset}, the first is unknown"
            )
        message = f"{exc}; {what}"
        findings.append(make_finding("codec-unavailable", file, message, position=pos, offset=offset))
        return [], findings
    except CodecError as exc:
        findings.append(make_finding("decompression-failed", file, str(exc), position=pos, offset=offset))
        return [], findings
    except MemoryError:
        # Millions of tiny records in one batch (a few KiB compressed) outgrow a memory limit; the
        # batch is reported, not the process killed. (Found by tests/test_memory_bound.py.)
        message = f"the {h.count} records the batch claims do not fit in the memory available"
        findings.append(make_finding("record-decode-failed", file, message, position=pos, offset=offset))
        return [], findings
    except Exception as exc:  # a DecodeError of the wrapper itself
        findings.append(make_finding("record-decode-failed", file, str(exc), position=pos, offset=offset))
        return [], findings
    held = _whole_record_count(data, h) if error is not None and h.magic == 2 else None
    if held is not None and held != h.count:
        # The records decode cleanly to the end of the batch; only their number differs from the
        # header's (Kafka: "Incorrect declared batch size"). A count outside the offset range was
        # already reported by the header checks of a checksum-valid batch.
        count = h.count or 0
        if not (
            h.crc_ok and h.base_offset is not None and not 0 <= count <= h.last_offset - h.base_offset + 1
        ):
            findings.append(
                make_finding(
                    "record-count-mismatch",
                    file,
                    f"header record count {count} differs from the {held} records the batch holds",
                    position=pos,
                    offset=h.base_offset,
                )
            )
    elif isinstance(error, WrapperOffsetError):
        findings.append(
            make_finding(
                "wrapper-offset-mismatch",
                file,
                str(error),
                position=pos,
                offset=error.wrapper_offset,
                last_inner_offset=error.last_inner_offset,
            )
        )
    elif isinstance(error, MessageTooShortError):
        findings.append(
            make_finding(
                "inner-message-too-short",
                file,
                f"inside the wrapper, {error}",
                position=pos,
                offset=error.offset,
            )
        )
    elif error is not None:
        at = records[-1].offset + 1 if records else offset
        findings.append(
            make_finding(
                "record-decode-failed",
                file,
                f"record {len(records)} of the batch does not decode: {error}",
                position=pos,
                offset=at,
            )
        )
    # A wrapper whose offset is wrong was reported as such; its records are where they say they are.
    last = h.last_offset
    if records and isinstance(error, WrapperOffsetError):
        last = max(last, records[-1].offset)
    prev = None
    for r in records:
        if (h.base_offset is not None and not h.base_offset <= r.offset <= last) or (
            prev is not None and r.offset <= prev
        ):
            findings.append(
                make_finding(
                    "record-offset-invalid",
                    file,
                    f"record offset {r.offset} is outside {h.base_offset}..{h.last_offset} or out of order",
                    position=pos,
                    offset=r.offset,
                )
            )
            break
        prev = r.offset
    if h.magic < 2:
        for r in records:
            if r.crc_ok is False:
                findings.append(
                    make_finding(
                        "crc-mismatch",
                        file,
                        f"inner message at offset {r.offset} has a wrong crc {r.crc}",
                        position=pos,
                        offset=r.offset,
                    )
                )
        return records, findings
    if (
        error is None
        and records
        and h.timestamp_type == TimestampType.CREATE_TIME
        and not h.is_control
        and max(r.timestamp for r in records) != h.max_timestamp
    ):
        findings.append(
            make_finding(
                "max-timestamp-mismatch",
                file,
                f"header maxTimestamp {h.max_timestamp} differs from the records' largest "
                f"{max(r.timestamp for r in records)}",
                position=pos,
                offset=h.base_offset,
            )
        )
    if h.is_control:
        for r in records:
            try:
                key = decode_control_key(r.key)
                if key.type in (ControlType.ABORT, ControlType.COMMIT):
                    decode_end_txn_marker(r.value)
            except Exception as exc:
                findings.append(
                    make_finding(
                        "record-decode-failed",
                        file,
                        f"control record at offset {r.offset} is invalid: {exc}",
                        position=pos,
                        offset=r.offset,
                    )
                )
    return records, findings
