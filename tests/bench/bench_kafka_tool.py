"""kdump against Kafka's own `kafka-dump-log` of a real release, on the same big segments.

Usage:
    python tests/bench/make_segments.py DIR                 # once: DIR/{a,b,c}-0
    python tests/bench/bench_kafka_tool.py DIR [--release 4.4.0] [--runs 3] [--shapes a,c]
        [--modes shallow,deep,data] [--before OLD]

Kafka's tool runs as `kafka-dump-log.sh` runs it (`kafka-run-class.sh`'s JVM options: the server
VM, G1, a 256 MiB heap unless KAFKA_HEAP_OPTS says otherwise) from the release's jars, fetched by
tests/brokers/releases.py into the cache outside the checkout. Each pair runs interleaved, whole
process, output to /dev/null, after one warm-up of each side (bench_speed.pair): kdump's time over
Kafka's, run by run, and the median of those ratios.

- shallow: `--files SEG` on both sides (batch lines);
- deep: `--deep-iteration --files SEG` on both sides;
- deep with payloads (`data`): `--deep-iteration --print-data-log --files SEG` on both sides.

The target (issue 33) is a median ratio of at most 0.25 in every mode on A and C. With `--before OLD`
(a copy of the code before a change, `git archive HEAD~1 kdump | tar -x -C OLD` plus its compiled
modules), every round also runs kdump's side with that code, and now/before is printed. The load
average printed with each line is the machine's at its end: the JVM's time varies with it.

kdump takes Kafka's flags and prints Kafka's output line for line (tests/cli/test_kafka_flags*.py), so
each pair writes the same bytes; a kdump without them runs `kdump dump [--records] SEG` instead.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_speed import pair  # noqa: E402
from brokers.releases import fetch  # noqa: E402
from brokers.tools import dump_log_class  # noqa: E402


def kafka_tool(version: str) -> list[str]:
    """The command line of the release's kafka-dump-log, with its script's JVM options."""
    release = fetch(version)
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
    heap = os.environ.get("KAFKA_HEAP_OPTS", "-Xmx256M").split()
    return [
        java,
        *heap,
        "-server",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-XX:InitiatingHeapOccupancyPercent=35",
        "-XX:+ExplicitGCInvokesConcurrent",
        "-Djava.awt.headless=true",
        "-cp",
        release.classpath,
        dump_log_class(release),
    ]


def _kdump_has(kdump: str, option: str) -> bool:
    help_text = subprocess.run([kdump, "dump", "--help"], capture_output=True, text=True, check=False).stdout
    return option in help_text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", type=Path)
    ap.add_argument("--release", default="4.4.0")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shapes", default="a,c")
    ap.add_argument("--modes", default="shallow,deep,data", help="of shallow, deep, data")
    ap.add_argument("--before", type=Path, help="a copy of the code before a change (its root)")
    args = ap.parse_args()
    modes = {"shallow": "shallow", "deep": "deep", "data": "deep with payloads"}
    wanted = {modes[m] for m in args.modes.split(",")}
    kdump = str(Path(sys.executable).with_name("kdump"))
    kafka = kafka_tool(args.release)
    same = _kdump_has(kdump, "--deep-iteration")
    print(f"Kafka {args.release} kafka-dump-log vs kdump; A = kdump, B = Kafka's tool", flush=True)
    for shape in args.shapes.split(","):
        log = str(args.root / f"{shape}-0" / "00000000000000000000.log")
        flags = {
            "shallow": [],
            "deep": ["--deep-iteration"],
            "deep with payloads": ["--deep-iteration", "--print-data-log"],
        }
        cases = {
            name: (
                [kdump, "dump", *f, "--files", log]
                if same
                else [kdump, "dump", *(["--records"] if f else []), log],
                [*kafka, *f, "--files", log],
            )
            for name, f in flags.items()
        }
        for name, (a, b) in cases.items():
            if name in wanted:
                pair(f"{shape.upper()}: {name}", a, b, args.runs, before=args.before)


if __name__ == "__main__":
    main()
