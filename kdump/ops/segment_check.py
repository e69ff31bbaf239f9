"""Checking one segment: its log, offset index, time index, and what partition checks need of it.

`check_segment` is the unit of parallel work for `verify` (and Spark's fleet verify): it takes a
picklable `Segment`, reads only that segment's files, and returns a picklable `SegmentResult`.
"""

from __future__ import annotations

import bisect
import operator
from dataclasses import dataclass, field
from pathlib import Path

from kdump.errors import DecodeError, KdumpError
from kdump.findings import Finding, make_finding
from kdump.formats import fast_walk
from kdump.formats.batch import BatchHeader
from kdump.formats.constants import TRANSACTIONAL_MASK, ControlType
from kdump.formats.control import decode_control_key
from kdump.formats.fast_walk import BatchRun
from kdump.formats.filenames import parse_segment_file_name
from kdump.formats.offset_index import decode_offset_index
from kdump.formats.time_index import decode_time_index
from kdump.formats.txn_index import TxnIndexContents, decode_txn_index
from kdump.model.byte_source import open_scan
from kdump.model.segment import Segment
from kdump.scan.events import ScanMode, ScanSummary, StopReason
from kdump.scan.index_checks import BatchSpan, BatchTable, check_offset_index, check_time_index
from kdump.scan.log_scanner import decode_batch_records, scan_log
from kdump.scan.source import open_buffer, read_small_file

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
    spans: tuple[BatchSpan, ...] = field(default=(), repr=False)


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
    # Columns of the checksum-valid batches (lists, not a tuple per batch: this runs per batch).
    positions: list[int] = []
    bases: list[int] = []
    lasts: list[int] = []
    max_timestamps: list[int] = []
    ends: list[int] = []
    epochs: list[tuple[int, int]] = []
    txn_events: list[tuple[str, int, int]] = []
    open_txn: set[int] = set()
    summary: ScanSummary | None = None
    last_epoch = -1
    try:
        # The whole file is mapped and the scan limited: a cut prefix must not look like a torn tail.
        # One forward scan: a stored log is fetched as it goes, in constant memory.
        with open_scan(segment.log) as (buf, ready):
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
                    run_positions = ev.column(fast_walk.POSITION)
                    run_bases = ev.column(fast_walk.BASE_OFFSET)
                    positions += run_positions
                    bases += run_bases
                    lasts += ev.column(fast_walk.LAST_OFFSET)
                    max_timestamps += ev.column(fast_walk.MAX_TIMESTAMP)
                    ends += map(operator.add, run_positions, ev.column(fast_walk.SIZE))
                    run_epochs = ev.column(fast_walk.LEADER_EPOCH)
                    if run_epochs[-1] > last_epoch:
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
                    positions.append(ev.position)
                    bases.append(base)
                    lasts.append(ev.last_offset)
                    max_timestamps.append(ev.max_timestamp)
                    ends.append(ev.position + ev.size)
                    if ev.partition_leader_epoch > last_epoch:
                        last_epoch = ev.partition_leader_epoch
                        epochs.append((last_epoch, base))
                    if ev.is_transactional:
                        _txn_event(buf, ev, log_label, txn_events, open_txn)
                elif isinstance(ev, Finding):
                    findings.append(ev)
                elif isinstance(ev, ScanSummary):
                    summary = ev
    except KdumpError as exc:
        findings.append(make_finding("unreadable-file", log_label, str(exc)))
        return SegmentResult(segment, None, tuple(findings))
    assert summary is not None
    # Only batches inside the valid prefix (what recovery keeps) count for the indexes.
    keep = bisect.bisect_right(ends, summary.valid_bytes) if ends == sorted(ends) else None
    if keep is None:
        kept = [i for i, e in enumerate(ends) if e <= summary.valid_bytes]
        positions, bases, lasts, max_timestamps = (
            [col[i] for i in kept] for col in (positions, bases, lasts, max_timestamps)
        )
    else:
        del positions[keep:], bases[keep:], lasts[keep:], max_timestamps[keep:]
    table = BatchTable.from_columns(positions, bases, lasts, max_timestamps)
    if check_indexes and summary.stop_reason != StopReason.LIMIT and _named_as_segment(segment):
        # Index entries past a --max-bytes prefix cannot be judged; only whole logs are checked.
        # A log not named <20 digits>.log has no index files the broker would pair with it.
        findings.extend(_check_indexes(segment, table, summary))
    txn_index = None
    if segment.txnindex is not None:
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
        tuple(table.spans) if keep_spans else (),
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


def _check_indexes(segment: Segment, table: BatchTable, summary: ScanSummary) -> list[Finding]:
    out: list[Finding] = []
    assert segment.log is not None
    log = segment.log
    if segment.index is None:
        out.append(
            make_finding(
                "index-missing",
                str(log.with_suffix(".index")),
                f"segment {segment.name} has no offset index",
            )
        )
    else:
        out.extend(_index_findings(segment.index, segment.base_offset, table, summary.valid_bytes, "index"))
    if segment.timeindex is None:
        out.append(
            make_finding(
                "time-index-missing",
                str(log.with_suffix(".timeindex")),
                f"segment {segment.name} has no time index",
            )
        )
    else:
        out.extend(
            _index_findings(segment.timeindex, segment.base_offset, table, summary.valid_bytes, "timeindex")
        )
    return out


def _index_findings(path: Path, base: int, table: BatchTable, valid_bytes: int, kind: str) -> list[Finding]:
    label = str(path)
    try:
        with open_buffer(path) as buf:
            if kind == "index":
                return list(check_offset_index(decode_offset_index(buf, base), table, valid_bytes, label))
            return list(check_time_index(decode_time_index(buf, base), table, label))
    except KdumpError as exc:
        return [make_finding("unreadable-file", label, str(exc))]
