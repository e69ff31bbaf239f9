"""Index files the broker rebuilds or creates at its next start: what a running or killed broker
leaves in them is no error.

Kafka truncates a segment's indexes (`LogSegment.truncateTo` -> `OffsetIndex`/`TimeIndex.truncateTo` ->
`AbstractIndex.truncateToEntries0`) by moving the mmap position and entry count only: the entries past
it stay in the file. The active segment's index is preallocated and only trimmed at roll or clean
shutdown (`AbstractIndex.trimToValidSize`), so after a follower truncation (or any truncation of the
active segment) a running or killed broker's active index holds stale entries past the log end until
appends overwrite them. Without the clean-shutdown marker the broker recovers every segment from its
recovery point on (`LogLoader.recoverLog`: `segments.values(recoveryPointCheckpoint, ...)`), and
`LogSegment.recover` resets both indexes and rebuilds them from the log: those entries are never read.
With the marker, or below the recovery point, the broker loads the index as it is: an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from kdump.findings import Finding, Severity
from kdump.formats.filenames import CLEAN_SHUTDOWN_FILE
from kdump.model.partition import PartitionDir
from kdump.ops.checks.segment import SegmentResult
from kdump.ops.checks.time_index import recovered_from

STALE_CODES = frozenset({"index-entry-beyond-log", "time-index-offset-not-found"})


def _recovered_files(results: Sequence[SegmentResult], recovery: int) -> set[str]:
    """The index files of the segments recovered from `recovery` on: a segment is recovered when it
    holds offsets at or past the recovery point (the next segment starts past it, or it is the last)."""
    files: set[str] = set()
    for i, r in enumerate(results):
        if i + 1 < len(results) and results[i + 1].segment.base_offset <= recovery:
            continue
        files.update(str(p) for p in (r.segment.index, r.segment.timeindex) if p is not None)
    return files


def soften_recovered_indexes(
    findings: list[Finding], results: Sequence[SegmentResult], partition: Path | None
) -> list[Finding]:
    """Findings with stale index entries of recovered segments turned into infos that say so."""
    if not any(f.code in STALE_CODES for f in findings):
        return findings
    recovery = recovered_from(partition)
    if recovery is None:
        return findings
    files = _recovered_files(results, recovery)
    return [
        replace(
            f,
            severity=Severity.INFO,
            message=f.message
            + "; the broker recovers this segment at its next start (no clean-shutdown marker, "
            "at or past the recovery point) and rebuilds this index from the log: no repair needed",
            details={**f.details, "rebuilt_at_recovery": True},
        )
        if f.code in STALE_CODES and f.file in files
        else f
        for f in findings
    ]


LAZY_INDEX_BYTES = 4096


def lazy_active_index(part: PartitionDir, results: Sequence[SegmentResult]) -> list[str]:
    """The active segment's missing `.index` where a healthy broker leaves none. Kafka creates the
    offset index lazily (`LazyIndex`): on the first index entry, after `index.interval.bytes` appended,
    or the first read through it; a follower's small active segment of a running or killed broker has
    none. A clean shutdown flushes every index (`LogSegment.flush`), so with the clean-shutdown marker
    the file is missing indeed; without it the broker recovers that segment at start, rebuilding the
    index from those few bytes, with nothing to lose."""
    last = results[-1] if results else None
    if last is None or last.summary is None or last.segment.log is None or last.segment.index is not None:
        return []
    if last.summary.size > LAZY_INDEX_BYTES or part.beside(CLEAN_SHUTDOWN_FILE):
        return []
    return [str(last.segment.log.with_suffix(".index"))]
