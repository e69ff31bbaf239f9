"""Benchmark: the data source and fleet verify on an S3 store against the same files on local disk.

    .venv/bin/python tests/bench/bench_store.py [--dir CACHE] [--runs N] [--partitions N]

The store is the tests' S3 server, SeaweedFS on 127.0.0.1 (tests/s3_server.py), so the figures
measure kdump's ranged reads through an S3 client plus a local object store, not a network.

- rows/s of `spark.read.format("kdump")` on local[2] over segment C of tests/bench/make_segments.py
  (135 MB of zstd, 1.1 M records), split into at least 4 tasks, from the store and from local disk
  (an aggregate over key, value, headers and offset, so every column is built); the runs are
  interleaved (local, store, local, store, ...) and the ratio paired run by run (median);
- bytes each task fetches from the store against the bytes of its slice (the same function a task
  runs, `open_slice`, per planned slice);
- fleet verify (`run_fleet_verify`, local[2]) of a log dir of N partitions on the store, against
  local `kdump verify` of the same log dir in this process.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_segments import build
from s3_server import running_server

from kdump.model.log_dir import discover
from kdump.ops.checks.verify import VerifyOptions, verify_targets


def median_time(runs: int, fn: Callable[[], Any]) -> tuple[Any, float]:
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return out, statistics.median(times)


def rows_job(spark: Any, path: str, split: int) -> Callable[[], int]:
    def run() -> int:
        df = spark.read.format("kdump").option("splitBytes", str(split)).load(path)
        row = df.selectExpr(
            "count(*) AS n", "sum(length(key))", "sum(length(value))", "sum(size(headers))", "max(offset)"
        ).collect()[0]
        return int(row["n"])

    return run


def fleet_dir(root: Path, n: int) -> Path:
    """A log dir of `n` partitions: copies of the sample partitions under new topic names."""
    logs = root / "fleet" / "kafka-logs"
    if logs.is_dir():
        return logs
    samples = Path(__file__).resolve().parents[2] / "samples" / "logdir"
    parts = sorted(p for p in samples.iterdir() if p.is_dir() and any(p.glob("*.log")))
    for i in range(n):
        src = parts[i % len(parts)]
        shutil.copytree(src, logs / f"fleet{i:03d}-{src.name.rsplit('-', 1)[1]}")
    return logs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/kdump-bench"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--fleet-only", action="store_true", help="only the fleet verify figures")
    ap.add_argument("--no-fleet", action="store_true", help="only the data source figures")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    log = build("C", args.dir)
    part = log.parent
    size = log.stat().st_size
    split = size // 4 + 1
    print(f"segment C: {log} {size / 1e6:.1f} MB; splitBytes {split}; cores: {os.cpu_count()} (shared)")
    fleet = fleet_dir(args.dir, args.partitions)

    with running_server() as store:
        t = time.perf_counter()
        url = store.upload(part, "bench/c-0") if not args.fleet_only else ""
        fleet_url = store.upload(fleet, "bench/fleet/kafka-logs")
        print(f"uploaded in {time.perf_counter() - t:.1f} s")

        from kdump.spark import datasource as ds
        from kdump.spark.arrow_rows import _scan_slice
        from kdump.spark.ranged import open_slice
        from kdump.store.remote import FETCHED

        slices = ds.plan_slices(ds.ReadOptions(paths=(url,), split_bytes=split)) if url else []
        print(f"\nbytes fetched per task (slice of {len(slices)}): fetched / slice")
        ratios = []
        for s in slices:
            before = FETCHED.bytes
            with open_slice(s.log, s.start, s.end) as sliced:
                n = sum(1 for _ in _scan_slice(sliced, s))
            fetched = FETCHED.bytes - before
            ratios.append(fetched / s.size)
            print(
                f"  [{s.start:>10}, {s.end or size:>10}) {s.size:>10} B, {n:>6} batches: fetched {fetched:>10} B  ratio {fetched / s.size:.5f}"
            )
        if ratios:
            print(f"  max ratio {max(ratios):.5f}")

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        from kdump.spark import register
        from kdump.spark.fleet import run_fleet_verify

        spark = (
            SparkSession.builder.master("local[2]")
            .appName("kdump-bench-store")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        print(
            f"\nrows/s on local[2], {len(slices)} tasks, median of {args.runs} (after one warm-up run each)"
        )
        if url:
            jobs = {"local": rows_job(spark, str(part), split), "store": rows_job(spark, url, split)}
            for job in jobs.values():
                job()  # warm-up
            secs: dict[str, list[float]] = {"local": [], "store": []}
            n = 0
            for _ in range(args.runs):
                for label, job in jobs.items():
                    t = time.perf_counter()
                    n = job()
                    secs[label].append(time.perf_counter() - t)
            for label, times in secs.items():
                med = statistics.median(times)
                print(f"  {label:<6} {n:>10,} rows {med:7.2f} s {n / med:>12,.0f} rows/s")
            paired = [lo / st for lo, st in zip(secs["local"], secs["store"], strict=True)]
            print(
                f"  store / local rows/s: median {statistics.median(paired):.2f} "
                f"(runs {', '.join(f'{p:.2f}' for p in paired)}; load {os.getloadavg()[0]:.1f})"
            )

        if args.no_fleet:
            spark.stop()
            return
        print(f"\nfleet verify of {args.partitions} partitions, median of {args.runs}")
        opts = VerifyOptions()
        _, local_secs = median_time(args.runs, lambda: list(verify_targets([discover(str(fleet))], opts)))
        print(f"  local kdump verify (in process, all cores): {local_secs:7.2f} s")
        _, fleet_local = median_time(args.runs, lambda: run_fleet_verify([discover(str(fleet))], opts))
        print(f"  fleet verify, local[2], local files:        {fleet_local:7.2f} s")
        _, fleet_store = median_time(args.runs, lambda: run_fleet_verify([discover(fleet_url)], opts))
        print(f"  fleet verify, local[2], on the store:       {fleet_store:7.2f} s")
        spark.stop()


if __name__ == "__main__":
    main()
