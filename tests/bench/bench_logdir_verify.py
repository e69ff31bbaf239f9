"""`kdump verify` of a whole broker log dir against `cat` of all its files, paired and interleaved.

Usage:
    python tests/bench/make_logdir.py DIR [--partitions 10000] [--size-kb 260]   # once
    python tests/bench/bench_logdir_verify.py DIR/kafka-logs [--runs 7] [--deep] [--jobs1]
        [--before OLD] [--cat-only-once]

Each round runs, in turn (A B A B ...; the order of the kdump sides rotates round by round):
`find DIR -type f -print0 | xargs -0 cat > /dev/null` (every file's bytes, the yardstick), `kdump
verify DIR` with its default options, and where asked `kdump verify --deep DIR`, `kdump verify
--jobs 1 DIR`, and the same commands with the code under OLD (`--before OLD`: a copy of an older
`kdump/` with its compiled modules, e.g. `git archive main kdump | tar -x -C OLD` plus the `.so`
files; run through PYTHONPATH). Whole process, output to /dev/null, one warm-up of each first (page
cache warm). Prints the load (partitions, segments, batches, log bytes, files; from verify's own
total line), then per command: the median wall time, median CPU time (user + system of the process
and its workers), median paired ratio to `cat` (wall), peak RSS (the largest process), and the cost
per partition (wall and CPU, over the partitions). Also the load average: other jobs on the same
cores hit both sides of a pair alike, so the ratios are the figures to read; never pass or fail.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of one run. On Linux, `wait4` reports the
    process and the children it waited for (its workers) together: CPU summed, RSS the largest."""
    start = time.perf_counter()
    with open(os.devnull, "wb") as null:
        # Run from OLD itself for its code: `python -m` puts the working directory first on the path.
        cwd = env.get("PYTHONPATH") if env is not None else None
        proc = subprocess.Popen(argv, stdout=null, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        _pid, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{shlex.join(argv)} failed: exit {os.waitstatus_to_exitcode(status)}")
    return took, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def _load(kdump: str, logdir: Path) -> tuple[int, str]:
    """Partitions, and verify's total line (the load: segments, batches, records, bytes)."""
    out = subprocess.run([kdump, "verify", str(logdir)], capture_output=True, text=True, check=False).stdout
    total = next((line for line in out.splitlines() if line.startswith("Total:")), "")
    m = re.search(r"(\d+) partitions", total)
    return (int(m.group(1)) if m else 0), total


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("logdir", type=Path)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--deep", action="store_true", help="also `verify --deep`")
    parser.add_argument("--jobs1", action="store_true", help="also `verify --jobs 1`")
    parser.add_argument("--before", type=Path, help="also run the code under this directory (OLD/kdump)")
    args = parser.parse_args()

    kdump = str(Path(sys.executable).with_name("kdump"))
    python = sys.executable
    partitions, total = _load(kdump, args.logdir)
    files = sum(len(f) for _, _, f in os.walk(args.logdir))
    print(f"load: {args.logdir}: {files} files; {total}")

    sides: dict[str, tuple[list[str], dict[str, str] | None]] = {
        "cat": (
            ["sh", "-c", f"find {shlex.quote(str(args.logdir))} -type f -print0 | xargs -0 cat > /dev/null"],
            None,
        )
    }
    variants = [("verify", [])]
    if args.deep:
        variants.append(("verify --deep", ["--deep"]))
    if args.jobs1:
        variants.append(("verify --jobs 1", ["--jobs", "1"]))
    for name, extra in variants:
        sides[name] = ([kdump, "verify", *extra, str(args.logdir)], None)
        if args.before is not None:
            env = {**os.environ, "PYTHONPATH": str(args.before.resolve())}
            sides[f"{name} (before)"] = ([python, "-m", "kdump", "verify", *extra, str(args.logdir)], env)

    for argv, env in sides.values():  # warm-up: page cache, bytecode
        _timed(argv, env)
    walls: dict[str, list[float]] = {k: [] for k in sides}
    cpus: dict[str, list[float]] = {k: [] for k in sides}
    peaks: dict[str, float] = {k: 0.0 for k in sides}
    ratios: dict[str, list[float]] = {k: [] for k in sides if k != "cat"}
    names = [k for k in sides if k != "cat"]
    for r in range(args.runs):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            cat_wall, cat_cpu, _ = _timed(*sides["cat"])
            walls["cat"].append(cat_wall)
            cpus["cat"].append(cat_cpu)
            wall, cpu, peak = _timed(*sides[name])
            peaks[name] = max(peaks[name], peak)
            walls[name].append(wall)
            cpus[name].append(cpu)
            ratios[name].append(wall / cat_wall)
        print(f"round {r + 1}/{args.runs} done, load average {os.getloadavg()[0]:.1f}", flush=True)

    med = statistics.median
    print(
        f"\n{'command':<26} {'wall':>8} {'CPU':>8} {'x cat':>7} {'pairs':>13} {'peak MiB':>9} {'ms/part wall':>13} {'ms/part CPU':>12}"
    )
    print(f"{'cat (every file)':<26} {med(walls['cat']):>7.3f}s {med(cpus['cat']):>7.3f}s")
    for name in names:
        lo, hi = min(ratios[name]), max(ratios[name])
        per_wall = med(walls[name]) / partitions * 1000 if partitions else 0.0
        per_cpu = med(cpus[name]) / partitions * 1000 if partitions else 0.0
        print(
            f"{name:<26} {med(walls[name]):>7.3f}s {med(cpus[name]):>7.3f}s {med(ratios[name]):>6.2f}x"
            f" {lo:>5.2f}-{hi:<5.2f}x {peaks[name]:>9.0f} {per_wall:>13.3f} {per_cpu:>12.3f}"
        )
    print(f"load average now {os.getloadavg()[0]:.1f}; {args.runs} rounds, medians; ratios paired run by run")


if __name__ == "__main__":
    main()
