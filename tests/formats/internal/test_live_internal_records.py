"""Real internal records of a real Kafka 4.4 broker decode exactly as Kafka's own tool decodes them.

One broker per module: a Java workload (InternalRecordsWorkload.java, run against the release's jars)
writes metadata records (topics, configs, ACLs, quotas, SCRAM, a deleted topic; a metadata snapshot),
classic and KIP-848 consumer groups (one by regular expression) with offset commits, committed and
aborted transactions, and a share group. The broker is stopped cleanly, then that release's
DumpLogSegments runs with each decoder flag on each internal topic's segments and on the metadata
snapshot, and every record line kdump's text mode prints must equal Kafka's (field names and values,
after the same record metadata). JSON mode must name the same records.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from brokers.cluster import BrokerFailed, KafkaCluster
from brokers.fixtures import require_release, skip_or_fail
from brokers.tools import dump_log, run_java_source
from click.testing import Result

Run = Callable[..., Result]

WORKLOAD = Path(__file__).with_name("InternalRecordsWorkload.java")
DECODER_FLAGS = {
    "__consumer_offsets-0": "--offsets-decoder",
    "__transaction_state-0": "--transaction-log-decoder",
    "__share_group_state-0": "--share-group-state-decoder",
    "__cluster_metadata-0": "--cluster-metadata-decoder",
}
COMPARED: dict[str, int] = {}


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    release = require_release("4.4.0")
    cluster = KafkaCluster(
        release,
        tmp_path_factory.mktemp("live-internal"),
        config={
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS",
            "metadata.log.max.record.bytes.between.snapshots": 2048,
        },
    )
    try:
        cluster.format()
        cluster.start()
    except BrokerFailed as exc:
        cluster.kill()
        skip_or_fail(f"a real Kafka {release.version} broker did not start here: {exc}")
    with cluster:
        proc = run_java_source(release, WORKLOAD, cluster.bootstrap, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
        assert "workload done" in proc.stdout
        cluster.stop()
    return cluster.nodes[0].log_dir


def _record_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.startswith("| offset:")]


def _files(log_dir: Path, partition: str) -> list[Path]:
    part = log_dir / partition
    files = sorted(part.glob("*.log"))
    if partition == "__cluster_metadata-0":
        files += sorted(part.glob("*.checkpoint"))
    return [f for f in files if f.stat().st_size > 0]


@pytest.mark.parametrize("partition", list(DECODER_FLAGS))
def test_kdump_prints_what_kafkas_decoder_prints(log_dir: Path, kdump: Run, partition: str) -> None:
    release = require_release("4.4.0")
    files = _files(log_dir, partition)
    assert files, f"the broker wrote no {partition}"
    compared = 0
    for f in files:
        theirs = _record_lines(dump_log(release, [f], "--deep-iteration", DECODER_FLAGS[partition]))
        result = kdump("dump", "--records", "--format", "text", str(f))
        assert result.exit_code == 0, result.stderr
        ours = _record_lines(result.stdout)
        assert len(ours) == len(theirs), f.name
        for mine, kafka in zip(ours, theirs, strict=True):
            assert mine == kafka, f.name
        compared += len(ours)
    COMPARED[partition] = compared
    print(f"Kafka 4.4.0 {partition}: {compared} record lines equal kafka-dump-log's")
    assert compared > 0


def _decoded(kdump: Run, files: list[Path]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for f in files:
        result = kdump("dump", "--records", "--format", "json", str(f))
        assert result.exit_code == 0, result.stderr
        for line in result.stdout.splitlines():
            row = json.loads(line)
            assert row.get("code") not in ("unknown-internal-record", "unknown-tagged-field"), row
            if row["type"] == "record" and "decoded" in row:
                rows.append(row["decoded"])  # type: ignore[arg-type]
    return rows


def test_every_kind_of_record_the_workload_writes_is_decoded(log_dir: Path, kdump: Run) -> None:
    offsets = {d["record"] for d in _decoded(kdump, _files(log_dir, "__consumer_offsets-0"))}
    assert {
        "OffsetCommit",
        "GroupMetadata",
        "ConsumerGroupMetadata",
        "ConsumerGroupMemberMetadata",
        "ConsumerGroupTargetAssignmentMetadata",
        "ConsumerGroupTargetAssignmentMember",
        "ConsumerGroupCurrentMemberAssignment",
        "ConsumerGroupRegularExpression",
        "ShareGroupMetadata",
        "ShareGroupMemberMetadata",
    } <= offsets, offsets
    commits = [
        d
        for d in _decoded(kdump, _files(log_dir, "__consumer_offsets-0"))
        if d["record"] == "OffsetCommit" and d["value"]
    ]
    assert all("topicId" in d["value"]["data"] for d in commits)  # type: ignore[index]
    txn = _decoded(kdump, _files(log_dir, "__transaction_state-0"))
    states = {d["value"]["state"] for d in txn if d["value"]}  # type: ignore[index]
    assert {"Ongoing", "PrepareCommit", "CompleteCommit", "PrepareAbort", "CompleteAbort"} <= states
    share = {d["record"] for d in _decoded(kdump, _files(log_dir, "__share_group_state-0"))}
    assert "ShareSnapshot" in share
    metadata = {d["record"] for d in _decoded(kdump, _files(log_dir, "__cluster_metadata-0"))}
    assert {
        "TOPIC_RECORD",
        "PARTITION_RECORD",
        "CONFIG_RECORD",
        "ACCESS_CONTROL_ENTRY_RECORD",
        "CLIENT_QUOTA_RECORD",
        "USER_SCRAM_CREDENTIAL_RECORD",
        "REMOVE_TOPIC_RECORD",
        "FEATURE_LEVEL_RECORD",
        "REGISTER_BROKER_RECORD",
        "SNAPSHOT_HEADER",
        "KRAFT_VOTERS",
    } <= metadata, metadata
