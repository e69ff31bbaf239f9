"""Build segments shaped like the three in the reference timings of Kafka's own tool.

A: ~134 MB, lz4, 193 batches of ~0.7 MB, 178,599 records of 100-2000 B, every 5th with 2 headers.
B: ~134 MB, uncompressed, 134 batches of ~1 MB, 123,620 records of 100-2000 B.
C: ~134 MB, zstd, 71,246 batches of ~15 records, 1,111,880 records of 60-400 B.

Usage: python tests/bench/make_segments.py [DIR]   (default: $TMPDIR/kdump-bench)
Each segment is written as DIR/<shape>-0/00000000000000000000.log with indexes built by the
broker's recovery rule, so every kdump command can run on it.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from builders import SegmentBuilder

from kdump.formats.constants import Codec
from kdump.formats.records import NewRecord

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


def main() -> None:
    """Build A, B and C (skipping any already built)."""
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.gettempdir()) / "kdump-bench"
    root.mkdir(parents=True, exist_ok=True)
    for shape in SHAPES:
        log = build(shape, root)
        print(f"{shape}: {log} {os.path.getsize(log) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
