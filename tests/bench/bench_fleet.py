"""Benchmark: fleet verify on Spark against local `kdump verify` on the same cores, 1,000 partitions.

    .venv/bin/python tests/bench/bench_fleet.py [--dir DIR] [--partitions 1000] [--size-mb 10]
        [--log-dirs 4] [--runs 3] [--no-store] [--keep]

Builds a directory of log dirs (`--log-dirs` brokers' `kafka-logs`, `--partitions` partitions in
all, one segment of about `--size-mb` MB of zstd batches of ~15 records each, with indexes) in a
temporary directory (about 10 GB with the defaults: real copies of a few segments built once),
deleted afterwards unless `--keep`. Then, interleaved run by run (medians, ratios paired per run):

- local: `kdump verify DIR` as its own process (all cores);
- spark-local: fleet verify (`run_fleet_verify`) on Spark `local[2]` over the local files;
- local-store: `kdump verify URL` of a copy in the S3 store of the tests (SeaweedFS on 127.0.0.1,
  on the same cores: its own CPU counts against both store figures);
- spark-store: fleet verify over that copy.

Prints bytes/s of each, Spark / local (spark-store also against local-store), the number of Spark
tasks, Spark's cost per task (a job of as many empty Python tasks as partitions: its time per
task), the time of a fleet verify of as many one-batch partitions (its fixed cost: planning,
partition checks, one job), and the requests the store answered per stored file for a local and
for a Spark verify (counted on the wire, apart from the timed runs).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from builders import SegmentBuilder
from make_segments import _value

from kdump.formats.constants import Codec
from kdump.formats.records import NewRecord

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "logdir"
TEMPLATES = 8


def _template(root: Path, i: int, size: int) -> Path:
    """A partition of one segment of about `size` bytes, shaped like segment C."""
    import random

    rng = random.Random(i)
    seg = SegmentBuilder(base_offset=0)
    ts = 1_790_000_000_000
    while len(seg.data) < size:
        recs = [
            NewRecord(f"key-{seg.next_offset + k}".encode(), _value(rng, rng.randint(60, 400)), ts + k, ())
            for k in range(15)
        ]
        ts += 15
        seg.add_v2(recs, codec=Codec.ZSTD, producer_id=1000, producer_epoch=0, base_sequence=seg.next_offset)
    part = root / "templates" / f"t{i}-0"
    seg.write(part)
    return part


def build(root: Path, partitions: int, size_mb: int, log_dirs: int) -> tuple[Path, int]:
    """The directory of log dirs, and its log bytes."""
    top = root / "fleet"
    if top.is_dir():
        return top, sum(p.stat().st_size for p in top.rglob("*.log"))
    t0 = time.perf_counter()
    templates = [_template(root, i, size_mb * 1_000_000) for i in range(TEMPLATES)]
    print(f"built {TEMPLATES} template segments in {time.perf_counter() - t0:.0f} s", flush=True)
    for b in range(log_dirs):
        logs = top / f"broker{b}" / "kafka-logs"
        logs.mkdir(parents=True)
        meta = (SAMPLES / "meta.properties").read_text()
        (logs / "meta.properties").write_text(meta.replace("node.id=1", f"node.id={b + 1}"))
    for p in range(partitions):
        src = templates[p % TEMPLATES]
        dest = top / f"broker{p % log_dirs}" / "kafka-logs" / f"topic{p // 50:02d}-{p % 50}"
        shutil.copytree(src, dest)
    shutil.rmtree(root / "templates")
    total = sum(p.stat().st_size for p in top.rglob("*.log"))
    print(f"built {partitions} partitions, {total / 1e9:.2f} GB of logs, in {time.perf_counter() - t0:.0f} s")
    return top, total


def tiny(root: Path, partitions: int) -> Path:
    """As many partitions of one small batch each: Spark's cost per task, with no work in it."""
    top = root / "tiny" / "kafka-logs"
    if top.is_dir():
        return top
    top.mkdir(parents=True)
    shutil.copy(SAMPLES / "meta.properties", top / "meta.properties")
    seg = SegmentBuilder(base_offset=0)
    seg.add_v2([NewRecord(b"k", b"v", 1_790_000_000_000, ())])
    for p in range(partitions):
        seg.write(top / f"tiny{p // 50:02d}-{p % 50}")
    return top


def local_verify(path: Path | str) -> float:
    kdump = Path(sys.executable).with_name("kdump")
    t = time.perf_counter()
    subprocess.run(
        [str(kdump), "verify", "--fail-on", "error", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    return time.perf_counter() - t


def empty_tasks(n: int) -> float:
    """Seconds per task of a job of `n` Python tasks that do nothing: Spark's own cost per task."""
    from pyspark.sql import SparkSession

    sc = SparkSession.getActiveSession().sparkContext  # type: ignore[union-attr]
    sc.parallelize(range(n), n).map(lambda x: x).count()
    t = time.perf_counter()
    sc.parallelize(range(n), n).map(lambda x: x).count()
    return (time.perf_counter() - t) / n


def spark_verify(path: str) -> tuple[float, int]:
    """Seconds of a fleet verify, and the number of tasks it ran."""
    from pyspark.sql import SparkSession

    from kdump.model.log_dir import discover
    from kdump.ops.checks.verify import VerifyOptions
    from kdump.spark.fleet import run_fleet_verify

    sc = SparkSession.getActiveSession().sparkContext  # type: ignore[union-attr]
    group = f"bench-{time.monotonic_ns()}"
    sc.setJobGroup(group, "fleet verify")
    t = time.perf_counter()
    reports = run_fleet_verify([discover(path)], VerifyOptions())
    secs = time.perf_counter() - t
    assert reports
    tracker = sc.statusTracker()
    tasks = 0
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info else ():
            s = tracker.getStageInfo(stage)
            tasks += s.numTasks if s else 0
    return secs, tasks


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path)
    ap.add_argument("--partitions", type=int, default=1000)
    ap.add_argument("--size-mb", type=int, default=10)
    ap.add_argument("--log-dirs", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-store", action="store_true")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="kdump-fleet-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        run(root, args)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def run(root: Path, args: Any) -> None:
    top, total = build(root, args.partitions, args.size_mb, args.log_dirs)
    small = tiny(root, args.partitions)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # The store first: Spark's JVM and its Python workers take the AWS environment it sets.
    with _store(top, args.no_store) as store:
        url = store[0]
        from pyspark.sql import SparkSession

        from kdump.spark import register

        spark = (
            SparkSession.builder.master("local[2]")
            .appName("kdump-bench-fleet")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        # Warm-ups: the page cache, Spark's Python workers.
        local_verify(top)
        spark_verify(str(top))
        rows: dict[str, list[float]] = {"local": [], "spark-local": [], "local-store": [], "spark-store": []}
        tasks = 0
        for r in range(args.runs):
            rows["local"].append(local_verify(top))
            secs, tasks = spark_verify(str(top))
            rows["spark-local"].append(secs)
            if url:
                rows["local-store"].append(local_verify(url))
                rows["spark-store"].append(spark_verify(url)[0])
            print(
                f"run {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f} s" for k, v in rows.items() if v), flush=True
            )
        print(
            f"\n{args.partitions} partitions, {total / 1e9:.2f} GB of logs, medians of {args.runs}, load {os.getloadavg()}"
        )
        for name, secs in rows.items():
            if secs:
                med = statistics.median(secs)
                print(f"  {name:<12} {med:8.1f} s {total / med / 1e6:9.0f} MB/s")
        for name, against in (
            ("spark-local", "local"),
            ("spark-store", "local"),
            ("spark-store", "local-store"),
        ):
            if rows[name]:
                paired = [rows[against][i] / rows[name][i] for i in range(len(rows[name]))]
                print(
                    f"  {name} bytes/s / {against} bytes/s: median {statistics.median(paired):.2f} "
                    f"(runs {', '.join(f'{p:.2f}' for p in paired)})"
                )
        spark_verify(str(small))
        tiny_secs, tiny_tasks = spark_verify(str(small))
        per_task = empty_tasks(args.partitions)
        print(
            f"  Spark tasks per fleet verify: {tasks}; Spark's cost per task: {per_task * 1000:.1f} ms "
            f"(a job of {args.partitions} empty tasks); a fleet of {args.partitions} one-batch partitions: "
            f"{tiny_secs:.2f} s in {tiny_tasks} tasks"
        )
        spark.stop()
        if url:
            for engine in ("local", "spark"):
                requests, files = store[1](url, engine)
                print(
                    f"  store requests of a {engine} verify: {requests} for {files} files with bytes "
                    f"({requests / files:.3f} per file)"
                )


@contextlib.contextmanager
def _store(top: Path, skip: bool) -> Iterator[tuple[str, Callable[[str, str], tuple[int, int]]]]:
    """The fleet in the tests' S3 store (its URL), and a function counting the requests a verify
    of a URL makes (through a counting proxy, apart from the timed runs: the proxy costs CPU)."""
    if skip:
        yield "", lambda url, engine: (0, 1)
        return
    from s3_server import counting_proxy, running_server

    with running_server() as s3:
        t = time.perf_counter()
        url = s3.upload(top, "bench/fleet")
        print(f"uploaded to the store in {time.perf_counter() - t:.0f} s", flush=True)

        def count(url: str, engine: str) -> tuple[int, int]:
            with counting_proxy(s3.endpoint) as (proxy, counting):
                kdump = Path(sys.executable).with_name("kdump")
                env = {**os.environ, "AWS_ENDPOINT_URL": proxy}
                spark = ["--engine", "spark", "--master", "local[2]"] if engine == "spark" else []
                subprocess.run(
                    [str(kdump), "verify", *spark, url],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=env,
                    check=False,
                )
                files = sum(1 for p in top.rglob("*") if p.is_file() and p.stat().st_size > 0)
                return len(counting.requests), files

        yield url, count


if __name__ == "__main__":
    main()
