"""`salvage`: find every batch of a damaged partition that can still be trusted, and what is lost.

The broker's recovery (`LogSegment.recover`) truncates a segment at its first invalid batch and
deletes every later segment, so one bad sector in the middle of a segment costs everything after it.
`plan_salvage` scans each segment in forensic mode, where the scanner keeps going past a checksum
failure while the length fields still frame the next batch, and resynchronises (magic, length and
checksum all agreeing) once framing is lost. Then:

- a batch is kept only when its checksum verifies, its codec exists, its record count fits its
  offsets, and its offsets (the base offset and leader epoch are not covered by the checksum) lie
  in its segment and below the next segment's base offset;
- of those, the largest set whose offsets strictly increase in partition order is kept (a batch
  whose uncovered base offset was damaged breaks the order, and drops out here);
- every byte range of a segment not covered by a kept batch is a damaged region. Its lost offsets
  are the gap between the kept batches either side of it; offsets and timestamps read from headers
  that failed their checksum are reported too, marked as claimed.

Each kept batch says how it was reached: `intact` (before any damage in its segment: the broker
keeps it), `framing` (through the length fields past a batch that failed its checksum) or `resync`
(found by the forward search after framing was lost). Nothing here writes; see
`kdump.ops.salvage.output`.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterator, MutableSequence, Sequence
from dataclasses import dataclass, field

from kdump.findings import Finding
from kdump.formats.batch import BatchHeader
from kdump.formats.constants import MAX_RELATIVE_OFFSET
from kdump.formats.fast_walk import BatchRun
from kdump.model.partition import PartitionDir
from kdump.model.segment import Segment
from kdump.ops.salvage.kept import FRAMING, INTACT, RESYNC, KeptBatch, KeptList, ScanEntries
from kdump.scan.events import ScanSummary
from kdump.scan.log_scanner import scan_log
from kdump.scan.resync import find_next_entry
from kdump.scan.source import open_buffer


@dataclass(frozen=True, slots=True)
class DamagedEntry:
    """An entry framed inside a damaged region: its header is read, but not to be trusted."""

    header: BatchHeader
    reason: str


@dataclass(slots=True)
class DamagedRegion:
    """A byte range of a segment that the clean partition leaves out."""

    segment: Segment
    start: int
    end: int
    findings: list[Finding] = field(default_factory=list)
    entries: list[DamagedEntry] = field(default_factory=list)
    before: KeptBatch | None = None  # the last kept batch before it, in partition order
    after: KeptBatch | None = None  # the first kept batch after it
    recovered: list[KeptBatch] = field(default_factory=list)  # kept batches from here to the next region
    floor: int = 0  # the partition's first segment's base offset: no offset below it can be lost

    @property
    def lost_offsets(self) -> tuple[int, int] | None:
        """The offsets between the kept batches either side (None when no offset is lost).

        Past the last kept batch of the partition the end is what the damaged headers claim.
        """
        first = self.floor if self.before is None else self.before.header.last_offset + 1
        if self.after is not None:
            last = self.after.low - 1
        else:
            claims = [e.header.last_offset for e in self.entries if e.header.last_offset >= first]
            if not claims:
                return None
            last = max(claims)
        return (first, last) if last >= first else None

    @property
    def claimed_timestamps(self) -> tuple[int, int] | None:
        """The smallest and largest timestamps the damaged headers claim (unverified)."""
        stamps = [
            t
            for e in self.entries
            for t in (e.header.base_timestamp, e.header.max_timestamp)
            if t >= 0 and not e.header.has_delete_horizon
        ]
        return (min(stamps), max(stamps)) if stamps else None


@dataclass(slots=True)
class SegmentSalvage:
    """One segment: its summary, the batches kept, the regions cut."""

    segment: Segment
    summary: ScanSummary | None
    kept: KeptList = field(default_factory=KeptList)
    regions: list[DamagedRegion] = field(default_factory=list)
    unreadable: str | None = None


@dataclass(slots=True)
class SalvagePlan:
    """What can be recovered from one partition directory."""

    partition: PartitionDir
    segments: list[SegmentSalvage]

    @property
    def regions(self) -> list[DamagedRegion]:
        """Every damaged region, in partition order."""
        return [r for s in self.segments for r in s.regions]

    @property
    def kept(self) -> list[KeptBatch]:
        """Every kept batch, in partition order."""
        return [k for s in self.segments for k in s.kept]

    @property
    def lost_offsets(self) -> list[tuple[int, int]]:
        """The offset ranges lost for good."""
        return [r for r in (g.lost_offsets for g in self.regions) if r is not None]

    @property
    def not_read(self) -> list[str]:
        """Log files of the partition that salvage does not read: `.deleted`, `.cleaned`, `.swap`."""
        return [str(s.log) for s in self.partition.leftover_segments()]

    @property
    def complete(self) -> bool:
        """Nothing was damaged and every log file was read."""
        return not self.regions and not self.not_read


def _scan(seg: Segment) -> tuple[ScanEntries, list[Finding], ScanSummary]:
    """Every framed entry with how it was reached (packed: no object per clean batch), the
    findings, the summary."""
    assert seg.log is not None
    entries = ScanEntries()
    findings: list[Finding] = []
    summary: ScanSummary | None = None
    resync_at: int | None = None
    damaged = False
    with open_buffer(seg.log) as buf:
        for ev in scan_log(buf, file=str(seg.log), base_offset=seg.base_offset, batch_runs=True):
            if isinstance(ev, BatchRun):  # clean v2 batches, checksums valid: `damaged` stays
                how = FRAMING if damaged else INTACT
                entries.add_run(ev, RESYNC if ev.start == resync_at else how, how)
            elif isinstance(ev, BatchHeader):
                entries.add(ev, RESYNC if ev.position == resync_at else (FRAMING if damaged else INTACT))
                damaged = damaged or not ev.crc_ok
            elif isinstance(ev, Finding):
                findings.append(ev)
                if ev.code == "skipped-bytes":
                    damaged = True
                    resync_at = ev.details.get("end_position")
                elif ev.severity.label == "error":
                    damaged = True
            elif isinstance(ev, ScanSummary):
                summary = ev
        failed = [h for _, h in entries.held() if not h.crc_ok]
        if failed:  # damage: the few entries inside it held whole, in position order
            all_entries = list(entries)
            known = {h.position for h, _ in all_entries}
            for h in failed:
                all_entries.extend((x, RESYNC) for x in _inside(buf, h, seg) if x.position not in known)
            all_entries.sort(key=lambda e: e[0].position)
            entries = ScanEntries(all_entries)
    assert summary is not None
    return entries, findings, summary


def _inside(buf: memoryview, h: BatchHeader, seg: Segment) -> list[BatchHeader]:
    """Checksum-valid batches inside the span of an entry that failed its checksum.

    A damaged length field frames a wrong span, and the scanner, following it, steps over the
    valid batches within; a forward search from just after the entry's start finds them again.
    """
    found: list[BatchHeader] = []
    end = h.position + h.size
    p = h.position + 1
    while p < end:
        q = find_next_entry(buf, p, len(buf))
        if q is None or q >= end:
            break
        p = q + 1
        for ev in scan_log(buf, file=str(seg.log), base_offset=seg.base_offset, start=q, resync=False):
            if not isinstance(ev, BatchHeader):
                continue
            if not ev.crc_ok or ev.position >= end:
                break
            found.append(ev)
            p = ev.position + ev.size
    return found


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


def _rejection(
    seg: Segment,
    next_base: int | None,
    magic: int,
    compression: int,
    base: int | None,
    last: int,
    count: int | None,
) -> str | None:
    """Why a checksum-valid batch still cannot be kept (fields the checksum does not cover)."""
    low = base if base is not None else last
    if compression > 4 or (magic < 2 and compression > 3):
        return f"compression type id {compression} does not exist: its records cannot be read"
    if low < seg.base_offset:
        return f"offset {low} is below the segment's base offset {seg.base_offset}"
    if last - seg.base_offset > MAX_RELATIVE_OFFSET:
        return f"last offset {last} does not fit a relative offset of segment {seg.name}"
    if next_base is not None and last >= next_base:
        return f"last offset {last} is not below the next segment's base offset {next_base}"
    if magic == 2 and base is not None and not 0 <= (count or 0) <= last - low + 1:
        return f"record count {count} does not fit offsets {low}..{last}"
    return None


def _misplaced(lows: Sequence[int], lasts: Sequence[int]) -> set[int]:
    """Batches whose base offset was damaged: of two neighbours whose offsets overlap, the one that
    does not continue its other neighbour (a v2 base offset is outside the checksum; its record
    count and last offset delta are inside, so the batch keeps its span, shifted)."""
    out: set[int] = set()
    n = len(lows)

    def follows(i: int, j: int) -> bool:  # batch j starts right after batch i
        return 0 <= i < n and 0 <= j < n and lows[j] == lasts[i] + 1

    for i in range(n - 1):
        if lows[i + 1] > lasts[i]:
            continue
        first_fits, second_fits = follows(i - 1, i), follows(i + 1, i + 2)
        if first_fits and not second_fits:
            out.add(i + 1)
        elif second_fits and not first_fits:
            out.add(i)
    return out


def _increasing(lows: Sequence[int], lasts: Sequence[int], order: Sequence[int]) -> bytearray:
    """Of the (low, last) intervals `order` picks, the longest chain whose offsets strictly
    increase: a mark for each interval in it.

    Patience sorting: `tails[k]` is the smallest last offset ending a chain of k + 1 intervals. When
    every batch follows its predecessor, the chain is all of them. Arrays, not lists of ints: a
    segment of small batches has tens of thousands.
    """
    tails: MutableSequence[int] = array("q") if isinstance(lasts, array) else []
    tail_index = array("q")
    parent = array("q", [-1]) * len(lows)
    for i in order:
        low, last = lows[i], lasts[i]
        k = bisect.bisect_left(tails, low)
        if k == len(tails):
            tails.append(last)
            tail_index.append(i)
        elif last < tails[k]:
            tails[k] = last
            tail_index[k] = i
        else:
            continue
        parent[i] = tail_index[k - 1] if k > 0 else -1
    chain = bytearray(len(lows))
    i = tail_index[-1] if tail_index else -1
    while i >= 0:
        chain[i] = 1
        i = parent[i]
    return chain


def plan_salvage(part: PartitionDir) -> SalvagePlan:
    """Scan every segment of a partition and decide what is kept and what is lost. Reads only.

    Entries are numbered across the partition (a segment's first is `firsts[si]`); what is decided
    per entry is held in arrays and byte masks by that number, not in objects per batch.
    """
    segs = [s for s in part.segments if s.log is not None]
    plans: list[SegmentSalvage] = []
    scanned: list[tuple[ScanEntries, list[Finding]]] = []
    firsts: list[int] = []
    lows: MutableSequence[int] = array("q")  # each candidate's offsets, and its entry
    lasts: MutableSequence[int] = array("q")
    where = array("q")
    rejected: dict[int, str] = {}
    total = 0
    for si, seg in enumerate(segs):
        next_base = segs[si + 1].base_offset if si + 1 < len(segs) else None
        firsts.append(total)
        try:
            entries, findings, summary = _scan(seg)
        except OSError as exc:  # PathError: the segment cannot be read at all
            plans.append(SegmentSalvage(seg, None, unreadable=str(exc)))
            scanned.append((ScanEntries(), []))
            continue
        plans.append(SegmentSalvage(seg, summary))
        scanned.append((entries, findings))
        prev_end = 0
        for e, (position, size, crc_ok, magic, compression, base, last, count) in enumerate(
            entries.fields(), total
        ):
            if not crc_ok:
                continue
            reason = _rejection(seg, next_base, magic, compression, base, last, count)
            if reason is None and position < prev_end:
                reason = f"it overlaps the checksum-valid batch that ends at {prev_end}"
            prev_end = max(prev_end, position + size)
            if reason is not None:
                rejected[e] = reason
                continue
            low = base if base is not None else last
            fits = _INT64_MIN <= low <= _INT64_MAX and _INT64_MIN <= last <= _INT64_MAX
            if isinstance(lows, array) and not fits:
                lows, lasts = list(lows), list(lasts)  # a forged offset past int64: lists hold any int
            lows.append(low)
            lasts.append(last)
            where.append(e)
        total += len(entries)
    misplaced = _misplaced(lows, lasts)
    chain = _increasing(lows, lasts, array("q", (c for c in range(len(lows)) if c not in misplaced)))
    kept = bytearray(total)  # 1 for each entry kept
    for c, e in enumerate(where):
        if chain[c]:
            kept[e] = 1
        else:
            rejected[e] = "its offsets (not covered by the checksum) break the partition's offset order"
    del lows, lasts, where, chain
    for si, sp in enumerate(plans):
        entries, findings = scanned[si]
        scanned[si] = (ScanEntries(), [])  # each segment's entries are let go once its kept are packed
        if sp.summary is None:
            continue
        first = firsts[si]
        valid = sp.summary.valid_bytes
        for ei in _marked(kept, first, first + len(entries), 1):
            entries.keep(ei, sp.kept, sp.segment, valid)
        sp.regions = _regions(sp, entries, findings, kept, first, rejected)
    _link(plans)
    for sp in plans:
        for r in sp.regions:
            r.floor = segs[0].base_offset
    return SalvagePlan(part, plans)


def _marked(mask: bytearray, start: int, end: int, value: int) -> Iterator[int]:
    """The indexes from `start` that `mask` marks `value` in `start..end`, relative to `start`."""
    i = mask.find(value, start, end)
    while i >= 0:
        yield i - start
        i = mask.find(value, i + 1, end)


def _regions(
    sp: SegmentSalvage,
    entries: ScanEntries,
    findings: list[Finding],
    kept: bytearray,
    first: int,
    rejected: dict[int, str],
) -> list[DamagedRegion]:
    """The byte ranges of a segment outside its kept batches, with what lies in them."""
    assert sp.summary is not None
    size = sp.summary.size
    regions: list[DamagedRegion] = []
    pos = 0
    for start, length in [*sp.kept.spans(), (size, 0)]:
        if start > pos:
            regions.append(DamagedRegion(sp.segment, pos, start))
        pos = start + length
    for f in findings:
        if f.position is None:
            continue
        for r in regions:
            if r.start <= f.position < r.end:
                r.findings.append(f)
                break
    for ei in _marked(kept, first, first + len(entries), 0):
        h = entries.header(ei)
        reason = rejected.get(first + ei, "its checksum fails")
        for r in regions:
            if r.start <= h.position < r.end:
                r.entries.append(DamagedEntry(h, reason))
                break
    return regions


def _link(plans: list[SegmentSalvage]) -> None:
    """Give each region its kept neighbours in partition order, and the batches recovered after it."""
    if not any(sp.regions for sp in plans):
        return  # nothing to link (and no need to go through every kept batch)
    events: list[KeptBatch | DamagedRegion] = []
    for sp in plans:
        items: list[tuple[int, int, KeptBatch | DamagedRegion]] = [(k.header.position, 1, k) for k in sp.kept]
        items += [(r.start, 0, r) for r in sp.regions]
        events.extend(item for _, _, item in sorted(items, key=lambda t: (t[0], t[1])))
    last: KeptBatch | None = None
    current: DamagedRegion | None = None
    pending: list[DamagedRegion] = []
    for ev in events:
        if isinstance(ev, DamagedRegion):
            ev.before = last
            pending.append(ev)
            current = ev
            continue
        for r in pending:
            r.after = ev
        pending = []
        last = ev
        if current is not None:
            current.recovered.append(ev)
