"""verify's verdict against a real broker's: what kdump calls an error the broker refuses, and what a
healthy broker leaves verifies clean.

One KRaft node of the newest release takes records, deletes the head of its partition
(DeleteRecords: the broker truncates its leader-epoch-checkpoint at the new log start at once) and
stops cleanly: verify of that log dir reports nothing. Then each checkpoint the broker reads at
start-up is made malformed in turn: verify reports `checkpoint-corrupt` as an error, and the broker
puts the log dir offline and shuts down (`Shutdown broker because all log dirs ... have failed`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from brokers.cluster import BrokerFailed, KafkaCluster

pytestmark = pytest.mark.slow

TOPIC = "verdict"
DELETE_BEFORE = 120


Kdump = Callable[..., Result]


def _verify(kdump: Kdump, path: Path) -> tuple[int, list[tuple[str, str, str]]]:
    """verify's exit status and its findings other than info: (severity, code, file name)."""
    result = kdump("verify", "--format", "json", str(path))
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    found = [
        (r["severity"], r["code"], Path(r["file"]).name)
        for r in rows
        if r["type"] == "finding" and r["severity"] != "info"
    ]
    return result.exit_code, found


def _produce_and_delete_head(bootstrap: str) -> None:
    from kafka import KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)])
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0)
    for i in range(300):
        producer.send(TOPIC, value=b"v" * 100 + b"%d" % i)
        if i % 10 == 0:
            producer.flush()  # many batches
    producer.flush()
    producer.close()
    admin.delete_records({TopicPartition(TOPIC, 0): DELETE_BEFORE})
    admin.close()


def _refuses_to_start(cluster: KafkaCluster) -> bool:
    """Start the node; True when it exits instead of serving (waiting a little after it started)."""
    node = cluster.nodes[0]
    try:
        cluster.start(timeout=90)
    except BrokerFailed:
        return True
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and node.running():
        time.sleep(0.5)
    refused = not node.running()
    cluster.kill()
    return refused


BAD = {
    "leader-epoch-checkpoint": "0\n2\n0 120\n",  # says two entries, holds one
    "partition.metadata": "version: 0\n",  # no topic id
    "recovery-point-offset-checkpoint": "0\n2\nverdict 0 5\n",
    "replication-offset-checkpoint": "0\n2\nverdict 0 5\n",
    "cleaner-offset-checkpoint": "0\nx\n",
    "log-start-offset-checkpoint": "0\n2\nverdict 0 5\n",
}


def test_malformed_checkpoints_are_errors_the_broker_refuses(
    kafka_single: KafkaCluster, kdump: Kdump
) -> None:
    _produce_and_delete_head(kafka_single.bootstrap)
    kafka_single.stop()
    log_dir = kafka_single.nodes[0].log_dir
    part = log_dir / f"{TOPIC}-0"
    # The broker truncated its epoch checkpoint at the new log start; the batches below stay.
    assert (part / "leader-epoch-checkpoint").read_text().split()[2:] == ["0", str(DELETE_BEFORE)]
    assert _verify(kdump, log_dir) == (0, [])

    for name, text in BAD.items():
        path = part / name if name in ("leader-epoch-checkpoint", "partition.metadata") else log_dir / name
        good = path.read_text() if path.exists() else None
        path.write_text(text)
        try:
            assert _verify(kdump, log_dir) == (1, [("error", "checkpoint-corrupt", name)])
            assert _refuses_to_start(kafka_single), f"the broker served with a malformed {name}"
        finally:
            if good is None:
                path.unlink()
            else:
                path.write_text(good)
