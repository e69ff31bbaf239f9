"""`kdump forecast` against three real nodes: a partition reassigned away while this broker was down.

Three combined broker+controller nodes; topic `moved` has replicas [3, 1], `kept` [3, 1]. Node 3 stops
cleanly; `moved` is reassigned to [1, 2] (the admin API's AlterPartitionReassignments) and completes
without it. Node 3's log dir still holds `moved-0`, and the metadata log in it ends before the
reassignment: the forecast is made with the quorum's metadata (a copy of node 1's `__cluster_metadata-0`, `--metadata`),
says `moved-0` is stray, `kept-0` loads. Then node 3 starts on its own log dir and the broker's work is
compared: the stray directory renamed `-stray` (4.x) and not served by node 3, `kept-0` kept.

One cluster start for the module; the data is a few hundred small records.
"""

from __future__ import annotations

import time

import pytest

from brokers.cluster import BrokerFailed, KafkaCluster, wait_until
from brokers.fixtures import require_release, skip_or_fail
from brokers.recovery import copy_log_dir
from brokers.releases import NEWEST
from kdump.ops.forecast import Forecast, Verdict, forecast

pytestmark = pytest.mark.slow

MOVED = "moved"
KEPT = "kept"
RECORDS = 200


def _produce(bootstrap: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=2)
    for topic in (MOVED, KEPT):
        for i in range(RECORDS):
            producer.send(topic, key=b"k%d" % i, value=b"%s record %d" % (topic.encode(), i))
    producer.flush()
    producer.close()


def _reassign(bootstrap: str) -> None:
    """AlterPartitionReassignments (what kafka-reassign-partitions.sh --execute sends), then wait until
    no reassignment is listed: node 2 has caught up from node 1 and node 3 is out of the replicas."""
    from kafka.admin import KafkaAdminClient
    from kafka.structs import TopicPartition

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        tp = TopicPartition(MOVED, 0)
        admin.alter_partition_reassignments({tp: [1, 2]})
        assert wait_until(lambda: not admin.list_partition_reassignments([tp]), 120), "reassignment pending"
    finally:
        admin.close()


class Outcome:
    def __init__(self, fc: Forecast, own: Forecast, before: set[str], after: set[str]) -> None:
        self.forecast, self.own, self.before, self.after = fc, own, before, after


@pytest.fixture(scope="module")
def reassigned(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    release = require_release(NEWEST)
    pytest.importorskip("kafka", reason="kafka-python (the dev extra) creates topics and produces")
    from kafka.admin import KafkaAdminClient, NewTopic

    workdir = tmp_path_factory.mktemp("reassigned")
    cluster = KafkaCluster(release, workdir, size=3, config={"file.delete.delay.ms": 0})
    try:
        cluster.format()
        cluster.start()
    except BrokerFailed as exc:
        cluster.kill()
        skip_or_fail(f"three real Kafka {release.version} nodes did not start here: {exc}")
    with cluster:
        first, third = cluster.nodes[0], cluster.nodes[2]
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        admin.create_topics([NewTopic(t, replica_assignments={0: [3, 1]}) for t in (MOVED, KEPT)])
        admin.close()
        _produce(cluster.bootstrap)
        cluster.stop([third])
        bootstrap12 = f"127.0.0.1:{first.broker_port}"
        _reassign(bootstrap12)
        # The quorum's metadata as node 1 holds it now (its log dir copied while it runs, as an
        # incident team would): it knows the reassignment that node 3 missed.
        quorum_md = copy_log_dir(
            first.log_dir / "__cluster_metadata-0", workdir / "quorum" / "__cluster_metadata-0"
        )
        fc = forecast([third.log_dir], metadata=quorum_md)
        own = forecast([third.log_dir])
        before = {p.name for p in third.log_dir.iterdir() if p.is_dir()}
        cluster.start([third])

        def set_aside() -> bool:
            return f"{MOVED}-0" not in {p.name for p in third.log_dir.iterdir()}

        wait_until(set_aside, 60)
        time.sleep(1)
        after = {p.name for p in third.log_dir.iterdir() if p.is_dir()}
        cluster.stop()
    return Outcome(fc, own, before, after)


def test_reassigned_away_is_stray_in_the_forecast(reassigned: Outcome) -> None:
    actions = {p.dir: p.action for p in reassigned.forecast.partitions}
    assert actions[f"{MOVED}-0"] == "stray"
    assert actions[f"{KEPT}-0"] == "load"
    assert reassigned.forecast.verdict == Verdict.LOSES
    moved = next(p for p in reassigned.forecast.partitions if p.dir == f"{MOVED}-0")
    assert moved.removed == (0, RECORDS - 1)


def test_the_broker_sets_the_reassigned_partition_aside(reassigned: Outcome) -> None:
    assert f"{MOVED}-0" in reassigned.before
    assert f"{MOVED}-0" not in reassigned.after
    # 4.x renames a stray log `<topic>-<p>.<uuid>-stray` and keeps it, as the forecast says.
    assert any(d.startswith(f"{MOVED}-0.") and d.endswith("-stray") for d in reassigned.after), (
        reassigned.after
    )
    assert f"{KEPT}-0" in reassigned.after


def test_own_metadata_says_what_it_cannot_know(reassigned: Outcome) -> None:
    """Node 3's own metadata log ends before the reassignment: the forecast made with it loads `moved-0`
    and says that decisions the quorum made since are not in it (give --metadata)."""
    actions = {p.dir: p.action for p in reassigned.own.partitions}
    assert actions[f"{MOVED}-0"] == "load"
    assert any("--metadata" in note and "reassigned away" in note for note in reassigned.own.unknown)
