"""`reindex` against the broker: byte for byte on the real corpus, repairs, idempotence, lock, txnindex.

The rule is `LogSegment.recover` (kafka-internals.md §3.3, §4.1): for each valid batch, first the
largest timestamp so far is updated from the batch header; then, when more than
index.interval.bytes lie between the last entry's position and this batch's, an offset index entry
(batch last offset, batch position) and a time index entry (largest timestamp so far, its offset)
if that timestamp grew; at the end the final time index entry. The broker that wrote the corpus
followed the same rule on its leader appends (one batch per append), so for every segment it
closed cleanly kdump must reproduce its `.index` and `.timeindex` byte for byte. The few segments
where the broker's bytes differ are listed in `NOT_REPRODUCED` with the reason, and checked to be
legal both ways.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from builders import build_partition
from click.testing import Result
from corpus import full_corpus_available, iter_partition_dirs
from corruptions import (
    append_zeros,
    copy_tree,
    file_hashes,
    held_lock,
    index_entries,
    log_entries,
    make_log_dir,
    run_kdump,
    shuffle_index_entries,
    stale_index,
    tree_state,
    truncate_index,
)
from oracle import parse_txnindex_dump

from kdump.findings import Finding, Severity
from kdump.formats.offset_index import decode_offset_index, encode_offset_index
from kdump.formats.time_index import decode_time_index, encode_time_index
from kdump.model.log_dir import discover
from kdump.model.partition import PartitionDir
from kdump.ops.checks.verify import VerifyOptions, verify_targets
from kdump.ops.repair.reindex import plan_partition

Kdump = Callable[..., Result]

# The broker's index.interval.bytes for each topic (only idx-dense overrides the default 4096).
INTERVAL = {"idx-dense-0": 100}

CLEANER = (
    "written by the log cleaner, not by leader appends: each cleaned segment is filled by "
    "LogSegment.append calls that each carry several retained batches, indexed (largest kept offset, "
    "position of the first batch) with the byte counter of the cleaner's own appends"
)
LEGACY_APPENDS = (
    "legacy format (v0/v1) converted on append: an uncompressed produce request of n records became n "
    "separate messages written by one LogSegment.append, indexed (last offset of the append, position "
    "of its first message); recovery indexes every message on its own"
)
LIVE = (
    "the running copy's active segment: the broker had not closed it, so its indexes are preallocated "
    "(zero tails) and the time index lacks the final entry written on roll/close"
)
# (corpus dir, partition dir) -> (base offsets of the segments whose indexes differ, why)
NOT_REPRODUCED: dict[tuple[str, str], tuple[set[int], str]] = {
    ("kafka-3.8.0", "compacted-sparse-0"): ({0, 1201, 2101, 3000, 3413, 3813, 4201}, CLEANER),
    ("kafka-3.8.0-zk-legacy", "legacy-v0-none-0"): ({0, 185, 339, 430, 546, 645}, LEGACY_APPENDS),
    ("kafka-3.8.0-zk-legacy", "legacy-v1-none-0"): ({0, 159, 297, 399, 575, 767}, LEGACY_APPENDS),
    # The two uncompressed entries librdkafka sent where snappy would not shrink the batch.
    ("kafka-3.8.0-zk-legacy", "legacy-v0-snappy-0"): ({0}, LEGACY_APPENDS),
    # The v0 and v1 phases (offsets 0..1199); the v2 phase is reproduced.
    ("kafka-3.8.0-zk-legacy", "mixed-formats-0"): ({0, 22, 78, 600, 613, 670, 702}, LEGACY_APPENDS),
    ("kafka-3.8.0-running-copy", "live-0"): ({8074}, LIVE),
}


def recovery_rule(log: bytes, interval: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The broker's rule, written out independently of kdump.ops.repair.reindex: (offset, position) and
    (timestamp, offset) entries for the batches recovery keeps."""
    index: list[tuple[int, int]] = []
    times: list[tuple[int, int]] = []
    max_ts, offset_of_max, last_entry, last_time_ts = -1, -1, 0, -1
    for b in log_entries(log, recovery=True):
        if b.max_timestamp > max_ts:
            max_ts, offset_of_max = b.max_timestamp, b.last_offset
        if b.position - last_entry > interval:  # validBytes - lastIndexEntry > indexIntervalBytes
            index.append((b.last_offset, b.position))
            if max_ts > last_time_ts:  # TimeIndex.maybeAppend appends only a larger timestamp
                times.append((max_ts, offset_of_max))
                last_time_ts = max_ts
            last_entry = b.position
    if max_ts > last_time_ts:
        times.append((max_ts, offset_of_max))
    return index, times


def _index_findings(path: Path) -> list[Finding]:
    reports = verify_targets([discover(str(path))], VerifyOptions(jobs=1))
    return [
        f
        for r in reports
        for f in r.findings
        if f.kind.where in ("index", "timeindex", "txnindex") and f.severity >= Severity.WARNING
    ]


def _all_findings(path: Path) -> list[Finding]:
    return [f for r in verify_targets([discover(str(path))], VerifyOptions(jobs=1)) for f in r.findings]


def _whole_partitions(root: Path) -> set[tuple[str, str]]:
    """Partitions whose every segment (per facts.json) is present, so producer state starts at 0."""
    whole = set()
    for corpus_dir, part, _oracle in iter_partition_dirs(root):
        facts_path = root / corpus_dir / "expected" / "facts.json"
        facts = json.loads(facts_path.read_text()).get(part.name) if facts_path.exists() else None
        if facts is None:
            continue
        want = {s["segment"] for s in facts["segments_from_dump"]}
        if want == {p.name.split(".")[0] for p in part.glob("*.log")}:
            whole.add((corpus_dir, part.name))
    return whole


# --- byte for byte on the corpus --------------------------------------------------------------------


def test_reindex_reproduces_every_cleanly_closed_segment_byte_for_byte(corpus_root: Path) -> None:
    reproduced = 0
    problems = []
    for corpus_dir, part, _oracle in iter_partition_dirs(corpus_root):
        plan = plan_partition(
            PartitionDir.load(part), None, interval_bytes=INTERVAL.get(part.name, 4096), rebuild_all=True
        )
        differing = {c.path.name.split(".")[0] for c in plan.changes}
        listed, _why = NOT_REPRODUCED.get((corpus_dir, part.name), (set(), ""))
        present = {s.segment.name for s in plan.segments}
        expected = {f"{b:020d}" for b in listed} & present
        if differing != expected:
            problems.append(
                f"{corpus_dir}/{part.name}: differ {sorted(differing)}, listed {sorted(expected)}"
            )
        reproduced += len(present - differing)
    assert problems == []
    # 158 segments in the full corpus, 17 in the bundled subset, less the ones listed above.
    assert reproduced >= (130 if full_corpus_available() else 13)


@pytest.mark.parametrize(("corpus_dir", "part_name"), sorted(NOT_REPRODUCED))
def test_not_reproduced_segments_follow_the_recovery_rule_and_both_verify(
    corpus_dir: str, part_name: str, corpus_root: Path, tmp_path: Path, kdump: Kdump
) -> None:
    """Where the broker's bytes differ, kdump writes exactly the recovery rule, and verify accepts both."""
    src = corpus_root / corpus_dir / part_name
    if not src.is_dir():
        pytest.skip(f"{corpus_dir}/{part_name} is not in this corpus")
    interval = INTERVAL.get(part_name, 4096)
    part = copy_tree(src, tmp_path / part_name)
    plan = plan_partition(PartitionDir.load(part), None, interval_bytes=interval, rebuild_all=True)
    for seg in plan.segments:
        assert seg.segment.log is not None
        index, times = recovery_rule(seg.segment.log.read_bytes(), interval)
        for change in seg.changes:
            if change.kind == "index":
                assert change.data == encode_offset_index(index, seg.segment.base_offset)
            elif change.kind == "timeindex":
                assert change.data == encode_time_index(times, seg.segment.base_offset)
    if NOT_REPRODUCED[(corpus_dir, part_name)][1] == LEGACY_APPENDS:
        for seg in plan.segments:
            if any(c.kind == "index" for c in seg.changes):
                _assert_multi_message_append_entries(seg.segment.base_offset, part)
    assert _index_findings(part) == []  # the broker's files
    assert kdump("reindex", "--apply", "--backup-dir", str(tmp_path / "b"), str(part)).exit_code == 0
    assert _index_findings(part) == []  # kdump's files
    assert kdump("reindex", str(part)).exit_code == 0  # and nothing is left to do


def _assert_multi_message_append_entries(base: int, part: Path) -> None:
    """Each broker entry (O, P) indexes one append: the message at P starts it, and either it is O's own
    entry, or O is the last of a run of consecutive uncompressed legacy messages starting at P."""
    name = f"{base:020d}"
    entries = log_entries((part / f"{name}.log").read_bytes())
    by_position = {e.position: k for k, e in enumerate(entries)}
    for offset, position in decode_offset_index((part / f"{name}.index").read_bytes(), base).entries:
        k = by_position[position]
        if entries[k].last_offset == offset:
            continue
        run = entries[k:]
        end = next(j for j, e in enumerate(run) if e.last_offset == offset)
        assert all(e.magic < 2 and e.compression == 0 for e in run[: end + 1]), (name, offset, position)
        assert [e.last_offset for e in run[: end + 1]] == list(range(run[0].last_offset, offset + 1))


def test_live_active_segment_differs_only_by_preallocation_and_the_final_time_entry(
    corpus_root: Path, tmp_path: Path, kdump: Kdump
) -> None:
    part = copy_tree(corpus_root / "kafka-3.8.0-running-copy" / "live-0", tmp_path / "live-0")
    seg = "00000000000000008074"
    broker_index = decode_offset_index((part / f"{seg}.index").read_bytes(), 8074)
    broker_times = decode_time_index((part / f"{seg}.timeindex").read_bytes(), 8074)
    assert broker_index.zero_tail_entries
    assert broker_times.zero_tail_entries
    # A live segment's preallocated tail is normal (verify: info), so only --rebuild-all rewrites it.
    assert kdump("reindex", str(part)).exit_code == 0
    applied = kdump("reindex", "--rebuild-all", "--apply", "--backup-dir", str(tmp_path / "b"), str(part))
    assert applied.exit_code == 0
    ours_index = decode_offset_index((part / f"{seg}.index").read_bytes(), 8074)
    ours_times = decode_time_index((part / f"{seg}.timeindex").read_bytes(), 8074)
    assert ours_index.entries == broker_index.entries
    assert ours_index.zero_tail_entries == 0
    assert ours_times.entries[:-1] == broker_times.entries  # the same 154 entries ...
    last = log_entries((part / f"{seg}.log").read_bytes())
    max_ts = max(b.max_timestamp for b in last)
    assert tuple(ours_times.entries[-1]) == (
        max_ts,
        next(b.last_offset for b in last if b.max_timestamp == max_ts),
    )


def test_index_interval_matters_idx_dense(full_corpus: Path) -> None:
    """idx-dense-0 was written with index.interval.bytes=100: reproduced with 100, not with 4096."""
    part = PartitionDir.load(full_corpus / "kafka-3.8.0" / "idx-dense-0")
    assert plan_partition(part, None, interval_bytes=100, rebuild_all=True).changes == []
    assert plan_partition(part, None, interval_bytes=4096, rebuild_all=True).changes != []


# --- idempotence --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("corpus_dir", "part_name"),
    [
        ("kafka-3.8.0", "compacted-sparse-0"),
        ("kafka-3.8.0-zk-legacy", "legacy-v0-none-0"),
        ("kafka-3.8.0", "txn-1"),
    ],
)
def test_reindex_twice_gives_the_same_bytes(
    corpus_dir: str, part_name: str, corpus_root: Path, tmp_path: Path, kdump: Kdump
) -> None:
    part = copy_tree(corpus_root / corpus_dir / part_name, tmp_path / part_name)
    for name in [p for p in part.iterdir() if p.name.endswith(".index")][:1]:
        shuffle_index_entries(seed=5).apply(name)  # something to do even where the broker's bytes match
    first = kdump("reindex", "--apply", "--backup-dir", str(tmp_path / "b1"), str(part))
    assert first.exit_code == 0, first.output
    after_first = file_hashes(part)
    second = kdump("reindex", "--apply", "--backup-dir", str(tmp_path / "b2"), str(part))
    assert second.exit_code == 0
    assert "nothing to do" in second.stdout
    assert file_hashes(part) == after_first
    assert not (tmp_path / "b2").exists()  # nothing written, not even a backup dir
    dry = kdump("reindex", str(part))
    assert dry.exit_code == 0
    assert "nothing to do" in dry.stdout


# --- repairs --------------------------------------------------------------------------------------------

SEG = "00000000000000000547"  # txn-1's last segment, in every corpus


def _damage_missing(part: Path, kind: str) -> None:
    (part / f"{SEG}.{kind}").unlink()


def _damage_stale(part: Path, kind: str) -> None:
    path = part / f"{SEG}.{kind}"
    slots = index_entries(path.read_bytes(), kind)
    last_rel = slots[-1][0] if kind == "index" else slots[-1][1]
    stale_index((part / f"{SEG}.log").stat().st_size, last_rel, count=3, kind=kind).apply(path)


def _damage_shuffled(part: Path, kind: str) -> None:
    shuffle_index_entries(seed=7, entry_size=8 if kind == "index" else 12).apply(part / f"{SEG}.{kind}")


def _damage_truncated(part: Path, kind: str) -> None:
    truncate_index(1, drop_bytes=3, entry_size=8 if kind == "index" else 12).apply(part / f"{SEG}.{kind}")


def _damage_preallocated(part: Path, kind: str) -> None:
    append_zeros(8 * 12 * 100).apply(part / f"{SEG}.{kind}")


DAMAGES = {
    "missing": _damage_missing,
    "stale": _damage_stale,
    "shuffled": _damage_shuffled,
    "truncated": _damage_truncated,
    "preallocated": _damage_preallocated,
}


@pytest.mark.parametrize("kind", ["index", "timeindex"])
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_damaged_index_of_a_real_segment_is_rebuilt_as_the_broker_wrote_it(
    damage: str, kind: str, corpus_root: Path, tmp_path: Path, kdump: Kdump
) -> None:
    src = corpus_root / "kafka-3.8.0" / "txn-1"
    part = copy_tree(src, tmp_path / "txn-1")
    DAMAGES[damage](part, kind)
    assert _index_findings(part) or damage == "preallocated"
    # A preallocated tail is info to verify, so only --rebuild-all rewrites it.
    rebuild = ("--rebuild-all",) if damage == "preallocated" else ()
    dry = kdump("reindex", *rebuild, str(part))
    assert dry.exit_code == 1
    assert f"{SEG}.{kind}" in dry.stdout
    applied = kdump("reindex", *rebuild, "--apply", "--backup-dir", str(tmp_path / "b"), str(part))
    assert applied.exit_code == 0
    assert file_hashes(part) == file_hashes(src)  # byte for byte the broker's files again
    assert [f for f in _all_findings(part) if f.severity >= Severity.WARNING] == []


def test_built_segment_indexes_rebuilt_after_every_damage_at_once(tmp_path: Path, kdump: Kdump) -> None:
    part = tmp_path / "built-0"
    logs = build_partition(part, segments=3, batches_per_segment=12, value_size=300)
    original = file_hashes(part)
    (part / "00000000000000000000.index").unlink()
    shuffle_index_entries(seed=1, entry_size=12).apply(part / "00000000000000000120.timeindex")
    log = logs[2].read_bytes()
    stale_index(len(log), 200, kind="index").apply(part / "00000000000000000240.index")
    assert len(_index_findings(part)) >= 3
    result = kdump("reindex", "--apply", "--backup-dir", str(tmp_path / "b"), str(part))
    assert result.exit_code == 0, result.output
    assert file_hashes(part) == original
    assert _all_findings(part) == []


def test_reindex_json_rows(corpus_root: Path, tmp_path: Path, kdump: Kdump) -> None:
    part = copy_tree(corpus_root / "kafka-3.8.0" / "txn-1", tmp_path / "txn-1")
    _damage_stale(part, "index")
    result = kdump("reindex", "--format", "json", str(part))
    assert result.exit_code == 1
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    (change,) = [r for r in rows if r["type"] == "reindex-change"]
    assert change["file"] == str(part / f"{SEG}.index")
    assert (change["kind"], change["exists"], change["stale"], change["extra"]) == ("index", True, 3, 3)
    assert change["applied"] is False
    summary = rows[-1]
    assert str(summary["type"]).endswith("summary")
    assert (summary["files"], summary["applied"], summary["partitions"]) == (1, False, 1)


# --- .txnindex ------------------------------------------------------------------------------------------


def test_txnindex_rebuilt_from_abort_markers_byte_for_byte(
    corpus_root: Path, tmp_path: Path, kdump: Kdump
) -> None:
    """Every partition with a .txnindex whose segments are all present: delete them all, rebuild, compare."""
    whole = _whole_partitions(corpus_root)
    checked = 0
    for corpus_dir, src, oracle_dir in iter_partition_dirs(corpus_root):
        txn_files = sorted(src.glob("*.txnindex"))
        if not txn_files or (corpus_dir, src.name) not in whole:
            continue
        part = copy_tree(src, tmp_path / corpus_dir / src.name)
        for p in part.glob("*.txnindex"):
            p.unlink()
        result = kdump(
            "reindex", "--apply", "--backup-dir", str(tmp_path / "b" / corpus_dir / src.name), str(part)
        )
        assert result.exit_code == 0, result.output
        for original in txn_files:
            rebuilt = part / original.name
            assert rebuilt.read_bytes() == original.read_bytes(), rebuilt
            oracle = parse_txnindex_dump(oracle_dir / f"{original.name}.dump.txt")
            assert len(oracle.entries) * 34 == len(rebuilt.read_bytes())
            checked += 1
        # Segments without aborted transactions get no .txnindex (the broker creates it lazily).
        assert sorted(p.name for p in part.glob("*.txnindex")) == [p.name for p in txn_files]
    assert checked >= 1  # __consumer_offsets-0 in the subset; 9 files in the full corpus


def test_txnindex_of_a_partial_partition_keeps_what_the_log_cannot_tell(
    corpus_root: Path, tmp_path: Path, kdump: Kdump
) -> None:
    """With earlier segments gone, a transaction's first offset is unknown: an existing entry is kept."""
    src = corpus_root / "kafka-3.8.0" / "txn-1"
    part = copy_tree(src, tmp_path / "txn-1")
    for p in part.glob("*.log"):
        if p.name.split(".")[0] != SEG:
            for sibling in part.glob(p.name.split(".")[0] + ".*"):
                sibling.unlink()
    assert kdump("reindex", str(part)).exit_code == 0
    assert (part / f"{SEG}.txnindex").read_bytes() == (src / f"{SEG}.txnindex").read_bytes()


# --- lock refusal ----------------------------------------------------------------------------------------


def test_reindex_refuses_while_another_process_holds_the_log_dir_lock(
    corpus_root: Path, tmp_path: Path
) -> None:
    log_dir = make_log_dir(tmp_path / "data", {"txn-1": corpus_root / "kafka-3.8.0" / "txn-1"})
    part = log_dir / "txn-1"
    _damage_shuffled(part, "index")
    before = tree_state(tmp_path)
    with held_lock(log_dir) as holder:
        result = run_kdump("reindex", "--apply", str(part))
        assert result.returncode == 4, result.stderr
        assert "refused" in result.stderr
        assert f"pid {holder.pid}" in result.stderr
        assert str(log_dir / ".lock") in result.stderr
        # A dry run reads only: it works while the broker runs.
        assert run_kdump("reindex", str(part)).returncode == 1
    assert tree_state(tmp_path) == before  # nothing written, no backup dir
    # Once the lock is free the same command works; the backup goes beside the log dir, not in it.
    done = run_kdump("reindex", "--apply", str(part))
    assert done.returncode == 0, done.stderr
    backups = list((tmp_path / "data.kdump-backups").iterdir())
    assert len(backups) == 1
    assert backups[0].name.startswith("kdump-backup-txn-1-")
    assert sorted(p.name for p in log_dir.iterdir()) == [".lock", "meta.properties", "txn-1"]
