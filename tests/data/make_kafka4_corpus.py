"""Build ``tests/data/kafka4-corpus.tar.xz``: log dirs written by real Kafka 4.x and 3.9 brokers, with oracles.

Usage: ``python tests/data/make_kafka4_corpus.py [--versions 4.4.0,3.9.1] [--elr 4.4.0] [--out FILE] [--keep DIR]``

Per release, one KRaft node (the broker harness in ``tests/brokers``, dynamic quorum formatted
``--standalone``, so the metadata log holds the KRaft voters records) runs ``Kafka4CorpusWorkload.java``
with the release's own client and Streams jars:

1. the newest ``transaction.version``, ``group.version``, ``share.version``, ``streams.version`` and
   ``eligible.leader.replicas.version`` the broker supports are finalized (the workload prints them);
2. ``codec-<none|gzip|snappy|lz4|zstd>``: 24 records each in three flushes, by an idempotent producer
   with that ``compression.type``;
3. ``compacted``: six waves of 10 records over 4 keys, tombstones in waves 3 and 5, ``segment.ms`` 1 s
   so each wave is a segment, cleaned by the broker (``min.cleanable.dirty.ratio`` 0.01; the script
   waits for the cleaner's checkpoint): gaps inside batches, the kept tombstones' ``deleteHorizonMs``;
4. ``deleted-records``: 30 records, then DeleteRecords before offset 12;
5. ``txn``: five transactions of ``tx-corpus`` (on 4.x transactions v2: the markers carry the bumped
   epoch), the 2nd and 4th aborted, each sending offsets of group ``txn-group`` to the transaction;
6. groups on ``orders`` (2 partitions), all committing: ``classic-group`` (classic protocol),
   ``consumer-group`` (KIP-848, by topic list) and on 4.x ``regex-group`` (KIP-848, by the broker-side
   regular expression ``ord.*``);
7. on 4.x: share group ``share-group`` on ``orders`` acknowledging explicitly (accept, one in five rejected);
8. on 4.x: a Kafka Streams application ``wordcount`` on ``group.protocol=streams`` (a count into
   ``streams-output``, its changelog topic), read by a consumer group;
9. a producer writes to ``live`` (lz4) while the script copies the log dir with ``cp -a`` (the
   running copy), then the broker is killed with SIGKILL and the log dir copied again (the killed copy);
   the broker restarts on it (log recovery), is stopped cleanly (SIGTERM) and the final copy taken.

Then (``--elr``, default the newest release) a 3-node cluster for eligible leader replicas: ``run_elr``.

The broker runs with ``log.index.size.max.bytes`` 1 MiB (as the 3.8 corpus: the preallocated indexes of
active segments are 1,048,576 and 1,048,572 bytes, zero tails the archive keeps small) and a metadata
snapshot every 2 KB of metadata records.

Each copy is a corpus directory (``shared/corpus/README.md`` layout): ``kafka-<v>`` (clean stop),
``kafka-<v>-running-copy``, ``kafka-<v>-killed-copy``, each with its partition dirs, ``_logdir-files/``
(the log dir's own files) and ``expected/``: that release's ``kafka-dump-log`` (DumpLogSegments, run from
the corpus root by ``DumpLogBatch.java``) of every file it reads: each ``.log`` shallow, with
``--deep-iteration`` and with ``--deep-iteration --print-data-log`` (and the decoder flag of an internal
topic: ``--offsets-decoder``, ``--transaction-log-decoder``, ``--share-group-state-decoder``,
``--cluster-metadata-decoder``, the last also for the metadata snapshots ``.checkpoint``), each
``.index``, ``.timeindex``, ``.txnindex`` and producer ``.snapshot``; ``*.stderr`` and ``*.rc`` where the
tool wrote to stderr or failed. ``expected/facts.json`` (in the clean-stop directory) says what the
workload did. The archive's members are sorted, with mtime 0: the same tree gives the same bytes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from brokers.cluster import KafkaCluster, java_command, wait_until  # noqa: E402
from brokers.releases import Release, fetch  # noqa: E402
from brokers.tools import dump_log_class  # noqa: E402
from sparse_archives import pack_archive  # noqa: E402

DEFAULT_OUT = HERE / "kafka4-corpus.tar.xz"
DEFAULT_VERSIONS = ("4.4.0", "4.1.1", "3.9.1")
WORKLOAD = HERE / "Kafka4CorpusWorkload.java"
DUMPER = HERE / "DumpLogBatch.java"
# What each release runs beyond the common part: 3.9 has no broker-side regular expressions, no share
# groups fit for use and no streams group protocol; its KIP-848 groups are a preview it must be asked for.
# The workload's parts per release line: the streams group protocol (KIP-1071) is served from 4.2 on
# (4.1's brokers answer its heartbeat with UnsupportedVersionException).
PARTS = {"3.9": "consumer", "4.0": "consumer,regex,share", "4": "consumer,regex,share,streams"}
EXTRA_CONFIG: dict[str, dict[str, object]] = {
    "3.9": {"group.coordinator.rebalance.protocols": "classic,consumer"}
}
BROKER_CONFIG: dict[str, object] = {
    "log.index.size.max.bytes": 1048576,
    "log.cleaner.backoff.ms": 500,
    "log.initial.task.delay.ms": 500,
    "metadata.log.max.record.bytes.between.snapshots": 2048,
}
DECODERS = {
    "__consumer_offsets": "offsets-decoder",
    "__transaction_state": "transaction-log-decoder",
    "__share_group_state": "share-group-state-decoder",
    "__cluster_metadata": "cluster-metadata-decoder",
}
LOG_VARIANTS: list[tuple[str, list[str]]] = [
    ("shallow", []),
    ("deep", ["--deep-iteration"]),
    ("deep-print-data-log", ["--deep-iteration", "--print-data-log"]),
]


def _wait(what: str, cond: Callable[[], bool], timeout: float = 240.0) -> None:
    if not wait_until(cond, timeout):
        raise SystemExit(f"timed out waiting for {what}")


def _cleaned(log_dir: Path) -> bool:
    checkpoint = log_dir / "cleaner-offset-checkpoint"
    if not checkpoint.exists():
        return False
    return any(line.startswith("compacted 0 ") for line in checkpoint.read_text().splitlines())


def _snapshotted(log_dir: Path) -> bool:
    return any((log_dir / "__cluster_metadata-0").glob("*.checkpoint"))


def _cp(src: Path, dest: Path) -> str:
    """`cp -a`, as an operator copies a live log dir; what it says (files vanishing mid-copy) is returned."""
    proc = subprocess.run(["cp", "-a", str(src), str(dest)], capture_output=True, text=True, check=False)
    return proc.stderr


def run_release(version: str, work: Path) -> list[Path]:
    """Run the workload on `version`; return the corpus directories of the three copies under `work`."""
    release = fetch(version)
    line = "3.9" if release.minor < (4, 0) else "4.0" if release.minor < (4, 2) else "4"
    extra = EXTRA_CONFIG.get(line, {})
    cluster = KafkaCluster(release, work / "cluster", config=BROKER_CONFIG | extra)
    cluster.format()
    facts: dict[str, Any] = {"version": version, "delete_records_before": {"deleted-records-0": 12}}
    copies = work / "copies"
    copies.mkdir(parents=True)
    with cluster:
        cluster.start()
        log_dir = cluster.nodes[0].log_dir
        state = str(work / "streams-state")
        cmd = java_command(release, str(WORKLOAD), cluster.bootstrap, "main", state, PARTS[line])
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=900)
        if proc.returncode != 0 or "workload done" not in proc.stdout:
            raise SystemExit(f"workload failed:\n{proc.stdout}\n{proc.stderr[-4000:]}")
        facts["workload"] = proc.stdout.splitlines()
        _wait("the cleaner to clean `compacted`", lambda: _cleaned(log_dir))
        _wait("a metadata snapshot", lambda: _snapshotted(log_dir))
        live_cmd = java_command(release, str(WORKLOAD), cluster.bootstrap, "live", "120")
        live = subprocess.Popen(live_cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            assert live.stdout is not None
            for line in live.stdout:
                if line.startswith("live ") and int(line.split()[1]) >= 200:
                    break
            facts["running_copy_cp_stderr"] = _cp(log_dir, copies / "running")
            for line in live.stdout:
                if line.startswith("live ") and int(line.split()[1]) >= 400:
                    break
            cluster.kill()
        finally:
            live.kill()
            live.wait(timeout=60)
        _cp(log_dir, copies / "killed")
        cluster.start()
        time.sleep(3)
        cluster.stop()
    _cp(log_dir, copies / "final")
    out = work / "out"
    roots = [
        _layout(copies / "final", out / f"kafka-{version}"),
        _layout(copies / "running", out / f"kafka-{version}-running-copy"),
        _layout(copies / "killed", out / f"kafka-{version}-killed-copy"),
    ]
    _oracles(release, out, roots)
    (roots[0] / "expected" / "facts.json").write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")
    return roots


ELR_TOPIC = "elr"


def _isr(bootstrap: str, topic: str) -> list[int]:
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)
        try:
            described = admin.describe_topics([topic])
        finally:
            admin.close()
    except KafkaError:
        return []
    partition = described[0]["partitions"][0]
    return sorted(partition.get("isr_nodes", partition.get("isr", [])))


def run_elr(version: str, work: Path) -> Path:
    """Eligible leader replicas on a 3-node cluster of `version`: return the corpus directory of node 1.

    Topic `elr` (3 replicas, `min.insync.replicas` 3) takes 10 records; node 3 is killed (SIGKILL), so
    the controller fences it and moves it from the ISR to the ELR; it restarts and rejoins the ISR; then
    `min.insync.replicas` drops to 2 (the controller clears the ELR); a clean stop of all three.
    """
    from kafka import KafkaProducer
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

    release = fetch(version)
    cluster = KafkaCluster(release, work / "elr-cluster", size=3, config=BROKER_CONFIG)
    cluster.format()
    with cluster:
        cluster.start()
        # Node 1 only: a client must not pick the node the run kills.
        bootstrap = f"127.0.0.1:{cluster.nodes[0].broker_port}"
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=60000)
        topic = NewTopic(ELR_TOPIC, 1, 3, topic_configs={"min.insync.replicas": "3"})
        admin.create_topics([topic])
        admin.close()
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        for i in range(10):
            producer.send(ELR_TOPIC, key=f"k{i}".encode(), value=f"elr record {i}".encode())
        producer.flush()
        producer.close()
        third = cluster.nodes[2]
        cluster.kill([third])
        _wait("node 3 to leave the ISR", lambda: _isr(bootstrap, ELR_TOPIC) == [1, 2], timeout=120)
        cluster.start([third])
        _wait("node 3 to rejoin the ISR", lambda: _isr(bootstrap, ELR_TOPIC) == [1, 2, 3], timeout=120)
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=60000)
        admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, ELR_TOPIC, configs={"min.insync.replicas": "2"})]
        )
        admin.close()
        time.sleep(3)
        cluster.stop()
    copy = work / "elr-copy"
    _cp(cluster.nodes[0].log_dir, copy)
    out = work / "out"
    root = _layout(copy, out / f"kafka-{version}-elr")
    _oracles(release, out, [root])
    return root


def _layout(log_dir: Path, out: Path) -> Path:
    """A copied log dir in the corpus layout: partition dirs, and the log dir's own files in _logdir-files/."""
    out.mkdir(parents=True)
    files = out / "_logdir-files"
    files.mkdir()
    for entry in sorted(log_dir.iterdir()):
        if entry.name == ".lock":
            continue
        shutil.move(str(entry), str((out if entry.is_dir() else files) / entry.name))
    return out


def _jobs(root: Path, corpus: Path) -> list[list[str]]:
    """One kafka-dump-log run per (file, flags), paths relative to the corpus root as the corpus did."""
    jobs: list[list[str]] = []
    for part in sorted(
        p for p in corpus.iterdir() if p.is_dir() and p.name not in ("_logdir-files", "expected")
    ):
        topic = part.name.rsplit("-", 1)[0]
        decoder = DECODERS.get(topic)
        dest = corpus / "expected" / part.name
        for f in sorted(part.iterdir()):
            rel = str(f.relative_to(root))
            variants: list[tuple[str, list[str]]] = []
            if f.suffix == ".log":
                variants = list(LOG_VARIANTS)
                if decoder:
                    deep = ["--deep-iteration", "--print-data-log", f"--{decoder}"]
                    variants.append((f"deep-print-data-log.{decoder}", deep))
            elif f.suffix == ".checkpoint" and decoder:
                variants = [
                    ("deep", ["--deep-iteration"]),
                    (
                        f"deep-print-data-log.{decoder}",
                        ["--deep-iteration", "--print-data-log", f"--{decoder}"],
                    ),
                ]
            elif f.suffix in (".index", ".timeindex", ".txnindex", ".snapshot"):
                variants = [("dump", [])]
            for variant, flags in variants:
                output = dest / f"{f.name}.{variant}.txt"
                jobs.append([str(output), "--files", rel, *flags])
    return jobs


def _oracles(release: Release, root: Path, corpora: list[Path]) -> None:
    jobs = [job for corpus in corpora for job in _jobs(root, corpus)]
    for corpus in corpora:
        (corpus / "expected").mkdir(exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".jobs", delete=False) as fh:
        fh.write("".join("\t".join(job) + "\n" for job in jobs))
    cmd = java_command(release, str(DUMPER), dump_log_class(release), fh.name, heap="1g")
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=1800, cwd=root)
    Path(fh.name).unlink()
    if proc.returncode != 0 or f"dumped {len(jobs)}" not in proc.stdout:
        raise SystemExit(f"kafka-dump-log failed: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    # The tool names files by absolute path on stderr: cut this machine's path to the corpus root.
    for corpus in corpora:
        for err in (corpus / "expected").rglob("*.stderr"):
            err.write_text(err.read_text().replace(f"{root.resolve()}/", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--versions", default=",".join(DEFAULT_VERSIONS))
    parser.add_argument(
        "--elr", default=DEFAULT_VERSIONS[0], help="the release of the 3-node ELR run ('' for none)"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--keep", type=Path, help="keep the work directory here (the broker's dir and the copies)"
    )
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="kdump-kafka4-"))
    work.mkdir(parents=True, exist_ok=True)
    roots = [root for v in args.versions.split(",") for root in run_release(v, work / v)]
    if args.elr:
        roots.append(run_elr(args.elr, work / f"{args.elr}-elr"))
    args.out.write_bytes(pack_archive(roots))
    print(f"{args.out}: {args.out.stat().st_size} bytes")
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
