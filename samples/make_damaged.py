"""Rebuild samples/damaged/ and samples/replicas/ from samples/logdir/ with the test suite's named
corruptions and replica-set helpers.

Usage: python samples/make_damaged.py   (from the repository root)
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from corruptions import append_zeros, flip_body_byte, shuffle_index_entries, truncate_inside  # noqa: E402
from replica_sets import append_foreign, copy_partition, cut_at_batch, write_epochs  # noqa: E402

DAMAGED = ROOT / "samples" / "damaged"
REPLICAS = ROOT / "samples" / "replicas"
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
    replicas()


def replicas() -> None:
    """Two copies of txn-1 after an unclean leader election: broker2 lost the last three batches,
    became leader under epoch 1 and wrote two batches of its own (real batches of c-gzip-0)."""
    if REPLICAS.exists():
        shutil.rmtree(REPLICAS)
    copy_partition(LOGDIR / "txn-1", REPLICAS / "broker1" / "txn-1")
    leader = copy_partition(LOGDIR / "txn-1", REPLICAS / "broker2" / "txn-1")
    cut = cut_at_batch(leader, -3)
    append_foreign(leader, LOGDIR / "c-gzip-0", 2, epoch=1)
    write_epochs(leader, [(0, 0), (1, cut)])


if __name__ == "__main__":
    main()
