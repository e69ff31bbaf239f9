"""States a real broker leaves that are not damage, which verify must not report as such (each was
reported by verify on copies of a real 4.4 broker's log dir: tests/brokers/test_recovery_oracle.py).

* After DeleteRecords the broker truncates its leader epoch cache from the new log start offset at
  once (`LeaderEpochFileCache.truncateFromStart`): the epochs that end below it go, and the epoch it
  falls in starts there; the batches below it stay on disk until retention deletes their segment.
* An active segment that has taken no batch yet has a preallocated, all-zero `.index` and
  `.timeindex` in a copy of a running (or killed) broker's log dir.
"""

from __future__ import annotations

from pathlib import Path

from builders import BASE_TS, SegmentBuilder, records

from kdump.findings import Finding, Severity
from kdump.formats.checkpoints import encode_leader_epoch_checkpoint, encode_offset_checkpoint
from kdump.model.log_dir import discover
from kdump.ops.checks.verify import VerifyOptions, verify_targets


def verify(path: Path) -> list[Finding]:
    reports = list(verify_targets([discover(str(path))], VerifyOptions(jobs=1)))
    return [f for r in reports for f in r.findings]


def serious(findings: list[Finding]) -> list[tuple[str, int | None]]:
    return [(f.code, f.offset) for f in findings if f.severity >= Severity.WARNING]


def _epochs_partition(log_dir: Path) -> Path:
    """orders-0 in a log dir: offsets 0..19 in epoch 0, 20..39 in epoch 1, 40..59 in epoch 2."""
    part = log_dir / "orders-0"
    seg = SegmentBuilder()
    for epoch in range(3):
        seg.add_v2(records(20, start_ts=BASE_TS + 20 * epoch), leader_epoch=epoch)
    seg.write(part)
    return part


def _log_start(log_dir: Path, offset: int) -> None:
    (log_dir / "log-start-offset-checkpoint").write_bytes(encode_offset_checkpoint([("orders", 0, offset)]))


def test_epoch_checkpoint_truncated_from_the_log_start_is_clean(tmp_path: Path) -> None:
    part = _epochs_partition(tmp_path)
    (part / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint([(1, 25), (2, 40)]))
    _log_start(tmp_path, 25)
    assert serious(verify(part)) == []


def test_log_start_on_an_epoch_boundary_drops_the_epochs_below(tmp_path: Path) -> None:
    part = _epochs_partition(tmp_path)
    (part / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint([(1, 20), (2, 40)]))
    _log_start(tmp_path, 20)
    assert serious(verify(part)) == []


def test_the_same_checkpoint_without_the_log_start_is_clean(tmp_path: Path) -> None:
    """What a copy holds when it caught the epoch checkpoint but not yet the log start checkpoint
    (written once a minute): still what a healthy broker leaves, since the batches had epoch 1 at 25."""
    part = _epochs_partition(tmp_path)
    (part / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint([(1, 25), (2, 40)]))
    assert serious(verify(part)) == []
    _log_start(tmp_path, 0)
    assert serious(verify(part)) == []


def test_a_first_entry_no_truncation_explains_is_a_mismatch(tmp_path: Path) -> None:
    part = _epochs_partition(tmp_path)
    (part / "leader-epoch-checkpoint").write_bytes(
        encode_leader_epoch_checkpoint([(2, 25)])
    )  # 1 was in force
    assert sorted(serious(verify(part))) == [("leader-epoch-mismatch", 0), ("leader-epoch-mismatch", 20)]


def test_an_epoch_above_the_log_start_still_has_to_be_listed(tmp_path: Path) -> None:
    part = _epochs_partition(tmp_path)
    (part / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint([(2, 40)]))
    _log_start(tmp_path, 25)
    # A clean shutdown wrote the log start checkpoint last: it is the log start (without the marker,
    # a log start checkpoint lagging a DeleteRecords to 40 would explain this checkpoint).
    (tmp_path / ".kafka_cleanshutdown").write_text("")
    assert serious(verify(part)) == [("leader-epoch-mismatch", 25)]


def test_an_empty_active_segment_with_preallocated_indexes_is_clean(tmp_path: Path) -> None:
    """The segment the broker has just rolled to, in a copy of a running broker's log dir."""
    part = tmp_path / "idle-0"
    seg = SegmentBuilder()
    seg.add_v2(records(10))
    seg.write(part)
    active = f"{seg.next_offset:020d}"
    (part / f"{active}.log").write_bytes(b"")
    index = part / f"{active}.index"
    index.write_bytes(bytes(8 * 1000))
    timeindex = part / f"{active}.timeindex"
    timeindex.write_bytes(bytes(12 * 1000))
    findings = verify(part)
    assert serious(findings) == []
    tails = sorted((Path(f.file).name, f.position, f.details["slots"]) for f in findings)
    assert tails == [(index.name, 0, 1000), (timeindex.name, 0, 1000)]
