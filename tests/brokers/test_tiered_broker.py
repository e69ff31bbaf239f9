"""Tiered storage on a live broker of the newest release: LocalTieredStorage loads (through the harness's
classpath shim where it needs one), segments are copied and deleted locally, and what the broker leaves
verifies clean with kdump, whose earliest-local and latest-tiered equal the broker's ListOffsets."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from brokers.cluster import BrokerFailed, KafkaCluster, java_command, wait_until
from brokers.fixtures import require_release, skip_or_fail
from brokers.releases import NEWEST
from brokers.tiered import TieredUnavailable, broker_config, tiered_release

pytestmark = pytest.mark.slow

PROBE = Path(__file__).resolve().parents[1] / "data" / "ListOffsetsProbe.java"


def _wait(cond: Callable[[], bool], what: str, timeout: float = 180) -> None:
    if not wait_until(cond, timeout):
        pytest.fail(f"timed out waiting for {what}")


def test_a_live_tiered_broker_verifies_clean_and_agrees_on_kip_1005(
    tmp_path: Path, kdump: Callable[..., Result]
) -> None:
    try:
        release = tiered_release(require_release(NEWEST))
    except TieredUnavailable as exc:
        skip_or_fail(f"no tiered storage here: {exc}")
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    remote = tmp_path / "remote"
    remote.mkdir()
    cluster = KafkaCluster(release, tmp_path / "cluster", config=broker_config(remote))
    try:
        cluster.format()
        cluster.start()
    except BrokerFailed as exc:
        cluster.kill()
        skip_or_fail(f"a tiered Kafka {release.version} broker did not start here: {exc}")
    with cluster:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        config = {
            "remote.storage.enable": "true",
            "segment.ms": "1000",
            "local.retention.bytes": "1",
            "retention.ms": "-1",
        }
        admin.create_topics([NewTopic("t", num_partitions=1, replication_factor=1, topic_configs=config)])
        admin.close()
        producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, linger_ms=20)
        for wave in range(4):
            for i in range(20):
                producer.send("t", value=b"wave %d record %d" % (wave, i))
            producer.flush()
            time.sleep(1.2)
        producer.close()
        log_dir = cluster.nodes[0].log_dir
        _wait(lambda: len(list(remote.rglob("*.log"))) >= 3, "copies to the remote store")
        _wait(lambda: min(int(p.name[:20]) for p in (log_dir / "t-0").glob("*.log")) > 0, "local deletion")
        probe = subprocess.run(
            java_command(release, str(PROBE), cluster.bootstrap, "t:0:earliest-local", "t:0:latest-tiered"),
            capture_output=True,
            text=True,
            check=True,
            timeout=180,
        )
        answers = {a["spec"]: a for a in map(json.loads, probe.stdout.splitlines())}
        cluster.stop()
    result = kdump("verify", "--format", "json", str(log_dir), str(remote))
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    errors = [r for r in rows if r["type"] == "finding" and r["severity"] == "error"]
    assert (result.exit_code, errors) == (0, [])
    for spec in ("earliest-local", "latest-tiered"):
        seek = json.loads(kdump("seek-by-time", "--format", "json", spec, str(log_dir / "t-0")).stdout)
        assert (seek["offset"], seek["leader_epoch"]) == (
            answers[spec]["offset"],
            answers[spec]["leaderEpoch"],
        )
