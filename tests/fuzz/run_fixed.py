"""Run fuzz targets for a fixed number of executions each (the sanitizer step of CI, .ci/sanitizers).

    python tests/fuzz/run_fixed.py --examples 400 compiled_records compiled_walk ...

Each target runs every seed, then `--examples` mutated inputs from hypothesis with a fixed seed (the
same inputs every run), and prints one line per target: executions and seconds. Exit 1 when a
target's contract breaks (the input is written to --crashes). A sanitizer report aborts the process
(-fno-sanitize-recover), which the caller sees as a failed run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from fuzz_targets import TARGETS, default_corpus_root, fuzz_strategy, seed_inputs  # noqa: E402


def run_target(name: str, examples: int, root: Path | None) -> int:
    """Seeds, then `examples` fixed-seed mutations; the number of executions."""
    from hypothesis import HealthCheck, given, seed, settings

    target = TARGETS[name]
    seeds = seed_inputs(name, root)
    for s in seeds:
        target.fn(s)
    count = [len(seeds)]

    @seed(31)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(fuzz_strategy(seeds))
    def run(data: bytes) -> None:
        count[0] += 1
        target.fn(data)

    run()
    return count[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("targets", nargs="+", help="target names (fuzz_targets.TARGETS)")
    parser.add_argument("--examples", type=int, default=300, help="mutated inputs per target")
    args = parser.parse_args(argv)
    unknown = [t for t in args.targets if t not in TARGETS]
    if unknown:
        parser.error(f"unknown targets: {', '.join(unknown)}")
    root = default_corpus_root()
    total = 0
    for name in args.targets:
        start = time.monotonic()
        n = run_target(name, args.examples, root)
        total += n
        print(f"{name}: {n} executions in {time.monotonic() - start:.1f} s", flush=True)
    print(f"all targets: {total} executions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
