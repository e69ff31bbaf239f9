"""`impact`: where each group resumes after an event, by the rules of Kafka's Java consumer and the
leader's `LeaderEpochFileCache.endOffsetFor`, and `trim-tail`'s plan carrying it (corpus bytes)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from builders import SegmentBuilder, c_none_partition, offset_commit, records, share_state
from click.testing import Result

from kdump.model.partition import PartitionDir
from kdump.ops.consumers import (
    BatchSpan,
    CommitTable,
    PartitionBounds,
    count_records,
    end_offset_for,
    impact,
    partition_bounds,
    read_commits,
)
from kdump.ops.consumers.commits import Commit, ShareState


def _table(*commits: tuple[str, int, int]) -> CommitTable:
    table = CommitTable()
    for group, offset, epoch in commits:
        table.commits[(group, "t", 0)] = Commit(group, "t", 0, offset, epoch, "", 0, 0, "here")
    return table


def _bounds(
    start: int, end: int, epochs: dict[int, int], **kw: object
) -> dict[tuple[str, int], PartitionBounds]:
    return {("t", 0): PartitionBounds(start, end, kw.pop("removed", None), epochs, **kw)}  # type: ignore[arg-type]


def test_end_offset_for_is_the_leaders_answer() -> None:
    cache = [(0, 0), (3, 50), (5, 80)]
    assert end_offset_for(cache, 5, 120) == (5, 120)  # the latest epoch: the log end
    assert end_offset_for(cache, 0, 120) == (0, 50)
    assert end_offset_for(cache, 4, 120) == (3, 80)  # unknown epoch: the largest below it
    assert end_offset_for(cache, 6, 120) == (-1, -1)  # above every epoch: undefined
    assert end_offset_for([(2, 10)], 1, 120) == (1, 10)  # below every epoch
    assert end_offset_for(cache, -1, 120) == (-1, -1)


def test_a_commit_with_an_epoch_past_the_cut_moves_to_the_new_end() -> None:
    [i] = impact(_table(("g", 250, 0)), _bounds(0, 200, {0: 0}, removed=(200, 299)))
    assert (i.out_of_range, i.epoch_check, i.epoch_end_offset) == ("past-log-end", "diverged", 200)
    assert (i.resume_earliest, i.resume_latest, i.fails_with_none) == (200, 200, "LogTruncationException")
    assert (i.lost_unread, i.refill_skips, i.hurt) == (50, 0, True)


def test_a_commit_without_an_epoch_past_the_end_is_reset() -> None:
    [i] = impact(_table(("g", 260, -1)), _bounds(0, 200, {0: 0}, removed=(200, 299)))
    assert (i.out_of_range, i.epoch_check) == ("past-log-end", "none")
    assert (i.resume_earliest, i.resume_latest, i.fails_with_none) == (0, 200, "OffsetOutOfRangeException")
    assert (i.rereads_earliest, i.skips_latest, i.refill_skips, i.lost_unread) == (200, 0, 60, 40)
    assert (i.count_exact, i.count_note) == (False, "offset span: the data was not read")


def test_a_commit_before_the_log_start_skips_or_reads_from_the_start() -> None:
    spans = [BatchSpan(100, 109, 10), BatchSpan(110, 110, 1, control=True), BatchSpan(111, 149, 20)]
    [i] = impact(_table(("g", 50, 0)), _bounds(100, 150, {0: 100}, batches=spans))
    assert i.out_of_range == "before-log-start"
    assert (i.resume_earliest, i.resume_latest) == (100, 150)
    # Latest skips every record left, counted from the batches: the control record is no record.
    assert (i.rereads_earliest, i.skips_latest, i.count_exact) == (0, 30, True)


def test_an_epoch_the_log_diverged_from_is_detected_in_range() -> None:
    # An unclean election: epoch 3 started at 50, below the commit made in epoch 0 at 80.
    [i] = impact(_table(("g", 80, 0)), _bounds(0, 120, {0: 0, 3: 50}))
    assert (i.out_of_range, i.epoch_check, i.resume_earliest, i.resume_latest) == (None, "diverged", 50, 50)
    assert i.rereads_earliest == 30
    assert i.hurt
    [ok] = impact(_table(("g", 80, 3)), _bounds(0, 120, {0: 0, 3: 50}))
    assert (ok.epoch_check, ok.resume_earliest, ok.hurt) == ("valid", 80, False)


def test_counts_over_a_cut_batch_are_estimates() -> None:
    b = PartitionBounds(0, 100, None, {0: 0}, batches=(BatchSpan(0, 49, 10), BatchSpan(50, 99, 50)))
    assert count_records(b, 0, 50) == (10, True)  # compacted batch, whole: its record count
    assert count_records(b, 25, 100) == (55, False)  # half of the compacted batch: prorated
    assert count_records(b, 60, 100) == (40, True)  # a batch without gaps: exact even when cut


def test_share_start_outside_the_bounds() -> None:
    table = CommitTable()
    table.share[("sg", "ID", 0)] = ShareState("sg", "ID", 0, 250, 0, 0, (), 0, "here")
    [i] = impact(table, {("t", 0): PartitionBounds(0, 200, (200, 299), {0: 0}, topic_id="ID")})
    assert (i.group_type, i.out_of_range, i.lost_unread, i.hurt) == ("share", "past-log-end", 50, True)
    assert impact(table, {("t", 0): PartitionBounds(0, 200, None, {0: 0}, topic_id="other")}) == []


def test_partition_bounds_after_a_cut(tmp_path: Path) -> None:
    part_dir = tmp_path / "t-0"
    seg = SegmentBuilder()
    for epoch in (0, 0, 2, 2):
        seg.add_v2(records(10), leader_epoch=epoch)
    seg.write(part_dir)
    (part_dir / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n2 20\n")
    part = PartitionDir.load(part_dir)
    now = partition_bounds(part)
    assert (now.log_start_offset, now.log_end_offset, now.removed) == (0, 40, None)
    cut = partition_bounds(part, cut_at=15)
    assert (cut.log_end_offset, cut.removed, cut.removed_records) == (10, (10, 39), 30)
    assert dict(cut.epoch_start_offsets) == {0: 0}
    table = CommitTable()
    table.commits[("g", "t", 0)] = Commit("g", "t", 0, 35, 2, "", 0, 0, "here")
    [i] = impact(table, {("t", 0): cut})
    # Epoch 2 is gone from the cache: the leader answers with its epoch above it, at the new end.
    assert (i.epoch_check, i.epoch_end_offset, i.resume_latest, i.lost_unread) == ("diverged", 10, 10, 5)


def test_trim_tail_plan_names_the_groups_it_hurts(
    corpus_root: Path, tmp_path: Path, kdump: Callable[..., Result]
) -> None:
    log_dir = tmp_path / "logs"
    shutil.copytree(corpus_root / "kafka-3.8.0" / "__consumer_offsets-0", log_dir / "__consumer_offsets-0")
    c_none_partition(corpus_root, log_dir / "c-none-0")
    result = kdump("trim-tail", "--to-offset", "400", "--format", "json", str(log_dir / "c-none-0"))
    assert result.exit_code == 1, result.stderr
    [row] = [json.loads(line) for line in result.stdout.splitlines()]
    assert row["consumer_groups_read_from"] == [str(log_dir / "__consumer_offsets-0")]
    groups = {g["group"]: g for g in row["consumer_groups"]}
    assert set(groups) == {"kdump-cg", "kdump-cg2"}
    cg = groups["kdump-cg"]
    end = row["new_log_end_offset"]
    assert end <= 400
    assert (cg["committed_offset"], cg["log_end_offset"], cg["epoch_check"]) == (1008, end, "diverged")
    assert (cg["resume_earliest"], cg["resume_latest"], cg["lost_unread"]) == (end, end, 2999 - 1008 + 1)
    text = kdump("trim-tail", "--to-offset", "400", str(log_dir / "c-none-0"))
    assert "group kdump-cg (classic) on c-none-0: committed 1008 (epoch 0)" in text.stdout
    assert "leader epoch 0 invalidated" in text.stdout
    # Commits given elsewhere: an empty log dir holds none, and the plan says so.
    (tmp_path / "empty").mkdir()
    none = kdump(
        "trim-tail", "--to-offset", "400", "--commits", str(tmp_path / "empty"), str(log_dir / "c-none-0")
    )
    assert "no __consumer_offsets found where --commits points" in none.stdout


def test_commits_written_here_join_a_partition_written_here(tmp_path: Path) -> None:
    offsets = SegmentBuilder()
    offsets.add_v2([offset_commit("g", "t", 0, 15, leader_epoch=0)])
    offsets.write(tmp_path / "__consumer_offsets-3")
    state = SegmentBuilder()
    state.add_v2([share_state("sg", "AAAAAAAAAAAAAAAAAAAAAQ", 0, 30)])
    state.write(tmp_path / "__share_group_state-0")
    part_dir = tmp_path / "t-0"
    seg = SegmentBuilder()
    for _ in range(4):
        seg.add_v2(records(10))
    seg.write(part_dir)
    (part_dir / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n")
    bounds = partition_bounds(PartitionDir.load(part_dir), cut_at=20)
    got = impact(read_commits([tmp_path]), {("t", 0): bounds})
    assert [(i.group, i.out_of_range) for i in got] == [("g", None), ("sg", "past-log-end")]


def test_real_kafka_4_4_groups_of_every_type_against_a_cut(tmp_path_factory: pytest.TempPathFactory) -> None:
    from kafka4_corpus import kafka4_root

    log_dir = kafka4_root(tmp_path_factory.getbasetemp()) / "kafka-4.4.0"
    part = PartitionDir.load(log_dir / "orders-0")
    bounds = partition_bounds(part, log_dir / "_logdir-files", cut_at=3)
    assert bounds.topic_id == "XpZWdSSATSKQn7yeykFdQA"  # the share state names the topic by this id
    got = {i.group: i for i in impact(read_commits([log_dir]), {("orders", 0): bounds})}
    assert set(got) == {"classic-group", "consumer-group", "regex-group", "share-group", "txn-group"}
    end = bounds.log_end_offset
    assert end <= 3
    for name in ("classic-group", "consumer-group", "regex-group"):
        assert (got[name].committed_offset, got[name].epoch_check, got[name].resume_latest) == (
            5,
            "diverged",
            end,
        )
    txn = got["txn-group"]  # its commits carry no epoch: out of range, reset
    assert (txn.epoch_check, txn.resume_earliest, txn.resume_latest, txn.refill_skips) == (
        "none",
        0,
        end,
        5 - end,
    )
    share = got["share-group"]
    # Its start offset is 0, with 0..3 acknowledged and 4 archived: delivery goes on at 5, past the cut.
    assert (share.group_type, share.committed_offset, share.out_of_range) == ("share", 5, "past-log-end")


def test_damaged_commits_are_said_with_the_check_to_run(
    corpus_root: Path, tmp_path: Path, kdump: Callable[..., Result]
) -> None:
    log_dir = tmp_path / "logs"
    shutil.copytree(corpus_root / "kafka-3.8.0" / "__consumer_offsets-0", log_dir / "__consumer_offsets-0")
    c_none_partition(corpus_root, log_dir / "c-none-0")
    offsets_log = log_dir / "__consumer_offsets-0" / "00000000000000000000.log"
    offsets_log.write_bytes(offsets_log.read_bytes()[:-10])  # a torn last batch
    result = kdump("trim-tail", "--to-offset", "400", str(log_dir / "c-none-0"))
    assert "problems reading the committed offsets" in result.stderr
    assert f"check with: kdump verify {log_dir / '__consumer_offsets-0'}" in result.stderr
    assert "partial-trailing-batch" in result.stderr
    assert "group kdump-cg (classic) on c-none-0" in result.stdout
