"""Copies that look healthy but that the broker then reads wrong: verify says what the broker will do.

- A closed segment's `.timeindex` overwritten with zeros (or cut short): the broker takes its last slot
  for the segment's largest timestamp, so ListOffsets by timestamp passes over the segment. An error,
  repaired by reindex (which then leaves the partition clean).
"""

from __future__ import annotations

from pathlib import Path

from builders import build_partition
from corruptions import truncate_index

from kdump.findings import Finding, Severity
from kdump.model.log_dir import discover
from kdump.ops.checks.verify import VerifyOptions, verify_targets
from kdump.ops.repair.reindex import apply_reindex, plan_reindex
from kdump.store.hints import repair_command

COVERED_CODES = {"time-index-max-timestamp-low", "transaction-open"}


def _findings(path: Path, floor: Severity = Severity.WARNING) -> list[Finding]:
    reports = verify_targets([discover(str(path))], VerifyOptions(jobs=1))
    return [f for r in reports for f in r.findings if f.severity >= floor]


def _partition(tmp_path: Path) -> tuple[Path, list[Path]]:
    part = tmp_path / "t-0"
    logs = build_partition(part, segments=3, batches_per_segment=12, records_per_batch=5)
    assert _findings(part) == []
    return part, logs


def test_a_zeroed_closed_time_index_is_an_error_reindex_repairs(tmp_path: Path) -> None:
    part, logs = _partition(tmp_path)
    ti = logs[0].with_suffix(".timeindex")
    ti.write_bytes(bytes(ti.stat().st_size))
    found = _findings(part)
    assert [(f.code, f.severity, f.file) for f in found] == [
        ("time-index-max-timestamp-low", Severity.ERROR, str(ti))
    ]
    assert repair_command(found[0]) == f"kdump reindex --apply {part}"
    for plan in plan_reindex(discover(str(part))):
        apply_reindex(plan)
    assert _findings(part) == []


def test_a_closed_time_index_cut_before_its_last_entry_is_an_error(tmp_path: Path) -> None:
    part, logs = _partition(tmp_path)
    ti = logs[1].with_suffix(".timeindex")
    truncate_index(drop_bytes=12, entry_size=12).apply(ti)
    assert [f.code for f in _findings(part)] == ["time-index-max-timestamp-low"]


def test_the_active_segments_zeroed_time_index_is_left_to_recovery(tmp_path: Path) -> None:
    part, logs = _partition(tmp_path)
    ti = logs[-1].with_suffix(".timeindex")
    ti.write_bytes(bytes(ti.stat().st_size))
    assert "time-index-max-timestamp-low" not in {f.code for f in _findings(part)}


def _cut_before_last_marker(part: Path) -> int:
    """Truncate the last segment of `part` where its last control batch (a COMMIT or ABORT marker)
    starts; the offset of that marker."""
    from corruptions import log_entries

    log = sorted(part.glob("*.log"))[-1]
    data = log.read_bytes()
    markers = [e for e in log_entries(data) if e.magic == 2 and data[e.position + 22] & 0x20]
    assert markers, f"{log} holds no marker"
    log.write_bytes(data[: markers[-1].position])
    for p in part.glob("*.snapshot"):
        p.unlink()  # the producer snapshots describe the log before the cut
    return markers[-1].last_offset


def _txn_copy(corpus_root: Path, tmp_path: Path, with_coordinator: bool) -> Path:
    import shutil

    src = corpus_root / "kafka-3.8.0"
    if not (src / "txn-1").is_dir() or not (src / "__transaction_state-0").is_dir():
        import pytest

        pytest.skip("txn-1 and __transaction_state-0 are not in this corpus")
    log_dir = tmp_path / ("with" if with_coordinator else "without") / "data"
    log_dir.mkdir(parents=True)
    (log_dir / "meta.properties").write_text("version=1\nnode.id=1\n")
    shutil.copytree(src / "txn-1", log_dir / "txn-1")
    if with_coordinator:
        shutil.copytree(src / "__transaction_state-0", log_dir / "__transaction_state-0")
    return log_dir / "txn-1"


def test_a_cut_commit_marker_the_coordinator_completed_hangs_an_error(
    corpus_root: Path, tmp_path: Path
) -> None:
    part = _txn_copy(corpus_root, tmp_path, with_coordinator=True)
    assert "transaction-open" not in {f.code for f in _findings(part)}
    _cut_before_last_marker(part)
    found = [f for f in _findings(part) if f.code == "transaction-open"]
    assert [f.severity for f in found] == [Severity.ERROR]
    assert found[0].details["coordinator_state"] in ("CompleteCommit", "CompleteAbort", "Empty")


def test_an_open_transaction_without_the_coordinators_log_is_info(corpus_root: Path, tmp_path: Path) -> None:
    part = _txn_copy(corpus_root, tmp_path, with_coordinator=False)
    _cut_before_last_marker(part)
    found = [f for f in _findings(part, Severity.INFO) if f.code == "transaction-open"]
    assert [f.severity for f in found] == [Severity.INFO]
    assert found[0].details["coordinator_state"] is None


def test_no_finding_names_an_offset_read_from_garbage(tmp_path: Path) -> None:
    """Random bytes after the last batch: whatever their header says, no finding reports an offset
    outside what the segment can hold past its last valid batch."""
    from corruptions import append_garbage

    part, logs = _partition(tmp_path)
    last = logs[-1]
    good = last.read_bytes()
    for seed in range(16):
        last.write_bytes(good)
        append_garbage(100, seed=seed).apply(last)
        found = _findings(part)
        assert found, seed
        assert all(f.offset is None or 120 <= f.offset < 120 + (1 << 31) for f in found), (seed, found)


def test_a_zeroed_time_index_the_broker_recovers_at_start_is_left_alone(tmp_path: Path) -> None:
    """A copy of a running broker (no clean-shutdown marker) whose recovery point is below the zeroed
    segment's end: the broker rebuilds that segment's indexes at start, so nothing is wrong."""
    log_dir = tmp_path / "data"
    _part, logs = _partition(log_dir)
    (log_dir / "meta.properties").write_text("version=1\nnode.id=1\n")
    ti = logs[1].with_suffix(".timeindex")
    ti.write_bytes(bytes(ti.stat().st_size))
    (log_dir / "recovery-point-offset-checkpoint").write_text("0\n1\nt 0 60\n")  # recovers from 60
    assert _findings(log_dir) == []
    (log_dir / "recovery-point-offset-checkpoint").write_text("0\n1\nt 0 120\n")  # 60..119 not recovered
    assert [f.code for f in _findings(log_dir)] == ["time-index-max-timestamp-low"]
    (log_dir / "recovery-point-offset-checkpoint").write_text("0\n1\nt 0 60\n")
    (log_dir / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":5}')  # no recovery at all
    assert [f.code for f in _findings(log_dir)] == ["time-index-max-timestamp-low"]
