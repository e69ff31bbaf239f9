"""kdump on a real follower that truncates its log under the scan (issue 31).

Two brokers and a controller of their own (so either broker can stop while the quorum stays up);
a topic of one partition on both (RF=2, unclean leader election on). The leader A takes writes
the follower B never sees (B stopped), then A stops and B is made leader uncleanly and takes
writes of its own: A's log now diverges from the leader's. When A starts again, it becomes a
follower and truncates its log to where the two agree (cutting its active segment and deleting
the segments past it), while `kdump verify` and `kdump dump` loop over A's log dir.

Whatever they meet: no signal, never exit 70, no traceback, output that parses as JSON Lines, and
findings either none or those a file changing under the read gives (the live-file catalog).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from brokers.cluster import BrokerFailed, KafkaCluster, wait_until
from brokers.fixtures import skip_or_fail
from brokers.releases import Release
from brokers.tools import run_class

KDUMP = [sys.executable, "-m", "kdump"]
TOPIC = "diverge"
# What a file changing under the read may give; anything else at warning or error is a finding
# about the bytes, which a healthy broker's log dir must not have.
# (incomplete-check: fewer log bytes checked than were listed, a segment deleted by the truncation
# between the listing and its read; unreadable-file: one deleted before it was opened.)
LIVE_CODES = frozenset(
    {
        "file-shrank-while-read",
        "file-replaced-while-read",
        "file-grew-while-read",
        "unreadable-file",
        "incomplete-check",
    }
)
# The follower's truncation cuts its active segment, whose preallocated indexes keep stale entries past
# the new log end until appends overwrite them (AbstractIndex moves its position only): verify judges
# them as the broker does (recovery rebuilds them: no clean-shutdown marker on a running broker's disk),
# so they are no error nor warning here.


def _produce(release: Release, cluster: KafkaCluster, records: int, acks: str) -> None:
    proc = run_class(
        release,
        "org.apache.kafka.tools.ProducerPerformance",
        *("--topic", TOPIC, "--num-records", str(records), "--record-size", "300", "--throughput", "-1"),
        "--producer-props",
        f"bootstrap.servers={cluster.bootstrap}",
        f"acks={acks}",
        "linger.ms=5",
        "batch.size=65536",
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-1000:] + proc.stderr[-2000:]


def _log_end(partition: Path) -> int:
    return sum(p.stat().st_size for p in partition.glob("*.log"))


Run = tuple[list[str], subprocess.CompletedProcess[str], float, float]


def _scan_loop(log_dir: Path, partition: Path, stop: threading.Event, out: list[Run]) -> None:
    while not stop.is_set():
        for args in (
            ["verify", "--format", "json", str(log_dir)],
            ["verify", "--deep", "--format", "json", str(partition)],
            ["dump", "--records", "--format", "json", str(partition)],
        ):
            start = time.monotonic()
            proc = subprocess.run(
                [*KDUMP, *args], capture_output=True, text=True, timeout=300, check=False, env=os.environ
            )
            out.append((args, proc, start, time.monotonic()))


def test_verify_and_dump_race_a_follower_truncating_after_an_unclean_election(
    kafka_newest: Release, tmp_path: Path
) -> None:
    cluster = KafkaCluster(
        kafka_newest,
        tmp_path / "cluster",
        size=2,
        controllers=1,
        config={"unclean.leader.election.enable": "true", "min.insync.replicas": 1},
    )
    try:
        cluster.format()
        cluster.start()
    except BrokerFailed as exc:
        cluster.kill()
        skip_or_fail(f"real Kafka {kafka_newest.version} brokers did not start here: {exc}")
    a, b = cluster.brokers
    with cluster:
        created = run_class(
            kafka_newest,
            "org.apache.kafka.tools.TopicCommand",
            *("--bootstrap-server", cluster.bootstrap, "--create", "--topic", TOPIC),
            *("--replica-assignment", f"{a.node_id}:{b.node_id}"),
            *("--config", "segment.bytes=1048576", "--config", "unclean.leader.election.enable=true"),
        )
        if created.returncode != 0:
            pytest.skip(f"the topic could not be created here: {created.stderr[-500:]}")
        _produce(kafka_newest, cluster, 3000, "all")  # on both
        cluster.stop([b])
        _produce(kafka_newest, cluster, 8000, "1")  # on A alone: ~2.4 MB, segments B never sees
        cluster.stop([a])
        cluster.start([b])
        elected = run_class(
            kafka_newest,
            "org.apache.kafka.tools.LeaderElectionCommand",
            *("--bootstrap-server", cluster.bootstrap, "--election-type", "unclean"),
            *("--topic", TOPIC, "--partition", "0"),
        )
        # The controller may have elected B uncleanly on its own (the topic allows it) before the
        # command asked: then there is nothing to elect.
        assert elected.returncode == 0 or "not needed" in (elected.stdout + elected.stderr).lower(), (
            elected.stdout + elected.stderr
        )
        _produce(kafka_newest, cluster, 1000, "1")  # B's own epoch: A's later records now diverge
        partition = a.log_dir / f"{TOPIC}-0"
        before = _log_end(partition)
        runs: list[Run] = []
        stop = threading.Event()
        loop = threading.Thread(target=_scan_loop, args=(a.log_dir, partition, stop, runs))
        loop.start()
        try:
            cluster.start([a])
            truncated = wait_until(
                lambda: (
                    "Truncating partition" in a.server_log.read_text(errors="replace")
                    or _log_end(partition) < before
                ),
                60,
            )
            cut_seen = time.monotonic()
            time.sleep(3)  # scans across the fetches that follow the cut
        finally:
            stop.set()
            loop.join(timeout=300)
        assert truncated, f"A did not truncate as a follower:\n{a.log_tail()}"
        assert _log_end(partition) < before, "A's diverging records should be gone"
    # Scans ran on both sides of the cut (A's log as it was, then as the follower truncated it).
    assert [r for r in runs if r[2] < cut_seen], "no scan before the truncation"
    assert [r for r in runs if r[3] > cut_seen], "no scan after the truncation"
    seen: set[str] = set()
    for args, proc, _, _ in runs:
        assert proc.returncode >= 0, f"{args}: killed by signal {-proc.returncode}"
        assert proc.returncode != 70, (args, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
        assert proc.returncode in (0, 1, 3), (args, proc.returncode, proc.stderr[-2000:])
        rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
        found = [r for r in rows if r.get("type") == "finding" and r["severity"] in ("error", "warning")]
        codes = {r["code"] for r in found}
        seen |= codes
        assert codes <= LIVE_CODES, (args, [r for r in rows if r.get("type") == "finding"])
    print(f"{len(runs)} kdump runs over the truncating follower; live-file findings seen: {sorted(seen)}")
