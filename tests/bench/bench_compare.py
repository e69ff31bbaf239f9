"""Whole-process timings of `kdump compare` on two agreeing replicas, against two shallow verifies.

Usage:
    python tests/bench/make_segments.py DIR      # once: builds DIR/{a,b,c}-0 (~400 MB)
    python tests/bench/bench_compare.py DIR [--runs 5]

For each shape the partition is copied once to DIR/replica2/<shape>-0 (a real copy, so the two
replicas are two files in the page cache, as on two brokers' disks). Then, each as its own
process after one warm-up run, output to /dev/null, the median wall time of:

- `kdump compare A B` (batch headers of both replicas, walked together);
- `kdump verify A` then `kdump verify B`: two shallow verifies, one after the other (the target:
  compare must be no slower);
- `kdump verify A B`: both in one verify process (which checks partitions on every core).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _time(argvs: list[list[str]], runs: int) -> float:
    """Median wall seconds of running the commands one after the other, after one warm-up."""
    times = []
    for i in range(runs + 1):
        t0 = time.perf_counter()
        for argv in argvs:
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        if i:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    """Time compare and verify on each shape."""
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--shapes", default="abc")
    args = parser.parse_args()
    kdump = shutil.which("kdump") or str(Path(sys.executable).with_name("kdump"))
    print(
        f"{'shape':<6} {'MB':>6} {'compare s':>10} {'2 verifies s':>13} {'ratio':>6} {'verify A B s':>13} {'ratio':>6}"
    )
    for shape in args.shapes:
        a = args.root / f"{shape}-0"
        b = args.root / "replica2" / f"{shape}-0"
        if not b.exists():
            shutil.copytree(a, b)
        size_mb = os.path.getsize(a / "00000000000000000000.log") / 1e6
        done = subprocess.run([kdump, "compare", str(a), str(b)], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            sys.exit(
                f"compare of two copies did not agree (exit {done.returncode}):\n{done.stdout}{done.stderr}"
            )
        compare = _time([[kdump, "compare", "--format", "text", str(a), str(b)]], args.runs)
        verifies = _time([[kdump, "verify", str(a)], [kdump, "verify", str(b)]], args.runs)
        both = _time([[kdump, "verify", str(a), str(b)]], args.runs)
        print(
            f"{shape.upper():<6} {size_mb:6.0f} {compare:10.3f} {verifies:13.3f} {compare / verifies:6.2f} "
            f"{both:13.3f} {compare / both:6.2f}"
        )


if __name__ == "__main__":
    main()
