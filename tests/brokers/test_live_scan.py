"""kdump on a running broker's log dir under load (issue 31): segments roll every megabyte, retention
deletes the oldest ones every second, the active segment grows and its preallocated indexes are
trimmed at each roll, while `kdump verify` and `kdump dump` read the same files. Whatever they
meet: no signal, no traceback, no internal error; findings only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from brokers.cluster import BrokerFailed, KafkaCluster
from brokers.fixtures import skip_or_fail
from brokers.releases import Release
from brokers.tools import run_class

KDUMP = [sys.executable, "-m", "kdump"]
TOPIC = "churn"


def _producer(cluster: KafkaCluster, release: Release, stop: threading.Event) -> threading.Thread:
    def produce() -> None:
        while not stop.is_set():
            run_class(
                release,
                "org.apache.kafka.tools.ProducerPerformance",
                "--topic",
                TOPIC,
                "--num-records",
                "60000",
                "--record-size",
                "300",
                "--throughput",
                "-1",
                "--producer-props",
                f"bootstrap.servers={cluster.bootstrap}",
                "linger.ms=5",
                "batch.size=32768",
                timeout=120,
            )

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    return thread


def test_verify_and_dump_race_a_rolling_and_deleting_broker(kafka_newest: Release, tmp_path: Path) -> None:
    cluster = KafkaCluster(
        kafka_newest,
        tmp_path / "cluster",
        config={"log.retention.check.interval.ms": 1000, "log.segment.delete.delay.ms": 0},
    )
    try:
        cluster.format()
        cluster.start()
    except BrokerFailed as exc:
        cluster.kill()
        skip_or_fail(f"a real Kafka {kafka_newest.version} broker did not start here: {exc}")
    with cluster:
        created = run_class(
            kafka_newest,
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            cluster.bootstrap,
            "--create",
            "--topic",
            TOPIC,
            "--partitions",
            "1",
            "--replication-factor",
            "1",
            "--config",
            "segment.bytes=1048576",
            "--config",
            "retention.bytes=3145728",
            "--config",
            "segment.index.bytes=65536",
        )
        if created.returncode != 0:
            pytest.skip(f"the topic could not be created here: {created.stderr[-500:]}")
        stop = threading.Event()
        producer = _producer(cluster, kafka_newest, stop)
        log_dir = cluster.nodes[0].log_dir
        partition = log_dir / f"{TOPIC}-0"
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and len(list(partition.glob("*.log"))) < 3:
                time.sleep(0.5)
            runs = 0
            end = time.monotonic() + 40
            while time.monotonic() < end:
                for args in (
                    ["verify", str(log_dir)],
                    ["verify", "--deep", str(partition)],
                    ["dump", "--records", str(partition)],
                ):
                    proc = subprocess.run(
                        [*KDUMP, *args],
                        capture_output=True,
                        text=True,
                        timeout=300,
                        check=False,
                        env=os.environ,
                    )
                    runs += 1
                    assert proc.returncode >= 0, f"{args}: killed by signal {-proc.returncode}"
                    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
                    assert proc.returncode in (0, 1, 3), (args, proc.returncode, proc.stderr[-2000:])
            assert runs >= 3
        finally:
            stop.set()
            producer.join(timeout=150)
