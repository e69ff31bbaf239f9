"""Stale index entries past the log end of a segment the broker recovers at start (no clean-shutdown
marker, at or past the recovery point) are what Kafka's truncation leaves (`truncateToEntries0` moves
the mmap position only): the broker rebuilds those indexes (`LogSegment.recover`), so no error. With the
marker, or below the recovery point, the broker loads them as they are: an error."""

from __future__ import annotations

from pathlib import Path

from builders import build_partition
from corruptions import index_entries, truncate_at

from kdump.findings import Finding, Severity
from kdump.model.log_dir import discover
from kdump.ops.checks.verify import VerifyOptions, verify_targets

STALE = {"index-entry-beyond-log", "time-index-offset-not-found"}


def _verify(path: Path) -> list[Finding]:
    reports = list(verify_targets([discover(str(path))], VerifyOptions(jobs=1)))
    return [f for r in reports for f in r.findings]


def _truncated_active(tmp_path: Path, recovery_point: int) -> tuple[Path, list[Path]]:
    """Three segments; the last one's log cut at its last indexed batch, its indexes left as they were
    (what `LogSegment.truncateTo` leaves in the active segment's preallocated index files)."""
    part = tmp_path / "t-0"
    logs = build_partition(part, segments=3, batches_per_segment=12, records_per_batch=10, value_size=200)
    last = logs[-1]
    index = last.with_suffix(".index")
    _, pos = index_entries(index.read_bytes())[-1]
    truncate_at(pos).apply(last)
    (tmp_path / "recovery-point-offset-checkpoint").write_text(f"0\n1\nt 0 {recovery_point}\n")
    return part, logs


def _stale(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.code in STALE]


def test_stale_entries_of_the_recovered_active_segment_are_info(tmp_path: Path) -> None:
    part, logs = _truncated_active(tmp_path, recovery_point=0)
    (tmp_path / "recovery-point-offset-checkpoint").write_text(f"0\n1\nt 0 {logs_base(tmp_path, 2)}\n")
    stale = _stale(_verify(part))
    assert {f.code for f in stale} == STALE
    assert {Path(f.file).name for f in stale} == {
        logs[-1].with_suffix(s).name for s in (".index", ".timeindex")
    }
    assert all(f.severity == Severity.INFO for f in stale)
    assert all("rebuilds this index" in f.message and f.details["rebuilt_at_recovery"] for f in stale)
    assert [f for f in _verify(part) if f.severity >= Severity.WARNING] == []


def logs_base(tmp_path: Path, i: int) -> int:
    """The base offset of the i-th segment of the built partition (from its file name)."""
    names = sorted(p.name for p in (tmp_path / "t-0").glob("*.log"))
    return int(names[i].split(".")[0])


def test_with_the_clean_shutdown_marker_they_stay_errors(tmp_path: Path) -> None:
    part, _ = _truncated_active(tmp_path, recovery_point=0)
    assert all(f.severity == Severity.INFO for f in _stale(_verify(part)))
    (tmp_path / ".kafka_cleanshutdown").write_text("")
    stale = _stale(_verify(part))
    assert {f.code for f in stale} == STALE
    assert all(f.severity == Severity.ERROR for f in stale)


def test_below_the_recovery_point_they_stay_errors(tmp_path: Path) -> None:
    """A recovery point past the segment: the broker loads its indexes as they are."""
    part, logs = _truncated_active(tmp_path, recovery_point=0)
    # cut a closed segment too: the recovery point at the last segment's base leaves it unrecovered
    middle = logs[1]
    _, pos = index_entries(middle.with_suffix(".index").read_bytes())[-1]
    truncate_at(pos).apply(middle)
    (tmp_path / "recovery-point-offset-checkpoint").write_text(f"0\n1\nt 0 {logs_base(tmp_path, 2)}\n")
    by_file = {(Path(f.file).name, f.severity) for f in _stale(_verify(part))}
    assert (middle.with_suffix(".index").name, Severity.ERROR) in by_file
    assert (logs[-1].with_suffix(".index").name, Severity.INFO) in by_file
