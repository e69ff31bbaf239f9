"""Benchmark `kdump seek-by-time`: whole-process time on a generated partition of many segments.

A plain script, not a pytest test:

    python tests/bench/bench_seek.py [--segments 120] [--segment-bytes 524288] [--runs 9]

It writes a partition the way a broker lays it out (20-digit names, `.index`/`.timeindex` built by
the recovery rule with index.interval.bytes = 4096, closed segments ending in their final time
index entry, the active segment's index files preallocated to 10 MiB with zero tails), then times
`kdump seek-by-time` as a user runs it: one process per answer, interpreter start included. It
prints, per query, the median wall and CPU time of several runs and what the answer cost (segments
examined, index slots read, batches framed), next to `kdump --version` (interpreter, click and
kdump's imports alone) and the in-process library time.

Bytecode is cached in a temporary PYTHONPYCACHEPREFIX, as an installed package has it; pass
`--no-bytecode-cache` to measure a process that compiles every module (PYTHONDONTWRITEBYTECODE=1).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kdump.formats.offset_index import encode_offset_index
from kdump.formats.records import NewRecord, build_v2_batch
from kdump.formats.time_index import encode_time_index
from kdump.model.partition import PartitionDir
from kdump.ops.seek.by_time import seek_partition

T0 = 1_700_000_000_000
INTERVAL_BYTES = 4096
PREALLOCATED_INDEX_BYTES = 10 * 1024 * 1024
RECORDS_PER_BATCH = 10
VALUE = b"x" * 90


def generate(path: Path, segments: int, segment_bytes: int) -> tuple[int, int]:
    """Write the partition; returns (records, total log bytes). Record i has timestamp T0 + i ms."""
    path.mkdir(parents=True)
    offset = 0
    total = 0
    for s in range(segments):
        base, log = offset, bytearray()
        offsets: list[tuple[int, int]] = []
        times: list[tuple[int, int]] = []
        since, max_ts, max_off = 0, -1, base
        while len(log) < segment_bytes:
            recs = [
                NewRecord(b"key-%d" % (offset + j), VALUE, T0 + offset + j) for j in range(RECORDS_PER_BATCH)
            ]
            last = offset + RECORDS_PER_BATCH - 1
            if T0 + last > max_ts:
                max_ts, max_off = T0 + last, last
            if len(log) - since > INTERVAL_BYTES:
                offsets.append((last, len(log)))
                if not times or max_ts > times[-1][0]:
                    times.append((max_ts, max_off))
                since = len(log)
            log += build_v2_batch(offset, recs, partition_leader_epoch=1)
            offset = last + 1
        active = s == segments - 1
        if not active and (not times or max_ts > times[-1][0]):
            times.append((max_ts, max_off))  # the entry written when the segment rolled
        name = f"{base:020d}"
        (path / f"{name}.log").write_bytes(bytes(log))
        index = encode_offset_index(offsets, base)
        tindex = encode_time_index(times, base)
        if active:
            index += bytes(PREALLOCATED_INDEX_BYTES - len(index))
            tindex += bytes(PREALLOCATED_INDEX_BYTES // 12 * 12 - len(tindex))
        (path / f"{name}.index").write_bytes(index)
        (path / f"{name}.timeindex").write_bytes(tindex)
        total += len(log)
    return offset, total


def run_once(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system of the child) and stdout of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {res.returncode}: {res.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, res.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--segments", type=int, default=120)
    ap.add_argument("--segment-bytes", type=int, default=512 * 1024)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--no-bytecode-cache", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the generated partition")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="kdump-bench-seek-"))
    part_dir = tmp / "bench-0"
    t = time.perf_counter()
    records, total = generate(part_dir, args.segments, args.segment_bytes)
    print(
        f"generated {args.segments} segments, {records} records, {total / 2**20:.1f} MiB of log "
        f"in {time.perf_counter() - t:.1f} s at {part_dir}"
    )

    env = dict(os.environ)
    if args.no_bytecode_cache:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    kdump = [sys.executable, "-m", "kdump"]
    per_segment = records // args.segments
    queries = {
        "before every record": str(T0 - 1000),
        "in the first segment": str(T0 + per_segment // 3),
        "in the middle segment": str(T0 + records // 2 + 17),
        "in the last segment": str(T0 + records - per_segment // 2),
        "after every record": str(T0 + records + 1000),
        "earliest": "earliest",
        "latest": "latest",
        "max-timestamp": "max-timestamp",
    }
    run_once([*kdump, "--version"], env)  # fills the bytecode cache
    base = [run_once([*kdump, "--version"], env) for _ in range(args.runs)]
    base_wall = statistics.median(b[0] for b in base) * 1000
    base_cpu = statistics.median(b[1] for b in base) * 1000
    print(f"\nkdump --version (interpreter start + imports): wall {base_wall:.0f} ms, cpu {base_cpu:.0f} ms")
    header = (
        f"{'query':24} {'wall ms':>8} {'cpu ms':>7} {'lib ms':>7} {'segments':>8} {'slots':>6} {'batches':>7}"
    )
    print(f"\n{header}  answer")
    worst_wall = worst_cpu = 0.0
    for label, spec in queries.items():
        cmd = [*kdump, "seek-by-time", "--format", "json", spec, str(part_dir)]
        run_once(cmd, env)
        runs = [run_once(cmd, env) for _ in range(args.runs)]
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        worst_wall, worst_cpu = max(worst_wall, wall), max(worst_cpu, cpu)
        row = json.loads(runs[0][2])
        target: int | str = int(spec) if spec.lstrip("-").isdigit() else spec
        lib = []
        for _ in range(args.runs):
            # In-process: listing the directory and answering, without interpreter start or imports.
            s = time.perf_counter()
            seek_partition(PartitionDir.load(part_dir), target)  # type: ignore[arg-type]
            lib.append(time.perf_counter() - s)
        cost = row["cost"]
        answer = "none" if row["offset"] is None else f"offset {row['offset']}"
        print(
            f"{label:24} {wall * 1000:8.0f} {cpu * 1000:7.0f} {statistics.median(lib) * 1000:7.1f} "
            f"{cost['segments_examined']:8} {cost['index_entries_read']:6} {cost['batches_read']:7}  {answer}"
        )
    print(
        f"\nslowest median: wall {worst_wall * 1000:.0f} ms, cpu {worst_cpu * 1000:.0f} ms (budget 300 ms); "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (wall time grows with the load)"
    )
    if args.keep:
        print(f"kept {tmp}")
    else:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
