"""`verify`: every integrity check over segments, partitions and log dirs, in parallel.

Segments are checked independently (`check_segment`, spread over a process pool); the checks that
span segments (overlaps, transaction index, leader epochs, snapshots, leftovers) then run per
partition over the segments' results. Nothing is written anywhere.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kdump.errors import DecodeError, KdumpError
from kdump.findings import Finding, Severity, make_finding
from kdump.formats import checkpoints
from kdump.formats.producer_snapshot import decode_producer_snapshot
from kdump.formats.txn_index import AbortedTxn, TxnIndexContents
from kdump.model.log_dir import Target
from kdump.model.partition import PartitionDir
from kdump.model.segment import Segment
from kdump.ops.files import file_kind, segment_base_offset
from kdump.ops.segment_check import TXN_ABORT, TXN_DATA, SegmentResult, check_segment
from kdump.scan.index_checks import check_txn_index
from kdump.scan.source import read_small_file
from kdump.store.queries import listing_findings, partition_listing_findings

# Below this much log data a process pool costs more than it saves.
PARALLEL_THRESHOLD_BYTES = 16 << 20

Progress = Callable[[int], None]


@dataclass(frozen=True, slots=True)
class VerifyOptions:
    """How to verify."""

    deep: bool = False
    max_bytes: int | None = None
    jobs: int = 0  # 0: all cores


@dataclass(slots=True)
class PartitionReport:
    """Everything verify found in one partition directory (or one file given on its own)."""

    label: str
    kind: str  # "partition" | "file"
    findings: list[Finding] = field(default_factory=list)
    segments: int = 0
    batches: int = 0
    records: int = 0
    size: int = 0
    valid_bytes: int = 0
    first_offset: int | None = None
    last_offset: int | None = None

    def count(self, severity: Severity) -> int:
        """How many findings have this severity."""
        return sum(1 for f in self.findings if f.severity == severity)

    def worst(self) -> Severity | None:
        """The highest severity found, or None when clean."""
        return max((f.severity for f in self.findings), default=None)


def verify_targets(
    targets: Iterable[Target], options: VerifyOptions, progress: Progress | None = None
) -> Iterator[PartitionReport]:
    """Verify every target; yields one report per partition (or per file given alone), in order."""
    units: list[tuple[str, str, Path, PartitionDir | None, list[Segment]]] = []
    for target in targets:
        # What listing a stored tree found wrong (a damaged tarball) is a report of its own, first.
        damage = listing_findings(target.path, partitions=[p.path for p in target.partitions()])
        if damage:
            yield PartitionReport(target.given, "file", damage)
        if target.kind == "file":
            units.append((target.given, "file", target.path, None, segments_of_file(target.path)))
            continue
        for part in target.partitions():
            units.append((str(part.path), "partition", part.path, part, part.segments))
    all_segments = [s for *_, segs in units for s in segs]
    results = iter(check_segments(all_segments, options, progress))
    for label, _kind, path, unit_part, segs in units:
        seg_results = [next(results) for _ in segs]
        if unit_part is not None:
            yield partition_report(unit_part, seg_results, label)
        else:
            yield file_report(label, path, seg_results)


def segments_of_file(path: Path) -> list[Segment]:
    """The segment a file given alone belongs to (its .log, or the .log beside an index file)."""
    kind = file_kind(path)
    base = segment_base_offset(path)
    if kind in ("index", "timeindex", "txnindex") and base is not None and path.name.endswith(f".{kind}"):
        # An index given on its own can only be judged against the batches it points into: check
        # its segment (before, `kdump verify x.index` checked nothing and said "ok" whatever the
        # index held). Without its .log there is nothing to check it against.
        log = path.with_name(f"{path.name.split('.')[0]}.log")
        if not log.is_file():
            return []
        path, kind = log, "log"
    if kind != "log" or base is None:
        return []
    if not path.name.endswith(".log"):
        return [Segment(base, path, suffix=path.name.rsplit(".", 1)[-1])]

    def sibling(ext: str) -> Path | None:
        p = path.with_suffix(ext)
        return p if p.is_file() else None

    return [Segment(base, path, sibling(".index"), sibling(".timeindex"), sibling(".txnindex"))]


def _check_one(args: tuple[Segment, bool, int | None, bool]) -> SegmentResult:
    segment, deep, max_bytes, for_rebuild = args
    if for_rebuild:
        # reindex needs the batches, not a judgement of the index files it is about to replace.
        return check_segment(segment, deep=deep, max_bytes=max_bytes, keep_spans=True, check_indexes=False)
    return check_segment(segment, deep=deep, max_bytes=max_bytes)


def _segment_size(s: Segment) -> int:
    try:
        return s.log.stat().st_size if s.log is not None else 0
    except OSError:
        return 0


def check_segments(
    segments: Sequence[Segment],
    options: VerifyOptions,
    progress: Progress | None = None,
    *,
    for_rebuild: bool = False,
) -> Iterator[SegmentResult]:
    """Check segments in order, on every core when there is enough data to pay for the processes."""
    jobs = options.jobs or os.cpu_count() or 1
    tasks = [(s, options.deep, options.max_bytes, for_rebuild) for s in segments]
    sizes = [_segment_size(s) for s in segments]
    if jobs > 1 and len(tasks) > 1 and sum(sizes) >= PARALLEL_THRESHOLD_BYTES:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=ctx) as pool:
            for result, size in zip(pool.map(_check_one, tasks), sizes, strict=True):
                if progress is not None:
                    progress(size)
                yield result
        return
    for task, size in zip(tasks, sizes, strict=True):
        result = _check_one(task)
        if progress is not None:
            progress(size)
        yield result


def _tally(report: PartitionReport, results: Sequence[SegmentResult]) -> None:
    for r in results:
        report.findings.extend(r.findings)
        s = r.summary
        if s is None:
            continue
        report.segments += 1
        report.batches += s.batch_count
        report.records += s.record_count
        report.size += s.size
        report.valid_bytes += s.valid_bytes
        if s.first_offset is not None and report.first_offset is None:
            report.first_offset = s.first_offset
        if s.last_offset is not None:
            report.last_offset = s.last_offset


def file_report(label: str, path: Path, results: Sequence[SegmentResult]) -> PartitionReport:
    """A report for one file given on its own."""
    report = PartitionReport(label, "file")
    _tally(report, results)
    kind = file_kind(path)
    if results:
        return report
    if kind == "snapshot":
        report.findings.extend(_check_snapshot(path))
    elif kind in ("leader-epoch-checkpoint", "offset-checkpoint", "partition-metadata", "meta-properties"):
        report.findings.extend(_check_text_state(path, kind))
    return report


def partition_report(part: PartitionDir, results: Sequence[SegmentResult], label: str) -> PartitionReport:
    """Run the partition-level checks over the segments' results."""
    report = PartitionReport(label, "partition")
    _tally(report, results)
    f = report.findings
    f.extend(_check_overlaps(results))
    f.extend(_check_transactions(results))
    f.extend(_check_leader_epochs(part, results))
    for p in part.leftovers:
        f.append(
            make_finding(
                "leftover-file", str(p), f"{p.name} was left by an unfinished clean, split or deletion"
            )
        )
    for p in part.orphan_indexes:
        f.append(
            make_finding("orphan-index", str(p), f"{p.name} has no {p.name.split('.')[0]}.log beside it")
        )
    for snap in part.snapshots.values():
        f.extend(_check_snapshot(snap))
    f.extend(partition_listing_findings(part.path))
    if part.partition_metadata is not None:
        f.extend(_check_text_state(part.partition_metadata, "partition-metadata"))
    return report


def _check_overlaps(results: Sequence[SegmentResult]) -> Iterator[Finding]:
    for a, b in itertools.pairwise(results):
        if a.summary is None or a.summary.last_offset is None:
            continue
        if a.summary.last_offset >= b.segment.base_offset:
            yield make_finding(
                "segment-overlap",
                str(a.segment.log),
                f"segment {a.segment.name} ends at offset {a.summary.last_offset}, at or above the next "
                f"segment's base offset {b.segment.base_offset}",
                offset=b.segment.base_offset,
                next_segment=str(b.segment.log),
            )


def expected_aborts(results: Sequence[SegmentResult]) -> list[list[AbortedTxn]]:
    """The aborted-transaction entries each segment's .txnindex should hold, from the markers.

    Mirrors `ProducerStateManager`: a transaction starts at its producer's first transactional
    batch; at its ABORT marker the entry is (producer id, first offset, marker offset, last stable
    offset), the last stable offset being the first offset of the earliest other open transaction,
    or the marker offset + 1 when none is open. Unknown values (a transaction begun before the
    oldest segment kept) are -1 and are not compared.
    """
    ongoing: dict[int, int] = {}
    unknown_open = False
    per_segment: list[list[AbortedTxn]] = []
    for r in results:
        mine: list[AbortedTxn] = []
        for kind, pid, offset in r.txn_events:
            if kind == TXN_DATA:
                ongoing.setdefault(pid, offset)
                continue
            first = ongoing.pop(pid, None)
            if first is None:
                unknown_open = True
            if kind == TXN_ABORT:
                others = list(ongoing.values())
                lso = -1 if unknown_open else (min(others) if others else offset + 1)
                mine.append(AbortedTxn(0, pid, -1 if first is None else first, offset, lso))
        per_segment.append(mine)
    return per_segment


def _check_transactions(results: Sequence[SegmentResult]) -> Iterator[Finding]:
    for r, expected in zip(results, expected_aborts(results), strict=True):
        if r.summary is None:
            continue
        if r.txn_index is None:
            if expected:
                label = str(r.segment.log.with_suffix(".txnindex")) if r.segment.log else r.segment.name
                yield make_finding(
                    "txn-index-mismatch",
                    label,
                    f"{len(expected)} aborted transactions end in this segment but it has no .txnindex",
                    offset=expected[0].last_offset,
                )
            continue
        label = str(r.segment.txnindex)
        yield from check_txn_index(r.txn_index or TxnIndexContents((), 0), expected, label)


def _check_leader_epochs(part: PartitionDir, results: Sequence[SegmentResult]) -> Iterator[Finding]:
    path = part.leader_epoch_checkpoint
    if path is None:
        return
    try:
        checkpoint = checkpoints.decode_leader_epoch_checkpoint(read_small_file(path))
    except (DecodeError, KdumpError, ValueError) as exc:
        yield make_finding("checkpoint-corrupt", str(path), str(exc))
        return
    starts = {e.epoch: e.start_offset for e in checkpoint.entries}
    seen: dict[int, int] = {}
    for r in results:
        for epoch, first in r.epochs:
            seen.setdefault(epoch, first)
    log_end = max(
        (r.summary.last_offset for r in results if r.summary and r.summary.last_offset is not None),
        default=None,
    )
    for epoch, first in sorted(seen.items()):
        if epoch not in starts:
            yield make_finding(
                "leader-epoch-mismatch",
                str(path),
                f"batches from offset {first} carry leader epoch {epoch}, which the checkpoint does not list",
                offset=first,
            )
        elif starts[epoch] > first:
            yield make_finding(
                "leader-epoch-mismatch",
                str(path),
                f"the checkpoint starts epoch {epoch} at offset {starts[epoch]}, but batches carry it from {first}",
                offset=first,
            )
    if log_end is not None:
        for e in checkpoint.entries:
            if e.start_offset > log_end + 1:
                yield make_finding(
                    "leader-epoch-mismatch",
                    str(path),
                    f"the checkpoint starts epoch {e.epoch} at offset {e.start_offset}, past the log end {log_end + 1}",
                    offset=e.start_offset,
                )


def _check_snapshot(path: Path) -> list[Finding]:
    try:
        snap = decode_producer_snapshot(read_small_file(path))
    except (DecodeError, ValueError) as exc:
        return [make_finding("snapshot-corrupt", str(path), str(exc))]
    except KdumpError as exc:
        return [make_finding("unreadable-file", str(path), str(exc))]
    if not snap.crc_ok:
        return [
            make_finding(
                "snapshot-corrupt",
                str(path),
                f"stored crc {snap.stored_crc} differs from computed crc {snap.computed_crc}",
                position=2,
            )
        ]
    return []


def _check_text_state(path: Path, kind: str) -> list[Finding]:
    decoders = {
        "leader-epoch-checkpoint": checkpoints.decode_leader_epoch_checkpoint,
        "offset-checkpoint": checkpoints.decode_offset_checkpoint,
        "partition-metadata": checkpoints.decode_partition_metadata,
        "meta-properties": checkpoints.decode_meta_properties,
    }
    try:
        decoders[kind](read_small_file(path))
    except (DecodeError, ValueError) as exc:
        return [make_finding("checkpoint-corrupt", str(path), str(exc))]
    except KdumpError as exc:
        return [make_finding("unreadable-file", str(path), str(exc))]
    return []
