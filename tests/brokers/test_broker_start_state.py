"""A pre-start gate on what a real broker writes: a freshly formatted KRaft log dir passes verify, and
the broker then starts on it; after a clean stop with a new, empty topic, verify still passes.

Behind `ExecStartPre=kdump verify LOGDIR` a new broker must start: `kafka-storage format` leaves only
`meta.properties` and `bootstrap.checkpoint`, which verify once refused as `nothing-to-check`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from brokers.cluster import BrokerFailed, KafkaCluster
from brokers.fixtures import skip_or_fail
from brokers.releases import Release

pytestmark = pytest.mark.slow

Kdump = Callable[..., Result]


def _verify(kdump: Kdump, path: Path) -> tuple[int, list[tuple[str, str]]]:
    result = kdump("verify", "--format", "json", str(path))
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    found = [
        (r["code"], Path(r["file"]).name) for r in rows if r["type"] == "finding" and r["severity"] != "info"
    ]
    return result.exit_code, found


def test_a_formatted_log_dir_passes_and_the_broker_starts(
    kafka_newest: Release, tmp_path: Path, kdump: Kdump
) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    cluster = KafkaCluster(kafka_newest, tmp_path / "cluster")
    cluster.format()
    log_dir = cluster.nodes[0].log_dir
    assert (log_dir / "meta.properties").is_file()
    assert _verify(kdump, log_dir) == (0, [])
    # Older formats (and a broker's data dir beside a separate metadata dir) leave only these two.
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("meta.properties", "bootstrap.checkpoint"):
        if (log_dir / name).is_file():
            (bare / name).write_bytes((log_dir / name).read_bytes())
    assert _verify(kdump, bare) == (0, [])
    with cluster:
        try:
            cluster.start()
        except BrokerFailed as exc:
            skip_or_fail(f"a real Kafka {kafka_newest.version} broker did not start here: {exc}")
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        admin.create_topics([NewTopic("empty", num_partitions=2, replication_factor=1)])
        admin.close()
        cluster.stop()
    # Partitions of a topic nothing was written to: empty active segments, state files only.
    assert (log_dir / "empty-0").is_dir()
    assert _verify(kdump, log_dir) == (0, [])
    assert _verify(kdump, log_dir / "empty-1") == (0, [])


def test_a_metadata_log_without_its_segments_is_log_missing_and_the_node_cannot_start(
    kafka_newest: Release, tmp_path: Path, kdump: Kdump
) -> None:
    """`__cluster_metadata-0` with no segment and no snapshot but its leader-epoch-checkpoint: verify
    says `log-missing`, an error; the node (a standalone dynamic quorum, as `format --standalone`
    makes it) then cannot start at all."""
    from kafka.admin import KafkaAdminClient, NewTopic

    # The broker gives up registering after this long (60 s by default): the last start is that wait.
    quick = {"initial.broker.registration.timeout.ms": 15000}
    cluster = KafkaCluster(kafka_newest, tmp_path / "cluster", config=quick)
    cluster.format()
    with cluster:
        try:
            cluster.start()
        except BrokerFailed as exc:
            skip_or_fail(f"a real Kafka {kafka_newest.version} broker did not start here: {exc}")
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        admin.create_topics([NewTopic("kept", num_partitions=1, replication_factor=1)])
        assert "kept" in admin.list_topics()
        admin.close()
        cluster.stop()
        cluster.start()  # a new election: the next leader epoch begins past offset 0
        cluster.stop()
        meta = cluster.nodes[0].log_dir / "__cluster_metadata-0"
        epochs = (meta / "leader-epoch-checkpoint").read_text().split()
        assert int(epochs[-1]) > 0, epochs  # an epoch begun past offset 0
        for p in meta.iterdir():
            if p.suffix in (".log", ".index", ".timeindex", ".snapshot", ".checkpoint"):
                p.unlink()
        found = _verify(kdump, cluster.nodes[0].log_dir)
        assert found == (1, [("log-missing", "leader-epoch-checkpoint")])
        # The dynamic quorum's voter set was in the metadata log (its bootstrap snapshot): the node
        # finds no voter, elects no leader, and its broker exits, unable to register.
        with pytest.raises(BrokerFailed):
            cluster.start(timeout=90)
        assert "unable to register with the controller quorum" in cluster.nodes[0].server_log.read_text()
