"""The broker harness itself, on a real broker of the newest release: it starts, takes records, stops
cleanly (the clean-shutdown marker is written) or is killed (it is not), and Kafka's own
DumpLogSegments of the same release reads what it wrote with the same batches kdump reads."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from brokers.cluster import KafkaCluster, kafka_uuid
from brokers.releases import Release
from brokers.tools import dump_log
from kdump.formats.batch import BatchHeader
from kdump.scan import open_buffer, scan_log


def test_generated_ids_never_read_as_options() -> None:
    """A cluster or directory id starting with '-' made the StorageTool's `-t` refuse it (one
    CI run in 64); Kafka's own generator never makes one either."""
    ids = [kafka_uuid() for _ in range(5000)]
    assert all(len(i) == 22 for i in ids)
    assert not [i for i in ids if i.startswith("-")]


def _produce(bootstrap: str, topic: str, count: int, compression: str | None) -> None:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type=compression, linger_ms=5)
    for i in range(count):
        producer.send(topic, key=b"key-%d" % i, value=b"value-%d" % i, headers=[("h", b"%d" % i)])
    producer.flush()
    producer.close()


def _kafka_batches(release: Release, segment: Path) -> list[tuple[int, int, int]]:
    """(baseOffset, lastOffset, position) of each batch in Kafka's own shallow dump."""
    out = dump_log(release, [segment])
    found = re.findall(r"baseOffset: (\d+) lastOffset: (\d+) .*? position: (\d+)", out)
    return [(int(b), int(last), int(p)) for b, last, p in found]


def _kdump_batches(segment: Path) -> list[tuple[int, int, int]]:
    with open_buffer(segment) as buf:
        return [
            (ev.base_offset, ev.last_offset, ev.position)
            for ev in scan_log(buf, base_offset=0)
            if isinstance(ev, BatchHeader)
        ]


@pytest.mark.slow
def test_clean_stop_writes_marker_and_kafka_agrees(kafka_single: KafkaCluster, tmp_path: Path) -> None:
    _produce(kafka_single.bootstrap, "harness", 500, "gzip")
    kafka_single.stop()
    node = kafka_single.nodes[0]
    assert (node.log_dir / ".kafka_cleanshutdown").exists()
    segment = node.log_dir / "harness-0" / "00000000000000000000.log"
    copy = tmp_path / segment.name  # Kafka reads the base offset from the name
    shutil.copyfile(segment, copy)
    kafka = _kafka_batches(kafka_single.release, copy)
    assert kafka, "Kafka's tool printed no batch"
    assert _kdump_batches(copy) == kafka


@pytest.mark.slow
def test_kill_leaves_no_marker(kafka_single: KafkaCluster) -> None:
    _produce(kafka_single.bootstrap, "crash", 50, None)
    kafka_single.kill()
    assert not kafka_single.nodes[0].running()
    assert not (kafka_single.nodes[0].log_dir / ".kafka_cleanshutdown").exists()
