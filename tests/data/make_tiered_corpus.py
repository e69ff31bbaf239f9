"""Build ``tests/data/tiered-corpus.tar.xz``: tiered storage written by real Kafka brokers, with oracles.

Usage: ``python tests/data/make_tiered_corpus.py [--versions 4.4.0,3.9.1] [--out FILE] [--keep DIR]``

For each release, one KRaft node (the broker harness in ``tests/brokers``) runs with tiered storage on
Kafka's own file-backed ``LocalTieredStorage`` (kafka-storage's test jar) and the default topic-based
remote log metadata manager. The workload, in order:

1. topic ``tiered`` (``remote.storage.enable=true``, ``segment.ms`` 1 s, ``local.retention.bytes`` a few
   segments, ``index.interval.bytes`` 256): waves of records with a pause between them, so each wave
   is a segment; one aborted transaction (a remote ``.txnindex``); a clean restart half way (a second
   leader epoch). The broker copies every rolled segment to the remote store and deletes the oldest
   local ones;
2. topic ``plain`` (no tiered storage, 3 segments) for the non-tiered ListOffsets answers;
3. topic ``tiered-gone``: tiered, copied, then deleted (the remote partition delete records);
4. DeleteRecords on ``tiered`` into its second remote segment: the broker raises the log start offset
   and deletes the remote segment below it (the delete-segment records);
5. ListOffsets by timestamp in the remote part (the broker reads the remote indexes into
   ``remote-log-index-cache/``), then every spec recorded: earliest, latest, max-timestamp,
   earliest-local, latest-tiered (and earliest-pending-upload where the release has it) and
   timestamps before, inside the remote part, inside the local part and after the data;
6. a clean stop, then the copy.

The copy follows the corpus layout (``shared/corpus/README.md``): ``kafka-<v>-tiered/<partition>/``,
``_logdir-files/`` (the log dir's own files and its ``remote-log-index-cache/``), ``_remote/`` (the
``LocalTieredStorage`` directory, ``kafka-tiered-storage/<topic>-<partition>-<topic id>/``) and
``expected/``: that release's ``kafka-dump-log`` of every local segment of ``tiered-0`` and
``plain-0`` (shallow, deep, deep with ``--print-data-log``), of ``__remote_log_metadata-0`` with
``--remote-log-metadata-decoder``, of ``__cluster_metadata-0`` with ``--cluster-metadata-decoder``,
of each remote segment (deep; run on a copy named ``<base>.log``, as the tool reads the base offset
from the name), the index dumps, and ``list-offsets.jsonl`` (what the broker's ListOffsets
answered). Text oracles of ``.log`` files are stored gunzipped in the archive, like the corpus subset.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "formats" / "internal"))

from brokers.cluster import KafkaCluster, java_command, wait_until  # noqa: E402
from brokers.releases import Release, fetch  # noqa: E402
from brokers.tiered import broker_config, tiered_release  # noqa: E402
from brokers.tools import dump_log_class  # noqa: E402
from builders import SegmentBuilder  # noqa: E402
from rlmm_samples import samples  # noqa: E402
from sparse_archives import pack_archive  # noqa: E402

from kdump.formats.records import NewRecord  # noqa: E402

DEFAULT_OUT = HERE / "tiered-corpus.tar.xz"
DEFAULT_VERSIONS = ("4.4.0", "3.9.1")
PROBE = HERE / "ListOffsetsProbe.java"
TOPIC_CONFIG = {
    "remote.storage.enable": "true",
    "segment.ms": "1000",
    "local.retention.bytes": "9000",
    "retention.ms": "-1",
    "index.interval.bytes": "256",
}
WAVES = 12
RESTART_AFTER_WAVE = 6
TXN_WAVE = 2


def _wait(what: str, cond: Callable[[], bool], timeout: float = 240.0) -> None:
    if not wait_until(cond, timeout):
        raise SystemExit(f"timed out waiting for {what}")


def _admin(bootstrap: str) -> Any:
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=60000)


def _create(bootstrap: str, topic: str, config: dict[str, str]) -> None:
    from kafka.admin import NewTopic

    admin = _admin(bootstrap)
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1, topic_configs=config)])
    admin.close()


def _wave(producer: Any, topic: str, wave: int, count: int = 30) -> None:
    for i in range(count):
        key = f"w{wave}-k{i % 7}".encode()
        value = (f"wave {wave} record {i} " + "x" * (40 + (i * 13) % 120)).encode()
        producer.send(topic, key=key, value=value, headers=[("wave", str(wave).encode())])
        if i % 10 == 9:
            producer.flush()
    producer.flush()


def _aborted_transaction(bootstrap: str, topic: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="tiered-txn", linger_ms=5)
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(5):
        producer.send(topic, key=b"txn", value=f"aborted {i}".encode())
    producer.flush()
    producer.abort_transaction()
    producer.begin_transaction()
    for i in range(3):
        producer.send(topic, key=b"txn", value=f"committed {i}".encode())
    producer.commit_transaction()
    producer.close()


def _remote_logs(remote: Path, topic: str) -> list[Path]:
    root = remote / "kafka-tiered-storage"
    if not root.is_dir():
        return []
    return sorted(p for d in root.iterdir() if d.name.startswith(f"{topic}-0-") for p in d.glob("*.log"))


def _local_logs(log_dir: Path, topic: str) -> list[Path]:
    return sorted((log_dir / f"{topic}-0").glob("*.log"))


def _probe(release: Release, bootstrap: str, specs: Iterable[str]) -> list[dict[str, Any]]:
    cmd = java_command(release, str(PROBE), bootstrap, *specs, heap="256m")
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"ListOffsetsProbe failed: {proc.stderr[-2000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _consume_all(bootstrap: str, topic: str) -> list[tuple[int, int]]:
    """(offset, timestamp) of every record the broker serves from the log start, remote part included."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, isolation_level="read_uncommitted"
    )
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    end = consumer.end_offsets([tp])[tp]
    seen: list[tuple[int, int]] = []
    deadline = time.monotonic() + 120
    while consumer.position(tp) < end and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=2000).values():
            seen.extend((r.offset, r.timestamp) for r in records)
    consumer.close()
    return seen


def run_release(version: str, work: Path) -> Path:
    """Run the workload on `version` and return the corpus directory built under `work`."""
    from kafka import KafkaProducer

    release = tiered_release(fetch(version))
    remote = work / "remote"
    remote.mkdir(parents=True)
    cluster = KafkaCluster(
        release, work / "cluster", config=broker_config(remote) | {"log.initial.task.delay.ms": 500}
    )
    cluster.format()
    facts: dict[str, Any] = {"version": version}
    with cluster:
        cluster.start()
        node = cluster.nodes[0]
        log_dir = node.log_dir
        bootstrap = cluster.bootstrap
        _create(bootstrap, "tiered", TOPIC_CONFIG)
        _create(bootstrap, "plain", {"segment.ms": "1000", "index.interval.bytes": "256"})
        _create(bootstrap, "tiered-gone", TOPIC_CONFIG)
        producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=50, acks="all")
        for wave in range(WAVES):
            if wave == RESTART_AFTER_WAVE:
                producer.close()
                cluster.stop()
                cluster.start()
                producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=50, acks="all")
            _wave(producer, "tiered", wave)
            if wave == TXN_WAVE:
                _aborted_transaction(bootstrap, "tiered")
            if wave < 3:
                _wave(producer, "plain", wave, 20)
            if wave < 3:
                _wave(producer, "tiered-gone", wave, 10)
            time.sleep(1.3)
        # One more record rolls the last wave's segment; it stays in the active segment.
        producer.send("tiered", key=b"tail", value=b"the active segment")
        producer.flush()
        producer.close()
        _wait(
            "remote copies of tiered",
            lambda: len(_remote_logs(remote, "tiered")) >= WAVES and len(_local_logs(log_dir, "tiered")) <= 4,
        )
        _wait("remote copies of tiered-gone", lambda: len(_remote_logs(remote, "tiered-gone")) >= 2)
        admin = _admin(bootstrap)
        admin.delete_topics(["tiered-gone"])
        # DeleteRecords into the second remote segment: the first remote segment is deleted.
        records = _consume_all(bootstrap, "tiered")
        facts["records_before_delete"] = records
        firsts = sorted(int(p.name.split("-")[0]) for p in _remote_logs(remote, "tiered"))
        cut = firsts[1] + 7
        from kafka import TopicPartition

        admin.delete_records({TopicPartition("tiered", 0): cut})
        admin.close()
        facts["delete_records_before"] = cut
        _wait(
            "the remote segment below the log start offset to go",
            lambda: min(int(p.name.split("-")[0]) for p in _remote_logs(remote, "tiered")) > firsts[0],
        )
        _wait("tiered-gone's remote data to go", lambda: not _remote_logs(remote, "tiered-gone"))
        time.sleep(3)  # let the metadata records of those deletions land
        stamps = [ts for off, ts in records if off >= cut]
        local_first = min(int(p.name[:20]) for p in _local_logs(log_dir, "tiered"))
        remote_stamps = [ts for off, ts in records if cut <= off < local_first]
        local_stamps = [ts for off, ts in records if off >= local_first]
        times = sorted(
            {
                stamps[0] - 60_000,
                remote_stamps[len(remote_stamps) // 3],
                remote_stamps[len(remote_stamps) // 3] + 1,
                remote_stamps[-1],
                local_stamps[len(local_stamps) // 2],
                local_stamps[-1],
                local_stamps[-1] + 60_000,
            }
        )
        specs = ["earliest", "latest", "max-timestamp", "earliest-local", "latest-tiered"]
        if release.minor >= (4, 2):
            specs.append("earliest-pending-upload")
        # A timestamp lookup in the remote part reads the remote indexes into remote-log-index-cache/.
        _probe(release, bootstrap, [f"tiered:0:{times[1]}"])
        asked = [f"tiered:0:{s}" for s in [*specs, *map(str, times)]]
        plain = _consume_all(bootstrap, "plain")
        plain_times = [plain[0][1] - 1, plain[len(plain) // 2][1], plain[-1][1] + 60_000]
        asked += [f"plain:0:{s}" for s in [*specs, *map(str, plain_times)]]
        facts["list_offsets"] = _probe(release, bootstrap, asked)
        facts["local_log_start"] = local_first
        cluster.stop()
    return _copy_out(release, node.log_dir, remote, work / "out" / f"kafka-{version}-tiered", facts)


def _copy_out(release: Release, log_dir: Path, remote: Path, out: Path, facts: dict[str, Any]) -> Path:
    out.mkdir(parents=True)
    logdir_files = out / "_logdir-files"
    logdir_files.mkdir()
    for entry in sorted(log_dir.iterdir()):
        if entry.is_dir() and entry.name != "remote-log-index-cache":
            shutil.copytree(entry, out / entry.name)
        elif entry.is_dir():
            shutil.copytree(entry, logdir_files / entry.name)
        elif entry.name != ".lock":
            shutil.copy2(entry, logdir_files / entry.name)
    shutil.copytree(remote, out / "_remote")
    expected = out / "expected"
    expected.mkdir()
    root = out.parent
    oracles = _Oracles(release, root)
    for part in ("tiered-0", "plain-0"):
        for log in sorted((out / part).glob("*.log")):
            oracles.dump(log, expected / part, [("shallow", []), ("deep", ["--deep-iteration"])])
            oracles.dump(
                log, expected / part, [("deep-print-data-log", ["--deep-iteration", "--print-data-log"])]
            )
            for kind in ("index", "timeindex"):
                index = log.with_suffix(f".{kind}")
                if index.exists():
                    oracles.dump(index, expected / part, [("dump", [])])
    for part, flag in (
        ("__remote_log_metadata-0", "remote-log-metadata-decoder"),
        ("__cluster_metadata-0", "cluster-metadata-decoder"),
    ):
        for log in sorted((out / part).glob("*.log")):
            oracles.dump(
                log,
                expected / part,
                [(f"deep-print-data-log.{flag}", ["--deep-iteration", "--print-data-log", f"--{flag}"])],
            )
    for log in sorted((out / "_remote").rglob("*.log")):
        oracles.dump_remote(log, expected / "_remote" / log.parent.name)
    (expected / "list-offsets.jsonl").write_text(
        "".join(json.dumps(a, sort_keys=True) + "\n" for a in facts.pop("list_offsets"))
    )
    (expected / "facts.json").write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")
    return out


class _Oracles:
    """Runs the release's kafka-dump-log from the corpus root, one process per file, as the corpus did."""

    def __init__(self, release: Release, root: Path) -> None:
        self.release = release
        self.root = root
        self.main = dump_log_class(release)

    def _run(self, cwd: Path, name: str, flags: list[str]) -> subprocess.CompletedProcess[str]:
        cmd = java_command(self.release, self.main, "--files", name, *flags, heap="512m")
        return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=600, cwd=cwd)

    def dump(self, path: Path, dest: Path, variants: list[tuple[str, list[str]]]) -> None:
        dest.mkdir(parents=True, exist_ok=True)
        rel = str(path.relative_to(self.root))
        for variant, flags in variants:
            proc = self._run(self.root, rel, flags)
            target = dest / f"{path.name}.{variant}.txt"
            target.write_text(proc.stdout)
            if proc.stderr.strip():
                target.with_name(target.name + ".stderr").write_text(proc.stderr)
            if proc.returncode:
                target.with_name(target.name + ".rc").write_text(f"{proc.returncode}\n")

    def dump_remote(self, path: Path, dest: Path) -> None:
        base = path.name.split("-", 1)[0]
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copyfile(path, Path(tmp) / f"{base}.log")
            dest.mkdir(parents=True, exist_ok=True)
            proc = self._run(Path(tmp), f"{base}.log", ["--deep-iteration"])
            (dest / f"{path.name}.deep.txt").write_text(proc.stdout)
            if proc.returncode:
                raise SystemExit(f"kafka-dump-log failed on {path}: {proc.stderr[-1000:]}")


SYNTHETIC_PARTITION = "__remote_log_metadata-0"


def build_synthetic(out: Path, versions: list[str]) -> Path:
    """`synthetic/`: one segment of hand-made remote log metadata records (`rlmm_samples`), and what each
    release's kafka-dump-log `--remote-log-metadata-decoder` prints for it."""
    seg = SegmentBuilder()
    for i, (_, value) in enumerate(samples()):
        seg.add_v2([NewRecord(None, value, 1_795_620_000_000 + i)], leader_epoch=0)
    log = seg.write(out / SYNTHETIC_PARTITION)
    expected = out / "expected" / SYNTHETIC_PARTITION
    expected.mkdir(parents=True)
    flags = ["--deep-iteration", "--print-data-log", "--remote-log-metadata-decoder"]
    for version in versions:
        release = fetch(version)
        cmd = java_command(
            release, dump_log_class(release), "--files", str(log.relative_to(out.parent)), *flags
        )
        proc = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600, cwd=out.parent)
        name = f"{log.name}.deep-print-data-log.remote-log-metadata-decoder.kafka-{version}.txt"
        (expected / name).write_text(proc.stdout)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", default=",".join(DEFAULT_VERSIONS))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--keep", type=Path, help="keep the work directory here (brokers' dirs and the copy)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="kdump-tiered-"))
    work.mkdir(parents=True, exist_ok=True)
    versions = args.versions.split(",")
    roots = [run_release(v, work / v) for v in versions]
    roots.append(build_synthetic(work / "synthetic-out" / "synthetic", versions))
    args.out.write_bytes(pack_archive(roots))
    print(f"{args.out}: {args.out.stat().st_size} bytes")
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
