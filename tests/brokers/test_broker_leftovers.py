"""Healthy-looking copies a real broker then damages, and kdump's verdict and repair on each.

One KRaft node of the newest release takes 600 records with timestamps one second apart into one
topic of small segments and stops cleanly. Copies of its log dir get, each:

- the first segment's `.timeindex` overwritten with zeros: verify says `time-index-max-timestamp-low`;
  the broker's ListOffsets by timestamp then answers a time inside that segment with the next
  segment's first offset; after `kdump reindex --apply` it answers the right offset;
- a copy of the first segment saved under a name inside the second segment's range: verify says
  `segment-stray`; a consumer seeking to an offset it shadows is served from the segment after it
  (one reading from the start still gets every offset); after the printed repair
  (`kdump quarantine --apply`, run through `sh -c`) the seek lands right;
- a `.log.swap` of the second segment holding the first half of its batches: verify says
  `swap-loses-offsets`; the broker completes the swap at start and those offsets are gone; after the
  quarantine it serves every offset.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from corruptions import log_entries

from brokers.cluster import BrokerFailed, KafkaCluster
from brokers.fixtures import skip_or_fail
from brokers.recovery import BROKER_CONFIG, Origin, broker_on_copy, copy_log_dir, served
from brokers.releases import Release

pytestmark = pytest.mark.slow

Kdump = Callable[..., Result]
TOPIC = "leftovers"
RECORDS = 600
BASE_TS = 1_700_000_000_000


def _findings(kdump: Kdump, path: Path) -> list[dict[str, object]]:
    result = kdump("verify", "--format", "json", str(path))
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    return [r for r in rows if r["type"] == "finding" and r["severity"] != "info"]


def _run_hint(hint: str) -> None:
    bin_dir = Path(sys.executable).parent
    done = subprocess.run(
        ["sh", "-c", hint],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def origin(kafka_newest: Release, tmp_path_factory: pytest.TempPathFactory) -> Origin:
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic

    work = tmp_path_factory.mktemp("leftovers")
    cluster = KafkaCluster(kafka_newest, work / "origin", config=BROKER_CONFIG)
    try:
        cluster.format()
        with cluster:
            cluster.start()
            admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
            configs = {"internal.segment.bytes": str(16 * 1024), "index.interval.bytes": "1024"}
            admin.create_topics(
                [NewTopic(TOPIC, num_partitions=1, replication_factor=1, topic_configs=configs)]
            )
            admin.close()
            producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, linger_ms=0, acks=1)
            for i in range(RECORDS):
                producer.send(TOPIC, key=b"k%d" % i, value=b"v" * 100, timestamp_ms=BASE_TS + i * 1000)
                if i % 5 == 0:
                    producer.flush()
            producer.flush()
            producer.close()
            cluster.stop()
    except BrokerFailed as exc:
        skip_or_fail(f"a real Kafka {kafka_newest.version} broker did not run here: {exc}")
    node = cluster.nodes[0]
    clean = copy_log_dir(node.log_dir, work / "clean" / "data")
    return Origin(kafka_newest, cluster.cluster_id, node, clean, clean, clean)


def _copy(origin: Origin, tmp_path: Path, name: str) -> tuple[Path, Path]:
    log_dir = copy_log_dir(origin.clean, tmp_path / name / "data")
    part = log_dir / f"{TOPIC}-0"
    assert len(sorted(part.glob("*.log"))) >= 4
    return log_dir, part


def _offset_for_time(bootstrap: str, ts: int) -> int:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        answer = consumer.offsets_for_times({TopicPartition(TOPIC, 0): ts})[TopicPartition(TOPIC, 0)]
        return answer.offset
    finally:
        consumer.close()


def test_a_zeroed_time_index_moves_the_brokers_answers_until_reindexed(
    origin: Origin, tmp_path: Path, kdump: Kdump
) -> None:
    log_dir, part = _copy(origin, tmp_path, "zeroed")
    first = sorted(part.glob("*.log"))[0]
    target = BASE_TS + 10 * 1000  # offset 10, inside the first segment
    ti = first.with_suffix(".timeindex")
    ti.write_bytes(bytes(ti.stat().st_size))
    found = _findings(kdump, log_dir)
    assert [(f["code"], Path(str(f["file"])).name) for f in found] == [
        ("time-index-max-timestamp-low", ti.name)
    ]
    shutil.copytree(log_dir.parent, tmp_path / "zeroed-broker")
    with broker_on_copy(origin, tmp_path / "zeroed-broker" / "data") as cluster:
        moved = _offset_for_time(cluster.bootstrap, target)
    second_base = int(sorted(part.glob("*.log"))[1].stem)
    assert moved >= second_base, "the broker still answered from the zeroed segment"
    _run_hint(str(found[0]["repair"]))
    assert _findings(kdump, log_dir) == []
    with broker_on_copy(origin, log_dir) as cluster:
        assert _offset_for_time(cluster.bootstrap, target) == 10


def _first_fetched(bootstrap: str, offset: int) -> int | None:
    """The first offset a consumer that seeks to `offset` receives."""
    import time

    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None)
    try:
        tp = TopicPartition(TOPIC, 0)
        consumer.assign([tp])
        consumer.seek(tp, offset)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=1000).values():
                if records:
                    return int(records[0].offset)
        return None
    finally:
        consumer.close()


def _every_offset(cluster: KafkaCluster) -> tuple[int, ...]:
    return served(cluster.bootstrap, [TOPIC])[TOPIC].offsets


def test_a_stray_copy_shadows_offsets_until_quarantined(origin: Origin, tmp_path: Path, kdump: Kdump) -> None:
    log_dir, part = _copy(origin, tmp_path, "stray")
    logs = sorted(part.glob("*.log"))
    inside = int(logs[1].stem) + 5
    for ext in (".log", ".index", ".timeindex"):
        shutil.copy(logs[0].with_suffix(ext), part / f"{inside:020d}{ext}")
    found = _findings(kdump, log_dir)
    assert [f["code"] for f in found] == ["segment-stray"]
    shutil.copytree(log_dir.parent, tmp_path / "stray-broker")
    with broker_on_copy(origin, tmp_path / "stray-broker" / "data") as cluster:
        # A fetch from the start reads the whole segment before the copy; one that starts at an
        # offset the copy shadows finds no batch in it and skips to the segment after it.
        assert _every_offset(cluster) == tuple(range(RECORDS))
        assert _first_fetched(cluster.bootstrap, inside) == int(logs[2].stem)
    _run_hint(str(found[0]["repair"]))
    assert _findings(kdump, log_dir) == []
    with broker_on_copy(origin, log_dir) as cluster:
        assert _every_offset(cluster) == tuple(range(RECORDS))
        assert _first_fetched(cluster.bootstrap, inside) == inside


def test_a_half_swap_loses_offsets_until_quarantined(origin: Origin, tmp_path: Path, kdump: Kdump) -> None:
    log_dir, part = _copy(origin, tmp_path, "swap")
    second = sorted(part.glob("*.log"))[1]
    data = second.read_bytes()
    entries = log_entries(data)
    (part / f"{second.name}.swap").write_bytes(data[: entries[len(entries) // 2].position])
    found = _findings(kdump, log_dir)
    assert [f["code"] for f in found] == ["swap-loses-offsets"]
    lost = int(found[0]["lost"])  # type: ignore[call-overload]
    shutil.copytree(log_dir.parent, tmp_path / "swap-broker")
    with broker_on_copy(origin, tmp_path / "swap-broker" / "data") as cluster:
        offsets = _every_offset(cluster)
    assert len(set(range(RECORDS)) - set(offsets)) == lost
    _run_hint(str(found[0]["repair"]))
    assert _findings(kdump, log_dir) == []
    with broker_on_copy(origin, log_dir) as cluster:
        assert _every_offset(cluster) == tuple(range(RECORDS))


def test_a_segment_gone_from_the_middle_is_served_around_silently(
    origin: Origin, tmp_path: Path, kdump: Kdump
) -> None:
    """The broker checks no continuity between segments: it starts, ListOffsets is unchanged, a fetch
    in the hole returns the next segment's batches, and consumers skip the offsets. verify says so
    (an error: the topic is not compacted, by the metadata log beside it), with the files gone and
    no file repair; the follower's cut its text names runs as printed and leaves a log the broker
    serves up to the hole."""
    import re

    log_dir, part = _copy(origin, tmp_path, "missing")
    logs = sorted(part.glob("*.log"))
    gone, after = int(logs[1].stem), int(logs[2].stem)
    for ext in (".log", ".index", ".timeindex"):
        logs[1].with_suffix(ext).unlink()
    found = _findings(kdump, log_dir)
    assert [(f["code"], f["severity"], f["offset"]) for f in found] == [("offset-hole", "error", gone)]
    message = str(found[0]["message"])
    assert f"{logs[1].name} (and its .index and .timeindex) is gone" in message
    assert f"a fetch at {gone}..{after - 1} returns the batches from {after} on" in message
    assert not found[0].get("repair")
    shutil.copytree(log_dir.parent, tmp_path / "missing-broker")
    with broker_on_copy(origin, tmp_path / "missing-broker" / "data") as cluster:
        seen = served(cluster.bootstrap, [TOPIC])[TOPIC]
        assert (seen.log_start_offset, seen.log_end_offset) == (0, RECORDS)
        assert seen.offsets == tuple(range(gone)) + tuple(range(after, RECORDS))
        assert _first_fetched(cluster.bootstrap, gone + 3) == after
    cut = re.search(r"kdump trim-tail --to-offset \d+ --apply \S+", message)
    assert cut is not None, message
    _run_hint(cut.group(0))
    assert _findings(kdump, log_dir) == []
    with broker_on_copy(origin, log_dir) as cluster:
        assert _every_offset(cluster) == tuple(range(gone))
