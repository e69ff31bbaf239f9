"""Planning a `kdump` read on the driver: which segments, split where, packed into which tasks.

Level records and batches read `SegmentSlice`s: one per segment, or several for a segment larger
than `splitBytes`, split at batch boundaries the segment reader checks (`split_starts`); slices
outside the offset bounds are pruned by file names. Level findings reads `FindingsUnit`s, verify's
units. Small items are packed into shared tasks (`pack`). Nothing here imports pyspark.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from kdump.errors import KdumpError
from kdump.findings import Finding
from kdump.formats.batch import ENTRY_PREFIX
from kdump.formats.filenames import parse_partition_dir_name
from kdump.model.byte_source import ByteSource, InMemory, SourceOpener, open_local
from kdump.model.log_dir import Target, discover, expand, segments_of_file
from kdump.model.partition import PartitionDir
from kdump.model.segment import Segment
from kdump.model.segment_view import SegmentView
from kdump.scan.resync import find_next_entry, plausible_entry_at
from kdump.spark.options import Bounds, ReadOptions
from kdump.store.queries import exists

__all__ = [
    "FindingsUnit",
    "SegmentSlice",
    "pack",
    "plan_findings",
    "plan_slices",
    "split_starts",
    "starts_from_index",
]

log = logging.getLogger("kdump.spark")
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class SegmentSlice:
    """What levels records and batches read: a byte range of one `.log` file (`size` bytes long).

    `start` is a batch boundary; `end` is the next slice's start, or None for the end of the file.
    `first_offset` / `next_offset` bound the offsets the slice should hold (None: unknown): the
    file name's base offset and the next segment's, or the offsets of the batches at the bounds.
    """

    log: str
    base_offset: int
    topic: str | None
    partition: int | None
    start: int = 0
    end: int | None = None
    first_offset: int | None = None
    next_offset: int | None = None
    size: int = 0


@dataclass(frozen=True, slots=True)
class FindingsUnit:
    """What level findings checks: what `kdump verify` reports as one partition (or one file)."""

    label: str
    kind: str  # "partition" | "file" | "unreadable" | "entries"
    path: str
    part: PartitionDir | None = None
    error: str = ""
    size: int = 0  # bytes of log data
    # kind "entries": findings about a log dir's own entries (unrecognised, unreadable ...), and its scope
    problems: tuple[Finding, ...] = ()
    scope: str = ""


def pack(items: Sequence[_T], sizes: Sequence[int], pack_bytes: int) -> list[tuple[_T, ...]]:
    """Group consecutive items smaller than `pack_bytes` into groups of about `pack_bytes`.

    An item of `pack_bytes` or more stays alone, so real segments (up to 1 GiB) keep a task each,
    while runs of tiny ones (compacted topics, test data) stop paying Spark's cost per task.
    """
    groups: list[tuple[_T, ...]] = []
    current: list[_T] = []
    total = 0
    for item, size in zip(items, sizes, strict=True):
        if size >= pack_bytes or pack_bytes <= 0:
            if current:
                groups.append(tuple(current))
                current, total = [], 0
            groups.append((item,))
            continue
        current.append(item)
        total += size
        if total >= pack_bytes:
            groups.append(tuple(current))
            current, total = [], 0
    if current:
        groups.append(tuple(current))
    return groups


def _resolve(paths: Sequence[str]) -> list[Target | tuple[str, str]]:
    """Classify each path; a path that exists but cannot be read becomes (path, error)."""
    out: list[Target | tuple[str, str]] = []
    for p in paths:
        if not exists(p, follow_symlinks=False):
            raise ValueError(f"kdump: path does not exist: {p}")
        try:
            out.append(discover(p))
        except KdumpError as exc:
            out.append((p, str(exc)))
    return out


def _topic_partition(directory: Path) -> tuple[str | None, int | None]:
    parsed = parse_partition_dir_name(directory.name)
    return (parsed.topic, parsed.partition) if parsed else (None, None)


def plan_slices(options: ReadOptions) -> list[SegmentSlice]:
    """The tasks of a records or batches read, in path, partition and offset order, pruned by bounds."""
    slices: list[SegmentSlice] = []
    bounds = options.bounds
    for target in _resolve(options.paths):
        if isinstance(target, tuple):
            log.warning("kdump: skipping %s: %s", target[0], target[1])
            continue
        groups: list[tuple[str | None, int | None, list[Segment], list[Segment]]] = []
        if target.kind == "file":
            topic, partition = _topic_partition(target.path.resolve().parent)
            groups.append((topic, partition, segments_of_file(target.path), []))
        else:
            try:
                parts = target.partitions()
            except KdumpError as exc:
                log.warning("kdump: skipping %s: %s", target.given, exc)
                continue
            for part in parts:
                extra = part.leftover_segments() if options.leftovers else []
                groups.append((part.topic, part.partition, part.segments, extra))
        for topic, partition, segments, extra in groups:
            if not bounds.keeps_target(topic, partition):
                continue
            for i, seg in enumerate(segments):
                nxt = segments[i + 1].base_offset if i + 1 < len(segments) else None
                slices.extend(_slices_of(seg, topic, partition, options.split_bytes, nxt, bounds))
            for seg in extra:
                slices.extend(_slices_of(seg, topic, partition, options.split_bytes, None, Bounds()))
    return slices


def _slices_of(
    seg: Segment, topic: str | None, partition: int | None, split_bytes: int, nxt: int | None, bounds: Bounds
) -> list[SegmentSlice]:
    assert seg.log is not None
    size = _file_size(seg.log)
    starts = split_starts(seg, size, split_bytes) if size > split_bytes else []
    positions = [0, *(p for p, _ in starts)]
    firsts: list[int | None] = [seg.base_offset if not seg.suffix else None, *(o for _, o in starts)]
    out = []
    for k, (pos, first) in enumerate(zip(positions, firsts, strict=True)):
        end = positions[k + 1] if k + 1 < len(positions) else None
        next_offset = firsts[k + 1] if k + 1 < len(firsts) else nxt
        if bounds.keeps_offsets(first, next_offset):
            nbytes = (size if end is None else end) - pos
            out.append(
                SegmentSlice(
                    str(seg.log), seg.base_offset, topic, partition, pos, end, first, next_offset, nbytes
                )
            )
    return out


def split_starts(
    seg: Segment, size: int, split_bytes: int, *, open_source: SourceOpener = open_local
) -> list[tuple[int, int | None]]:
    """Where to split a large segment: (position, first offset or None) of the batches starting slices.

    Boundaries near every `size / n`-th byte come from the offset index through the segment reader
    (`SegmentView.batch_start_at_or_before`): the index is checked, and each entry's position must
    be the start of a checksum-valid batch; that reads the `.log` only by ranges. If the index is
    missing, damaged, or an entry fails that check, the batch length fields are walked from the
    start of the file instead.
    """
    n = math.ceil(size / split_bytes)
    if n <= 1 or seg.log is None:
        return []
    targets = [size * k // n for k in range(1, n)]
    try:
        with ExitStack() as stack:
            view = SegmentView(seg, None, stack, open_source=open_source)
            starts = starts_from_index(view, targets)
            if starts is None:
                starts = _starts_from_scan(view.log, targets)
            return [(p, _first_offset_at(view.log_source, p)) for p in starts]
    except KdumpError:
        return []


def _first_offset_at(source: ByteSource, pos: int) -> int | None:
    offset, _length, magic = ENTRY_PREFIX.unpack_from(source.read(pos, ENTRY_PREFIX.size))
    # A legacy wrapper's offset field is its last inner offset, not a lower bound.
    return int(offset) if magic == 2 else None


def starts_from_index(view: SegmentView, targets: list[int]) -> list[int] | None:
    """The checked batch start at or before each target position, in rising order, from the
    offset index; None when the index cannot be used (missing, damaged, an entry not a batch start).
    """
    starts: list[int] = []
    for t in targets:
        found = view.batch_start_at_or_before(t)
        if view.ledger.fallbacks:
            return None
        if found is None:
            continue
        p = found[0]
        if p <= (starts[-1] if starts else 0):
            continue
        starts.append(p)
    return starts or None


def _starts_from_index(buf: memoryview, seg: Segment, targets: list[int]) -> list[int] | None:
    """`starts_from_index` over a log already mapped by the caller."""
    assert seg.log is not None
    with ExitStack() as stack:
        view = SegmentView(seg, None, stack, log_source=InMemory(buf, str(seg.log)))
        return starts_from_index(view, targets)


def _starts_from_scan(buf: memoryview, targets: list[int]) -> list[int]:
    """Walk the length fields from the start; take the first checksum-valid batch at or after each target.

    Where a length field cannot be right, the walk resumes at the next plausible batch, as the
    forensic scan does, so damage does not leave the rest of the segment to a single task.
    """
    size = len(buf)
    starts: list[int] = []
    ti = 0
    pos = 0
    while ti < len(targets) and pos + 17 < size:
        _offset, length, _magic = ENTRY_PREFIX.unpack_from(buf, pos)
        if pos >= targets[ti] and plausible_entry_at(buf, pos, size):
            starts.append(pos)
            while ti < len(targets) and targets[ti] <= pos:
                ti += 1
        if length >= 14 and pos + 12 + length <= size:
            pos += 12 + length
            continue
        nxt = find_next_entry(buf, pos + 1, size)
        if nxt is None:
            break
        pos = nxt
    return starts


def _file_size(path: Path | None) -> int:
    try:
        return path.stat().st_size if path is not None else 0
    except OSError:
        return 0


def _log_bytes(segments: Iterable[Segment]) -> int:
    return sum(_file_size(s.log) for s in segments)


def plan_findings(options: ReadOptions) -> list[FindingsUnit]:
    """The tasks of a findings read: verify's units (a partition directory, or a file given alone)."""
    units: list[FindingsUnit] = []
    for target in _resolve(options.paths):
        if isinstance(target, tuple):
            units.append(FindingsUnit(target[0], "unreadable", target[0], error=target[1]))
            continue
        if target.kind == "file":
            size = _log_bytes(segments_of_file(target.path))
            units.append(FindingsUnit(target.given, "file", str(target.path), size=size))
            continue
        try:
            parts = target.partitions()
        except KdumpError as exc:
            units.append(FindingsUnit(target.given, "unreadable", target.given, error=str(exc)))
            continue
        units.extend(
            FindingsUnit(str(p.path), "partition", str(p.path), p, size=_log_bytes(p.segments)) for p in parts
        )
        # A log dir's (and directory of log dirs') own entries, reported after its partitions as
        # local verify does.
        units.extend(
            FindingsUnit(str(t.path), "entries", str(t.path), problems=t.problems, scope=t.kind)
            for t in expand([target])
            if t.problems
        )
    return units
