"""Build segments shaped like the three in the reference timings of Kafka's own tool.

A: ~134 MB, lz4, 193 batches of ~0.7 MB, 178,599 records of 100-2000 B, every 5th with 2 headers.
B: ~134 MB, uncompressed, 134 batches of ~1 MB, 123,620 records of 100-2000 B.
C: ~134 MB, zstd, 71,246 batches of ~15 records, 1,111,880 records of 60-400 B.

Usage: python tests/bench/make_segments.py [DIR] [--full-size]   (default DIR: $TMPDIR/kdump-bench)
Each segment is written as DIR/<shape>-0/00000000000000000000.log with indexes built by the
broker's recovery rule, so every kdump command can run on it.

--full-size also writes DIR/<shape>-1g-0: a segment as large as Kafka lets one grow by default
(segment.bytes, 1 GiB), in the same shape: the shape's batches over and over, each copy's offsets,
timestamps and producer sequences carried on from the one before (and its checksum computed again),
so that offsets, time and sequences rise through the whole file as a producer's would.
"""

from __future__ import annotations

import os
import random
import struct
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from builders import SegmentBuilder

from kdump.formats.checksums import crc32c
from kdump.formats.constants import Codec
from kdump.formats.offset_index import encode_offset_index
from kdump.formats.records import NewRecord
from kdump.formats.time_index import encode_time_index
from kdump.ops.repair.reindex import build_segment_indexes

# Kafka's default segment.bytes: a segment rolls before a batch would take it past this size.
SEGMENT_BYTES = 1 << 30

WORDS = [
    w.encode()
    for w in [
        "alpha",
        "bravo",
        "charlie",
        "delta",
        "echo",
        "foxtrot",
        "golf",
        "hotel",
        "india",
        "juliet",
        "kilo",
        "lima",
        "mike",
        "november",
        "oscar",
        "papa",
        "quebec",
        "romeo",
        "sierra",
        "tango",
        "uniform",
        "victor",
        "whiskey",
        "xray",
        "yankee",
        "zulu",
    ]
]
SHAPES = {
    # name: (codec, batches, records, min value, max value, header every nth record)
    "A": (Codec.LZ4, 193, 178_599, 100, 2000, 5),
    "B": (Codec.NONE, 134, 123_620, 100, 2000, 0),
    "C": (Codec.ZSTD, 71_246, 1_111_880, 60, 400, 0),
}


def _value(rng: random.Random, size: int) -> bytes:
    # Words mixed with random hex: compresses about as well as real producer text does.
    out = bytearray()
    while len(out) < size:
        out += rng.choice(WORDS) if rng.random() < 0.6 else rng.randbytes(4).hex().encode()
        out += b" "
    return bytes(out[:size])


def build(shape: str, root: Path) -> Path:
    """Write one segment of the given shape; return its .log path."""
    codec, batches, total, lo, hi, header_every = SHAPES[shape]
    rng = random.Random(shape)
    part = root / f"{shape.lower()}-0"
    log = part / "00000000000000000000.log"
    if log.exists():
        return log
    seg = SegmentBuilder(base_offset=0)
    ts = 1_790_000_000_000
    made = 0
    for b in range(batches):
        n = total // batches + (1 if b < total % batches else 0)
        recs = []
        for _ in range(n):
            headers: tuple[tuple[bytes, bytes | None], ...] = ()
            if header_every and made % header_every == 0:
                headers = ((b"trace", rng.randbytes(8).hex().encode()), (b"h-id", str(made).encode()))
            recs.append(NewRecord(f"key-{made}".encode(), _value(rng, rng.randint(lo, hi)), ts, headers))
            made += 1
            ts += 1
        seg.add_v2(recs, codec=codec, producer_id=1000, producer_epoch=0, base_sequence=made - n)
    seg.write(part)
    return log


def build_full_size(shape: str, root: Path, limit: int = SEGMENT_BYTES) -> Path:
    """Write DIR/<shape>-1g-0: the shape's segment repeated up to `limit` bytes (whole batches)."""
    source = build(shape, root).read_bytes()
    part = root / f"{shape.lower()}-1g-0"
    log = part / "00000000000000000000.log"
    if log.exists():
        return log
    total = SHAPES[shape][2]
    part.mkdir(parents=True, exist_ok=True)
    spans: list[tuple[int, int, int, int]] = []  # (position, size, last offset, max timestamp)
    position = 0
    with open(log.with_suffix(".tmp"), "wb") as out:
        for copy in range(limit // len(source) + 1):
            shift = copy * total  # one offset, one millisecond and one sequence number per record
            at = 0
            while at < len(source):
                size = 12 + struct.unpack_from(">i", source, at + 8)[0]
                if position + size > limit:
                    break
                batch = bytearray(source[at : at + size])
                base, last_delta = (
                    struct.unpack_from(">q", batch, 0)[0],
                    struct.unpack_from(">i", batch, 23)[0],
                )
                first_ts, max_ts = struct.unpack_from(">qq", batch, 27)
                struct.pack_into(">q", batch, 0, base + shift)
                struct.pack_into(">qq", batch, 27, first_ts + shift, max_ts + shift)
                struct.pack_into(">i", batch, 53, struct.unpack_from(">i", batch, 53)[0] + shift)
                struct.pack_into(">I", batch, 17, crc32c(memoryview(batch)[21:]))
                out.write(batch)
                spans.append((position, size, base + shift + last_delta, max_ts + shift))
                position += size
                at += size
            else:
                continue
            break
    log.with_suffix(".tmp").rename(log)
    offsets, times = build_segment_indexes(spans)
    (part / "00000000000000000000.index").write_bytes(encode_offset_index(offsets, 0))
    (part / "00000000000000000000.timeindex").write_bytes(encode_time_index(times, 0))
    return log


def main() -> None:
    """Build A, B and C (skipping any already built); with --full-size their 1 GiB copies too."""
    args = [a for a in sys.argv[1:] if a != "--full-size"]
    root = Path(args[0]) if args else Path(tempfile.gettempdir()) / "kdump-bench"
    root.mkdir(parents=True, exist_ok=True)
    for shape in SHAPES:
        log = build(shape, root)
        print(f"{shape}: {log} {os.path.getsize(log) / 1e6:.1f} MB")
        if "--full-size" in sys.argv[1:]:
            log = build_full_size(shape, root)
            print(f"{shape} full size: {log} {os.path.getsize(log) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
