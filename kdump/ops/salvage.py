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
`kdump.ops.salvage_output`.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from kdump.findings import Finding
from kdump.formats.batch import BatchHeader
from kdump.formats.constants import MAX_RELATIVE_OFFSET
from kdump.model.partition import PartitionDir
from kdump.model.segment import Segment
from kdump.ops.salvage_kept import FRAMING, INTACT, RESYNC, KeptBatch, KeptList
from kdump.scan.events import ScanSummary
from kdump.scan.log_scanner import find_next_entry, scan_log
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


def _scan(seg: Segment) -> tuple[list[tuple[BatchHeader, str]], list[Finding], ScanSummary]:
    """Every framed entry with how it was reached, the findings, the summary."""
    assert seg.log is not None
    entries: list[tuple[BatchHeader, str]] = []
    findings: list[Finding] = []
    summary: ScanSummary | None = None
    resync_at: int | None = None
    damaged = False
    with open_buffer(seg.log) as buf:
        for ev in scan_log(buf, file=str(seg.log), base_offset=seg.base_offset):
            if isinstance(ev, BatchHeader):
                how = RESYNC if ev.position == resync_at else (FRAMING if damaged else INTACT)
                entries.append((ev, how))
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
        known = {h.position for h, _ in entries}
        for h, _how in list(entries):
            if not h.crc_ok:
                entries.extend((x, RESYNC) for x in _inside(buf, h, seg) if x.position not in known)
    assert summary is not None
    entries.sort(key=lambda e: e[0].position)
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


def _rejection(h: BatchHeader, seg: Segment, next_base: int | None) -> str | None:
    """Why a checksum-valid batch still cannot be kept (fields the checksum does not cover)."""
    low = h.base_offset if h.base_offset is not None else h.last_offset
    if h.compression > 4 or (h.magic < 2 and h.compression > 3):
        return f"compression type id {h.compression} does not exist: its records cannot be read"
    if low < seg.base_offset:
        return f"offset {low} is below the segment's base offset {seg.base_offset}"
    if h.last_offset - seg.base_offset > MAX_RELATIVE_OFFSET:
        return f"last offset {h.last_offset} does not fit a relative offset of segment {seg.name}"
    if next_base is not None and h.last_offset >= next_base:
        return f"last offset {h.last_offset} is not below the next segment's base offset {next_base}"
    if h.magic == 2 and h.base_offset is not None and not 0 <= (h.count or 0) <= h.last_offset - low + 1:
        return f"record count {h.count} does not fit offsets {low}..{h.last_offset}"
    return None


def _misplaced(candidates: list[tuple[int, int]]) -> set[int]:
    """Batches whose base offset was damaged: of two neighbours whose offsets overlap, the one that
    does not continue its other neighbour (a v2 base offset is outside the checksum; its record
    count and last offset delta are inside, so the batch keeps its span, shifted)."""
    out: set[int] = set()
    n = len(candidates)

    def follows(i: int, j: int) -> bool:  # batch j starts right after batch i
        return 0 <= i < n and 0 <= j < n and candidates[j][0] == candidates[i][1] + 1

    for i in range(n - 1):
        if candidates[i + 1][0] > candidates[i][1]:
            continue
        first_fits, second_fits = follows(i - 1, i), follows(i + 1, i + 2)
        if first_fits and not second_fits:
            out.add(i + 1)
        elif second_fits and not first_fits:
            out.add(i)
    return out


def _increasing(candidates: list[tuple[int, int]]) -> set[int]:
    """Indexes of the longest chain of (low, last) intervals whose offsets strictly increase.

    Patience sorting: `tails[k]` is the smallest last offset ending a chain of k + 1 intervals. When
    every batch follows its predecessor, the chain is all of them.
    """
    tails: list[int] = []
    tail_index: list[int] = []
    parent = [-1] * len(candidates)
    for i, (low, last) in enumerate(candidates):
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
    chain: set[int] = set()
    i = tail_index[-1] if tail_index else -1
    while i >= 0:
        chain.add(i)
        i = parent[i]
    return chain


def plan_salvage(part: PartitionDir) -> SalvagePlan:
    """Scan every segment of a partition and decide what is kept and what is lost. Reads only."""
    segs = [s for s in part.segments if s.log is not None]
    plans: list[SegmentSalvage] = []
    scanned: list[tuple[list[tuple[BatchHeader, str]], list[Finding]]] = []
    candidates: list[tuple[int, int]] = []
    where: list[tuple[int, int]] = []  # (segment index, entry index) of each candidate
    rejected: dict[tuple[int, int], str] = {}
    for si, seg in enumerate(segs):
        next_base = segs[si + 1].base_offset if si + 1 < len(segs) else None
        try:
            entries, findings, summary = _scan(seg)
        except OSError as exc:  # PathError: the segment cannot be read at all
            plans.append(SegmentSalvage(seg, None, unreadable=str(exc)))
            scanned.append(([], []))
            continue
        plans.append(SegmentSalvage(seg, summary))
        scanned.append((entries, findings))
        prev_end = 0
        for ei, (h, _how) in enumerate(entries):
            if not h.crc_ok:
                continue
            reason = _rejection(h, seg, next_base)
            if reason is None and h.position < prev_end:
                reason = f"it overlaps the checksum-valid batch that ends at {prev_end}"
            prev_end = max(prev_end, h.position + h.size)
            if reason is not None:
                rejected[(si, ei)] = reason
                continue
            low = h.base_offset if h.base_offset is not None else h.last_offset
            candidates.append((low, h.last_offset))
            where.append((si, ei))
    misplaced = _misplaced(candidates)
    order = [ci for ci in range(len(candidates)) if ci not in misplaced]
    chain = {order[j] for j in _increasing([candidates[ci] for ci in order])}
    for ci, key in enumerate(where):
        if ci not in chain:
            rejected[key] = "its offsets (not covered by the checksum) break the partition's offset order"
    kept_keys = {where[ci] for ci in chain}
    for si, sp in enumerate(plans):
        entries, findings = scanned[si]
        if sp.summary is None:
            continue
        valid = sp.summary.valid_bytes
        for ei, (h, how) in enumerate(entries):
            if (si, ei) in kept_keys:
                sp.kept.append(KeptBatch.of(sp.segment, h, how, h.position + h.size <= valid))
        sp.regions = _regions(sp, entries, findings, kept_keys, rejected, si)
    _link(plans)
    for sp in plans:
        for r in sp.regions:
            r.floor = segs[0].base_offset
    return SalvagePlan(part, plans)


def _regions(
    sp: SegmentSalvage,
    entries: list[tuple[BatchHeader, str]],
    findings: list[Finding],
    kept_keys: set[tuple[int, int]],
    rejected: dict[tuple[int, int], str],
    si: int,
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
    for ei, (h, _how) in enumerate(entries):
        if (si, ei) in kept_keys:
            continue
        reason = rejected.get((si, ei), "its checksum fails")
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
