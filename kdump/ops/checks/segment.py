"""Checking one segment: its log, offset index, time index, and what partition checks need of it.

`check_segment` is the unit of parallel work for `verify` (and Spark's fleet verify): it takes a
picklable `Segment`, reads only that segment's files, and returns a picklable `SegmentResult`.
"""

from __future__ import annotations

import array
import bisect
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kdump.errors import DecodeError, KdumpError
from kdump.findings import Finding, make_finding
from kdump.formats import fast_walk
from kdump.formats.batch import BatchHeader
from kdump.formats.constants import TRANSACTIONAL_MASK, ControlType
from kdump.formats.control import decode_control_key
from kdump.formats.fast_walk import BatchRun
from kdump.formats.filenames import parse_segment_file_name
from kdump.model.byte_source import open_scan
from kdump.model.segment import Segment
from kdump.scan.batch_checks import decode_batch_records
from kdump.scan.events import ScanMode, ScanSummary, StopReason
from kdump.scan.log_scanner import scan_log
from kdump.scan.source import file_change, open_buffer, read_small_file

if TYPE_CHECKING:
    # The index decoders and checks load where the compiled check of an index is not sure (or a
    # .txnindex exists): a clean segment's indexes are judged without them.
    from kdump.formats.txn_index import TxnIndexContents
    from kdump.scan.index_checks import BatchSpan, BatchTable

# Kinds of transaction events collected for the partition-level .txnindex check.
TXN_DATA, TXN_COMMIT, TXN_ABORT = "data", "commit", "abort"


@dataclass(frozen=True, slots=True)
class SegmentResult:
    """What checking one segment found, and the facts partition-level checks need."""

    segment: Segment
    summary: ScanSummary | None
    findings: tuple[Finding, ...]
    # (epoch, first offset) each time the partition leader epoch rises within the segment
    epochs: tuple[tuple[int, int], ...] = ()
    # (kind, producer id, offset): first offsets of transactional batches, and markers
    txn_events: tuple[tuple[str, int, int], ...] = ()
    txn_index: TxnIndexContents | None = None
    # The valid batches' (position, base offset, last offset, max timestamp) as columns: int64
    # arrays (lists where a value does not fit one), when asked for (`keep_spans`).
    columns: tuple[Sequence[int], ...] = field(default=(), repr=False)

    @property
    def spans(self) -> tuple[BatchSpan, ...]:
        """The valid batches, one span each (from `columns`)."""
        from kdump.scan.index_checks import BatchSpan

        return tuple(BatchSpan(*row) for row in zip(*self.columns, strict=True)) if self.columns else ()


def check_segment(
    segment: Segment,
    *,
    deep: bool = False,
    max_bytes: int | None = None,
    keep_spans: bool = False,
    check_indexes: bool = True,
) -> SegmentResult:
    """Scan a segment's log and check its indexes against it. Never raises for bad bytes."""
    findings: list[Finding] = []
    assert segment.log is not None
    log_label = str(segment.log)
    # Columns of the checksum-valid batches (no tuple per batch: this runs per batch).
    columns = _Batches()
    epochs: list[tuple[int, int]] = []
    txn_events: list[tuple[str, int, int]] = []
    open_txn: set[int] = set()
    summary: ScanSummary | None = None
    last_epoch = -1
    try:
        # The whole file is mapped and the scan limited: a cut prefix must not look like a torn tail.
        # One forward scan: a stored log is fetched as it goes, in constant memory.
        with open_scan(segment.log, max_bytes, probed=segment.probed) as (buf, ready):
            for ev in scan_log(
                buf,
                file=log_label,
                base_offset=segment.base_offset,
                deep=deep,
                mode=ScanMode.FORENSIC,
                max_bytes=max_bytes,
                ready=ready,
                batch_runs=True,
            ):
                if isinstance(ev, BatchRun):
                    # A run of clean v2 batches, as columns: only transactional ones need a look.
                    columns.add_run(ev)
                    # The epochs never fall within a run: only its last one can be new.
                    if ev.value(fast_walk.LEADER_EPOCH, ev.n - 1) > last_epoch:
                        run_epochs = ev.column(fast_walk.LEADER_EPOCH)
                        run_bases = ev.column(fast_walk.BASE_OFFSET)
                        for epoch, base in zip(run_epochs, run_bases, strict=True):
                            if epoch > last_epoch:
                                last_epoch = epoch
                                epochs.append((epoch, base))
                    if ev.attributes_or & TRANSACTIONAL_MASK:
                        for h in ev.headers():
                            if h.is_transactional:
                                _txn_event(buf, h, log_label, txn_events, open_txn)
                elif isinstance(ev, BatchHeader):
                    if not ev.crc_ok:
                        continue
                    base = ev.base_offset if ev.base_offset is not None else ev.last_offset
                    columns.add(ev.position, base, ev.last_offset, ev.max_timestamp)
                    if ev.partition_leader_epoch > last_epoch:
                        last_epoch = ev.partition_leader_epoch
                        epochs.append((last_epoch, base))
                    if ev.is_transactional:
                        _txn_event(buf, ev, log_label, txn_events, open_txn)
                elif isinstance(ev, Finding):
                    findings.append(ev)
                elif isinstance(ev, ScanSummary):
                    summary = ev
            # A file cut, replaced or appended to under the scan (a live broker): said, not a signal.
            change = file_change(buf)
            if change is not None:
                findings.append(make_finding(change.code, log_label, change.message))
    except KdumpError as exc:
        findings.append(make_finding("unreadable-file", log_label, str(exc)))
        return SegmentResult(segment, None, tuple(findings))
    assert summary is not None
    # Only batches inside the valid prefix (what recovery keeps) count for the indexes: those before
    # the recovery point (positions only grow, and no batch after it starts before it).
    batches = columns.cut(summary.valid_bytes)
    if check_indexes and summary.stop_reason != StopReason.LIMIT and _named_as_segment(segment):
        # Index entries past a --max-bytes prefix cannot be judged; only whole logs are checked.
        # A log not named <20 digits>.log has no index files the broker would pair with it.
        findings.extend(_check_indexes(segment, batches, summary))
    txn_index = None
    if segment.txnindex is not None:
        from kdump.formats.txn_index import decode_txn_index

        try:
            txn_index = decode_txn_index(read_small_file(segment.txnindex))
        except (KdumpError, DecodeError) as exc:
            findings.append(make_finding("unreadable-file", str(segment.txnindex), str(exc)))
    return SegmentResult(
        segment,
        summary,
        tuple(findings),
        tuple(epochs),
        tuple(txn_events),
        txn_index,
        batches.columns if keep_spans else (),
    )


def _txn_event(
    buf: memoryview, h: BatchHeader, file: str, txn_events: list[tuple[str, int, int]], open_txn: set[int]
) -> None:
    """Note a transactional batch: a marker's kind, or the first data batch of a transaction."""
    if h.is_control:
        kind = _marker_kind(buf, h, file)
        if kind is not None:
            txn_events.append((kind, h.producer_id, h.base_offset or 0))
            open_txn.discard(h.producer_id)
    elif h.producer_id not in open_txn:
        open_txn.add(h.producer_id)
        base = h.base_offset if h.base_offset is not None else h.last_offset
        txn_events.append((TXN_DATA, h.producer_id, base))


def _named_as_segment(segment: Segment) -> bool:
    return segment.log is not None and parse_segment_file_name(segment.log.name) is not None


def _marker_kind(buf: memoryview, h: BatchHeader, file: str) -> str | None:
    records, _ = decode_batch_records(buf, h, file)
    for r in records:
        try:
            key = decode_control_key(r.key)
        except DecodeError:
            return None
        if key.type == ControlType.ABORT:
            return TXN_ABORT
        if key.type == ControlType.COMMIT:
            return TXN_COMMIT
    return None


class _Batches:
    """Batches as columns (position, base offset, last offset, max timestamp): int64 arrays, or
    lists once a value does not fit one (damage the reference reports); the searchable table is
    made when asked."""

    def __init__(self) -> None:
        self.columns: tuple[array.array[int], ...] | tuple[list[int], ...] = tuple(
            array.array("q") for _ in range(4)
        )

    def add(self, *values: int) -> None:
        try:
            for col, v in zip(self.columns, values, strict=True):
                col.append(v)
        except OverflowError:
            n = len(self.columns[-1])
            self.columns = tuple(
                c[:n].tolist() if isinstance(c, array.array) else c[:n] for c in self.columns
            )
            self.add(*values)

    def add_run(self, run: BatchRun) -> None:
        size = run.n * 8
        with memoryview(run.columns) as raw:
            for col, k in zip(self.columns, _RUN_COLUMNS, strict=True):
                part = raw[k * size : (k + 1) * size]
                if isinstance(col, array.array):
                    col.frombytes(part)
                else:
                    col += part.cast("q").tolist()

    def cut(self, valid_bytes: int) -> _Batches:
        """Keep the batches that start before `valid_bytes`."""
        keep = bisect.bisect_left(self.columns[0], valid_bytes)
        for col in self.columns:
            del col[keep:]
        return self

    @functools.cached_property
    def table(self) -> BatchTable:
        from kdump.scan.index_checks import BatchTable

        lists = [c.tolist() if isinstance(c, array.array) else c for c in self.columns]
        return BatchTable.from_columns(*lists)

    @property
    def arrays(self) -> tuple[array.array[int], ...] | None:
        cols = self.columns
        # The four are arrays or lists together (`add` turns them all to lists at once).
        return cols if isinstance(cols[0], array.array) else None


_RUN_COLUMNS = (fast_walk.POSITION, fast_walk.BASE_OFFSET, fast_walk.LAST_OFFSET, fast_walk.MAX_TIMESTAMP)


def _check_indexes(segment: Segment, batches: _Batches, summary: ScanSummary) -> list[Finding]:
    out: list[Finding] = []
    assert segment.log is not None
    log = segment.log
    # An empty segment without its indexes is a running broker's active segment (2.x creates the
    # .index lazily): at start the broker recovers it, rebuilding empty indexes, with nothing to lose
    # or misread (from 2.x to 4.4, `LogSegment.sanityCheck` answers a missing .index that way).
    empty = summary.size == 0
    if segment.index is None and empty:
        pass
    elif segment.index is None:
        out.append(
            make_finding(
                "index-missing",
                str(log.with_suffix(".index")),
                f"segment {segment.name} has no offset index",
            )
        )
    else:
        out.extend(
            _index_findings(
                segment.index,
                segment.base_offset,
                batches,
                summary.valid_bytes,
                "index",
                summary.size,
                segment.probed,
            )
        )
    if segment.timeindex is None and empty:
        pass
    elif segment.timeindex is None:
        out.append(
            make_finding(
                "time-index-missing",
                str(log.with_suffix(".timeindex")),
                f"segment {segment.name} has no time index",
            )
        )
    else:
        out.extend(
            _index_findings(
                segment.timeindex,
                segment.base_offset,
                batches,
                summary.valid_bytes,
                "timeindex",
                summary.size,
                segment.probed,
            )
        )
    return out


def _index_findings(
    path: Path, base: int, batches: _Batches, valid_bytes: int, kind: str, log_size: int, probed: bool
) -> list[Finding]:
    label = str(path)
    try:
        with open_buffer(path, probed=probed, copy_small=True) as buf:
            found = _index_checks(buf, base, batches, valid_bytes, kind, log_size, label)
            change = file_change(buf)
            if change is not None:
                found.append(make_finding(change.code, label, change.message))
            return found
    except KdumpError as exc:
        return [make_finding("unreadable-file", label, str(exc))]


def _index_checks(
    buf: memoryview, base: int, batches: _Batches, valid_bytes: int, kind: str, log_size: int, label: str
) -> list[Finding]:
    """The checks of one index file's bytes (see `_index_findings`)."""
    walk = fast_walk.compiled
    arrays = batches.arrays if walk is not None else None
    # The compiled check says yes only when the checks below would have nothing to say.
    if (
        walk is not None
        and arrays is not None
        and 0 <= base < 1 << 63
        and walk.index_agrees(0 if kind == "index" else 1, buf, base, *arrays, valid_bytes)
    ):
        return []
    from kdump.formats.offset_index import decode_offset_index
    from kdump.formats.time_index import decode_time_index
    from kdump.scan.index_checks import check_offset_index, check_time_index

    table = batches.table
    if kind == "index":
        return list(check_offset_index(decode_offset_index(buf, base), table, valid_bytes, label, log_size))
    damaged = log_size > valid_bytes
    return list(check_time_index(decode_time_index(buf, base), table, label, damaged))
