"""Stray segment files: a `.log` the broker would load that holds only offsets other segments hold.

Two shapes, both of someone's copying, never of a broker's:

- a copy of an older segment saved under a name inside another segment's range (`…070.log` holding
  offsets 0..59): its batches lie wholly below its base offset. The broker loads it as the segment for
  offsets from 70 on; a fetch that starts there finds no batch at or above the target in it and goes
  on to the next segment, so a consumer seeking to an offset it shadows skips them (one reading on
  from before it still gets them: a segment read runs to that segment's end), and a recovery that
  reaches it empties it and deletes every later unflushed segment (`LogLoader`);
- a segment copied out of its partition under a name that is no segment name (`copy.log`): the broker
  parses the digits before the first dot and fails to load the partition when there are none.

Either way the stray file is the whole problem: moving it (and its indexes) out of the partition into
the backup (`kdump quarantine --apply`, undone by `kdump restore`) leaves the segments the broker
serves whole. Cutting the log at the overlap instead would remove good offsets of later segments.
Only a file whose every offset another segment of the partition also holds is called stray: one whose
offsets are held nowhere else keeps its own findings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kdump.findings import Finding, make_finding
from kdump.formats.filenames import parse_segment_file_name
from kdump.ops.checks.segment import SegmentResult


@dataclass(frozen=True, slots=True)
class Stray:
    """A stray segment: its result, the files that go with it, and the segments holding its offsets."""

    result: SegmentResult
    files: tuple[Path, ...]
    holders: tuple[str, ...]
    misnamed: bool

    @property
    def finding(self) -> Finding:
        seg, s = self.result.segment, self.result.summary
        assert seg.log is not None
        assert s is not None
        assert s.first_offset is not None
        where = (
            f"{seg.log.name} is no segment name (the broker fails to load the partition on it)"
            if self.misnamed
            else f"{seg.log.name} holds offsets {s.first_offset}..{s.last_offset}, all below its base offset "
            f"{seg.base_offset}: the broker takes it for the segment from {seg.base_offset} on, so a fetch or "
            "seek that starts at an offset it shadows skips to the segment after it, and a recovery that "
            "reaches it empties it and deletes the later unflushed segments"
        )
        return make_finding(
            "segment-stray",
            str(seg.log),
            f"{where}; every offset in it is also in {', '.join(self.holders)}: a stray copy, which the "
            "repair moves into the backup with its indexes",
            offset=s.first_offset,
            files=[str(p) for p in self.files],
        )


def _covered(first: int, last: int, ranges: list[tuple[int, int]]) -> bool:
    """Whether the union of `ranges` covers first..last."""
    at = first
    for a, b in sorted(ranges):
        if a > at:
            break
        at = max(at, b + 1)
        if at > last:
            return True
    return at > last


def find_strays(results: Sequence[SegmentResult]) -> list[Stray]:
    """The stray segments among a partition's (see the module docstring)."""
    spans: list[tuple[SegmentResult, int, int]] = []
    for r in results:
        s = r.summary
        if s is None or s.first_offset is None or s.last_offset is None or not s.first_offset_known:
            continue
        if r.segment.suffix or r.segment.log is None:
            continue
        spans.append((r, s.first_offset, s.last_offset))
    out = []
    for r, first, last in spans:
        log = r.segment.log
        assert log is not None
        misnamed = parse_segment_file_name(log.name) is None
        if not misnamed and last >= r.segment.base_offset:
            continue
        others = [(o, a, b) for o, a, b in spans if o is not r and _loads_right(o)]
        if not _covered(first, last, [(a, b) for _, a, b in others]):
            continue
        holders = tuple(
            o.segment.log.name for o, a, b in others if a <= last and b >= first and o.segment.log
        )
        files = tuple(
            p for p in (log, r.segment.index, r.segment.timeindex, r.segment.txnindex) if p is not None
        )
        out.append(Stray(r, files, holders, misnamed))
    return out


def _loads_right(r: SegmentResult) -> bool:
    """A segment the broker serves its offsets from: named for them (not a stray itself)."""
    s, log = r.summary, r.segment.log
    return (
        s is not None
        and log is not None
        and s.last_offset is not None
        and parse_segment_file_name(log.name) is not None
        and s.last_offset >= r.segment.base_offset
    )
