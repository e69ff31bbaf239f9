"""`reindex`: rebuild `.index`, `.timeindex` and `.txnindex` exactly as the broker's recovery does.

`build_segment_indexes` mirrors `LogSegment.recover` over the valid prefix of the log (the batches
recovery keeps):

- for each batch, first the largest timestamp so far is updated from its header
  (`maxTimestamp`, with the batch's last offset);
- then, when more than `index.interval.bytes` have accumulated since the last entry
  (`validBytes - lastIndexEntry > interval`), an offset index entry (last offset of the batch,
  position of the batch) is added, and a time index entry (largest timestamp so far, its offset)
  when that timestamp is above the last entry's (`TimeIndex.maybeAppend`);
- at the end the time index gets its final entry the same way, which every closed segment has.

The first batch of a segment is never indexed. Files hold exactly entries x entry size (no
preallocated tail). The `.txnindex` is rebuilt from the ABORT markers with producer state carried
across the partition's segments, as recovery does.
"""

from __future__ import annotations

import array
import dataclasses
import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kdump.errors import KdumpError
from kdump.findings import CATALOG, Finding, Severity
from kdump.formats import fast_walk
from kdump.formats.offset_index import (
    OffsetIndexContents,
    OffsetIndexEntry,
    decode_offset_index,
    encode_offset_index,
)
from kdump.formats.time_index import TimeIndexContents, TimeIndexEntry, decode_time_index, encode_time_index
from kdump.formats.txn_index import AbortedTxn, decode_txn_index, encode_txn_index
from kdump.model.log_dir import Target
from kdump.model.partition import PartitionDir
from kdump.model.segment import Segment
from kdump.ops.checks.segment import SegmentResult
from kdump.ops.checks.transactions import check_transactions, expected_aborts
from kdump.ops.checks.verify import Progress, VerifyOptions, check_segments
from kdump.ops.common.topic_config import IntervalResolver
from kdump.ops.repair.faults import undone_on_fault
from kdump.ops.repair.preflight import check_room, reindex_needs
from kdump.ops.repair.safety import Journal, default_backup_dir, log_dir_lock
from kdump.scan.index_checks import BatchSpan

DEFAULT_INDEX_INTERVAL_BYTES = 4096


@dataclass(frozen=True, slots=True)
class SegmentSizes:
    """A batch span plus its size, as index building needs."""

    span: BatchSpan
    size: int


def build_segment_indexes(
    batches: Iterable[tuple[int, int, int, int]], interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
) -> tuple[list[OffsetIndexEntry], list[TimeIndexEntry]]:
    """Index entries for a segment's valid batches, as `LogSegment.recover` writes them.

    Args:
        batches: (position, size, last offset, max timestamp) of each valid batch, in order.
        interval_bytes: the topic's `index.interval.bytes`.
    """
    offset_entries: list[OffsetIndexEntry] = []
    time_entries: list[TimeIndexEntry] = []
    max_ts = -1
    offset_of_max = -1
    last_time_ts = -1
    last_entry_position = 0
    for position, size, last_offset, max_timestamp in batches:
        if max_timestamp > max_ts:
            max_ts = max_timestamp
            offset_of_max = last_offset
        if position - last_entry_position > interval_bytes:
            offset_entries.append(OffsetIndexEntry(last_offset, position))
            if max_ts > last_time_ts:
                time_entries.append(TimeIndexEntry(max_ts, offset_of_max))
                last_time_ts = max_ts
            last_entry_position = position
        del size
    if max_ts > last_time_ts:
        time_entries.append(TimeIndexEntry(max_ts, offset_of_max))
    return offset_entries, time_entries


@dataclass(frozen=True, slots=True)
class FileChange:
    """How one index file would change."""

    path: Path
    kind: str  # "index" | "timeindex" | "txnindex"
    exists: bool
    old_entries: int
    new_entries: int
    missing: int  # entries the rebuild has that the file lacks
    extra: int  # entries the file has that the rebuild does not
    changed: int  # same slot, different entry
    stale: int  # entries pointing past the valid log end
    preallocated_slots: int
    data: bytes = field(repr=False)

    @property
    def describe(self) -> str:
        """One line saying what differs."""
        if not self.exists:
            return f"create {self.kind} with {self.new_entries} entries"
        parts = [
            f"{n} {what}"
            for n, what in (
                (self.missing, "missing"),
                (self.extra, "extra"),
                (self.changed, "changed"),
                (self.stale, "stale beyond the log end"),
            )
            if n
        ]
        if self.preallocated_slots:
            parts.append(f"{self.preallocated_slots} preallocated slots trimmed")
        if not parts:
            parts.append("the same entries in another order")
        return f"{self.kind}: {self.old_entries} -> {self.new_entries} entries ({', '.join(parts)})"


@dataclass(frozen=True, slots=True)
class SegmentPlan:
    """The rebuild of one segment's indexes."""

    segment: Segment
    valid_bytes: int
    changes: tuple[FileChange, ...]


@dataclass(frozen=True, slots=True)
class ReindexPlan:
    """What reindex would write, per partition (or segment) given."""

    label: str
    root: Path
    log_dir: Path | None
    segments: tuple[SegmentPlan, ...]
    interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    interval_source: str = "the broker default"
    # What stopped a segment from being planned (a log that could not be read): never "nothing to do".
    problems: tuple[Finding, ...] = ()
    # Index files left as they are although the recovery rule would write them otherwise, because
    # verify finds nothing wrong with them (the broker's append-time entries); see `rebuild_all`.
    kept: int = 0
    # Partition files rebuilt beside the indexes: an unreadable leader-epoch-checkpoint.
    extra: tuple[FileChange, ...] = ()
    rebuild_all: bool = False  # --rebuild-all: every index the recovery rule writes otherwise

    @property
    def changes(self) -> list[FileChange]:
        """Every file that would change."""
        return [*(c for s in self.segments for c in s.changes), *self.extra]


def _diff(old: Sequence[tuple[int, int]], new: Sequence[tuple[int, int]]) -> tuple[int, int, int]:
    old_set, new_set = set(old), set(new)
    changed = sum(
        1 for a, b in zip(old, new, strict=False) if a != b and a not in new_set and b not in old_set
    )
    missing = len(new_set - old_set) - changed
    extra = len(old_set - new_set) - changed
    return max(missing, 0), max(extra, 0), changed


def _read(path: Path | None) -> bytes | None:
    if path is None or not path.exists():
        return None
    try:
        return path.read_bytes()
    except OSError as exc:
        raise KdumpError(f"cannot read {path}: {exc.strerror}") from exc


def _index_change(
    path: Path,
    kind: str,
    new: bytes,
    new_entries_of: Callable[[], list[tuple[int, int]]],
    decode: Callable[[bytes], OffsetIndexContents | TimeIndexContents],
    is_stale: Callable[[tuple[int, int]], bool],
) -> FileChange | None:
    """How an offset or time index file differs from its rebuild (None when it does not)."""
    old = _read(path if path.exists() else None)
    if old == new:
        return None
    new_entries = new_entries_of()
    old_entries: list[tuple[int, int]] = []
    prealloc = 0
    if old is not None:
        contents = decode(old)
        old_entries = [(a, b) for a, b in contents.entries]
        prealloc = contents.zero_tail_entries
    missing, extra, changed = _diff(old_entries, new_entries)
    stale = sum(1 for e in old_entries if is_stale(e))
    return FileChange(
        path,
        kind,
        old is not None,
        len(old_entries),
        len(new_entries),
        missing,
        extra,
        changed,
        stale,
        prealloc,
        new,
    )


def _rebuilt(result: SegmentResult, interval_bytes: int) -> tuple[bytes, bytes]:
    """The `.index` and `.timeindex` bytes the recovery rule writes for the segment's valid batches:
    built in C from the columns where the compiled walk is built, else by `build_segment_indexes`."""
    seg = result.segment
    positions, _bases, lasts, max_ts = result.columns or ((), (), (), ())
    walk = fast_walk.compiled
    if (
        walk is not None
        and all(isinstance(c, array.array) for c in (positions, lasts, max_ts))
        and 0 <= interval_bytes < 1 << 63
        and 0 <= seg.base_offset < 1 << 63
    ):
        built: tuple[bytes, bytes] | None = walk.build_indexes(
            positions, lasts, max_ts, interval_bytes, seg.base_offset
        )
        if built is not None:
            return built
    spans = list(zip(positions, itertools.repeat(0), lasts, max_ts))
    offset_entries, time_entries = build_segment_indexes(spans, interval_bytes)
    return encode_offset_index(offset_entries, seg.base_offset), encode_time_index(
        time_entries, seg.base_offset
    )


def plan_segment(result: SegmentResult, aborts: Sequence[AbortedTxn], interval_bytes: int) -> SegmentPlan:
    """Compare a segment's index files with their rebuild."""
    seg = result.segment
    assert seg.log is not None
    assert result.summary is not None
    valid = result.summary.valid_bytes
    index_bytes, time_bytes = _rebuilt(result, interval_bytes)
    changes: list[FileChange] = []

    last = result.summary.last_offset
    index_change = _index_change(
        seg.index or seg.log.with_suffix(".index"),
        "index",
        index_bytes,
        lambda: [(e.offset, e.position) for e in decode_offset_index(index_bytes, seg.base_offset).entries],
        lambda data: decode_offset_index(data, seg.base_offset),
        # an offset index entry is stale when its position is past the valid log
        lambda entry: entry[1] >= valid,
    )
    time_change = _index_change(
        seg.timeindex or seg.log.with_suffix(".timeindex"),
        "timeindex",
        time_bytes,
        lambda: [(e.timestamp, e.offset) for e in decode_time_index(time_bytes, seg.base_offset).entries],
        lambda data: decode_time_index(data, seg.base_offset),
        # a time index entry is stale when its offset is past the valid log's last offset
        lambda entry: last is not None and entry[1] > last,
    )
    changes.extend(c for c in (index_change, time_change) if c is not None)

    txn_path = seg.txnindex or seg.log.with_suffix(".txnindex")
    old = _read(seg.txnindex)
    if old is not None or aborts:
        new = encode_txn_index(aborts)
        if old != new:
            old_a = list(decode_txn_index(old).entries) if old is not None else []
            missing, extra, changed = _diff(
                [(a.producer_id, a.last_offset) for a in old_a],
                [(a.producer_id, a.last_offset) for a in aborts],
            )
            changes.append(
                FileChange(
                    txn_path,
                    "txnindex",
                    old is not None,
                    len(old_a),
                    len(aborts),
                    missing,
                    extra,
                    changed,
                    0,
                    0,
                    new,
                )
            )
    return SegmentPlan(seg, valid, tuple(changes))


def plan_reindex(
    target: Target,
    *,
    interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    progress: Progress | None = None,
    intervals: IntervalResolver | None = None,
    rebuild_all: bool = False,
) -> list[ReindexPlan]:
    """Plan the rebuild for a target: a segment file, a partition directory or a log dir.

    With `intervals`, each partition's `index.interval.bytes` is resolved on its own (the topic's
    config from a KRaft metadata log when one is at hand); otherwise `interval_bytes` serves all.
    Only index files that verify finds wrong or missing are planned, unless `rebuild_all`: the
    broker writes entries on append (legacy conversion, follower appends, the cleaner) that the
    recovery rule would place elsewhere, and those files are correct as they are.
    """
    plans: list[ReindexPlan] = []
    source = "--index-interval-bytes"
    if target.kind == "file":
        if intervals is not None:
            interval_bytes, source = intervals.for_partition(
                target.path.resolve().parent, target.log_dir_path
            )
        # A file named like no segment is not reindexed: the broker would not load its indexes.
        segments = list(target.segments) if target.note is None else []
        results = list(
            check_segments(segments, VerifyOptions(), for_rebuild=True, judge_indexes=not rebuild_all)
        )
        # A lone segment: transactions that began in earlier segments are unknown (-1 fields).
        aborts = expected_aborts(results)
        plan = _plan(
            target.given,
            target.path.parent,
            target.log_dir_path,
            results,
            aborts,
            interval_bytes,
            rebuild_all,
        )
        plans.append(dataclasses.replace(plan, interval_source=source))
        return plans
    for part in target.partitions():
        if intervals is not None:
            interval_bytes, source = intervals.for_partition(part.path, target.log_dir_path)
        plan = plan_partition(
            part,
            target.log_dir_path,
            interval_bytes=interval_bytes,
            progress=progress,
            rebuild_all=rebuild_all,
        )
        plans.append(dataclasses.replace(plan, interval_source=source))
    return plans


def plan_partition(
    part: PartitionDir,
    log_dir: Path | None,
    *,
    interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
    progress: Progress | None = None,
    rebuild_all: bool = False,
) -> ReindexPlan:
    """Plan the rebuild of every segment of a partition (of its wrong or missing index files only,
    unless `rebuild_all`)."""
    results = list(
        check_segments(
            part.segments, VerifyOptions(), progress, for_rebuild=True, judge_indexes=not rebuild_all
        )
    )
    plan = _plan(
        str(part.path), part.path, log_dir, results, expected_aborts(results), interval_bytes, rebuild_all
    )
    from kdump.ops.repair.epoch_rebuild import KIND, rebuild  # an unreadable leader-epoch-checkpoint

    got = rebuild(part, results)
    extra = () if got is None else (FileChange(got[0], KIND, True, 0, got[1], got[1], 0, 0, 0, 0, got[2]),)
    return dataclasses.replace(plan, problems=(*part.problems, *plan.problems), extra=extra)


def _plan(
    label: str,
    root: Path,
    log_dir: Path | None,
    results: Sequence[SegmentResult],
    aborts: Sequence[Sequence[AbortedTxn]],
    interval_bytes: int,
    rebuild_all: bool,
) -> ReindexPlan:
    segs = []
    problems: list[Finding] = []
    log_start = next(
        (r.summary.first_offset for r in results if r.summary and r.summary.first_offset is not None), 0
    )
    wrong = None if rebuild_all else judged_wrong(results, root)
    kept = 0
    for r, a in zip(results, aborts, strict=True):
        if r.summary is None:
            problems.extend(f for f in r.findings if f.code == "unreadable-file")
            continue
        seg = plan_segment(r, resolve_aborts(a, r, log_start), interval_bytes)
        if wrong is not None:
            changes = tuple(c for c in seg.changes if str(c.path) in wrong)
            kept += len(seg.changes) - len(changes)
            seg = dataclasses.replace(seg, changes=changes)
        segs.append(seg)
    return ReindexPlan(
        label,
        root,
        log_dir,
        tuple(segs),
        interval_bytes,
        problems=tuple(problems),
        kept=kept,
        rebuild_all=rebuild_all,
    )


_INDEX_PLACES = frozenset({"index", "timeindex", "txnindex"})


def judged_wrong(results: Sequence[SegmentResult], partition: Path | None = None) -> set[str]:
    """The index files verify finds wrong or missing (a warning or worse about them)."""
    from kdump.ops.checks.time_index import check_closed_time_indexes

    findings = [
        *(f for r in results for f in r.findings),
        *check_transactions(results),
        *check_closed_time_indexes(results, partition),
    ]
    return {
        f.file for f in findings if CATALOG[f.code].where in _INDEX_PLACES and f.severity >= Severity.WARNING
    }


def resolve_aborts(expected: Sequence[AbortedTxn], result: SegmentResult, log_start: int) -> list[AbortedTxn]:
    """Fill in what the log alone cannot tell (a transaction begun before the oldest segment kept).

    The existing `.txnindex` entry for the same producer and marker is kept where there is one;
    otherwise the transaction is taken to start at the log start offset, which is where the
    broker's READ_COMMITTED filtering can begin anyway.
    """
    existing = {
        (e.producer_id, e.last_offset): e for e in (result.txn_index.entries if result.txn_index else ())
    }
    out = []
    for e in expected:
        if e.first_offset >= 0 and e.last_stable_offset >= 0:
            out.append(e)
            continue
        old = existing.get((e.producer_id, e.last_offset))
        if old is not None:
            out.append(old)
        else:
            first = e.first_offset if e.first_offset >= 0 else log_start
            lso = e.last_stable_offset if e.last_stable_offset >= 0 else first
            out.append(AbortedTxn(0, e.producer_id, first, e.last_offset, lso))
    return out


@dataclass(frozen=True, slots=True)
class ApplyResult:
    """What an apply wrote, and where the backups are."""

    backup_dir: Path | None
    written: tuple[Path, ...]


def apply_reindex(plan: ReindexPlan, backup_dir: Path | None = None) -> ApplyResult:
    """Write the planned index files: backup, temporary file, fsync, rename, fsync the directory.

    Raises:
        CannotRepairError: the pre-flight found no room, a read-only or unwritable place; nothing changed.
        RepairFaultError: a write, rename or fsync failed part way; see kdump.ops.repair.faults.
    """
    changes = plan.changes
    if not changes:
        return ApplyResult(None, ())
    with log_dir_lock(plan.log_dir):
        bdir = backup_dir or default_backup_dir(plan.root, plan.log_dir)
        check_room("reindex", reindex_needs(changes, bdir))
        rerun: list[str | Path] = ["kdump", "reindex", "--apply"]
        if plan.rebuild_all:
            rerun.append("--rebuild-all")
        if backup_dir is not None:
            rerun += ["--backup-dir", backup_dir]
        rerun += ["--index-interval-bytes", str(plan.interval_bytes), plan.label]
        with undone_on_fault("reindex", plan.root, bdir, rerun):
            journal = Journal.create(bdir, plan.root, "reindex")
            written = []
            for change in changes:
                journal.replace(change.path, change.data)
                written.append(change.path)
        return ApplyResult(bdir, tuple(written))
