"""A partition loaded from its held read (`HeldListing`, `kdump.scan.held`) is the partition loaded
from the disk, entry by entry: the same segments, state files, leftovers and findings, whatever the
entries are; and a streamed verify of real partition dirs reports the same with the held read and
without it, damaged copies included."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest
from corpus import iter_partition_dirs

from kdump.model.entries import FileType, probe
from kdump.model.listing import HeldListing
from kdump.model.log_dir import discover
from kdump.model.partition import PartitionDir
from kdump.ops.checks import log_dir_stream
from kdump.ops.checks.log_dir_stream import verify_streamed
from kdump.ops.checks.verify import VerifyOptions
from kdump.scan import held

pytestmark = pytest.mark.skipif(held.compiled is None, reason="kdump.scan._dirfiles is not built")


def _odd_partition(tmp_path: Path) -> Path:
    d = tmp_path / "orders-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(b"")
    (d / "00000000000000000000.index").write_bytes(b"")
    (d / "00000000000000000000.timeindex").write_bytes(bytes(12))
    (d / "00000000000000000005.index").write_bytes(b"")  # an orphan index
    (d / "00000000000000000007.log.deleted").write_bytes(b"")
    (d / "leader-epoch-checkpoint").write_bytes(b"0\n0\n")
    (d / "partition.metadata.tmp").write_bytes(b"x")
    (d / "notes.txt").write_text("x")
    (d / "0.log").write_bytes(b"")  # misnamed
    (d / "sub").mkdir()
    (d / "00000000000000000009.log").symlink_to(tmp_path / "gone")
    (d / "00000000000000000010.log").symlink_to(d / "00000000000000000000.log")
    (d / "loop").symlink_to(d / "loop")
    os.mkfifo(d / "00000000000000000011.log")
    (d / "big.snapshot").write_bytes(bytes(held.FILE_LIMIT + 1))
    return d


def test_each_entry_probes_as_the_disk_says(tmp_path: Path) -> None:
    d = _odd_partition(tmp_path)
    h = held.read_dir(d)
    assert h is not None
    listing = HeldListing(d, h)
    assert listing.names(d) == sorted(os.listdir(d))
    for name in os.listdir(d):
        disk = probe(d / name)
        got = listing.probe_entry(d, name, d / name)
        assert (got.type, got.size, got.error) == (disk.type, disk.size, disk.error), name
        assert listing.probe(d / name) == got
        # Opened by the held read: a regular file reached without a link (a link is the disk's look).
        assert got.opened == (disk.type == FileType.FILE and not (d / name).is_symlink())


def test_a_partition_loads_as_from_the_disk(tmp_path: Path) -> None:
    d = _odd_partition(tmp_path)
    h = held.read_dir(d)
    assert h is not None
    from_held = PartitionDir.load(d, listing=HeldListing(d, h))
    from_disk = PartitionDir.load(d)
    assert dataclasses.asdict(from_held) == dataclasses.asdict(from_disk)
    assert from_held.problems  # the odd entries are findings either way


def _reports(log_dir: Path, monkeypatch: pytest.MonkeyPatch, compiled: object) -> list[dict[str, object]]:
    monkeypatch.setattr(held, "compiled", compiled)
    reports = verify_streamed([discover(str(log_dir), lazy=True)], VerifyOptions(jobs=1))
    return [dataclasses.asdict(r) for r in reports]


def test_real_partitions_verify_the_same_held_or_not(
    corpus_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log_dir_stream, "STREAM_MIN", 1)
    log_dir = tmp_path / "kafka-logs"
    log_dir.mkdir()
    copied = 0
    for corpus_dir, part, _ in iter_partition_dirs(corpus_root):
        target = log_dir / f"{corpus_dir.replace('-', '_')}{part.name}"
        if "-" not in part.name:
            continue
        shutil.copytree(part, target, symlinks=True)
        copied += 1
        # A damaged copy of each: a byte of its first log flipped, and its epoch checkpoint cut.
        damaged = log_dir / f"x{target.name}"
        shutil.copytree(part, damaged, symlinks=True)
        logs = sorted(damaged.glob("*.log"))
        if logs and logs[0].stat().st_size > 100:
            data = bytearray(logs[0].read_bytes())
            data[len(data) // 2] ^= 0x5A
            logs[0].write_bytes(bytes(data))
        epochs = damaged / "leader-epoch-checkpoint"
        if epochs.is_file():
            epochs.write_bytes(epochs.read_bytes()[:-3])
    assert copied > 5
    compiled = held.compiled
    with_held = _reports(log_dir, monkeypatch, compiled)
    without = _reports(log_dir, monkeypatch, None)
    assert with_held == without
    assert any(r["findings"] for r in with_held)  # the damage is found either way
