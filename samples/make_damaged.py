"""Rebuild samples/damaged/ from samples/logdir/ with the test suite's named corruptions.

Usage: python samples/make_damaged.py   (from the repository root)
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from corruptions import append_zeros, flip_body_byte, shuffle_index_entries, truncate_inside  # noqa: E402

DAMAGED = ROOT / "samples" / "damaged"
LOGDIR = ROOT / "samples" / "logdir"


def main() -> None:
    """Copy three healthy partitions and damage them the way disks do."""
    if DAMAGED.exists():
        shutil.rmtree(DAMAGED)
    DAMAGED.mkdir()
    # Power loss: the last batch written only half way, then a page of zeros the disk never filled.
    torn = shutil.copytree(LOGDIR / "txn-1", DAMAGED / "torn-tail-0")
    (truncate_inside(-1, 40) + append_zeros(4096)).apply(sorted(torn.glob("*.log"))[-1])
    # A flipped byte in the middle of a segment: the broker would cut here and lose what follows.
    bad = shutil.copytree(LOGDIR / "c-zstd-0", DAMAGED / "bad-crc-0")
    flip_body_byte(5, 100).apply(sorted(bad.glob("*.log"))[-1])
    # A scrambled offset index over a healthy log.
    stale = shutil.copytree(LOGDIR / "c-lz4-0", DAMAGED / "shuffled-index-0")
    shuffle_index_entries(seed=7).apply(sorted(stale.glob("*.index"))[-1])


if __name__ == "__main__":
    main()
