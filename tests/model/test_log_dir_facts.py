"""What each partition's checks ask of its log dir, answered by the log dir's one listing.

A streamed verify lists the log dir once (`LogDirEntries`); the partitions it loads from there
carry that listing's answers (`LogDirFacts`): its log-start-offset-checkpoint, its clean-shutdown
marker, whether it holds `__cluster_metadata-0`. Each answer is the one the disk gives a partition
loaded on its own (`Path.exists`, `Path.is_dir`), whatever the entry is.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kdump.formats.filenames import CLEAN_SHUTDOWN_FILE, CLUSTER_METADATA_PARTITION_DIR
from kdump.model.log_dir_entries import LogDirEntries
from kdump.model.partition import PartitionDir

LOG_START = "log-start-offset-checkpoint"


def _log_dir(tmp_path: Path) -> Path:
    log_dir = tmp_path / "kafka-logs"
    (log_dir / "orders-0").mkdir(parents=True)
    (log_dir / "orders-0" / "00000000000000000000.log").write_bytes(b"")
    return log_dir


def _both(log_dir: Path) -> tuple[PartitionDir, PartitionDir]:
    """orders-0 loaded from the log dir's listing, and on its own (the disk asked)."""
    listed = LogDirEntries.list(log_dir).load_partition("orders-0")
    assert isinstance(listed, PartitionDir)
    assert listed.log_dir_facts is not None
    alone = PartitionDir.load(log_dir / "orders-0")
    assert alone.log_dir_facts is None
    return listed, alone


@pytest.mark.parametrize("kind", ["none", "dir", "symlink", "file", "dangling"])
def test_the_metadata_log_beside_is_the_disks_answer(tmp_path: Path, kind: str) -> None:
    log_dir = _log_dir(tmp_path)
    meta = log_dir / CLUSTER_METADATA_PARTITION_DIR
    if kind == "dir":
        meta.mkdir()
    elif kind == "symlink":
        (tmp_path / "elsewhere").mkdir()
        meta.symlink_to(tmp_path / "elsewhere")
    elif kind == "file":
        meta.write_text("x")
    elif kind == "dangling":
        meta.symlink_to(tmp_path / "gone")
    listed, alone = _both(log_dir)
    assert listed.in_kraft_log_dir() == alone.in_kraft_log_dir() == (kind in ("dir", "symlink"))


@pytest.mark.parametrize("kind", ["none", "file", "empty", "dir", "fifo", "dangling"])
@pytest.mark.parametrize("name", [LOG_START, CLEAN_SHUTDOWN_FILE])
def test_a_log_dir_file_beside_is_the_disks_answer(tmp_path: Path, kind: str, name: str) -> None:
    log_dir = _log_dir(tmp_path)
    p = log_dir / name
    if kind == "file":
        p.write_text("0\n1\norders 0 5\n")
    elif kind == "empty":
        p.write_bytes(b"")
    elif kind == "dir":
        p.mkdir()
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "dangling":
        p.symlink_to(tmp_path / "gone")
    listed, alone = _both(log_dir)
    assert listed.beside(name) == alone.beside(name) == (kind not in ("none", "dangling"))
