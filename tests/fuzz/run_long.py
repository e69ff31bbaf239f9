"""Long fuzzing runs of kdump's scanner and decoders: hours, coverage-guided when atheris is installed.

The targets are those of `fuzz_targets.py` (the scanner in every mode, the whole dump pipeline, every file
decoder, the internal-topic decoders, the record decoders and the codecs), the same ones CI runs for about a
minute with hypothesis (`test_fuzz_short.py`). Here they run for as long as you like.

Usage (from the repository root, in the dev virtualenv)::

    python tests/fuzz/run_long.py --hours 4                        # every target, the time split evenly
    python tests/fuzz/run_long.py --hours 4 --target scan_log      # one target (repeat or comma-separate)
    python tests/fuzz/run_long.py --hours 8 --jobs 4               # four targets at a time
    python tests/fuzz/run_long.py --minutes 20 --engine hypothesis # without atheris
    python tests/fuzz/run_long.py --list                           # the targets
    python tests/fuzz/run_long.py --replay tests/fuzz/crashes/scan_log/crash-<sha1>

Engines: `atheris` (libFuzzer, coverage-guided over the `kdump` package; `pip install -e '.[fuzz]'`)
is used when it imports, else `hypothesis` (random mutations of the same seeds, in rounds of
1,000 examples with fresh randomness until the time is up; not coverage-guided). `--engine` forces one.

Each target runs in its own process, seeded with real inputs (`fuzz_targets.seed_inputs`: fragments of the
Kafka 3.8.0 corpus of every magic and codec, real index/snapshot/checkpoint files, internal-topic records,
built segments). atheris keeps the corpus it grows in `--workdir/<target>/` (default
`~/.cache/kdump-fuzz`), so a later run continues where the last one stopped. Under the fuzzer the
decompression bound is lowered from 1 GiB to 64 MiB (`fuzz_targets.limit_decompression`), so that a
decompression bomb shows as kdump's finding instead of exhausting the fuzzer's 2 GiB RSS limit.

Crashes (an exception out of a target: kdump raised where it must not, or a contract assertion failed)
are written to `tests/fuzz/crashes/<target>/crash-<sha1>` (libFuzzer also writes `timeout-<sha1>` for an
input slower than `--timeout` seconds and `oom-<sha1>` for one that needs more than `--rss-limit-mb`).
A target whose process crashed is restarted while time remains (at most `--max-restarts` times), as libFuzzer
stops at the first crash. The summary at the end lists every new file.

Turning a crash into a regression test:

1. Reproduce it: `python tests/fuzz/run_long.py --replay tests/fuzz/crashes/<target>/crash-<sha1>` prints the
   traceback (the target is the directory's name; `--target` overrides it).
2. Fix kdump (with a comment naming the input's shape), and re-run the replay until it passes.
3. Keep the input as a regression test: a small one goes into `REGRESSIONS` in `test_fuzz_short.py` as a named
   hex literal (`(name, target, bytes.fromhex(...))`); a large one is moved, renamed after what it does, to
   `tests/fuzz/regressions/<target>/<what-it-does>`. `test_fuzz_short.py` replays both, and also every file
   still lying in `tests/fuzz/crashes/`, so an unfixed crash keeps failing the test suite until it is handled.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
CRASHES = HERE / "crashes"
REGRESSIONS = HERE / "regressions"
DEFAULT_WORKDIR = Path(os.environ.get("KDUMP_FUZZ_WORKDIR", Path.home() / ".cache" / "kdump-fuzz"))
# The bound decompress() enforces under the fuzzer (kdump's own is 1 GiB; see the module docstring).
FUZZ_DECOMPRESSION_BOUND = 64 << 20

sys.path[:0] = [str(HERE), str(HERE.parent)]


def _atheris_available() -> bool:
    try:
        import atheris  # noqa: F401
    except ImportError:
        return False
    return True


def _write_crash(target: str, data: bytes, crashes: Path, prefix: str = "crash") -> Path:
    folder = crashes / target
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{prefix}-{hashlib.sha1(data).hexdigest()}"
    path.write_bytes(data)
    return path


# --- workers (one target per process) -------------------------------------------------------------


def _worker_atheris(args: argparse.Namespace) -> int:
    import atheris

    with atheris.instrument_imports(include=["kdump"]):
        import kdump.formats.internal
        import kdump.ops.dump.internal
        import kdump.ops.dump.state_files
        import kdump.render.jsonl
        import kdump.render.rich_tty
        import kdump.render.text
        import kdump.scan  # noqa: F401
    import fuzz_targets

    fuzz_targets.limit_decompression(FUZZ_DECOMPRESSION_BOUND)
    target = fuzz_targets.TARGETS[args.worker]
    corpus_dir = Path(args.workdir) / args.worker
    corpus_dir.mkdir(parents=True, exist_ok=True)
    for seed in fuzz_targets.seed_inputs(args.worker, fuzz_targets.default_corpus_root()):
        path = corpus_dir / f"seed-{hashlib.sha1(seed).hexdigest()}"
        if not path.exists():
            path.write_bytes(seed)
    artifacts = Path(args.crashes) / args.worker
    artifacts.mkdir(parents=True, exist_ok=True)
    libfuzzer_args = [
        sys.argv[0],
        f"-max_total_time={max(int(args.seconds), 1)}",
        f"-artifact_prefix={artifacts}/",
        f"-timeout={args.timeout}",
        f"-rss_limit_mb={args.rss_limit_mb}",
        f"-max_len={args.max_len}",
        "-print_final_stats=1",
        str(corpus_dir),
    ]
    atheris.Setup(libfuzzer_args, target.fn)
    atheris.Fuzz()
    return 0


def _worker_hypothesis(args: argparse.Namespace) -> int:
    import fuzz_targets
    from hypothesis import HealthCheck, Phase, given, settings

    fuzz_targets.limit_decompression(FUZZ_DECOMPRESSION_BOUND)
    target = fuzz_targets.TARGETS[args.worker]
    seeds = fuzz_targets.seed_inputs(args.worker, fuzz_targets.default_corpus_root())
    deadline = time.monotonic() + args.seconds
    crashes = 0
    seen: set[bytes] = set()
    runs = 0
    last: list[bytes] = [b""]

    def one(data: bytes) -> None:
        last[0] = data
        target.fn(data)

    while time.monotonic() < deadline:
        runs += 1
        # Short rounds (hypothesis has no time limit of its own), each from fresh randomness; no example
        # database, so a round does not start by replaying the last crash.
        test = settings(
            max_examples=1_000,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
            phases=[Phase.generate, Phase.shrink],
        )(given(fuzz_targets.fuzz_strategy(seeds))(one))
        try:
            test()
        except Exception:
            # After shrinking, hypothesis replays the minimal failing example last: that is `last[0]`.
            if last[0] not in seen:
                seen.add(last[0])
                path = _write_crash(args.worker, last[0], Path(args.crashes))
                print(f"{args.worker}: crash written to {path}\n{traceback.format_exc()}", file=sys.stderr)
                crashes += 1
    print(f"{args.worker}: {runs} hypothesis rounds, {crashes} crashes", file=sys.stderr)
    return 1 if crashes else 0


# --- the driver -----------------------------------------------------------------------------------


def _targets(args: argparse.Namespace) -> list[str]:
    import fuzz_targets

    names: list[str] = []
    for item in args.target or []:
        names += [n for n in item.split(",") if n]
    unknown = [n for n in names if n not in fuzz_targets.TARGETS]
    if unknown:
        raise SystemExit(f"unknown target(s) {', '.join(unknown)}; see --list")
    return names or list(fuzz_targets.TARGETS)


def _crash_files(crashes: Path) -> set[Path]:
    return {p for p in crashes.glob("*/*") if p.is_file()} if crashes.is_dir() else set()


def _drive(args: argparse.Namespace) -> int:
    engine = args.engine
    if engine == "auto":
        engine = "atheris" if _atheris_available() else "hypothesis"
    names = _targets(args)
    total = args.seconds + 60 * args.minutes + 3600 * args.hours
    if total <= 0:
        raise SystemExit("give a duration: --hours, --minutes or --seconds")
    jobs = max(1, min(args.jobs, len(names)))
    per_target = total * jobs / len(names)
    crashes = Path(args.crashes)
    before = _crash_files(crashes)
    print(
        f"fuzzing {len(names)} target(s) with {engine} for {total:.0f} s ({per_target:.0f} s each, {jobs} at a time)",
        flush=True,
    )
    pending = list(names)
    running: dict[str, tuple[subprocess.Popen[bytes], float, int]] = {}
    failed: dict[str, int] = {}

    def start(name: str, seconds: float, restarts: int) -> None:
        cmd = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--worker",
            name,
            "--engine",
            engine,
            "--seconds",
            str(max(seconds, 1.0)),
            "--workdir",
            str(args.workdir),
            "--crashes",
            str(crashes),
            "--timeout",
            str(args.timeout),
            "--rss-limit-mb",
            str(args.rss_limit_mb),
            "--max-len",
            str(args.max_len),
        ]
        out = None if args.verbose else subprocess.DEVNULL
        running[name] = (subprocess.Popen(cmd, stdout=out, stderr=out), time.monotonic() + seconds, restarts)

    while pending or running:
        while pending and len(running) < jobs:
            start(pending.pop(0), per_target, 0)
        time.sleep(0.5)
        for name, (proc, ends, restarts) in list(running.items()):
            rc = proc.poll()
            if rc is None:
                continue
            del running[name]
            left = ends - time.monotonic()
            if rc != 0:
                failed[name] = failed.get(name, 0) + 1
                print(f"{name}: worker exited with {rc} (a crash, see {crashes / name})", flush=True)
                if left > 5 and restarts < args.max_restarts:
                    start(name, left, restarts + 1)
                    continue
            print(f"{name}: done", flush=True)
    new = sorted(_crash_files(crashes) - before)
    if new:
        print(f"{len(new)} new crash file(s):")
        for p in new:
            print(f"  {p}")
        print("reproduce with: python tests/fuzz/run_long.py --replay FILE")
        return 1
    print("no crashes")
    return 0


def _replay(args: argparse.Namespace) -> int:
    import fuzz_targets

    path = Path(args.replay)
    name = (args.target or [path.parent.name])[0]
    if name not in fuzz_targets.TARGETS:
        raise SystemExit(f"cannot tell the target of {path}: pass --target")
    try:
        fuzz_targets.TARGETS[name].fn(path.read_bytes())
    except Exception:
        traceback.print_exc()
        return 1
    print(f"{path}: {name} passes")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=float, default=0)
    parser.add_argument("--minutes", type=float, default=0)
    parser.add_argument("--seconds", type=float, default=0)
    parser.add_argument("--target", action="append", help="target name(s), comma-separated; default all")
    parser.add_argument("--engine", choices=("auto", "atheris", "hypothesis"), default="auto")
    parser.add_argument("--jobs", type=int, default=1, help="targets fuzzed at the same time")
    parser.add_argument("--workdir", default=str(DEFAULT_WORKDIR), help="where atheris keeps its corpora")
    parser.add_argument("--crashes", default=str(CRASHES), help="where crashing inputs are written")
    parser.add_argument("--timeout", type=int, default=25, help="seconds before an input counts as a hang")
    parser.add_argument("--rss-limit-mb", type=int, default=2048)
    parser.add_argument("--max-len", type=int, default=64 << 10, help="largest input atheris generates")
    parser.add_argument("--max-restarts", type=int, default=5)
    parser.add_argument("--verbose", action="store_true", help="show the workers' output")
    parser.add_argument("--list", action="store_true", help="list the targets and exit")
    parser.add_argument("--replay", help="run one input file through its target and show what happens")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.list:
        import fuzz_targets

        for name, t in fuzz_targets.TARGETS.items():
            print(f"{name:32s} {(t.fn.__doc__ or '').strip().splitlines()[0]}")
        return 0
    if args.replay:
        return _replay(args)
    if args.worker:
        return _worker_atheris(args) if args.engine == "atheris" else _worker_hypothesis(args)
    return _drive(args)


if __name__ == "__main__":
    sys.exit(main())
