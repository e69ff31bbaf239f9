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

from collections.abc import Callable, Iterator
from typing import Literal, overload

from kdump.findings import Finding, Severity, make_finding
from kdump.formats import fast_walk
from kdump.formats.batch import (
    ENTRY_PREFIX,
    decode_legacy_header,
    decode_v2_header,
)
from kdump.formats.constants import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    MAX_RELATIVE_OFFSET,
    MIN_BATCH_LENGTH,
)
from kdump.formats.records import Record
from kdump.scan.batch_checks import (
    WRAPPER_OFFSET_CODES,
    check_offsets,
    checked_offset,
    codec_unavailable,
    decode_batch_records,
)
from kdump.scan.events import Event, ScanMode, ScanSummary, StopReason
from kdump.scan.pages import (
    EVICT_EVERY,
    LARGE_BATCH,
    READ_WINDOW,
    READY_AHEAD,
    READY_FIRST,
    Buffer,
    MapEvicter,
    all_zero,
    page_evicter,
)
from kdump.scan.resync import find_next_entry, min_length
from kdump.scan.runs import check_run_records
from kdump.scan.source import mapped_fd


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
    evict = page_evicter(buf)
    next_evict = start + EVICT_EVERY
    # A mapped file's pages are handed back by the compiled walk itself, those before each window
    # while it walks the window (on its helper thread where it has one): not on this thread. The
    # walk reads a mapped local file's large batches through its descriptor (`mapped_fd`), not its
    # pages, in larger windows; its small ones through the mapping (decided run by run).
    release, mapped = (evict, mapped_fd(buf)) if isinstance(evict, MapEvicter) else (None, -1)
    large = True  # the last run's batches averaged LARGE_BATCH or more (none yet)

    def tally(f: Finding) -> Finding:
        counts[f.severity] += 1
        return f

    walk = fast_walk.walk if fast_walk.compiled is not None else None
    ready_ahead = READY_FIRST
    # Where the first batch starts at the file name's offset, the walk takes it too, as following
    # offset base - 1 (`fast_walk.walk_prev_of_first`): else it is read here, `prev_last` unset.
    first_prev = fast_walk.walk_prev_of_first(buf, end, base_offset) if start == 0 and ready is None else None
    while True:
        if walk is not None and (prev_last is not None or first_prev is not None) and pos < end:
            # The common case in bulk: runs of clean v2 batches, framed and checked in C.
            limit = end
            if ready is not None:
                # Ask ahead in growing steps: a scan its consumer stops early (a seek) fetches
                # little more than it read.
                limit = min(end, pos + ready_ahead)
                ready_ahead = min(ready_ahead * 2, READY_AHEAD)
                ready(limit)
            release_from = -1
            if release is not None and pos - release.done >= EVICT_EVERY:
                release_from = release.done
            walk_prev = prev_last if prev_last is not None else first_prev
            assert walk_prev is not None
            fd = mapped if large else -1
            window = READ_WINDOW if fd >= 0 else EVICT_EVERY
            walked = walk(
                buf, pos, end, limit, pos + window, walk_prev, prev_epoch, base_offset, release_from, fd
            )
            first_prev = None
            if walked is not None:
                if release is not None and release_from >= 0:
                    release.passed(pos)
                run, (prev_last, prev_epoch) = walked
                large = run.end - run.start >= LARGE_BATCH * run.n
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
                        uncounted += codec_unavailable(findings)
                        record_count += len(records)
                        yield from records
                else:
                    record_count += run.records
                    yield from run.headers()
                pos = run.end
                if evict is not None and pos >= next_evict:
                    if release is None:  # else the next walk releases them
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
            if all_zero(buf, pos, end, evict):
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
            if not limited and all_zero(buf, pos, end, evict):
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
        elif length < min_length(magic):
            problem = (
                "invalid-batch-length",
                f"length field {length} is below the minimum {min_length(magic)} for magic {magic}",
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
                for f in check_offsets(
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
        if legacy_records is not None and not deep and codec_unavailable(legacy_records[1]):
            uncounted += 1  # never counted as 0 records: the wrapper's inner messages are unknown
        if deep:
            records, findings = legacy_records or decode_batch_records(buf, header, file)
            for f in findings:
                yield tally(f)
            uncounted += codec_unavailable(findings)  # its records were not decoded, so not counted
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
