"""Benchmark: rows per second of the `kdump` Spark data source against the local scanner.

    /work/venv/bin/python tests/bench/bench_spark.py [--dir CACHE] [--corpus DIR] [--runs N]

Data: a generated 134 MB zstd segment (71k batches of 15 records of 60-400 B, with a sparse offset
index, built once with `build_v2_batch` and cached), and the Kafka corpus when present.

Measured, warm page cache, best of `--runs` runs:
- local scanner: `scan_log(deep=True)` over every segment in this process (one core), records/s;
- in-process Arrow: the data source's read path (`read_records`) without Spark, one core;
- Spark local[1] and local[2]: `spark.read.format("kdump")` then an aggregate over key, value,
  headers and offset, so every column is built and shipped; rows/s, job time only (session start-up
  and the first, cold query are excluded and reported apart).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from kdump.formats.constants import Codec
from kdump.formats.offset_index import encode_offset_index
from kdump.formats.records import NewRecord, Record, build_v2_batch
from kdump.model.log_dir import discover
from kdump.scan.log_scanner import scan_log
from kdump.scan.source import open_buffer

BATCHES = 71_000
RECORDS_PER_BATCH = 15
# Share of each value that is random bytes (the rest is repetitive text): tuned so zstd leaves
# about 1.9 KB per batch, i.e. a 134 MB segment.
RANDOM_SHARE = 0.285
T0 = 1_700_000_000_000
WORDS = [
    b"order",
    b"customer",
    b"item",
    b"price",
    b"status",
    b"shipped",
    b"pending",
    b"eu-west",
    b"true",
    b"false",
]


def generate(directory: Path) -> Path:
    """The benchmark partition `<directory>/bench-0`, built once (about 20 s) and then reused."""
    part = directory / "bench-0"
    log = part / f"{0:020d}.log"
    if log.is_file():
        return part
    part.mkdir(parents=True, exist_ok=True)
    rnd = random.Random(7)
    out = bytearray()
    entries = []
    offset = 0
    ts = T0
    since_entry = 4096
    for _ in range(BATCHES):
        records = []
        for i in range(RECORDS_PER_BATCH):
            n = rnd.randint(60, 400)
            r = int(n * RANDOM_SHARE)
            text = b" ".join(rnd.choice(WORDS) for _ in range((n - r) // 6 + 1))[: n - r]
            headers = ((b"trace", rnd.randbytes(8)),) if i % 4 == 0 else ()
            records.append(NewRecord(b"k%06d" % rnd.randint(0, 99_999), rnd.randbytes(r) + text, ts, headers))
            ts += rnd.randint(0, 3)
        batch = build_v2_batch(
            offset, records, codec=Codec.ZSTD, producer_id=1000, producer_epoch=0, base_sequence=offset
        )
        if since_entry >= 4096:  # the broker's log.index.interval.bytes
            entries.append((offset + RECORDS_PER_BATCH - 1, len(out)))
            since_entry = 0
        since_entry += len(batch)
        out += batch
        offset += RECORDS_PER_BATCH
    tmp = log.with_suffix(".tmp")
    tmp.write_bytes(bytes(out))
    (part / f"{0:020d}.index").write_bytes(encode_offset_index(entries, 0))
    tmp.rename(log)
    return part


def log_files(paths: Iterable[Path]) -> list[tuple[Path, int]]:
    out = []
    for p in paths:
        for part in discover(str(p)).partitions():
            out.extend((s.log, s.base_offset) for s in part.segments if s.log is not None)
    return out


def scanner_records(files: list[tuple[Path, int]]) -> int:
    n = 0
    for path, base in files:
        with open_buffer(path) as buf:
            for ev in scan_log(buf, file=str(path), base_offset=base, deep=True):
                if type(ev) is Record:
                    n += 1
    return n


def arrow_records(files: list[tuple[Path, int]]) -> int:
    import gc

    from kdump.spark.datasource import Bounds, SegmentSlice, read_records

    n = 0
    gc.disable()
    try:
        slices = [SegmentSlice(str(path), base, "t", 0) for path, base in files]
        for rb in read_records(slices, Bounds(), 10_000):
            n += rb.num_rows
    finally:
        gc.enable()
    return n


def best(runs: int, fn: Callable[[], int]) -> tuple[int, float]:
    times = []
    n = 0
    for _ in range(runs):
        t = time.perf_counter()
        n = fn()
        times.append(time.perf_counter() - t)
    return n, min(times)


def spark_job(spark: Any, paths: list[Path], **options: str) -> Callable[[], int]:
    def run() -> int:
        reader = spark.read.format("kdump")
        for k, v in options.items():
            reader = reader.option(k, v)
        df = reader.load([str(p) for p in paths])
        row = df.selectExpr(
            "count(*) AS n", "sum(length(key))", "sum(length(value))", "sum(size(headers))", "max(offset)"
        ).collect()[0]
        return int(row["n"])

    return run


def line(label: str, n: int, seconds: float, mb: float) -> None:
    print(
        f"  {label:<44} {n:>10,} rows {seconds:8.2f} s {n / seconds:>12,.0f} rows/s {mb / seconds:8.1f} MB/s"
    )


def main() -> None:
    default_corpus = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--dir", type=Path, default=Path("/tmp/kdump-bench"), help="where the generated segment is cached"
    )
    ap.add_argument("--corpus", type=Path, default=default_corpus)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--no-spark", action="store_true", help="only the in-process figures")
    args = ap.parse_args()

    t = time.perf_counter()
    bench = generate(args.dir)
    print(f"benchmark segment: {bench} (ready in {time.perf_counter() - t:.1f} s)")
    datasets: list[tuple[str, list[Path]]] = [("134 MB zstd segment", [bench])]
    corpus_dirs = [
        args.corpus / d for d in ("kafka-3.8.0", "kafka-3.8.0-zk-legacy", "kafka-3.8.0-running-copy")
    ]
    corpus_dirs = [d for d in corpus_dirs if d.is_dir()]
    if corpus_dirs:
        datasets.append(("Kafka corpus", corpus_dirs))

    sizes = {}
    for name, paths in datasets:
        files = log_files(paths)
        sizes[name] = sum(p.stat().st_size for p, _ in files) / 1e6
        print(f"\n{name}: {len(files)} segments, {sizes[name]:.1f} MB")
        scanner_records(files)  # warm the page cache
        line(
            "local scanner (scan_log deep, 1 core)",
            *best(args.runs, lambda f=files: scanner_records(f)),
            sizes[name],
        )
        line(
            "data source read path, no Spark (1 core)",
            *best(args.runs, lambda f=files: arrow_records(f)),
            sizes[name],
        )

    if args.no_spark:
        return
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from kdump.spark import register

    for cores in (1, 2):
        t = time.perf_counter()
        spark = (
            SparkSession.builder.master(f"local[{cores}]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", str(cores))
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        sc = spark.sparkContext
        print(
            f"\nSpark {sc.master}, {sc.defaultParallelism} cores (session start {time.perf_counter() - t:.1f} s)"
        )
        for name, paths in datasets:
            variants: list[tuple[str, dict[str, str]]] = [("default options", {})]
            if name.startswith("134"):
                variants.append(("splitBytes=16 MiB", {"splitBytes": str(16 << 20)}))
            for label, options in variants:
                job = spark_job(spark, paths, **options)
                t = time.perf_counter()
                job()
                cold = time.perf_counter() - t
                n, seconds = best(args.runs, job)
                line(f"{name}, {label} (cold {cold:.1f} s)", n, seconds, sizes[name])
        spark.stop()


if __name__ == "__main__":
    main()
