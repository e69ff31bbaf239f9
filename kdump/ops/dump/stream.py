"""`dump`: stream what is in segments, indexes and state files, as events.

The stream for each file is a `FileStart`, then the scanner's events (batches, records, findings,
summary) for logs, or `Entry` events for other files. Nothing is buffered beyond one batch, so a
1 GiB segment streams.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import ExitStack, closing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kdump.findings import Finding, Severity, make_finding
from kdump.formats.batch import BatchHeader
from kdump.formats.records import Record
from kdump.model.byte_source import ByteSource, fetch_ahead, open_local
from kdump.model.entries import file_kind, segment_base_offset
from kdump.model.log_dir import Target
from kdump.model.partition import PartitionDir
from kdump.model.segment import Segment
from kdump.model.segment_view import SegmentView
from kdump.ops.dump.files import Entry, FileStart
from kdump.ops.dump.internal import InternalRecord, attach_decoded, choose_decoder
from kdump.ops.dump.state_files import dump_state_file
from kdump.ops.tiered.partitions import LogStartCheckpoints, TieredContext, tiered_facts
from kdump.scan.batch_checks import decode_batch_records
from kdump.scan.events import Event, ScanSummary, Shown
from kdump.scan.log_scanner import scan_log
from kdump.scan.source import open_buffer

if TYPE_CHECKING:
    from kdump.ops.dump.payload_events import PayloadOptions

DumpEvent = Event | FileStart | Entry | InternalRecord

# A chunk of a dump counts its findings by severity, and under this key those of batches whose codec's
# library is missing here (their records were not decompressed, so not counted).
UNCHECKED = -1


def decode_expanded(
    buf: bytes | bytearray | memoryview, h: BatchHeader, label: str
) -> tuple[list[Record], list[Finding]]:
    """A batch's records for a worker expanding a batch-level stream, with the findings that stream does
    not already hold: the batch-level scan reports a legacy wrapper whose codec is missing itself."""
    records, findings = decode_batch_records(buf, h, label)
    if h.magic < 2:
        findings = [f for f in findings if f.code != "codec-unavailable"]
    return records, findings


def count_finding(counts: dict[int, int], f: Finding, step: int = 1) -> None:
    """Count a finding (or with step -1, take one back) by severity, and under UNCHECKED."""
    counts[f.severity] = counts.get(f.severity, 0) + step
    if f.code == "codec-unavailable":
        counts[UNCHECKED] = counts.get(UNCHECKED, 0) + step


@dataclass(frozen=True, slots=True)
class DumpFilter:
    """Which batches and records to show. Unset bounds are open; bounds are inclusive.

    A batch passes when its offsets overlap the offset range, its max timestamp is not below
    `from_time` and it matches the producer, control and transactional criteria. With records, a
    batch is shown when at least one of its records passes (offset, timestamp and key).
    """

    from_offset: int | None = None
    to_offset: int | None = None
    from_time: int | None = None
    to_time: int | None = None
    key: bytes | None = None
    producer_id: int | None = None
    control_only: bool = False
    transactional_only: bool = False

    @property
    def active(self) -> bool:
        """Whether any criterion is set."""
        return self != DumpFilter()

    def batch_passes(self, h: BatchHeader) -> bool:
        """Whether a batch header can hold records that pass."""
        low = h.base_offset if h.base_offset is not None else h.last_offset
        if self.from_offset is not None and h.last_offset < self.from_offset:
            return False
        if self.to_offset is not None and low > self.to_offset:
            return False
        if self.from_time is not None and h.max_timestamp < self.from_time:
            return False
        if self.producer_id is not None and h.producer_id != self.producer_id:
            return False
        if self.control_only and not h.is_control:
            return False
        return not (self.transactional_only and not h.is_transactional)

    def batch_passes_shallow(self, h: BatchHeader) -> bool:
        """Without records, the time upper bound is judged on the batch's max timestamp."""
        if self.to_time is not None and h.max_timestamp > self.to_time and h.base_timestamp > self.to_time:
            return False
        return self.batch_passes(h)

    def record_passes(self, r: Record) -> bool:
        """Whether a record passes the record-level criteria."""
        if self.from_offset is not None and r.offset < self.from_offset:
            return False
        if self.to_offset is not None and r.offset > self.to_offset:
            return False
        if self.from_time is not None and r.timestamp < self.from_time:
            return False
        if self.to_time is not None and r.timestamp > self.to_time:
            return False
        return not (self.key is not None and r.key != self.key)


@dataclass(frozen=True, slots=True)
class DumpOptions:
    """How to dump."""

    records: bool = False
    filter: DumpFilter = DumpFilter()
    max_bytes: int | None = None
    decode: str = "auto"  # auto | offsets | transactions | metadata | none
    # Keys and values decoded (`--key-type`, `--value-type`, schema sources; `--where`), or None.
    payloads: PayloadOptions | None = None


@dataclass(frozen=True, slots=True)
class DumpItem:
    """One file a dump will show: a log (with its base offset and offset index) or another file."""

    path: Path
    label: str
    is_log: bool
    base_offset: int | None = None
    index: Path | None = None
    decoder: str | None = None
    timeindex: Path | None = None
    # The next segment's base offset (None: the last segment, or a file given alone): an active
    # segment's index may end in preallocated zero slots, a closed one's may not.
    next_base_offset: int | None = None
    # A line about the partition itself, shown before its segments (a tiered partition's log starts).
    note: Entry | None = None


def dump_items(targets: Iterable[Target], options: DumpOptions) -> Iterator[DumpItem]:
    """The files a dump of these targets shows, in order (segments outside an offset range skipped),
    each tiered partition's log starts before its segments."""
    tiered = TieredContext()
    starts = LogStartCheckpoints()
    for target in targets:
        if target.kind == "file":
            path = target.path
            kind = file_kind(path)
            base, named = (segment_base_offset(path), True) if kind == "log" else (None, False)
            if kind is None and target.segments:
                # A name that says nothing: read as verify reads it, a segment at its first batch's offset.
                kind, base = "log", target.segments[0].base_offset
            if kind in ("log", "checkpoint"):
                index = timeindex = None
                if named and path.name.endswith(".log"):
                    index, timeindex = _sibling(path, ".index"), _sibling(path, ".timeindex")
                decoder = choose_decoder(path, options.decode)
                yield DumpItem(path, target.given, True, base, index, decoder, timeindex)
            else:
                yield DumpItem(path, target.given, False)
            continue
        for part in target.partitions():
            note = _log_start_note(part, target, tiered, starts)
            if note is not None:
                yield DumpItem(part.path, str(part.path), False, note=note)
            segments = part.segments
            for i, seg in enumerate(segments):
                nxt = segments[i + 1].base_offset if i + 1 < len(segments) else None
                if _segment_outside(seg, nxt, options.filter):
                    continue
                assert seg.log is not None
                decoder = choose_decoder(seg.log, options.decode)
                yield DumpItem(
                    seg.log, str(seg.log), True, seg.base_offset, seg.index, decoder, seg.timeindex, nxt
                )


def _log_start_note(
    part: PartitionDir, target: Target, ctx: TieredContext, starts: LogStartCheckpoints
) -> Entry | None:
    """`log-start` for a tiered partition whose log starts below its first local segment."""
    facts = tiered_facts(part, target.log_dir_path, ctx, starts)
    if (
        facts is None
        or not facts.tiered
        or facts.log_start_offset is None
        or facts.local_log_start_offset is None
    ):
        return None
    low, local = facts.log_start_offset, facts.local_log_start_offset
    return Entry(
        str(part.path),
        "log-start",
        {
            "partition": part.name,
            "log_start_offset": low,
            "local_log_start_offset": local,
            "in_remote_storage": f"{low}..{local - 1}" if low < local else "none",
        },
    )


def _sibling(path: Path, suffix: str) -> Path | None:
    candidate = path.with_suffix(suffix)
    return candidate if candidate.is_file() else None


def dump_targets(targets: Iterable[Target], options: DumpOptions) -> Iterator[DumpEvent]:
    """Dump every file of every target, in order."""
    for item in dump_items(targets, options):
        yield from dump_item(item, options)


def dump_item(item: DumpItem, options: DumpOptions) -> Iterator[DumpEvent]:
    """Dump one file."""
    if item.note is not None:
        yield item.note
    elif item.is_log:
        events = dump_log(item.path, options, base_offset=item.base_offset, label=item.label, item=item)
        yield from attach_decoded(events, item.decoder if options.records else None, item.label)
    else:
        yield from dump_state_file(item.path, file_kind(item.path), item.label)


def _segment_outside(seg: Segment, next_base: int | None, f: DumpFilter) -> bool:
    """A segment entirely outside the offset range (judged from file names only)."""
    if f.to_offset is not None and seg.base_offset > f.to_offset:
        return True
    return f.from_offset is not None and next_base is not None and next_base <= f.from_offset


def dump_file(path: Path, options: DumpOptions, label: str | None = None) -> Iterator[DumpEvent]:
    """Dump one file of any kind kdump knows."""
    from kdump.model.log_dir import discover

    for item in dump_items([discover(str(path))], options):
        if label is not None:
            item = replace(item, label=label)
        yield from dump_item(item, options)


def batch_events_for_expansion(item: DumpItem, options: DumpOptions) -> Iterator[DumpEvent]:
    """A log's batch-level events for workers to expand with records (`expand_batches`).

    Batches are pre-selected by the batch-level criteria only; workers apply the whole filter.
    """
    f = options.filter
    batch_only = DumpFilter(
        from_offset=f.from_offset,
        to_offset=f.to_offset,
        from_time=f.from_time,
        producer_id=f.producer_id,
        control_only=f.control_only,
        transactional_only=f.transactional_only,
    )
    shallow = DumpOptions(records=False, filter=batch_only, max_bytes=options.max_bytes)
    yield from dump_log(item.path, shallow, base_offset=item.base_offset, label=item.label, item=item)


def _start_position(source: ByteSource, item: DumpItem, from_offset: int) -> tuple[int, list[Finding]]:
    """Where to start scanning for `from_offset`: the checked offset index lookup of the segment
    reader (`SegmentView.locate`), and the findings of an index that failed its checks.

    An entry is used only when it points at a checksum-valid batch starting at or before the
    offset; otherwise the scan starts at 0 and the bad index is reported (never a silently wrong
    start). A missing index is no finding here: dump reads the log either way.
    """
    if item.index is None or item.base_offset is None:
        return 0, []
    seg = Segment(item.base_offset, item.path, item.index, item.timeindex)
    with ExitStack() as stack:
        view = SegmentView(seg, item.next_base_offset, stack, log_source=source, label=item.label)
        position, _ = view.locate(from_offset)
        return position, list(view.ledger.fallback_findings)


def dump_log(
    path: Path,
    options: DumpOptions,
    *,
    base_offset: int | None,
    index: Path | None = None,
    label: str | None = None,
    item: DumpItem | None = None,
) -> Iterator[DumpEvent]:
    """Dump one log (or KRaft snapshot) file: batches, records when asked, findings, summary.

    `item` (or `index`) gives the segment's index files, for `--from-offset`; a read that starts
    after position 0 or stops at `--max-bytes` judges only the bytes it read, and its summary
    says which positions those were (`ScanSummary.partial`).
    """
    name = label or str(path)
    if item is None:
        item = DumpItem(path, name, True, base_offset, index)
    f = options.filter
    # A local file is mapped; a stored one (a URL, a tarball's member) is fetched only from where
    # the scan starts, as far as it goes (an index lookup for --from-offset reads by ranges), and
    # what the scan has passed is handed back: nothing reads behind it.
    with closing(open_local(path, forward_only=True)) as source:
        buf, fill = source.lazy_buffer()
        yield FileStart(name, "log", len(buf), base_offset)
        start = 0
        found: list[Finding] = []
        if f.from_offset is not None:
            start, found = _start_position(source, replace(item, label=name), f.from_offset)
        yield from found
        # --max-bytes limits the scan to a prefix of the file (live brokers); the cut is no damage.
        limit = None if options.max_bytes is None else max(options.max_bytes - start, 0)
        ready = fetch_ahead(fill, start, len(buf))
        events = _counting(
            scan_log(
                buf,
                file=name,
                base_offset=base_offset,
                deep=options.records,
                start=start,
                max_bytes=limit,
                ready=ready,
            ),
            found,
        )
        if not f.active:
            yield from events
            return
        if not options.records:
            yield from _with_shown(
                (ev for ev in events if not isinstance(ev, BatchHeader) or f.batch_passes_shallow(ev)), False
            )
            return
        yield from _with_shown(_filter_deep(events, f), True)


def _with_shown(events: Iterable[Event], records_shown: bool) -> Iterator[Event]:
    """A filtered dump's events, its summary saying what was shown (the scan's own counts stay the
    file's): a summary of 404 records under the one record asked for reads as what matched. With
    records, the records shown are counted and their offsets given; without, the batches shown."""
    batches, records, first, last = 0, 0, None, None
    headers_counted = True  # every shown batch header gave its record count (a legacy wrapper does not)
    for ev in events:
        lows_highs: tuple[int, int] | None = None
        if isinstance(ev, BatchHeader):
            batches += 1
            if not records_shown:
                lows_highs = (
                    ev.base_offset if ev.base_offset is not None else ev.last_offset,
                    ev.last_offset,
                )
                if ev.count is None:
                    headers_counted = False
                else:
                    records += ev.count
        elif records_shown and isinstance(ev, Record):
            records += 1
            lows_highs = (ev.offset, ev.offset)
        elif isinstance(ev, ScanSummary):
            ev = replace(ev, shown=Shown(batches, records if headers_counted else None, first, last))
            batches, records, first, last, headers_counted = 0, 0, None, None, True
        if lows_highs is not None:
            first = lows_highs[0] if first is None else min(first, lows_highs[0])
            last = lows_highs[1] if last is None else max(last, lows_highs[1])
        yield ev


def _counting(events: Iterator[Event], found: list[Finding]) -> Iterator[Event]:
    """The scan's events, its summary counting the index findings shown before them too."""
    if not found:
        yield from events
        return
    for ev in events:
        if isinstance(ev, ScanSummary):
            counts = {sev: sum(1 for x in found if x.severity == sev) for sev in Severity}
            ev = replace(
                ev,
                findings_info=ev.findings_info + counts[Severity.INFO],
                findings_warning=ev.findings_warning + counts[Severity.WARNING],
                findings_error=ev.findings_error + counts[Severity.ERROR],
            )
        yield ev


def _filter_deep(events: Iterator[Event], f: DumpFilter) -> Iterator[Event]:
    """Keep batches with at least one passing record, and those records; findings pass through."""
    pending: BatchHeader | None = None
    shown = False
    for ev in events:
        if isinstance(ev, Record):
            if pending is not None and f.record_passes(ev):
                if not shown:
                    yield pending
                    shown = True
                yield ev
        elif isinstance(ev, BatchHeader):
            pending = ev if f.batch_passes(ev) else None
            shown = False
        elif isinstance(ev, Finding | ScanSummary):
            yield ev


def unreadable(path: str, message: str) -> Finding:
    """A finding for a file that could not be read."""
    return make_finding("unreadable-file", path, message)


def batches_span(events: Iterable[DumpEvent]) -> tuple[int, int]:
    """The positions [start, end) the batches among `events` occupy: all a worker decoding their
    records reads of the file (a stored file is fetched only there)."""
    spans = [(ev.position, ev.position + ev.size) for ev in events if isinstance(ev, BatchHeader)]
    return (min(s for s, _ in spans), max(e for _, e in spans)) if spans else (0, 0)


def expand_batches(
    path: Path, events: list[DumpEvent], options: DumpOptions, label: str, decoder: str | None = None
) -> list[DumpEvent]:
    """Decode the records of the batches in a slice of a shallow dump stream (a worker's job).

    The result is what `dump_log` yields with records for the same batches: each batch followed
    by its records and the findings of decoding them; with a filter, a batch only when at least
    one of its records passes.
    """
    out: list[DumpEvent] = []
    f = options.filter
    with open_buffer(path, span=batches_span(events)) as buf:
        for ev in events:
            if not isinstance(ev, BatchHeader):
                out.append(ev)
                continue
            records, findings = decode_expanded(buf, ev, label)
            if f.active:
                if not f.batch_passes(ev):
                    continue
                records = [r for r in records if f.record_passes(r)]
                if not records:
                    out.extend(findings)
                    continue
            out.append(ev)
            out.extend(findings)
            out.extend(records)
    return list(attach_decoded(out, decoder, label)) if decoder is not None else out
