"""The speed targets of the compiled batch walk, each command paired with its yardstick in one run.

Usage:
    python tests/bench/make_segments.py DIR [--full-size]  # once: DIR/{a,b,c}-0 (and {a,b,c}-1g-0)
    python tests/bench/bench_speed.py DIR [--runs 7] [--shapes a,c] [--only NAME] [--full-size]

--full-size runs the same pairs on the 1 GiB segments (Kafka's default segment.bytes) of the same
shapes: on one 135 MB segment the interpreter's start is most of a shallow verify's time.

Every pair runs interleaved (A, B, A, B, ...) after one warm-up of each, whole process, output to
/dev/null unless said; the ratio is taken run by run and its median printed with the medians of
each side, their peak RSS and the load average:

- shallow: `kdump verify PART` against `cat SEGMENT` (target <= 2);
- deep: `kdump verify --deep PART` against the aiokafka + json peer's dump (tests/bench/
  peer_aiokafka.py; target <= 0.15);
- salvage: `kdump salvage --out TMP PART` of the undamaged segment against `kdump dump --records
  --format json SEGMENT` written to a file in the same temporary directory (target <= 2, and peak
  < 100 MiB);
- reindex: `kdump reindex --rebuild-all PART` (its plan) against `kdump verify PART` (target <= 1.5).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _run(argv: list[str], before: list[str] | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one run (`before` runs first, untimed)."""
    if before:
        subprocess.run(before, check=False)
    start = time.perf_counter()
    with open(os.devnull, "wb") as null, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=null, stderr=err)
        _pid, status, usage = os.wait4(proc.pid, 0)
        took = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            # A side that fails (a peer's library missing) would make a meaningless ratio.
            err.seek(0)
            sys.exit(f"{' '.join(argv)} failed: {err.read().decode(errors='replace')[-500:]}")
    return took, usage.ru_maxrss / 1024


def pair(name: str, a: list[str], b: list[str], runs: int, setup: list[str] | None = None) -> None:
    _run(a, setup)
    _run(b, setup)
    wa, wb, pa, pb = [], [], 0.0, 0.0
    for _ in range(runs):
        t, p = _run(a, setup)
        wa.append(t)
        pa = max(pa, p)
        t, p = _run(b, setup)
        wb.append(t)
        pb = max(pb, p)
    ratios = [x / y for x, y in zip(wa, wb, strict=True)]
    print(
        f"{name:<24} A {statistics.median(wa):7.3f} s ({pa:5.0f} MiB)  B {statistics.median(wb):7.3f} s "
        f"({pb:5.0f} MiB)  A/B median {statistics.median(ratios):.3f} "
        f"[{min(ratios):.3f}..{max(ratios):.3f}] of {runs}, load {os.getloadavg()[0]:.1f}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--shapes", default="a,c")
    ap.add_argument("--only", default="")
    ap.add_argument("--full-size", action="store_true", help="the 1 GiB segments, DIR/<shape>-1g-0")
    args = ap.parse_args()
    kdump = str(Path(sys.executable).with_name("kdump"))
    tmp = Path(tempfile.mkdtemp(prefix="kdump-speed-"))
    try:
        for shape in args.shapes.split(","):
            part = args.root / (f"{shape}-1g-0" if args.full_size else f"{shape}-0")
            log = str(part / "00000000000000000000.log")
            out = tmp / "salvage"
            cases = {
                "shallow": ([kdump, "verify", str(part)], ["cat", log], None, args.runs),
                "deep": (
                    [kdump, "verify", "--deep", str(part)],
                    [sys.executable, str(HERE / "peer_aiokafka.py"), log],
                    None,
                    max(3, args.runs // 2),
                ),
                "salvage": (
                    [kdump, "salvage", "--out", str(out), str(part)],
                    [
                        "sh",
                        "-c",
                        'exec "$0" dump --records --format json "$1" > "$2"',
                        kdump,
                        log,
                        str(tmp / "dump.jsonl"),
                    ],
                    ["rm", "-rf", str(out), str(tmp / "dump.jsonl")],
                    max(3, args.runs // 2),
                ),
                "reindex": (
                    [kdump, "reindex", "--rebuild-all", str(part)],
                    [kdump, "verify", str(part)],
                    None,
                    args.runs,
                ),
            }
            for name, (a, b, setup, runs) in cases.items():
                if not args.only or name in args.only.split(","):
                    pair(f"{shape.upper()}{' 1 GiB' if args.full_size else ''}: {name}", a, b, runs, setup)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
