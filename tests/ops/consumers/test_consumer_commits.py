"""`read_commits`: the committed offsets and share state the coordinators load, from real bytes.

The corpus's `__consumer_offsets-0` (a real Kafka 3.8 broker's, with classic groups and a transactional
group whose transactions were committed and aborted) and partitions written here with the tests' own
encoder of Kafka's messages.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from builders import SegmentBuilder, consumer_group_metadata, offset_commit, share_state
from click.testing import Result

from kdump.errors import PathError
from kdump.formats.internal.schema import kafka_json
from kdump.ops.consumers import read_commits

TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def test_the_corpus_commits_are_the_last_committed_ones(corpus_root: Path) -> None:
    table = read_commits([corpus_root / "kafka-3.8.0"])
    assert [p.name for p in table.sources] == ["__consumer_offsets-0"]
    assert table.findings == []
    got = {k: (c.offset, c.leader_epoch) for k, c in table.commits.items()}
    # The transactional group's last transaction (commit 160 at offset 15) ended with a COMMIT marker.
    assert got[("kdump-txn-group", "txn-input", 0)] == (160, -1)
    assert got[("kdump-cg", "c-gzip", 0)] == (2992, 0)
    assert got[("kdump-cg2", "c-gzip", 0)] == (3000, 0)
    assert got[("kdump-cg-auto", "c-zstd", 0)] == (3000, 0)
    assert table.pending == []
    assert set(table.group_types.values()) == {"classic"}


def test_a_log_dir_is_searched_by_directory_name(corpus_root: Path, tmp_path: Path) -> None:
    src = corpus_root / "kafka-3.8.0" / "__consumer_offsets-0"
    by_dir = read_commits([src])
    assert by_dir.commits == read_commits([corpus_root / "kafka-3.8.0"]).commits
    log_dir = tmp_path / "logs"
    (log_dir / "__consumer_offsets-0.0123456789abcdef0123456789abcdef-delete").mkdir(parents=True)
    (log_dir / "orders-0").mkdir()
    assert read_commits([log_dir]).sources == []
    with pytest.raises(PathError):
        read_commits([tmp_path / "missing"])


def _offsets_partition(tmp_path: Path) -> tuple[Path, SegmentBuilder]:
    return tmp_path / "__consumer_offsets-0", SegmentBuilder()


def test_transactional_commits_count_once_committed_and_tombstones_delete(tmp_path: Path) -> None:
    part, seg = _offsets_partition(tmp_path)
    seg.add_v2([offset_commit("g", "t", 0, 10)])
    seg.add_v2([offset_commit("g", "t", 0, 20)], producer_id=7, producer_epoch=0, transactional=True)
    seg.add_marker(7, commit=False)  # aborted: 20 never counts
    seg.add_v2([offset_commit("g", "t", 0, 30)], producer_id=7, producer_epoch=0, transactional=True)
    seg.add_marker(7, commit=True)
    # A transaction's commit written before a plain commit does not replace it when it ends later.
    seg.add_v2([offset_commit("g", "t", 1, 40)], producer_id=8, producer_epoch=0, transactional=True)
    seg.add_v2([offset_commit("g", "t", 1, 50)])
    seg.add_marker(8, commit=True)
    seg.add_v2([offset_commit("h", "t", 0, 5), offset_commit("h", "t", 0, None)])
    seg.add_v2([offset_commit("p", "t", 0, 99)], producer_id=9, producer_epoch=0, transactional=True)
    seg.write(part)
    table = read_commits([part])
    assert {k: c.offset for k, c in table.commits.items()} == {("g", "t", 0): 30, ("g", "t", 1): 50}
    assert [(c.group, c.offset) for c in table.pending] == [("p", 99)]
    assert table.commits[("g", "t", 0)].to_row()["transactional"] is True


def test_consumer_protocol_groups_are_known_by_their_records(tmp_path: Path) -> None:
    part, seg = _offsets_partition(tmp_path)
    seg.add_v2([consumer_group_metadata("new-style"), offset_commit("new-style", "t", 0, 7, leader_epoch=3)])
    seg.write(part)
    table = read_commits([part])
    assert table.group_type("new-style") == "consumer"
    assert table.group_type("other") == "unknown"
    assert table.commits[("new-style", "t", 0)].leader_epoch == 3


def test_share_state_snapshot_then_updates(tmp_path: Path) -> None:
    part = tmp_path / "__share_group_state-0"
    seg = SegmentBuilder()
    seg.add_v2([share_state("sg", TOPIC_ID, 0, 100, [(100, 109, 0, 1), (110, 119, 2, 1)])])
    seg.add_v2([share_state("sg", TOPIC_ID, 0, -1, [(105, 107, 2, 1)], update=True)])
    seg.add_v2([share_state("sg", TOPIC_ID, 1, 40)])
    seg.add_v2([share_state("sg", TOPIC_ID, 1, 112, update=True)])
    seg.write(part)
    table = read_commits([part])
    first = table.share[("sg", TOPIC_ID, 0)]
    assert first.start_offset == 100  # an update's -1 keeps the start
    assert first.state_batches == ((100, 104, 0, 1), (105, 107, 2, 1), (108, 109, 0, 1), (110, 119, 2, 1))
    assert table.share[("sg", TOPIC_ID, 1)].start_offset == 112
    assert kafka_json(first.to_row())  # JSON-able


def _kafka44(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from kafka4_corpus import kafka4_root

    return kafka4_root(tmp_path_factory.getbasetemp()) / "kafka-4.4.0"


def test_every_group_type_of_a_real_kafka_4_4_log_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    log_dir = _kafka44(tmp_path_factory)
    table = read_commits([log_dir])
    assert table.findings == []
    assert table.group_types == {
        "classic-group": "classic",
        "consumer-group": "consumer",
        "regex-group": "consumer",
        "share-group": "share",
        "streams-output-reader": "consumer",
        "wordcount": "streams",
    }
    # txn-group: transactions 0-4 committed offsets 1-5 (kafka-dump-log: COMMIT, ABORT, COMMIT, ABORT,
    # COMMIT); the last one committed.
    txn = table.commits[("txn-group", "orders", 0)]
    assert (txn.offset, txn.metadata, txn.producer_id != -1) == (5, "txn 4", True)
    assert table.commits[("consumer-group", "orders", 1)].leader_epoch == 0
    # Share state: ShareSnapshot then ShareUpdate per partition (accepted 0..3, rejected 4).
    states = {k[2]: s for k, s in table.share.items() if k[0] == "share-group"}
    assert {p: (s.start_offset, s.state_batches) for p, s in states.items()} == {
        0: (0, ((0, 3, 2, 1), (4, 4, 4, 1))),
        1: (0, ((0, 3, 2, 1), (4, 4, 4, 1))),
    }


@pytest.mark.parametrize(("cut", "offset", "pending"), [(8, 3, []), (9, 3, [5]), (4, 1, [])])
def test_a_cut_coordinator_log_loads_the_commits_before_it(
    tmp_path_factory: pytest.TempPathFactory,
    tmp_path: Path,
    kdump: Callable[..., Result],
    cut: int,
    offset: int,
    pending: list[int],
) -> None:
    """The coordinator's log cut (trim-tail on a copy) before txn 4's marker, inside it, after txn 1's abort
    data: the last committed transaction's offset is served; an aborted one's never."""
    src = _kafka44(tmp_path_factory) / "__consumer_offsets-0"
    part = shutil.copytree(src, tmp_path / "logs" / "__consumer_offsets-0")
    done = kdump(
        "trim-tail", "--to-offset", str(cut), "--apply", "--backup-dir", str(tmp_path / "bk"), str(part)
    )
    assert done.exit_code == 0, done.stderr
    table = read_commits([part])
    assert table.commits[("txn-group", "orders", 0)].offset == offset
    assert [c.offset for c in table.pending if c.group == "txn-group"] == pending
