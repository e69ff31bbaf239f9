"""Whole-process timings of kdump on segments shaped like the reference ones (A, B, C).

Usage:
    python tests/bench/make_segments.py DIR      # once: builds DIR/{a,b,c}-0 (~400 MB)
    python tests/bench/bench_cli.py DIR [--runs 5]

Each command runs as its own process, output to /dev/null, after one warm-up run (warm page
cache), several times; the median wall time and the peak RSS are printed, with MB/s, records/s
and the ratio to Kafka's own tool where the reference timings give one (2-core machine,
kafka-dump-log.sh, median of 3):
    shallow: A 1.76 s, B 1.92 s, C 2.91 s; --deep-iteration --print-data-log: A 3.79, B 3.23, C 12.3 s.
"""

from __future__ import annotations

import argparse
import atexit
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KAFKA_SHALLOW = {"a": 1.76, "b": 1.92, "c": 2.91}
KAFKA_PRINT_DATA = {"a": 3.79, "b": 3.23, "c": 12.3}
RECORDS = {"a": 178_599, "b": 123_620, "c": 1_111_880}


def _run(argv: list[str], runs: int) -> tuple[float, float]:
    """Median wall seconds and peak RSS (MiB) of `runs` runs after one warm-up."""
    times = []
    peak = 0.0
    for i in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        elapsed = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        peak = max(peak, after / 1024.0 if after > before else peak)
        if i:
            times.append(elapsed)
    return statistics.median(times), peak


def main() -> None:
    """Time dump, verify and reindex on each shape."""
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    kdump = shutil.which("kdump") or str(Path(sys.executable).with_name("kdump"))
    # Bytecode cached whatever PYTHONDONTWRITEBYTECODE says (the warm-up run compiles): a process
    # that compiles every module it imports measures the environment, not kdump (bench_speed.py).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    pycache = tempfile.mkdtemp(prefix="kdump-bench-pycache-")
    atexit.register(shutil.rmtree, pycache, ignore_errors=True)
    os.environ["PYTHONPYCACHEPREFIX"] = pycache
    print(f"{'command':<44} {'median s':>9} {'MB/s':>7} {'records/s':>11} {'vs Kafka':>9} {'peak MiB':>9}")
    for shape in ("a", "b", "c"):
        part = args.root / f"{shape}-0"
        log = part / "00000000000000000000.log"
        size_mb = os.path.getsize(log) / 1e6
        cases = [
            ("dump", [kdump, "dump", str(log)], KAFKA_SHALLOW[shape]),
            (
                "dump --records --format json",
                [kdump, "dump", "--records", "--format", "json", str(log)],
                KAFKA_PRINT_DATA[shape],
            ),
            ("verify", [kdump, "verify", str(part)], KAFKA_SHALLOW[shape]),
            ("reindex (dry run)", [kdump, "reindex", str(part)], None),
        ]
        for name, argv, kafka in cases:
            median, peak = _run(argv, args.runs)
            ratio = f"{kafka / median:.1f}x" if kafka else "-"
            records = f"{RECORDS[shape] / median:,.0f}"
            print(
                f"{shape.upper()}: {name:<41} {median:9.3f} {size_mb / median:7.0f} {records:>11} {ratio:>9} {peak:9.1f}"
            )


if __name__ == "__main__":
    main()
