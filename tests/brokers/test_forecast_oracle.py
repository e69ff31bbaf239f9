"""`kdump forecast` against the broker: per scenario a copy of a real broker's log dir is forecast, then a
real broker starts on it, and what it did is compared with the forecast: whether it started, every
partition's log start and end (ListOffsets), the records a consumer reads, the offset indexes it
rewrote, and the directories renamed or deleted.

Broker runs are shared: the scenarios that touch different partitions are planted in one copy
(missing clean-shutdown marker, torn tail, topic-id mismatch, a partition of a topic the metadata does not
know, a missing partition directory). The newest release runs every scenario (eight broker starts);
3.9.1 runs the clean stop, kill -9, the planted copy and the unfinished ZooKeeper migration on a data set
of its own (four more, and its own origin).
"""

from __future__ import annotations

import re
import shutil
import struct
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from brokers.cluster import BrokerFailed
from brokers.fixtures import require_release, skip_or_fail
from brokers.recovery import (
    CONTROL,
    CRASH,
    DELETED_HEAD,
    LIVE,
    TOPICS,
    Origin,
    broker_on_copy,
    copy_log_dir,
    produce_origin,
    segment_logs,
    served,
)
from brokers.releases import NEWEST
from kdump.formats.checkpoints import encode_partition_metadata
from kdump.formats.filenames import CLEAN_SHUTDOWN_FILE
from kdump.ops.forecast import Forecast, Verdict, forecast
from kdump.ops.metadata import load_image

pytestmark = pytest.mark.slow

ALL_TOPICS = [*TOPICS, LIVE, CRASH]
OLDER = "3.9.1"
TORN = TOPICS[0]  # a damage topic: untouched in the origin, several segments
MISMATCH = DELETED_HEAD
MISSING = TOPICS[1]
GHOST = "oracle-ghost"  # a topic the metadata never had


@dataclass
class Run:
    forecast: Forecast
    started: bool
    served: dict[str, tuple[int, int]] = field(default_factory=dict)
    dirs_after: set[str] = field(default_factory=set)
    failure: str = ""
    offsets: dict[str, tuple[int, ...]] = field(default_factory=dict)  # every offset a consumer read
    changed_indexes: set[str] = field(default_factory=set)  # offset indexes the broker rewrote


_ORIGINS: dict[str, Origin] = {}


def _origin_of(version: str, tmp_path_factory: pytest.TempPathFactory) -> Origin:
    """The data set of `version`, produced once per run (several fixtures share it)."""
    if version not in _ORIGINS:
        release = require_release(version)
        try:
            _ORIGINS[version] = produce_origin(release, tmp_path_factory.mktemp(f"forecast-{version}"))
        except BrokerFailed as exc:
            skip_or_fail(f"a real Kafka {release.version} broker did not run here: {exc}")
    return _ORIGINS[version]


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Origin:
    return _origin_of(NEWEST, tmp_path_factory)


# The newest release runs every scenario; 3.9 (the last with ZooKeeper, the other end of what kdump
# forecasts) runs a representative subset on its own data set: clean stop, kill -9, the planted copy
# (torn tail, no clean-shutdown marker, topic-id mismatch, unknown topic, missing partition) and the
# unfinished ZooKeeper migration, the one scenario where 3.9 and 4.x differ.
@pytest.fixture(scope="module", params=[NEWEST, OLDER])
def origin_each(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Origin:
    return _origin_of(str(request.param), tmp_path_factory)


def _release_of(origin: Origin) -> str:
    return ".".join(origin.release.version.split(".")[:2])


def _indexes(log_dir: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in log_dir.glob("*/*.index")}


def _run(origin: Origin, log_dir: Path, read: frozenset[str] = frozenset()) -> Run:
    """Forecast `log_dir`, start the broker on it; consumers read every record of the `read` topics."""
    fc = forecast([log_dir], kafka_version=_release_of(origin))
    run = Run(fc, started=False)
    before = _indexes(log_dir)
    try:
        with broker_on_copy(origin, log_dir) as cluster:
            run.started = True
            got = served(cluster.bootstrap, ALL_TOPICS, unread=frozenset(ALL_TOPICS) - read)
            run.served = {t: (s.log_start_offset, s.log_end_offset) for t, s in got.items()}
            run.offsets = {t: s.offsets for t, s in got.items() if t in read}
    except BrokerFailed as exc:
        run.failure = str(exc)
    run.dirs_after = {p.name for p in log_dir.iterdir() if p.is_dir()}
    after = _indexes(log_dir)
    run.changed_indexes = {p for p, data in before.items() if after.get(p) != data}
    return run


def _forecast_bounds(fc: Forecast) -> dict[str, tuple[int | None, int | None]]:
    return {
        topic: (p.log_start_offset, p.log_end_offset)
        for (topic, part), p in fc.bounds().items()
        if part == 0 and topic in ALL_TOPICS
    }


def _copy(origin: Origin, src: Path, tmp: Path) -> Path:
    return copy_log_dir(src, tmp / "node" / "data")


def _assert_bounds_match(run: Run) -> None:
    assert run.started, run.failure
    assert _forecast_bounds(run.forecast) == run.served


def test_clean_stop(origin_each: Origin, tmp_path: Path) -> None:
    origin = origin_each
    run = _run(origin, _copy(origin, origin.clean, tmp_path))
    assert run.forecast.verdict == Verdict.CLEAN
    _assert_bounds_match(run)


def test_kill_9_under_load(origin_each: Origin, tmp_path: Path) -> None:
    origin = origin_each
    run = _run(origin, _copy(origin, origin.crashed, tmp_path))
    assert run.forecast.verdict in (Verdict.RECOVERS, Verdict.LOSES)
    _assert_bounds_match(run)


def test_corrupt_checkpoint(origin: Origin, tmp_path: Path) -> None:
    log_dir = _copy(origin, origin.clean, tmp_path)
    (log_dir / "recovery-point-offset-checkpoint").write_bytes(b"0\n2\nnot a checkpoint line\n")
    run = _run(origin, log_dir)
    assert run.forecast.verdict == Verdict.NO_START
    assert not run.started


@pytest.fixture(scope="module")
def planted(origin_each: Origin, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """One copy of the clean stop with: no clean-shutdown marker, a torn tail, a topic-id mismatch (the
    topic deleted and re-created under its name while the broker was down), a partition of a topic the
    metadata does not know, and a missing partition directory of which this broker is the only replica."""
    origin = origin_each
    log_dir = copy_log_dir(origin.clean, tmp_path_factory.mktemp("planted") / "node" / "data")
    (log_dir / CLEAN_SHUTDOWN_FILE).unlink()
    last = segment_logs(log_dir / f"{TORN}-0")[-1]
    size = last.stat().st_size
    with last.open("r+b") as f:
        f.truncate(size - 7)
    (log_dir / f"{MISMATCH}-0" / "partition.metadata").write_bytes(encode_partition_metadata(uuid.uuid4()))
    shutil.copytree(log_dir / f"{CONTROL}-0", log_dir / f"{GHOST}-0")
    (log_dir / f"{GHOST}-0" / "partition.metadata").write_bytes(encode_partition_metadata(uuid.uuid4()))
    shutil.rmtree(log_dir / f"{MISSING}-0")
    return _run(origin, log_dir, read=frozenset({TORN, DELETED_HEAD}))


def test_planted_verdict_and_bounds(planted: Run) -> None:
    assert planted.forecast.verdict == Verdict.LOSES
    _assert_bounds_match(planted)


def test_torn_tail_cut(planted: Run) -> None:
    torn = planted.forecast.bounds()[(TORN, 0)]
    assert torn.removed is not None
    assert planted.served[TORN][1] == torn.log_end_offset == torn.removed[0]


def test_records_served_are_the_forecast_range(planted: Run) -> None:
    """Every offset from the forecast log start to its end, and no other, is what a consumer reads
    (the torn topic after the cut; the topic whose head DeleteRecords removed)."""
    bounds = planted.forecast.bounds()
    for topic in (TORN, DELETED_HEAD):
        p = bounds[(topic, 0)]
        assert p.log_start_offset is not None
        assert p.log_end_offset is not None
        assert planted.offsets[topic] == tuple(range(p.log_start_offset, p.log_end_offset)), topic


def test_indexes_rebuilt_are_the_forecast_ones(planted: Run) -> None:
    """No clean-shutdown marker: the broker recovers from the recovery point, rebuilding those segments'
    indexes; every offset index it rewrote (of the partitions it loaded) is one the forecast names."""
    named = {i for p in planted.forecast.partitions for i in p.rebuilt_indexes}
    loaded = {p.dir for p in planted.forecast.partitions if p.action in ("load", "recover")}
    changed = {i for i in planted.changed_indexes if Path(i).parent.name in loaded}
    assert changed
    assert changed <= named, sorted(changed - named)


def test_topic_id_mismatch_and_unknown_topic_are_set_aside(planted: Run) -> None:
    actions = {(p.dir, p.action) for p in planted.forecast.partitions}
    assert (f"{MISMATCH}-0", "stray") in actions
    assert (f"{MISMATCH}-0", "create-empty") in actions
    assert (f"{GHOST}-0", "stray") in actions
    # What the broker did with those directories: renamed aside (`-stray`) or deleted, never served.
    assert f"{GHOST}-0" not in planted.dirs_after
    # 4.4 renames a stray log `<topic>-<p>.<uuid>-stray` and keeps it, as the forecast says.
    for name in (GHOST, MISMATCH):
        assert any(d.startswith(f"{name}-0.") and d.endswith("-stray") for d in planted.dirs_after), name
    assert planted.served[MISMATCH] == (0, 0)


def test_missing_partition_created_empty(planted: Run) -> None:
    assert (MISSING, 0) in planted.forecast.bounds()
    assert planted.served[MISSING] == (0, 0)
    assert f"{MISSING}-0" in planted.dirs_after


def _start_jbod(origin: Origin, log_dirs: list[Path]) -> tuple[bool, str]:
    """Start the node on several log dirs (JBOD); whether it started, and its log's tail if not."""
    from brokers.cluster import KafkaCluster, Node
    from brokers.recovery import BROKER_CONFIG

    home = log_dirs[0].parent
    config = {**BROKER_CONFIG, "log.dirs": ",".join(str(p) for p in log_dirs)}
    cluster = KafkaCluster(origin.release, home.parent, config=config, cluster_id=origin.cluster_id)
    node = origin.node
    cluster.nodes = [
        Node(
            node_id=node.node_id,
            home=home,
            broker_port=node.broker_port,
            controller_port=node.controller_port,
            directory_id=node.directory_id,
        )
    ]
    try:
        with cluster:
            cluster.start()
            cluster.stop()
    except BrokerFailed as exc:
        return False, str(exc)
    return True, ""


def test_jbod_log_dir_carrying_another_dirs_directory_id(origin: Origin, tmp_path: Path) -> None:
    log_dir = _copy(origin, origin.clean, tmp_path)
    second = log_dir.parent / "data2"
    second.mkdir()
    shutil.copy(log_dir / "meta.properties", second / "meta.properties")  # a cloned disk: same directory.id
    fc = forecast([log_dir, second])
    assert fc.verdict == Verdict.NO_START
    started, why = _start_jbod(origin, [log_dir, second])
    assert not started
    assert "directory" in why.lower() or "Duplicate" in why, why


def test_damage_below_the_recovery_point_of_a_clean_stop(origin: Origin, tmp_path: Path) -> None:
    """A clean stop's marker: the broker re-reads nothing, so a flipped byte in an old segment is not
    seen at start (verify's matter, not the start-up's): the forecast says it starts clean."""
    log_dir = _copy(origin, origin.clean, tmp_path)
    first = segment_logs(log_dir / f"{CONTROL}-0")[0]
    data = bytearray(first.read_bytes())
    data[len(data) // 2] ^= 0xFF
    first.write_bytes(bytes(data))
    run = _run(origin, log_dir)
    assert run.forecast.verdict == Verdict.CLEAN
    assert run.forecast.reread_bytes == 0
    _assert_bounds_match(run)


def test_partition_metadata_missing_is_stray(origin: Origin, tmp_path: Path) -> None:
    log_dir = _copy(origin, origin.clean, tmp_path)
    (log_dir / f"{CONTROL}-0" / "partition.metadata").unlink()
    run = _run(origin, log_dir)
    actions = {p.action for p in run.forecast.partitions if p.dir == f"{CONTROL}-0"}
    assert actions == {"stray", "create-empty"}
    assert run.forecast.verdict == Verdict.LOSES
    # 4.4 renames the log without a topic id -stray and creates the partition empty.
    _assert_bounds_match(run)
    assert any(d.startswith(f"{CONTROL}-0.") and d.endswith("-stray") for d in run.dirs_after)


def _append_metadata_record(metadata_dir: Path, value: bytes) -> int:
    """Append one metadata record in a batch of its own at the log end of `metadata_dir` (the last
    batch's leader epoch, the next offset), as the controller would have written it; its offset."""
    from kdump.formats.batch import encode_v2_batch
    from kdump.formats.records import encode_v2_record

    log = segment_logs(metadata_dir)[-1]
    data = log.read_bytes()
    position, next_offset, epoch = 0, 0, 0
    while position + 61 <= len(data):
        base, length, leader_epoch = struct.unpack_from(">qii", data, position)
        last_delta = struct.unpack_from(">i", data, position + 23)[0]
        next_offset, epoch = base + last_delta + 1, leader_epoch
        position += 12 + length
    now = int(time.time() * 1000)
    batch = encode_v2_batch(
        base_offset=next_offset,
        records_payload=encode_v2_record(0, 0, None, value),
        count=1,
        last_offset_delta=0,
        base_timestamp=now,
        max_timestamp=now,
        partition_leader_epoch=epoch,
    )
    with log.open("ab") as f:
        f.write(batch)
    return next_offset


def _zk_migration_state_record(state: int) -> bytes:
    """ZkMigrationStateRecord (api key 21, version 0, flexible) in the metadata log's frame: frame
    version 1, api key, version, then the int8 state and an empty tagged-field section."""
    return bytes([1, 21, 0, state, 0])


def test_metadata_log_of_an_abandoned_zookeeper_migration(origin_each: Origin, tmp_path: Path) -> None:
    """A KRaft metadata log whose last ZkMigrationStateRecord says MIGRATION (a ZooKeeper migration
    begun on 3.x and never finalized). Kafka 4.x replays the record as a no-op and starts in KRaft mode
    (the released controllers have no migration check left); 3.9 with the default
    zookeeper.metadata.migration.enable=false completes the migration at activation (POST_MIGRATION).
    The forecast says it starts clean and notes what the migration leaves unknown."""
    origin = origin_each
    log_dir = _copy(origin, origin.clean, tmp_path)
    metadata = log_dir / "__cluster_metadata-0"
    offset = _append_metadata_record(metadata, _zk_migration_state_record(1))
    run = _run(origin, log_dir)
    image = run.forecast.image
    assert image is not None
    assert image.zk_migration_state == 1
    assert image.zk_migration_offset == offset
    assert image.end_offset == offset + 1
    expected = "ignores it" if origin.release.major >= 4 else "completes the migration"
    assert any("MIGRATION" in note and expected in note for note in run.forecast.unknown)
    assert run.forecast.verdict == Verdict.CLEAN
    _assert_bounds_match(run)
    # The broker's metadata loader caught up past the record, and its controller activated on it.
    log = (log_dir.parent / "server.log").read_text(errors="replace")
    caught_up = [
        int(m) for m in re.findall(r"finished catching up to the current high water mark of (\d+)", log)
    ]
    assert max(caught_up, default=-1) > offset, caught_up
    assert "Performing controller activation" in log
    # What the controller then wrote: 3.9 the migration's completion (POST_MIGRATION); 4.x nothing of
    # it, and the snapshots it writes leave the record out (the state is forgotten, not finished).
    after = load_image(metadata).zk_migration_state
    if origin.release.major >= 4:
        assert after in (None, 1)
    else:
        assert after == 3
