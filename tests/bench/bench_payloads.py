"""Payload decoding speed: Avro values of 10 fields decoded in a whole-process dump to JSON Lines,
and the undecoded record path against another checkout's (main's) on the same segment.

Usage:
    python tests/bench/bench_payloads.py make DIR [--records 500000]
    python tests/bench/bench_payloads.py run DIR [--runs 5] [--other /path/to/main/.venv/bin/python]

`make` writes DIR/logdir/orders-0 (lz4 batches of 500 Avro values in the wire format, schema id 1,
int32 keys) and DIR/logdir/_schemas-0 holding the schema, as Confluent's registry writes it.
`run` times, interleaved (A, B, C, A, B, C, ...), whole processes with output to /dev/null:
- `dump --format json --value-type registry --key-type int32 --jobs 1` (decoded, one core);
- `dump --records --format json --jobs 1` (undecoded) with this checkout, and with `--other`'s Python
  (a checkout of main: its `python -m kdump`), paired run by run.
Records/s are per wall second of the one-core run and per CPU second (user + system, workers
included); medians of the runs, and the median of the paired ratios this/other.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SCHEMA = {
    "type": "record",
    "name": "Order",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "qty", "type": "int"},
        {"name": "sku", "type": "string"},
        {"name": "paid", "type": "boolean"},
        {"name": "ts", "type": "long"},
        {"name": "note", "type": ["null", "string"]},
        {"name": "region", "type": "string"},
        {"name": "score", "type": "float"},
    ],
}


def make(root: Path, n: int) -> None:
    import fastavro

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from builders import SegmentBuilder
    from payload_producer import schema_value, schemas_key

    from kdump.formats.constants import Codec
    from kdump.formats.records import NewRecord

    parsed = fastavro.parse_schema(SCHEMA)
    seg = SegmentBuilder()
    batch: list[NewRecord] = []
    for i in range(n):
        b = io.BytesIO()
        fastavro.schemaless_writer(
            b,
            parsed,
            {
                "id": 1_000_000 + i,
                "customer": f"customer-{i % 5000:05d}",
                "amount": i * 0.37,
                "qty": i % 13,
                "sku": f"SKU-{i % 977}",
                "paid": i % 2 == 0,
                "ts": 1_700_000_000_000 + i,
                "note": None if i % 4 else "gift",
                "region": ("eu-west-1", "us-east-1", "ap-south-1")[i % 3],
                "score": (i % 100) / 8,
            },
        )
        value = b"\x00\x00\x00\x00\x01" + b.getvalue()
        batch.append(NewRecord(i.to_bytes(4, "big"), value, 1_700_000_000_000 + i, ()))
        if len(batch) == 500:
            seg.add_v2(batch, codec=Codec.LZ4)
            batch = []
    if batch:
        seg.add_v2(batch, codec=Codec.LZ4)
    logdir = root / "logdir"
    seg.write(logdir / "orders-0")
    schemas = SegmentBuilder()
    key = schemas_key("SCHEMA", "orders-value", 1)
    value = schema_value("orders-value", 1, 1, "AVRO", [], json.dumps(SCHEMA), False)
    schemas.add_v2([NewRecord(key, value, 1_700_000_000_000, ())])
    schemas.write(logdir / "_schemas-0")
    print(f"wrote {n} records to {logdir}")


def _run(cmd: list[str]) -> tuple[float, float]:
    start = time.perf_counter()
    with open(os.devnull, "wb") as null:
        proc = subprocess.Popen(cmd, stdout=null, stderr=subprocess.DEVNULL)
        _pid, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise subprocess.CalledProcessError(os.waitstatus_to_exitcode(status), cmd)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def run(root: Path, runs: int, other: str | None) -> None:
    part = str(root / "logdir" / "orders-0")
    out = subprocess.run(
        [sys.executable, "-m", "kdump", "dump", "--format", "json", part],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    n = sum(json.loads(line)["count"] for line in out.splitlines() if '"type":"batch"' in line)
    me = [sys.executable, "-m", "kdump", "dump"]
    commands = {
        "decoded (avro, jobs 1)": [
            *me,
            "--format",
            "json",
            "--value-type",
            "registry",
            "--key-type",
            "int32",
            "--jobs",
            "1",
            part,
        ],
        "undecoded (jobs 1)": [*me, "--records", "--format", "json", "--jobs", "1", part],
    }
    if other:
        commands["undecoded, other (jobs 1)"] = [
            other,
            "-m",
            "kdump",
            "dump",
            "--records",
            "--format",
            "json",
            "--jobs",
            "1",
            part,
        ]
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            times[name].append(_run(cmd))
    print(f"{n} records; load {os.getloadavg()[0]:.1f}; medians of {runs} interleaved runs")
    for name, got in times.items():
        wall = statistics.median(w for w, _ in got)
        cpu = statistics.median(c for _, c in got)
        print(
            f"  {name}: wall {wall:.2f} s ({n / wall:,.0f} records/s), cpu {cpu:.2f} s ({n / cpu:,.0f} records/s per CPU second)"
        )
    if other:
        a, b = times["undecoded (jobs 1)"], times["undecoded, other (jobs 1)"]
        wall_ratio = statistics.median(x[0] / y[0] for x, y in zip(a, b, strict=True))
        cpu_ratio = statistics.median(x[1] / y[1] for x, y in zip(a, b, strict=True))
        print(f"  undecoded this/other, paired: wall {wall_ratio:.3f}, cpu {cpu_ratio:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("dir", type=Path)
    m.add_argument("--records", type=int, default=500_000)
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument("--runs", type=int, default=5)
    r.add_argument("--other")
    args = parser.parse_args()
    if args.cmd == "make":
        make(args.dir, args.records)
    else:
        run(args.dir, args.runs, args.other)


if __name__ == "__main__":
    main()
