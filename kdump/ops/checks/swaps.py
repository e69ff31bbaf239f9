"""A `.log.swap` the broker would complete at start, judged by what the completion leaves.

`LogLoader` (2.x to 4.4): `.swap` files whose base offset is at or above the lowest `.cleaned` one are
an unfinished split and deleted; every other `<base>.log.swap` is opened as a segment, every live
segment whose base offset lies in [base, the swap's next offset) is deleted, and the swap is renamed
into place. Offsets those deleted segments held that the swap does not are gone. A log cleaner's swap
may legitimately hold fewer (compaction drops superseded records), so in a compacted topic that is the
cleaner's business; in any other topic (or one whose policy is unknown) a swap the broker would
complete with fewer offsets than the segments it replaces loses them: `swap-loses-offsets`, repaired
by moving the swap into the backup (`kdump quarantine --apply`), after which the broker keeps the
segments as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kdump.findings import Finding, make_finding
from kdump.formats.filenames import parse_segment_file_name
from kdump.model.partition import PartitionDir
from kdump.ops.checks.segment import SegmentResult, check_segment


@dataclass(frozen=True, slots=True)
class LosingSwap:
    """A swap whose completion would lose offsets, with the files that go with it."""

    swap: Path
    files: tuple[Path, ...]
    replaced: tuple[str, ...]
    lost: int
    first_lost: int
    policy: str | None

    @property
    def finding(self) -> Finding:
        return make_finding(
            "swap-loses-offsets",
            str(self.swap),
            f"the broker completes {self.swap.name} at start: it deletes {', '.join(self.replaced)} and "
            f"renames the swap into place, and {self.lost} offsets from {self.first_lost} that they hold "
            f"and it does not are gone (cleanup.policy {self.policy or 'unknown'}: no compaction explains "
            "them); the repair moves the swap into the backup",
            offset=self.first_lost,
            lost=self.lost,
        )


def _offsets(r: SegmentResult) -> tuple[int, int] | None:
    s = r.summary
    if s is None or s.first_offset is None or s.last_offset is None:
        return None
    return s.first_offset, s.last_offset


def losing_swaps(
    part: PartitionDir, results: Sequence[SegmentResult], policy: str | None
) -> list[LosingSwap]:
    """The `.log.swap` files of a partition whose completion would lose offsets (see the docstring)."""
    if policy == "compact":
        return []
    leftovers = part.leftover_segments()
    cleaned = [s.base_offset for s in leftovers if s.suffix == "cleaned"]
    lowest_cleaned = min(cleaned, default=None)
    out = []
    for seg in leftovers:
        if seg.suffix != "swap" or seg.log is None:
            continue
        if lowest_cleaned is not None and seg.base_offset >= lowest_cleaned:
            continue  # an unfinished split: the broker deletes it
        swap = check_segment(seg)
        span = _offsets(swap)
        next_offset = span[1] + 1 if span is not None else seg.base_offset
        replaced = [r for r in results if seg.base_offset <= r.segment.base_offset < next_offset]
        lost = 0
        first_lost: int | None = None
        for r in replaced:
            held = _offsets(r)
            if held is None:
                continue
            a, b = held
            # What the swap does not hold of it: below its first offset and above its last.
            gaps = [(a, b)] if span is None else [(a, min(b, span[0] - 1)), (max(a, span[1] + 1), b)]
            for lo, hi in gaps:
                if lo <= hi:
                    lost += hi - lo + 1
                    first_lost = lo if first_lost is None else min(first_lost, lo)
        if lost and first_lost is not None:
            files = tuple(
                p
                for p in part.leftovers
                if (info := parse_segment_file_name(p.name)) is not None
                and info.suffix == "swap"
                and info.base_offset == seg.base_offset
            )
            names = tuple(r.segment.log.name for r in replaced if r.segment.log is not None)
            out.append(LosingSwap(seg.log, files, names, lost, first_lost, policy))
    return out
