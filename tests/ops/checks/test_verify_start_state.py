"""What the broker does at start with what a healthy (or not) broker leaves is what verify judges.

- A freshly formatted KRaft log dir (`meta.properties`, `bootstrap.checkpoint`) and partitions that hold
  only empty segments or state files are healthy: `nothing-to-check` only where nothing a broker
  writes was recognised.
- `.deleted` (segments, producer and KRaft snapshots), `.cleaned` and `.checkpoint.part` leftovers are
  deleted by the broker at its next start with no data effect (`LogLoader`, `KafkaMetadataLog`): info.
- An empty active segment without its indexes (a running 2.x broker creates the `.index` lazily) is
  recovered at start into empty indexes: nothing to report. So is a small active segment's missing `.index`
  (Kafka creates it on the first index entry or read) unless the broker stopped cleanly, which flushes it.
- A partition with no batch whose leader-epoch-checkpoint vouches for offsets past its log start
  (`__cluster_metadata-0` without its segments) loads empty: `log-missing`, an error.
- Offset index entries out of order but each at its batch: the broker's lookup lands at or below the
  target whatever the order, so it is a warning; out of order and misplaced, an error.
"""

from __future__ import annotations

from pathlib import Path

from builders import build_partition
from corruptions import index_entries, set_index_entry, shuffle_index_entries

from kdump.findings import Finding, Severity
from kdump.model.log_dir import discover
from kdump.ops.checks.verify import PartitionReport, VerifyOptions, verify_targets
from kdump.store.hints import repair_command

COVERED_CODES = {"log-missing", "leftover-file", "index-not-monotonic", "nothing-to-check"}

META = "version=1\ncluster.id=AAAAAAAAAAAAAAAAAAAAAQ\nnode.id=1\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAg\n"
SEG0 = "0" * 20


def _reports(path: Path, **options: object) -> list[PartitionReport]:
    return list(verify_targets([discover(str(path))], VerifyOptions(jobs=1, **options)))  # type: ignore[arg-type]


def _findings(path: Path) -> list[Finding]:
    return [f for r in _reports(path) for f in r.findings]


def _serious(path: Path) -> list[tuple[str, str]]:
    return [(f.code, Path(f.file).name) for f in _findings(path) if f.severity >= Severity.WARNING]


def _formatted(path: Path) -> Path:
    path.mkdir()
    (path / "meta.properties").write_text(META)
    (path / "bootstrap.checkpoint").write_bytes(b"")
    return path


def _empty_partition(path: Path) -> Path:
    path.mkdir()
    for ext in (".log", ".index", ".timeindex"):
        (path / f"{SEG0}{ext}").write_bytes(b"")
    (path / "leader-epoch-checkpoint").write_text("0\n0\n")
    return path


def test_a_freshly_formatted_log_dir_is_healthy(tmp_path: Path) -> None:
    log_dir = _formatted(tmp_path / "data")
    assert _serious(log_dir) == []
    assert [r.kind for r in _reports(log_dir)] == ["log-dir"]


def test_a_log_dir_of_empty_partitions_is_healthy(tmp_path: Path) -> None:
    log_dir = tmp_path / "data"
    log_dir.mkdir()
    (log_dir / "meta.properties").write_text(META)
    for name in ("new-topic-0", "new-topic-1", "idle-follower-0"):
        _empty_partition(log_dir / name)
    assert _serious(log_dir) == []
    assert _serious(log_dir / "new-topic-0") == []  # given alone too


def test_nothing_kafka_wrote_is_still_nothing_to_check(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _serious(empty) == [("nothing-to-check", "empty")]
    (empty / "t-0").mkdir()  # a directory named like a partition, with nothing in it
    assert _serious(empty / "t-0") == [("nothing-to-check", "t-0")]
    assert _serious(empty / "t-0")
    assert not [f for r in _reports(empty / "t-0", allow_empty=True) for f in r.findings]


def test_leftovers_the_broker_deletes_at_start_are_legal(tmp_path: Path) -> None:
    log_dir = _formatted(tmp_path / "data")
    meta = _empty_partition(log_dir / "__cluster_metadata-0")
    names = [
        "00000000000000000027-0000000001.checkpoint.deleted",  # a 4.2 broker's, after a clean stop
        "00000000000000000040-0000000001.checkpoint.part",
        f"{SEG0}.log.deleted",
        f"{SEG0}.index.deleted",
        f"{SEG0}.log.cleaned",
        "00000000000000000012.snapshot.deleted",
    ]
    for name in names:
        (meta / name).write_bytes(b"")
    found = [f for f in _findings(log_dir) if f.code == "leftover-file"]
    assert sorted(Path(f.file).name for f in found) == sorted(names)
    assert {f.severity for f in found} == {Severity.INFO}
    # A .swap is no such trace: the broker completes it at start.
    (meta / "00000000000000000000.log.swap").write_bytes(b"")
    assert ("leftover-file", "00000000000000000000.log.swap") in _serious(log_dir)


def test_an_empty_active_segment_without_indexes_is_legal(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    build_partition(part, segments=2)
    base = max(int(p.stem) for p in part.glob("*.log")) + 40
    (part / f"{base:020d}.log").write_bytes(b"")  # a running 2.7 broker's: no .index yet
    assert _serious(part) == []
    (part / f"{base:020d}.log").unlink()
    (part / f"{SEG0}.index").unlink()  # a segment with batches is rebuilt at start: still reported
    assert ("index-missing", f"{SEG0}.index") in _serious(part)


def test_a_metadata_log_without_segments_under_its_epochs_is_log_missing(tmp_path: Path) -> None:
    log_dir = _formatted(tmp_path / "data")
    meta = log_dir / "__cluster_metadata-0"
    meta.mkdir()
    (meta / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n41 468885\n")
    found = [f for f in _findings(log_dir) if f.code == "log-missing"]
    assert len(found) == 1
    assert (found[0].severity, found[0].offset, Path(found[0].file).name) == (
        Severity.ERROR,
        0,
        "leader-epoch-checkpoint",
    )
    assert "468885" in found[0].message
    # A snapshot reaching that far is the log the node loads: nothing missing.
    (meta / "00000000000000468900-0000000041.checkpoint").write_bytes(b"")
    assert [f for f in _findings(log_dir) if f.code == "log-missing"] == []


def test_an_empty_partition_whose_epochs_start_at_its_log_start_is_healthy(tmp_path: Path) -> None:
    part = _empty_partition(tmp_path / "t-0")
    (part / f"{SEG0}.log").rename(part / "00000000000000000500.log")
    for ext in (".index", ".timeindex"):
        (part / f"{SEG0}{ext}").rename(part / f"00000000000000000500{ext}")
    (part / "leader-epoch-checkpoint").write_text("0\n1\n3 500\n")  # all deleted by retention
    assert _serious(part) == []
    (part / "leader-epoch-checkpoint").write_text("0\n2\n3 500\n4 900\n")
    assert _serious(part) == [("log-missing", "leader-epoch-checkpoint")]


def test_shuffled_index_entries_each_at_their_batch_are_a_warning(tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    build_partition(part, segments=1, batches_per_segment=12, records_per_batch=10, value_size=200)
    index = part / f"{SEG0}.index"
    shuffle_index_entries(seed=3).apply(index)
    found = [f for f in _findings(part) if f.severity >= Severity.WARNING]
    assert [(f.code, f.severity) for f in found] == [("index-not-monotonic", Severity.WARNING)]
    assert repair_command(found[0]) is not None
    assert repair_command(found[0]).startswith("kdump reindex --apply")
    # An entry pointing past its batch as well: the order now mis-serves, an error.
    offset, _ = index_entries(index.read_bytes())[0]
    set_index_entry(0, offset, 7).apply(index)
    codes = {(f.code, f.severity) for f in _findings(part) if f.severity >= Severity.WARNING}
    assert ("index-not-monotonic", Severity.ERROR) in codes


def test_a_corrupt_epoch_checkpoint_names_reindex_which_rebuilds_it(tmp_path: Path) -> None:
    from kdump.ops.repair.reindex import apply_reindex, plan_reindex

    part = tmp_path / "t-0"
    build_partition(part, segments=3, batches_per_segment=4)
    good = (part / "leader-epoch-checkpoint").read_bytes()
    (part / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n")  # says two entries, holds one
    [found] = [f for f in _findings(part) if f.severity >= Severity.WARNING]
    assert (found.code, found.severity) == ("checkpoint-corrupt", Severity.ERROR)
    assert repair_command(found) == f"kdump reindex --apply {part}"
    for plan in plan_reindex(discover(str(part))):
        apply_reindex(plan)
    assert (part / "leader-epoch-checkpoint").read_bytes() == good
    assert _serious(part) == []


def test_a_small_active_segment_without_its_offset_index_is_legal_until_a_clean_stop(tmp_path: Path) -> None:
    log_dir = tmp_path / "data"
    log_dir.mkdir()
    part = log_dir / "t-0"
    build_partition(part, segments=2, value_size=40)
    last = max(part.glob("*.log"), key=lambda p: int(p.stem))
    assert 0 < last.stat().st_size <= 4096, "the builder's segments are smaller than the index interval"
    # A running (or killed) broker's follower: LazyIndex has not created the active segment's .index.
    last.with_suffix(".index").unlink()
    assert _serious(log_dir) == []
    # After a clean stop the broker has flushed (so created) every index: missing is missing.
    (log_dir / ".kafka_cleanshutdown").write_bytes(b"")
    assert ("index-missing", last.with_suffix(".index").name) in _serious(log_dir)
    (log_dir / ".kafka_cleanshutdown").unlink()
    # Not the active segment: a closed segment always has its index.
    first = min(part.glob("*.log"), key=lambda p: int(p.stem))
    first.with_suffix(".index").unlink()
    assert _serious(log_dir) == [("index-missing", first.with_suffix(".index").name)]
