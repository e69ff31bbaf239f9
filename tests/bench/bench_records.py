"""Record-level speed: the compiled record path against the pure-Python reference and a peer.

Usage:
    python tests/bench/make_segments.py DIR                  # once: DIR/c-0 is the C shape
    python tests/bench/bench_records.py DIR/c-0/00000000000000000000.log [--runs 5]
        [--peer "python peer.py {log}"]

Whole process, output to /dev/null: `kdump dump --records --format json` with the compiled path
(all cores, and --jobs 1), with KDUMP_PURE_PYTHON=1, and the peer command if given (for instance
a script reading the segment with another library's record reader and printing JSON). The runs
are interleaved (A, B, C, A, B, C, ...) so a machine shared with other work loads every command
alike, and the ratios to the peer are paired run by run; medians are printed. CPU is user + system
time of the process and its workers. Peak RSS is the largest single process's (the main process
or a worker), over all runs of the command.

In process, one core: records/s of decoding (decompressed payloads to Record tuples), of rendering
(payloads to JSON lines) and of the whole deep scan (checksums, decompression and decoding).
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kdump.formats import fast_records
from kdump.formats.batch import BatchHeader
from kdump.formats.records import Record, decode_v2_records
from kdump.render.fast_lines import LineRenderer, payload_of
from kdump.scan.log_scanner import scan_log
from kdump.scan.source import open_buffer


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (children included) and peak RSS in MiB of one run."""
    start = time.perf_counter()
    with open(os.devnull, "wb") as null:
        proc = subprocess.Popen(cmd, stdout=null, stderr=subprocess.DEVNULL, env=env)
        # wait4's usage covers the process and the workers it waited for; maxrss is the largest one.
        _pid, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def whole_process(log: Path, runs: int, peer: str | None) -> None:
    """Interleaved runs of every command; medians and paired ratios to the peer."""
    kdump = [sys.executable, "-m", "kdump", "dump", "--records", "--format", "json"]
    base = dict(os.environ)
    pure = {**base, "KDUMP_PURE_PYTHON": "1"}
    commands: dict[str, tuple[list[str], dict[str, str]]] = {
        "compiled": ([*kdump, str(log)], base),
        "compiled --jobs 1": ([*kdump, "--jobs", "1", str(log)], base),
        "reference": ([*kdump, str(log)], pure),
    }
    if peer:
        commands["peer"] = (shlex.split(peer.format(log=log)), base)
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in commands}
    for cmd, env in commands.values():
        _run(cmd, env)  # warm-up: page cache, imports
    for _ in range(runs):
        for name, (cmd, env) in commands.items():
            results[name].append(_run(cmd, env))
    print(f"{'command':<20} {'wall s':>8} {'cpu s':>8} {'peak MiB':>9} {'wall/peer':>10} {'cpu/peer':>9}")
    for name, rs in results.items():
        wall = statistics.median(r[0] for r in rs)
        cpu = statistics.median(r[1] for r in rs)
        peak = max(r[2] for r in rs)
        ratios = ""
        if "peer" in results and name != "peer":
            pairs = list(zip(rs, results["peer"], strict=True))
            wr = statistics.median(a[0] / b[0] for a, b in pairs)
            cr = statistics.median(a[1] / b[1] for a, b in pairs)
            ratios = f"{wr:10.3f} {cr:9.3f}"
        print(f"{name:<20} {wall:8.2f} {cpu:8.2f} {peak:9.0f} {ratios}")


def _each(fn: Callable[[Any, BatchHeader], object], pairs: list[tuple[bytes, BatchHeader]]) -> None:
    for p, h in pairs:
        fn(p, h)


def in_process(log: Path) -> None:
    """Records per CPU second, one core."""
    with open_buffer(log) as buf:
        headers = [ev for ev in scan_log(buf) if type(ev) is BatchHeader]
        pairs = [(bytes(p), h) for h in headers if (p := payload_of(buf, h)) is not None]
        count = sum(h.count or 0 for _, h in pairs)

        def rate(label: str, fn: Callable[[], object]) -> None:
            start = time.process_time()
            fn()
            took = time.process_time() - start
            print(f"{label:<44} {count / took / 1e6:6.2f} M records/s ({took:.2f} s CPU)")

        rate(
            "decode, reference (decode_v2_records)",
            lambda: [decode_v2_records(p, h) for p, h in pairs],
        )
        if fast_records.compiled is None:
            print("the compiled record path is not built: nothing more to compare")
            return
        rate(
            "decode, compiled (Record tuples)",
            lambda: _each(fast_records.decode_v2, pairs),
        )
        renderer = LineRenderer('"x"', "json", "utf8")
        rate(
            "decompress + render JSON lines, compiled",
            lambda: _each(lambda _p, h: renderer.render(buf, h), pairs),
        )

        def deep() -> None:
            for ev in scan_log(buf, deep=True):
                if type(ev) is Record:
                    pass

        rate("deep scan (crc, decompress, decode), compiled", deep)
        saved, fast_records.compiled = fast_records.compiled, None
        try:
            rate("deep scan, reference", deep)
        finally:
            fast_records.compiled = saved


def main() -> None:
    """Parse arguments; run both measurements."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("log", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--peer", help='a command to compare with, "{log}" standing for the segment')
    parser.add_argument("--in-process-only", action="store_true")
    args = parser.parse_args()
    # Whole processes first: a child's peak RSS would count what this process holds when it forks.
    if not args.in_process_only:
        whole_process(args.log, args.runs, args.peer)
    in_process(args.log)


if __name__ == "__main__":
    main()
