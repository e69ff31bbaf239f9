"""The floor under `verify --deep` of a log dir: the codec's own decompression of every batch, no kdump.

Usage:
    python tests/bench/bench_deep_floor.py DIR/kafka-logs [--partitions N] [--runs 3]

`verify --deep` must decompress every compressed batch to check its records, so it can be no
faster than the codec. This times, in one process, the decompression of the batch payloads of the
first N partitions of DIR by zstandard's own code (`multi_decompress_to_buffer`, one thread, the
frames' content sizes given, or one `decompress` call per batch on one reused context, whichever is
faster; no kdump code), CPU seconds, best of `--runs`,
and scales it to the whole log dir. Against the wall time of `cat` of every file of DIR (the
yardstick of `bench_logdir_verify.py`), over the cores: the smallest ratio to `cat` a deep verify
could reach if it spent nothing but the decompression, on every core. zstd batches only (the
log dirs `make_logdir.py` writes); other batches are counted and left out.
"""

from __future__ import annotations

import argparse
import os
import shlex
import struct
import subprocess
import sys
import time
from pathlib import Path

V2_HEADER_SIZE = 61  # kdump/formats/constants.py
ZSTD = 4


def _payloads(segment: Path) -> tuple[list[bytes], int]:
    """The zstd payloads of a segment's v2 batches, and how many batches were not zstd."""
    data = segment.read_bytes()
    out: list[bytes] = []
    other = 0
    position = 0
    while position + V2_HEADER_SIZE <= len(data):
        size = int.from_bytes(data[position + 8 : position + 12], "big") + 12
        attributes = int.from_bytes(data[position + 21 : position + 23], "big")
        if data[position + 16] == 2 and attributes & 0x07 == ZSTD:
            out.append(data[position + V2_HEADER_SIZE : position + size])
        else:
            other += 1
        position += size
    return out, other


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("logdir", type=Path)
    parser.add_argument("--partitions", type=int, default=1000, help="partitions to decompress (then scaled)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    import zstandard

    partitions = sorted(p for p in args.logdir.iterdir() if p.is_dir())
    sample = partitions[: args.partitions]
    payloads: list[bytes] = []
    other = 0
    for part in sample:
        for segment in sorted(part.glob("*.log")):
            got, skipped = _payloads(segment)
            payloads += got
            other += skipped
    if not payloads:
        sys.exit(f"no zstd batches in the first {len(sample)} partitions of {args.logdir}")
    sizes = [zstandard.frame_content_size(p) for p in payloads]
    if min(sizes) < 0:
        sys.exit("a frame does not say its content size")
    decompressor = zstandard.ZstdDecompressor()
    packed = struct.pack(f"={len(sizes)}Q", *sizes)
    # Two ways, the faster taken: zstandard's batch call (one C loop, its own output buffers) and
    # a loop of one-shot calls on one reused context (a Python call per batch, no batch bookkeeping).
    best = float("inf")
    for _ in range(args.runs):
        start = time.process_time()
        decompressor.multi_decompress_to_buffer(payloads, decompressed_sizes=packed, threads=1)
        best = min(best, time.process_time() - start)
        start = time.process_time()
        for payload in payloads:
            decompressor.decompress(payload)
        best = min(best, time.process_time() - start)
    scale = len(partitions) / len(sample)
    cores = os.cpu_count() or 1
    find = f"find {shlex.quote(str(args.logdir))} -type f -print0 | xargs -0 cat > /dev/null"
    subprocess.run(["sh", "-c", find], check=True)  # warm
    walls = []
    for _ in range(args.runs):
        start = time.perf_counter()
        subprocess.run(["sh", "-c", find], check=True)
        walls.append(time.perf_counter() - start)
    cat = sorted(walls)[len(walls) // 2]
    floor = best * scale
    print(
        f"{len(sample)} of {len(partitions)} partitions: {len(payloads)} zstd batches ({other} others), "
        f"{sum(map(len, payloads)) / 1e6:.0f} MB in, {sum(sizes) / 1e6:.0f} MB out; zstd CPU {best:.3f} s "
        f"({best / len(payloads) * 1e6:.2f} us a batch, {sum(sizes) / best / 1e9:.2f} GB/s out)"
    )
    print(
        f"whole log dir: zstd {floor:.1f} s of CPU, {floor / cores:.2f} s on {cores} cores; cat {cat:.2f} s; "
        f"floor of verify --deep {floor / cores / cat:.2f}x cat; load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
