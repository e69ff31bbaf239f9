"""Record dumps at a terminal: the default (coloured lines) against `--format text`, both with
standard output a pseudo-terminal, read as fast as it comes (a terminal emulator's own drawing
speed is left out: it is the same for both).

Usage:
    python tests/bench/make_segments.py DIR                  # once: DIR/c-0 is the C shape
    python tests/bench/bench_terminal.py DIR/c-0/00000000000000000000.log [--runs 3] [--rich 10]

The runs are interleaved (default, text, default, text, ...) so a machine shared with other work
loads both alike; the ratio is paired run by run and medians are printed. With --rich S, the
rich table (`--format rich`, what a terminal got before) also runs for S seconds, for its rate.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def at_terminal(args: list[str]) -> tuple[float, int]:
    """Seconds kdump ran with stdout a pseudo-terminal (100 columns), and the bytes it wrote."""
    primary, secondary = os.openpty()
    env = {**os.environ, "COLUMNS": "100", "PYTHONPATH": str(REPO)}
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "kdump", *args], stdout=secondary, stderr=subprocess.DEVNULL, env=env
    )
    os.close(secondary)
    got = 0
    try:
        while True:
            try:
                data = os.read(primary, 1 << 20)
            except OSError:  # the other side closed
                break
            if not data:
                break
            got += len(data)
    finally:
        proc.wait()
        os.close(primary)
    return time.monotonic() - start, got


def records_in(log: str) -> int:
    """The segment's record count (from its summary line)."""
    out = subprocess.run(
        [sys.executable, "-m", "kdump", "dump", "--format", "json", log],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    ).stdout
    import json

    summary = [json.loads(line) for line in out.splitlines() if '"type":"summary"' in line][-1]
    return int(summary["record_count"])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("log")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--rich", type=float, default=0.0, help="also run the rich table for this many seconds"
    )
    args = parser.parse_args()
    n = records_in(args.log)
    print(f"{args.log}: {n:,} records")
    default, text, ratios = [], [], []
    for _ in range(args.runs):
        d, d_bytes = at_terminal(["dump", "--records", args.log])
        t, t_bytes = at_terminal(["dump", "--records", "--format", "text", args.log])
        default.append(n / d)
        text.append(n / t)
        ratios.append(t / d)
        print(f"  default {d:6.2f} s {d_bytes / 1e6:7.1f} MB   text {t:6.2f} s {t_bytes / 1e6:7.1f} MB")
    print(f"default (coloured lines): {statistics.median(default):12,.0f} records/s (median)")
    print(f"--format text:            {statistics.median(text):12,.0f} records/s (median)")
    print(f"default / text speed:     {statistics.median(ratios):12.2f} (median of paired runs)")
    if args.rich:
        rows = _rows_shown(args.log, args.rich)
        print(f"--format rich (table):    {rows / args.rich:12,.0f} records/s")


def _rows_shown(log: str, seconds: float) -> int:
    """Records the rich table shows in `seconds` (its offsets column counted)."""
    primary, secondary = os.openpty()
    env = {**os.environ, "COLUMNS": "100", "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kdump", "dump", "--records", "--format", "rich", log],
        stdout=secondary,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    os.close(secondary)
    start, buf = time.monotonic(), bytearray()
    while time.monotonic() - start < seconds:
        try:
            data = os.read(primary, 1 << 20)
        except OSError:
            break
        if not data:
            break
        buf += data
    proc.kill()
    proc.wait()
    os.close(primary)
    return sum(
        1 for line in bytes(buf).split(b"\n") if line.startswith("│ ".encode()) and line[4:5].isdigit()
    )


if __name__ == "__main__":
    main()
