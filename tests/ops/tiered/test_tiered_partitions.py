"""A tiered partition's log start offset, as the broker loads it, in every command that reports it: which
partitions are tiered (topic configs from the KRaft metadata log or its newest snapshot), dump's
log-start line, compare's replica table and gap reasons; and the names tiered storage gives its files."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from builders import SegmentBuilder
from click.testing import Result
from tiered_corpus import log_dir_copy, tiered_root

from kdump.formats.batch import BatchHeader
from kdump.formats.records import NewRecord, Record
from kdump.formats.remote_names import (
    broker_parses_cache_name,
    kafka_uuid_valid,
    parse_cache_file_name,
    parse_remote_file_name,
    parse_remote_partition_dir,
)
from kdump.model.partition import PartitionDir
from kdump.ops.common.topic_config import topic_configs
from kdump.ops.tiered.partitions import TieredContext, broker_log_starts, epoch_for_offset, tiering
from kdump.scan import open_buffer, scan_log

Run = Callable[..., Result]


@pytest.fixture
def data(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    return log_dir_copy(tiered_root(tmp_path_factory.getbasetemp()), "4.4.0", tmp_path / "data")


def test_which_partitions_are_tiered(data: Path) -> None:
    ctx = TieredContext()
    assert tiering(PartitionDir.load(data / "tiered-0"), data, ctx.configs).tiered is True
    assert tiering(PartitionDir.load(data / "plain-0"), data, ctx.configs).tiered is False
    # Internal topics never are, whatever their config says.
    assert tiering(PartitionDir.load(data / "__remote_log_metadata-0"), data, ctx.configs).tiered is False
    assert tiering(PartitionDir.load(data / "tiered-0"), data / "nowhere", ctx.configs).tiered is None


def test_topic_configs_come_from_the_newest_snapshot_too(data: Path) -> None:
    """A metadata log whose records before a snapshot were deleted keeps its configs in the snapshot."""
    meta = data / "__cluster_metadata-0"
    log = meta / "00000000000000000000.log"
    records: list[tuple[int, int, bytes]] = []
    with open_buffer(log) as buf:
        batch: BatchHeader | None = None
        for ev in scan_log(buf, deep=True):
            if isinstance(ev, BatchHeader):
                batch = ev
            elif (
                isinstance(ev, Record) and batch is not None and not batch.is_control and ev.value is not None
            ):
                records.append((ev.offset, ev.timestamp, bytes(ev.value)))
    end = records[-1][0] + 1
    snapshot = SegmentBuilder()
    for offset, ts, value in records:
        snapshot.next_offset = offset
        snapshot.add_v2([NewRecord(None, value, ts)])
    for f in meta.glob("*.checkpoint"):
        f.unlink()
    (meta / f"{end:020d}-{2:010d}.checkpoint").write_bytes(bytes(snapshot.data))
    for f in meta.glob("00000000000000000000.*"):
        f.unlink()
    empty = SegmentBuilder(base_offset=end)
    empty.write(meta)
    assert topic_configs(meta)["tiered"]["remote.storage.enable"] == "true"


def test_broker_log_starts() -> None:
    assert broker_log_starts(37, 280, tiered=True) == (37, 280)
    assert broker_log_starts(37, 280, tiered=False) == (280, 280)
    assert broker_log_starts(None, 280, tiered=True) == (0, 280)  # not listed: the broker starts at 0
    assert broker_log_starts(300, 280, tiered=True) == (300, 300)
    entries = [(0, 37), (2, 190)]
    assert [epoch_for_offset(entries, o) for o in (10, 37, 189, 190, 999)] == [None, 0, 0, 2, 2]


def test_dump_says_where_a_tiered_partition_starts(data: Path, kdump: Run) -> None:
    text = kdump("dump", str(data / "tiered-0")).stdout.splitlines()
    assert (
        text[0]
        == "partition: tiered-0 log_start_offset: 37 local_log_start_offset: 280 in_remote_storage: 37..279"
    )
    assert text[1].startswith("Dumping ")
    rows = [json.loads(line) for line in kdump("dump", "--format", "json", str(data)).stdout.splitlines()]
    starts = [r for r in rows if r["type"] == "log-start"]
    assert [(r["partition"], r["log_start_offset"], r["local_log_start_offset"]) for r in starts] == [
        ("tiered-0", 37, 280)
    ]
    # A plain partition's dump is unchanged.
    assert kdump("dump", str(data / "plain-0")).stdout.startswith("Dumping ")


def test_compare_knows_tiered_replicas(data: Path, tmp_path: Path, kdump: Run) -> None:
    follower = tmp_path / "follower"
    shutil.copytree(data, follower)
    for f in (follower / "tiered-0").glob("00000000000000000280.*"):
        f.unlink()  # its local retention removed one more segment
    result = kdump("compare", "--format", "json", str(data / "tiered-0"), str(follower / "tiered-0"))
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    replicas = {r["replica"]: r for r in rows if r["type"] == "replica"}
    assert [(r["log_start_offset"], r["local_log_start_offset"], r["tiered"]) for r in replicas.values()] == [
        (37, 280, True),
        (37, 310, True),
    ]
    gap = next(r for r in rows if r["type"] == "divergence")
    assert (gap["kind"], gap["first_offset"], gap["last_offset"]) == ("gap", 280, 309)
    assert "in remote storage from its log start offset 37" in gap["reason"]
    text = kdump("compare", str(data / "tiered-0"), str(follower / "tiered-0")).stdout
    assert "37 (local 310)" in text


def test_remote_names() -> None:
    cache = parse_cache_file_name("130_lrhGkQ8hQP25qrjOC0Neig.timeindex.deleted")
    assert cache is not None
    assert (cache.start_offset, cache.segment_id, cache.kind, cache.suffix) == (
        130,
        "lrhGkQ8hQP25qrjOC0Neig",
        "timeindex",
        "deleted",
    )
    assert parse_cache_file_name("130_notauuid.index") is None
    assert parse_cache_file_name("x_lrhGkQ8hQP25qrjOC0Neig.index") is None
    # The broker reads the id between the first "_" and the first "."; an unknown suffix it ignores.
    assert broker_parses_cache_name("130_lrhGkQ8hQP25qrjOC0Neig.foo")
    assert not broker_parses_cache_name("notes.txt")
    assert not broker_parses_cache_name("README")
    assert kafka_uuid_valid("AAAAAAAAAAAAAAAAAAAAAA")
    assert not kafka_uuid_valid("AAAAAAAAAAAAAAAAAAAAA")
    remote = parse_remote_file_name("00000000000000000030-_VARne7JQRKHOByQKjac2A.leader_epoch_checkpoint")
    assert remote is not None
    assert (remote.start_offset, remote.kind) == (30, "leader_epoch_checkpoint")
    part = parse_remote_partition_dir("my-topic-12-CNdFbmoVQ6OKmAm3PFWGjw")
    assert part is not None
    assert (part.topic, part.partition, part.topic_id) == ("my-topic", 12, "CNdFbmoVQ6OKmAm3PFWGjw")
