"""The consumer-impact join against a real broker: what `kdump trim-tail` says a cut does to each group is
what the broker and Kafka's own consumer then do on the cut copy.

Groups commit on a real broker (Kafka's console consumer, whose commits carry the leader epoch, and
kafka-python commits without one); the broker stops cleanly; the log dir is copied and the topic cut with
`kdump trim-tail --to-offset --apply`, whose plan lists the groups' impact; a broker starts on the copy.
Then the admin API's committed offsets, ListOffsets, and where Kafka's Java consumer resumes with
auto.offset.reset earliest, latest and none (tests/data/ResumeProbe.java) must be what the plan said.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from brokers.cluster import BrokerFailed, KafkaCluster, Node
from brokers.fixtures import require_release, skip_or_fail
from brokers.releases import Release
from brokers.tools import run_class, run_java_source

pytestmark = pytest.mark.slow

PROBE = Path(__file__).resolve().parents[1] / "data" / "ResumeProbe.java"
TOPIC = "impact-orders"
RECORDS = 300
CUT = 200
NO_EPOCH_COMMIT = 260  # past the cut, committed without a leader epoch
IN_RANGE_COMMIT = 100
BELOW_START_COMMIT = 20  # below the log start DeleteRecords leaves
LOG_START = 50
GROUPS = ["g-epoch", "g-below-epoch", "g-noepoch", "g-in-range", "g-below"]


def _console_consumer_class(release: Release) -> str:
    for name in ("org.apache.kafka.tools.consumer.ConsoleConsumer", "kafka.tools.ConsoleConsumer"):
        if release.has_class(name):
            return name
    raise LookupError(f"Kafka {release.version} has no console consumer")


def _produce(bootstrap: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, batch_size=512, acks=1)
    for i in range(RECORDS):
        producer.send(TOPIC, key=b"k-%d" % i, value=b"order %d " % i * 4)
        if i % 10 == 9:
            producer.flush()
    producer.flush()
    producer.close()


def _commit_without_epoch(bootstrap: str, group: str, offset: int) -> None:
    from kafka import KafkaConsumer
    from kafka.structs import OffsetAndMetadata, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    tp = TopicPartition(TOPIC, 0)
    consumer.assign([tp])
    consumer.commit({tp: OffsetAndMetadata(offset, "", -1)})
    consumer.close()


def _committed(bootstrap: str, groups: list[str]) -> dict[str, int]:
    """The groups' committed offsets through the admin API, once the coordinator has loaded them."""
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                answer = admin.list_group_offsets({g: None for g in groups})
                break
            except KafkaError as exc:  # the coordinator is still loading __consumer_offsets
                if not exc.retriable or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        return {g: next(o.offset for tp, o in answer[g].items() if tp.topic == TOPIC) for g in groups}
    finally:
        admin.close()


def _log_bounds(bootstrap: str) -> tuple[int, int]:
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    tp = TopicPartition(TOPIC, 0)
    try:
        return consumer.beginning_offsets([tp])[tp], consumer.end_offsets([tp])[tp]
    finally:
        consumer.close()


def _resume(release: Release, bootstrap: str, group: str, reset: str) -> dict[str, Any]:
    proc = run_java_source(release, PROBE, bootstrap, group, TOPIC, "0", reset, timeout=180)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"ResumeProbe printed nothing: {proc.stderr[-2000:]}"
    answer: dict[str, Any] = json.loads(lines[-1])
    return answer


def _console_commit(release: Release, bootstrap: str, group: str, records: int) -> None:
    """Kafka's console consumer reads `records` records and commits its position, with the leader epoch,
    when it closes."""
    consumed = run_class(
        release,
        _console_consumer_class(release),
        "--bootstrap-server",
        bootstrap,
        "--topic",
        TOPIC,
        "--group",
        group,
        "--from-beginning",
        "--max-messages",
        str(records),
        "--consumer-property",
        "max.poll.records=10",
        timeout=180,
    )
    assert consumed.returncode == 0, consumed.stderr[-2000:]


# 4.4 only: each release costs some 100 s of CI, and 3.9's side of the same join (a group committed past a
# cut, resumed with earliest and latest) is held by tests/brokers/test_forecast_transactions.py.
@pytest.mark.parametrize("version", ["4.4.0"])
def test_trim_tail_impact_is_what_the_broker_and_consumer_do(tmp_path: Path, version: str) -> None:
    release = require_release(version)
    pytest.importorskip("kafka", reason="kafka-python (the dev extra) produces and commits")
    origin = KafkaCluster(release, tmp_path / "origin")
    node = origin.nodes[0]
    with origin:
        try:
            origin.format()
            origin.start()
        except BrokerFailed as exc:
            skip_or_fail(f"a real Kafka {release.version} broker did not start here: {exc}")
        from kafka.admin import KafkaAdminClient, NewTopic
        from kafka.structs import TopicPartition

        admin = KafkaAdminClient(bootstrap_servers=origin.bootstrap)
        admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)])
        admin.close()
        _produce(origin.bootstrap)
        _console_commit(release, origin.bootstrap, "g-epoch", 250)
        _console_commit(release, origin.bootstrap, "g-below-epoch", BELOW_START_COMMIT)
        _commit_without_epoch(origin.bootstrap, "g-noepoch", NO_EPOCH_COMMIT)
        _commit_without_epoch(origin.bootstrap, "g-in-range", IN_RANGE_COMMIT)
        _commit_without_epoch(origin.bootstrap, "g-below", BELOW_START_COMMIT)
        admin = KafkaAdminClient(bootstrap_servers=origin.bootstrap)
        admin.delete_records({TopicPartition(TOPIC, 0): LOG_START})
        admin.close()
        before = _committed(origin.bootstrap, GROUPS)
        origin.stop()

    copy_home = tmp_path / "copy" / "node-1"
    copy_home.mkdir(parents=True)
    shutil.copytree(node.log_dir, copy_home / "data", symlinks=True)
    partition = copy_home / "data" / f"{TOPIC}-0"
    trim = subprocess.run(
        [
            sys.executable,
            "-m",
            "kdump",
            "trim-tail",
            "--to-offset",
            str(CUT),
            "--apply",
            "--format",
            "json",
            str(partition),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert trim.returncode == 0, trim.stderr
    plan = json.loads(trim.stdout.splitlines()[0])
    assert plan["applied"] is True
    predicted = {g["group"]: g for g in plan["consumer_groups"]}
    assert set(predicted) == set(GROUPS)
    assert {g: p["committed_offset"] for g, p in predicted.items()} == before
    assert predicted["g-epoch"]["committed_leader_epoch"] >= 0
    assert predicted["g-noepoch"]["committed_leader_epoch"] == -1
    new_end = plan["new_log_end_offset"]

    copy = KafkaCluster(release, copy_home.parent, cluster_id=origin.cluster_id)
    copy.nodes = [
        Node(
            node_id=node.node_id,
            home=copy_home,
            broker_port=node.broker_port,
            controller_port=node.controller_port,
            directory_id=node.directory_id,
        )
    ]
    with copy:
        copy.start()
        # The broker keeps the commits as they were; the log ends where the plan said.
        assert _committed(copy.bootstrap, list(predicted)) == before
        assert _log_bounds(copy.bootstrap) == (LOG_START, new_end)
        for group, p in predicted.items():
            assert (p["log_start_offset"], p["log_end_offset"]) == (LOG_START, new_end)
            for reset in ("earliest", "latest"):
                seen = _resume(release, copy.bootstrap, group, reset)
                where = seen.get("first", seen.get("position"))
                print(f"{group} {reset}: kdump said {p[f'resume_{reset}']}, the consumer resumed at {where}")
                assert where == p[f"resume_{reset}"], (group, reset, seen, p)
            seen = _resume(release, copy.bootstrap, group, "none")
            assert seen.get("error") == p["fails_with_none"] or (
                p["fails_with_none"] is None and "error" not in seen
            ), (group, seen, p)
        copy.stop()

    # What the plan said, in words: the epoch commit past the cut is detected as truncated and moves to the
    # new end; the commit without an epoch is out of range and reset; the one below the cut is untouched.
    assert predicted["g-epoch"]["epoch_check"] == "diverged"
    assert predicted["g-noepoch"]["out_of_range"] == "past-log-end"
    assert predicted["g-noepoch"]["resume_earliest"] == LOG_START
    for group in ("g-below", "g-below-epoch"):  # below the log start, with or without an epoch: reset
        below = predicted[group]
        assert (below["out_of_range"], below["resume_earliest"], below["resume_latest"]) == (
            "before-log-start",
            LOG_START,
            new_end,
        )
    assert predicted["g-below-epoch"]["epoch_check"] == "valid"
    in_range = predicted["g-in-range"]
    assert (in_range["out_of_range"], in_range["epoch_check"], in_range["resume_latest"]) == (
        None,
        "none",
        100,
    )
    assert in_range["lost_unread"] == plan["old_log_end_offset"] - new_end  # the cut records it had not read


SHARE_PROBE = Path(__file__).resolve().parents[1] / "data" / "SharePartitionProbe.java"


def _share(release: Release, mode: str, bootstrap: str, *extra: str) -> dict[str, Any]:
    proc = run_java_source(release, SHARE_PROBE, mode, bootstrap, "g-share", TOPIC, *extra, timeout=240)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"SharePartitionProbe {mode} printed nothing: {proc.stderr[-2000:]}"
    answer: dict[str, Any] = json.loads(lines[-1])
    return answer


def test_share_group_start_past_a_cut(tmp_path: Path) -> None:
    """A share group that accepted every record, then the log cut below where it goes on: the plan says
    its next offset is past the new end and delivery waits there; a Kafka 4.4 broker on the cut copy
    keeps the share-partition start (0, with 0..299 acknowledged) and delivers the records written
    after the restart only from that offset on: those at the new end up to it are never delivered."""
    release = require_release()
    if not release.has_class("org.apache.kafka.clients.consumer.KafkaShareConsumer"):
        pytest.skip(f"Kafka {release.version} has no share consumer")
    pytest.importorskip("kafka", reason="kafka-python (the dev extra) produces")
    origin = KafkaCluster(release, tmp_path / "origin")
    node = origin.nodes[0]
    with origin:
        try:
            origin.format()
            origin.start()
        except BrokerFailed as exc:
            skip_or_fail(f"a real Kafka {release.version} broker did not start here: {exc}")
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=origin.bootstrap)
        admin.create_topics([NewTopic(TOPIC, num_partitions=1, replication_factor=1)])
        admin.close()
        _produce(origin.bootstrap)
        assert _share(release, "consume", origin.bootstrap, str(RECORDS))["seen"] >= RECORDS
        start_before = _share(release, "start", origin.bootstrap)["start"]
        origin.stop()

    copy_home = tmp_path / "copy" / "node-1"
    copy_home.mkdir(parents=True)
    shutil.copytree(node.log_dir, copy_home / "data", symlinks=True)
    trim = subprocess.run(
        [
            sys.executable,
            "-m",
            "kdump",
            "trim-tail",
            "--to-offset",
            str(CUT),
            "--apply",
            "--format",
            "json",
            str(copy_home / "data" / f"{TOPIC}-0"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert trim.returncode == 0, trim.stderr
    plan = json.loads(trim.stdout.splitlines()[0])
    [share] = [g for g in plan["consumer_groups"] if g["group"] == "g-share"]
    # The coordinator keeps start offset 0 with 0..299 acknowledged: delivery goes on at 300.
    assert (share["group_type"], share["committed_offset"]) == ("share", RECORDS)
    assert share["out_of_range"] == "past-log-end", json.dumps(share)

    copy = KafkaCluster(release, copy_home.parent, cluster_id=origin.cluster_id)
    copy.nodes = [
        Node(
            node_id=node.node_id,
            home=copy_home,
            broker_port=node.broker_port,
            controller_port=node.controller_port,
            directory_id=node.directory_id,
        )
    ]
    with copy:
        copy.start()
        start_after = _share(release, "start", copy.bootstrap)["start"]
        _produce(copy.bootstrap)  # offsets from the new end on
        first = _share(release, "next", copy.bootstrap)["first"]
        print(  # what the broker did, for the run's log
            f"share: start {start_before} before, kdump said resume at {share['resume_earliest']}, "
            f"the broker's start after restart {start_after}, first delivered {first}"
        )
        copy.stop()
    # Delivery goes on at the share partition's next offset: the records written below it are skipped.
    assert first == share["resume_earliest"] == RECORDS
    assert share["refill_skips"] == RECORDS - plan["new_log_end_offset"]
