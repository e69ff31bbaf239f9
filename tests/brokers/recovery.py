"""Real brokers as the oracle of kdump's verdicts and repairs: the rig of `test_recovery_oracle.py`.

One data set is produced once (`produce_origin`): a single KRaft node, one single-partition topic per
damage class plus an undamaged control, a topic whose head is deleted with DeleteRecords, and a live
topic written while the log dir is copied with ``cp -a`` (a copy taken from a running broker). The node
stops cleanly, its metadata log holding a snapshot; it then starts again, takes a few more records and
is killed with SIGKILL (a copy after a crash).

A broker is started on a copy (`broker_on_copy`) with the node's own id, cluster id and ports (its
metadata log names them), lets its log recovery run, answers what a client sees (`served`), and is
stopped cleanly, leaving on disk what its recovery kept (`partition_files`).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from corruptions import (
    Damage,
    append_garbage,
    flip_body_byte,
    log_entries,
    shuffle_index_entries,
    torn_page,
    truncate_inside,
)

from brokers.cluster import KafkaCluster, Node
from brokers.releases import Release

SEGMENT_BYTES = 48 * 1024
INDEX_INTERVAL_BYTES = 1024
WAVES = 3
RECORDS_PER_WAVE = 700

BROKER_CONFIG: dict[str, object] = {
    # A snapshot of the metadata log within seconds (the default waits an hour or 20 MiB).
    "metadata.log.max.snapshot.interval.ms": 2000,
    # Segments the recovery deletes go at once, not a minute later.
    "file.delete.delay.ms": 0,
}

CONTROL = "oracle-control"
DELETED_HEAD = "oracle-deleted-head"
LIVE = "oracle-live"
CRASH = "oracle-crash"
DELETE_BEFORE = 900


@dataclass(frozen=True)
class DamageClass:
    """A damage planted in one partition of the damaged copy, and what it hits."""

    name: str
    where: str  # "middle" segment or "last" segment (of the .log files sorted by base offset)
    file: str  # "log" or "index"
    damage: Callable[[bytes], Damage]  # made from the segment's bytes (batch counts vary)
    codes: frozenset[str]  # kdump verify must give one of these codes for it (any error when empty)
    # Whether the broker rereads every segment (recovery point 0, a crash before any flush), or only
    # those from the recovery point its clean stop checkpointed (the log end: the last segment).
    recover_all: bool = True

    @property
    def topic(self) -> str:
        return f"oracle-{self.name}"


def _middle_batch(data: bytes) -> Damage:
    return flip_body_byte(len(log_entries(data)) // 2, 40)


DAMAGES: tuple[DamageClass, ...] = (
    DamageClass("flip-middle", "middle", "log", _middle_batch, frozenset({"crc-mismatch"})),
    DamageClass(
        "truncated-batch-middle",
        "middle",
        "log",
        lambda d: truncate_inside(-1, log_entries(d)[-1].size // 2),
        frozenset({"partial-trailing-batch"}),
    ),
    DamageClass(
        "torn-tail", "last", "log", lambda d: truncate_inside(-1, 30), frozenset({"partial-trailing-batch"})
    ),
    DamageClass(
        "zeroed-page",
        "last",
        "log",
        lambda d: torn_page(4096),
        frozenset({"zero-filled-tail", "crc-mismatch", "partial-trailing-batch"}),
    ),
    DamageClass("garbage-tail", "last", "log", lambda d: append_garbage(100, seed=7), frozenset()),
    DamageClass(
        "shuffled-index",
        "middle",
        "index",
        lambda d: shuffle_index_entries(3),
        frozenset({"index-not-monotonic"}),
    ),
    DamageClass("flip-middle-flushed", "middle", "log", _middle_batch, frozenset({"crc-mismatch"}), False),
)

TOPICS = (*(d.topic for d in DAMAGES), CONTROL, DELETED_HEAD)


def segment_logs(partition: Path) -> list[Path]:
    return sorted(partition.glob("*.log"))


def plant(damage: DamageClass, partition: Path) -> Path:
    """Damage the chosen segment (or its offset index) of `partition` in place; the file damaged."""
    logs = segment_logs(partition)
    log = logs[len(logs) // 2] if damage.where == "middle" else logs[-1]
    target = log if damage.file == "log" else log.with_suffix(".index")
    data = target.read_bytes()
    damage.damage(log.read_bytes() if damage.file == "log" else data).apply(target)
    return target


def set_recovery_points(log_dir: Path, offset: int, topics: set[str]) -> None:
    """Rewrite `recovery-point-offset-checkpoint` so these partitions recover from `offset`: the broker
    then rereads every segment, as after a crash before any flush (a clean stop checkpoints the log end)."""
    path = log_dir / "recovery-point-offset-checkpoint"
    version, _count, *rows = path.read_text().splitlines()
    out = []
    for row in rows:
        topic, partition, value = row.split()
        out.append(f"{topic} {partition} {offset if topic in topics else value}")
    path.write_text("\n".join([version, str(len(out)), *out]) + "\n")


def segment_bytes_config(release: Release) -> str:
    """The topic config that sets a small segment size: 4.0 holds `segment.bytes` to at least 1 MiB
    (KIP-1030) and takes smaller ones, for tests, as `internal.segment.bytes`, which 3.x rejects as
    unknown; 3.x takes a small `segment.bytes` directly."""
    return "internal.segment.bytes" if release.major >= 4 else "segment.bytes"


def _records(topic: str, wave: int, count: int) -> Iterator[tuple[bytes, bytes]]:
    for i in range(count):
        n = wave * count + i
        yield b"key-%d" % n, (b"%s wave %d record %d " % (topic.encode(), wave, n)) * (1 + n % 7)


def _produce(bootstrap: str, topics: tuple[str, ...], wave: int, count: int = RECORDS_PER_WAVE) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=2, batch_size=4096, acks=1)
    for topic in topics:
        for key, value in _records(topic, wave, count):
            producer.send(topic, key=key, value=value)
    producer.flush()
    producer.close()


def copy_log_dir(src: Path, dst: Path) -> Path:
    """``cp -a``: what an operator copies (works while a broker writes, as the real command does)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", str(src), str(dst)], check=True, timeout=120)
    return dst


@dataclass
class Origin:
    """The produced data set and the copies taken of it."""

    release: Release
    cluster_id: str
    node: Node
    clean: Path  # the log dir after a clean stop (marker present)
    live: Path  # copied while the broker wrote to LIVE
    crashed: Path  # copied after SIGKILL


def produce_origin(release: Release, workdir: Path) -> Origin:
    """Produce the data set, copy it live, stop cleanly, restart, kill; the three copies."""
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.structs import TopicPartition

    cluster = KafkaCluster(release, workdir / "origin", config=BROKER_CONFIG)
    cluster.format()
    node = cluster.nodes[0]
    with cluster:
        cluster.start()
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        configs = {
            segment_bytes_config(release): str(SEGMENT_BYTES),
            "index.interval.bytes": str(INDEX_INTERVAL_BYTES),
        }
        admin.create_topics(
            [
                NewTopic(t, num_partitions=1, replication_factor=1, topic_configs=configs)
                for t in (*TOPICS, LIVE)
            ]
            + [NewTopic(CRASH, num_partitions=1, replication_factor=1)]
        )
        for wave in range(WAVES):
            _produce(cluster.bootstrap, TOPICS, wave)
        admin.delete_records({TopicPartition(DELETED_HEAD, 0): DELETE_BEFORE})
        admin.close()
        stop = threading.Event()

        def write_live() -> None:
            wave = 0
            while not stop.is_set():
                _produce(cluster.bootstrap, (LIVE,), wave, 200)
                wave += 1

        writer = threading.Thread(target=write_live)
        writer.start()
        try:
            time.sleep(2)
            live = copy_log_dir(node.log_dir, workdir / "live" / "data")
        finally:
            stop.set()
            writer.join(timeout=120)
        deadline = time.monotonic() + 60
        metadata = node.log_dir / "__cluster_metadata-0"
        while not list(metadata.glob("*.checkpoint")) and time.monotonic() < deadline:
            time.sleep(0.5)
        cluster.stop()
        clean = copy_log_dir(node.log_dir, workdir / "clean" / "data")
        cluster.start()
        _produce(cluster.bootstrap, (CRASH,), 0, 300)
        cluster.kill()
        crashed = copy_log_dir(node.log_dir, workdir / "crashed" / "data")
    return Origin(release, cluster.cluster_id, node, clean, live, crashed)


@contextlib.contextmanager
def broker_on_copy(origin: Origin, log_dir: Path) -> Iterator[KafkaCluster]:
    """A broker started on the log dir `log_dir` (the node's id, cluster id and ports); stopped cleanly
    when the block ends, so what its recovery kept is on disk."""
    home = log_dir.parent
    cluster = KafkaCluster(origin.release, home.parent, config=BROKER_CONFIG, cluster_id=origin.cluster_id)
    cluster.nodes = [
        Node(
            node_id=origin.node.node_id,
            home=home,
            broker_port=origin.node.broker_port,
            controller_port=origin.node.controller_port,
            directory_id=origin.node.directory_id,
        )
    ]
    with cluster:
        cluster.start()
        yield cluster
        cluster.stop()


@dataclass(frozen=True)
class Served:
    """What a client of the broker sees of one partition."""

    log_start_offset: int
    log_end_offset: int
    offsets: tuple[int, ...]  # every offset a consumer read from the start to the end


def served(bootstrap: str, topics: list[str], *, unread: frozenset[str] = frozenset()) -> dict[str, Served]:
    """ListOffsets earliest and latest of each topic's partition 0, and every offset a consumer reads
    (none for the `unread` topics: a batch that fails its checksum stops a consumer)."""
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    try:
        parts = [TopicPartition(t, 0) for t in topics]
        starts = consumer.beginning_offsets(parts)
        ends = consumer.end_offsets(parts)
        out = {}
        for tp in parts:
            offsets: list[int] = []
            if tp.topic not in unread and ends[tp] > starts[tp]:
                consumer.assign([tp])
                consumer.seek(tp, starts[tp])
                deadline = time.monotonic() + 60
                while (not offsets or offsets[-1] < ends[tp] - 1) and time.monotonic() < deadline:
                    for records in consumer.poll(timeout_ms=1000).values():
                        offsets.extend(r.offset for r in records)
            out[tp.topic] = Served(starts[tp], ends[tp], tuple(offsets))
        return out
    finally:
        consumer.close()


def partition_files(partition: Path) -> dict[str, bytes]:
    """The segment files a broker loads (.log, .index, .timeindex) by name, with their bytes."""
    return {
        p.name: p.read_bytes()
        for p in sorted(partition.iterdir())
        if p.is_file() and p.suffix in (".log", ".index", ".timeindex")
    }


def copy_partition_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst
