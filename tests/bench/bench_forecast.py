"""Benchmark: `kdump forecast` against a real Kafka broker's own start-up, on the same copy.

    .venv/bin/python tests/bench/bench_forecast.py [--dir DIR] [--partitions 1000] [--size-mb 5.3]
        [--rounds 3] [--no-broker] [--keep]

Builds one real broker's log dir (the newest pinned release, one KRaft node from tests/brokers) under
DIR (default: a temporary directory, deleted afterwards unless `--keep`):

1. the broker creates `--partitions` partitions (topics of 100 partitions each) and stops cleanly;
2. every partition's empty segment is replaced by one segment of `--size-mb` MB of v2 batches (the
   same bytes in every partition: uncompressed batches of 40 records of 400 B, a non-idempotent
   producer, leader epoch 0 as the broker's first leadership gave them, timestamps of now); the
   clean-shutdown marker is removed, so the broker's next start recovers every partition from its
   recovery point (0): that start is timed too (`first load`), and the bench checks that every
   partition then answers ListOffsets with the segment's end (the broker accepted the bytes);
3. the broker is stopped cleanly: the `clean` master (marker, recovery points at the log end,
   producer snapshots and indexes the broker wrote); a broker started on a copy of it and killed
   with SIGKILL once serving leaves the `killed` master (no marker: the next start re-reads every
   segment from the one holding the recovery point, here all of them).

Then, `--rounds` times, clean and killed interleaved: a fresh copy of the master (segments hard
linked: neither side writes to them; everything else copied), `kdump forecast` of it (its own
process, wall time and peak RSS), then the broker started on the same copy, timed from the
process's start until ListOffsets (earliest and latest) answers for every partition with the
expected offsets; then the broker is killed and the copy removed. Prints medians, forecast / broker
per pair, and forecast's own start-up estimate against the broker's measured start-up.

It also measures, in this process, what the metadata image (`load_image` of the node's
`__cluster_metadata-0`) and `forecast()` cost on that log dir (median time, peak traced memory).
`--no-broker` skips the paired rounds (the image and forecast costs only: with `--partitions
10000 --size-mb 0.25`, the 10,000-partition figures). Needs Java and the release's jars
(tests/brokers/releases.py). Prints figures, never pass or fail.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from brokers.cluster import KafkaCluster, Node
from brokers.releases import NEWEST, fetch
from builders import SegmentBuilder

from kdump.formats.records import NewRecord

PER_TOPIC = 100
RECORDS_PER_BATCH = 40
VALUE_BYTES = 400
KDUMP = Path(sys.executable).with_name("kdump")
CONFIG = {"log.retention.ms": -1}


def load_average() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def template(size_bytes: int) -> tuple[bytes, int]:
    """One segment's bytes of about `size_bytes` and the number of records (its log end offset)."""
    seg = SegmentBuilder(base_offset=0)
    ts = int(time.time() * 1000)
    value = (b"0123456789abcdef" * (VALUE_BYTES // 16 + 1))[:VALUE_BYTES]
    n = 0
    while len(seg.data) < size_bytes:
        recs = [NewRecord(f"key-{n + i}".encode(), value, ts + n + i, ()) for i in range(RECORDS_PER_BATCH)]
        seg.add_v2(recs)
        n += RECORDS_PER_BATCH
    return bytes(seg.data), n


def timed(cmd: list[str]) -> tuple[float, float, int, bytes]:
    """Wall seconds, peak RSS (MiB), exit code and stdout of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024, proc.returncode, out


def copy_tree(src: Path, dst: Path) -> None:
    """A copy whose segments are hard links (the broker and kdump only read them here) and whose other
    files (indexes the broker resizes, checkpoints it rewrites) are real copies."""

    def link_logs(s: str, d: str) -> None:
        if s.endswith(".log"):
            os.link(s, d)
        else:
            shutil.copy2(s, d)

    shutil.copytree(src, dst, copy_function=link_logs)


def partitions_of(log_dir: Path) -> list[tuple[str, int]]:
    out = []
    for p in log_dir.iterdir():
        if p.is_dir() and p.name.startswith("bench-"):
            topic, _, num = p.name.rpartition("-")
            out.append((topic, int(num)))
    return out


def serving(bootstrap: str, parts: list[tuple[str, int]], end: int, deadline: float) -> None:
    """Return once ListOffsets answers earliest 0 and latest `end` for every partition."""
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition

    tps = [TopicPartition(t, p) for t, p in parts]
    while time.monotonic() < deadline:
        consumer = None
        try:
            consumer = KafkaConsumer(bootstrap_servers=bootstrap, request_timeout_ms=20000)
            ends = consumer.end_offsets(tps)
            starts = consumer.beginning_offsets(tps)
            if all(ends[tp] == end and starts[tp] == 0 for tp in tps):
                return
            wrong = [(tp, starts[tp], ends[tp]) for tp in tps if ends[tp] != end or starts[tp] != 0]
            raise SystemExit(f"the broker serves other offsets than the segments hold: {wrong[:5]}")
        except SystemExit:
            raise
        except Exception:
            time.sleep(0.2)
        finally:
            if consumer is not None:
                consumer.close()
    raise SystemExit("the broker did not serve every partition in time")


class Broker:
    """The one node of the benchmark, startable on any copy of its log dir (same ids and ports)."""

    def __init__(self, root: Path) -> None:
        self.release = fetch(NEWEST)
        self.cluster = KafkaCluster(self.release, root / "origin", config=CONFIG)
        self.node = self.cluster.nodes[0]

    def on(self, home: Path) -> KafkaCluster:
        cluster = KafkaCluster(self.release, home.parent, config=CONFIG, cluster_id=self.cluster.cluster_id)
        cluster.nodes = [
            Node(
                self.node.node_id,
                home,
                self.node.broker_port,
                self.node.controller_port,
                self.node.directory_id,
            )
        ]
        cluster._write_config(cluster.nodes[0])  # a copy's server.properties names the master's log dir
        return cluster

    def start_until_serving(
        self, home: Path, parts: list[tuple[str, int]], end: int
    ) -> tuple[KafkaCluster, float]:
        cluster = self.on(home)
        t0 = time.perf_counter()
        cluster.start(timeout=1800)
        serving(cluster.bootstrap, parts, end, time.monotonic() + 1800)
        return cluster, time.perf_counter() - t0


def build(
    root: Path, partitions: int, size_mb: float, killed: bool = True
) -> tuple[Broker, Path, Path | None, int, float]:
    """The clean and killed masters (their node homes), the log end of every partition, and the time
    of the broker's first load (recovery of every segment from offset 0)."""
    from kafka.admin import KafkaAdminClient, NewTopic

    broker = Broker(root)
    cluster = broker.cluster
    cluster.format()
    t = time.perf_counter()
    with cluster:
        cluster.start()
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=600000)
        topics = [f"bench-{i:03d}" for i in range((partitions + PER_TOPIC - 1) // PER_TOPIC)]
        for i, name in enumerate(topics):
            count = min(PER_TOPIC, partitions - i * PER_TOPIC)
            admin.create_topics(
                [NewTopic(name, num_partitions=count, replication_factor=1)], timeout_ms=600000
            )
        admin.close()
        log_dir = broker.node.log_dir
        want = {(f"bench-{i // PER_TOPIC:03d}", i % PER_TOPIC) for i in range(partitions)}
        deadline = time.monotonic() + 600
        while set(partitions_of(log_dir)) != want and time.monotonic() < deadline:
            time.sleep(1)
        # A snapshot of the metadata, as a broker that has run a while has (the image then joins both).
        time.sleep(2)
        cluster.stop()
    print(f"created {partitions} partitions in {time.perf_counter() - t:.1f} s", flush=True)
    t = time.perf_counter()
    data, end = template(int(size_mb * 1e6))
    for topic, p in partitions_of(log_dir):
        part = log_dir / f"{topic}-{p}"
        for f in part.iterdir():
            if f.suffix in (".log", ".index", ".timeindex"):
                f.unlink()
        (part / "00000000000000000000.log").write_bytes(data)
    (log_dir / ".kafka_cleanshutdown").unlink()
    print(
        f"wrote {partitions} segments of {len(data) / 1e6:.2f} MB ({partitions * len(data) / 1e9:.2f} GB, "
        f"{end} records each) in {time.perf_counter() - t:.1f} s",
        flush=True,
    )
    parts = partitions_of(log_dir)
    first, first_load = broker.start_until_serving(broker.node.home, parts, end)
    first.stop(timeout=600)
    print(
        f"first load (recovery of every segment from offset 0): {first_load:.1f} s, every partition served",
        flush=True,
    )
    if not killed:
        return broker, broker.node.home, None, end, first_load
    home = root / "killed" / "node-1"
    copy_tree(broker.node.home, home)
    cluster, _ = broker.start_until_serving(home, parts, end)
    cluster.kill()
    return broker, broker.node.home, home, end, first_load


def in_process(log_dir: Path, runs: int = 3) -> dict[str, float]:
    """Median time and peak traced memory of `load_image` and `forecast()` on `log_dir`."""
    from kdump.ops.forecast import forecast
    from kdump.ops.metadata import METADATA_DIR, load_image

    out: dict[str, float] = {}
    for name, fn in (
        ("image", lambda: load_image(log_dir / METADATA_DIR)),
        ("forecast", lambda: forecast([log_dir])),
    ):
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        tracemalloc.start()
        fn()
        out[f"{name}_peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        out[f"{name}_s"] = statistics.median(times)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", type=Path)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--size-mb", type=float, default=5.3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-broker", action="store_true")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="kdump-bench-forecast-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"load average at start {load_average()}", flush=True)
    try:
        broker, clean, killed, end, first_load = build(
            root, args.partitions, args.size_mb, not args.no_broker
        )
        parts = partitions_of(clean / "data")
        cost = in_process(clean / "data")
        print(
            f"in process, {len(parts)} partitions: load_image {cost['image_s'] * 1000:.0f} ms "
            f"(peak {cost['image_peak_mib']:.1f} MiB traced), forecast() {cost['forecast_s'] * 1000:.0f} ms "
            f"(peak {cost['forecast_peak_mib']:.1f} MiB traced)",
            flush=True,
        )
        for label, master in (("clean", clean), ("killed", killed)):
            if master is None:
                continue
            wall, rss, code, out = timed([str(KDUMP), "forecast", "--format", "json", str(master / "data")])
            summary = next(json.loads(line) for line in out.splitlines() if b'"type": "forecast"' in line)
            print(
                f"forecast of the {label} master: {wall:.2f} s, peak RSS {rss:.0f} MiB, exit {code}, "
                f"{summary['verdict']}, re-reads {summary['reread_bytes'] / 1e9:.2f} GB, "
                f"estimates {summary['estimated_startup_seconds']} s",
                flush=True,
            )
        if killed is None:
            return
        results: dict[str, list[tuple[float, float]]] = {"clean": [], "killed": []}
        for r in range(args.rounds):
            for label, master in (
                (("clean", clean), ("killed", killed))
                if r % 2 == 0
                else (("killed", killed), ("clean", clean))
            ):
                home = root / "run" / "node-1"
                copy_tree(master, home)
                wall, rss, code, _ = timed([str(KDUMP), "forecast", str(home / "data")])
                cluster, started = broker.start_until_serving(home, parts, end)
                cluster.kill()
                shutil.rmtree(home.parent)
                results[label].append((wall, started))
                print(
                    f"round {r + 1} {label}: forecast {wall:.2f} s ({rss:.0f} MiB, exit {code}), broker "
                    f"{started:.2f} s, ratio {wall / started:.3f} [load {load_average()}]",
                    flush=True,
                )
        for label, pairs in results.items():
            f = statistics.median(w for w, _ in pairs)
            b = statistics.median(s for _, s in pairs)
            ratio = statistics.median(w / s for w, s in pairs)
            print(
                f"{label}: forecast {f:.2f} s, broker start-up {b:.2f} s, forecast/broker {ratio:.3f} (median of pairs)"
            )
        print(
            f"first load (no marker, recovery from 0): {first_load:.1f} s; load average at end {load_average()}"
        )
    finally:
        for pid in list(__import__("brokers.cluster", fromlist=["_LIVE"])._LIVE):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
