"""The speed targets of the compiled batch walk, each command paired with its yardstick in one run.

Usage:
    python tests/bench/make_segments.py DIR [--full-size]  # once: DIR/{a,b,c}-0 (and {a,b,c}-1g-0)
    python tests/bench/bench_speed.py DIR [--runs 7] [--shapes a,c] [--only NAME] [--full-size] [--before OLD]

--full-size runs the same pairs on the 1 GiB segments (Kafka's default segment.bytes) of the same
shapes: on one 135 MB segment the interpreter's start is most of a shallow verify's time.

Every pair runs interleaved (A, B, A, B, ...) after one warm-up of each, whole process, output to
/dev/null unless said, with bytecode cached whatever PYTHONDONTWRITEBYTECODE says (`_code_env`); the ratio is taken run by run and its median printed with the medians of
each side, their peak RSS and the load average (with `--before OLD`, a copy of the code before a
change such as `git archive HEAD~1 kdump | tar -x -C OLD` with its compiled modules, every round
runs each pair with that code too, in turn first, and A's time now against before is printed). A
side that fails stops the run:

- shallow: `kdump verify PART` against `cat SEGMENT` (target <= 2; with --full-size <= 1.5, issue 33;
  CPU time is printed too: on a shared machine it separates a side's work from waiting for a core);
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


def _run(
    argv: list[str], before: list[str] | None = None, env: dict[str, str] | None = None
) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MiB) and CPU seconds (user + system, every thread) of one run (`before`
    runs first, untimed)."""
    if before:
        subprocess.run(before, check=False)
    start = time.perf_counter()
    with open(os.devnull, "wb") as null, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(argv, stdout=null, stderr=err, env=env)
        _pid, status, usage = os.wait4(proc.pid, 0)
        took = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            # A side that fails (a peer's library missing) would make a meaningless ratio.
            err.seek(0)
            sys.exit(f"{' '.join(argv)} failed: {err.read().decode(errors='replace')[-500:]}")
    return took, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


# Where every side's compiled bytecode is kept for the run (set by main).
PYCACHE: Path | None = None


def _code_env(root: Path | None) -> dict[str, str]:
    """The environment that runs the kdump under `root` (None: this one), with bytecode cached.

    A process that finds no bytecode compiles every module it imports: with PYTHONDONTWRITEBYTECODE=1
    (set in some shells and CI jobs) and a checkout without `__pycache__` that adds 50-80 ms to each
    kdump run (+0.5x `cat` of a 1 GiB segment), and a ratio measured so says more about the
    environment than about kdump. So bytecode is always written, into a prefix of this run's own
    (PYTHONPYCACHEPREFIX, one tree per source path): the warm-up run compiles, the timed ones load.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if PYCACHE is not None:
        env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    if root is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])
    return env


def pair(
    name: str,
    a: list[str],
    b: list[str],
    runs: int,
    setup: list[str] | None = None,
    before: Path | None = None,
) -> None:
    """A against B, run by run; with `before` (a copy of the code before a change), each round runs
    the pair with both codes, in turn first, and the line of each is printed."""
    codes = (
        {"now": _code_env(None)} if before is None else {"now": _code_env(None), "before": _code_env(before)}
    )
    for env in codes.values():
        _run(a, setup, env)
        _run(b, setup, env)
    wa: dict[str, list[float]] = {c: [] for c in codes}
    wb: dict[str, list[float]] = {c: [] for c in codes}
    pa = dict.fromkeys(codes, 0.0)
    pb = dict.fromkeys(codes, 0.0)
    # CPU seconds: on a loaded machine a side that uses two cores shows it here, not in its wall time.
    ca: dict[str, list[float]] = {c: [] for c in codes}
    cb: dict[str, list[float]] = {c: [] for c in codes}
    for i in range(runs):
        for code in list(codes)[:: -1 if i % 2 else 1]:
            t, p, c = _run(a, setup, codes[code])
            wa[code].append(t)
            ca[code].append(c)
            pa[code] = max(pa[code], p)
            t, p, c = _run(b, setup, codes[code])
            wb[code].append(t)
            cb[code].append(c)
            pb[code] = max(pb[code], p)
    for code in codes:
        ratios = [x / y for x, y in zip(wa[code], wb[code], strict=True)]
        label = name if before is None else f"{name} ({code})"
        print(
            f"{label:<24} A {statistics.median(wa[code]):7.3f} s ({pa[code]:5.0f} MiB)  B "
            f"{statistics.median(wb[code]):7.3f} s ({pb[code]:5.0f} MiB)  A/B median {statistics.median(ratios):.3f} "
            f"[{min(ratios):.3f}..{max(ratios):.3f}] of {runs}, load {os.getloadavg()[0]:.1f}; CPU A "
            f"{statistics.median(ca[code]):.3f} s B {statistics.median(cb[code]):.3f} s",
            flush=True,
        )
    if before is not None:
        now = [x / y for x, y in zip(wa["now"], wa["before"], strict=True)]
        print(f"{name:<24} A now/before median {statistics.median(now):.3f} [{min(now):.3f}..{max(now):.3f}]")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--shapes", default="a,c")
    ap.add_argument("--only", default="")
    ap.add_argument("--full-size", action="store_true", help="the 1 GiB segments, DIR/<shape>-1g-0")
    ap.add_argument(
        "--before",
        type=Path,
        help="a copy of the code before a change (its root): each pair runs with both, interleaved",
    )
    args = ap.parse_args()
    kdump = str(Path(sys.executable).with_name("kdump"))
    tmp = Path(tempfile.mkdtemp(prefix="kdump-speed-"))
    global PYCACHE
    PYCACHE = tmp / "pycache"
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
                    label = f"{shape.upper()}{' 1 GiB' if args.full_size else ''}: {name}"
                    pair(label, a, b, runs, setup, args.before)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
