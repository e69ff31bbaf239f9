"""A repair's pre-flight on real filesystems: too small, read-only; refused before anything is touched.

The tests mount what they need as root: a tmpfs of a few MB (filled until the backup cannot fit)
and a read-only bind mount of a partition; they skip, saying why, where mounting is not allowed.
Each refusal is exit 5 (`CANNOT_REPAIR`), one sentence on stderr ending "nothing was changed",
the partition byte for byte as before and no backup folder made.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from corruptions import copy_tree, file_hashes, flip_crc_byte, run_kdump, shuffle_index_entries

from kdump.cli.exit_codes import ExitCode

MID = "00000000000000000299"
LAST = "00000000000000000547"


def _mount(*args: str) -> None:
    proc = subprocess.run(["mount", *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount here (mount {' '.join(args)}: {proc.stderr.strip() or proc.returncode})")


@contextlib.contextmanager
def _mounted(point: Path, *args: str) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a small or read-only filesystem needs root")
    point.mkdir(parents=True, exist_ok=True)
    _mount(*args, str(point))
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs."""
    with _mounted(tmp_path / "small", "-t", "tmpfs", "-o", "size=4m", "tmpfs") as point:
        yield point


def _fill(fs: Path, leave: int) -> None:
    """Fill a filesystem until `leave` bytes are free."""
    vfs = os.statvfs(fs)
    free = vfs.f_bavail * vfs.f_frsize
    (fs / "filler").write_bytes(b"\0" * max(free - leave, 0))


def _trim_case(full_corpus: Path, where: Path) -> Path:
    """A bad checksum in the middle segment: trim-tail cuts it and moves the last segment aside
    (about 25 KB of backup, copied rather than linked when the backup is on another filesystem)."""
    part = copy_tree(full_corpus / "kafka-3.8.0" / "txn-1", where / "txn-1")
    flip_crc_byte(-1).apply(part / f"{MID}.log")
    return part


def _refused(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == ExitCode.CANNOT_REPAIR, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "nothing was changed" in lines[0]
    for word in words:
        assert word in lines[0], lines[0]


def test_trim_tail_refuses_a_backup_that_does_not_fit(
    full_corpus: Path, tmp_path: Path, small_fs: Path
) -> None:
    part = _trim_case(full_corpus, tmp_path)
    before = file_hashes(part)
    _fill(small_fs, 32 << 10)  # less than the backup (the moved segment, ~25 KB) plus the manifest's room
    backup = small_fs / "backup"
    proc = run_kdump("trim-tail", "--apply", "--backup-dir", str(backup), str(part))
    _refused(proc, "needs", "free", str(small_fs))
    assert file_hashes(part) == before
    assert not backup.exists()


def test_trim_tail_with_room_on_another_filesystem_copies_and_restores(
    full_corpus: Path, tmp_path: Path, small_fs: Path
) -> None:
    part = _trim_case(full_corpus, tmp_path)
    before = file_hashes(part)
    backup = small_fs / "backup"
    proc = run_kdump("trim-tail", "--apply", "--backup-dir", str(backup), str(part))
    assert proc.returncode == 0, proc.stderr
    assert not (part / f"{LAST}.log").exists()
    assert run_kdump("restore", str(backup)).returncode == 0
    assert file_hashes(part) == before


def test_reindex_refuses_a_partition_on_a_full_filesystem(
    full_corpus: Path, tmp_path: Path, small_fs: Path
) -> None:
    part = copy_tree(full_corpus / "kafka-3.8.0" / "txn-1", small_fs / "txn-1")
    shuffle_index_entries(seed=1).apply(part / f"{LAST}.index")
    before = file_hashes(part)
    _fill(small_fs, 8 << 10)
    proc = run_kdump("reindex", "--apply", "--backup-dir", str(tmp_path / "backup"), str(part))
    _refused(proc, "needs", "the rewritten files")
    assert file_hashes(part) == before
    assert not (tmp_path / "backup").exists()


@pytest.fixture
def read_only_copy(full_corpus: Path, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A damaged partition, and the same directory seen through a read-only bind mount."""
    part = _trim_case(full_corpus, tmp_path / "rw")
    shuffle_index_entries(seed=1).apply(part / f"{LAST}.index")
    view = tmp_path / "ro" / "txn-1"
    with _mounted(view, "--bind", str(part)):
        _mount("-o", "remount,ro,bind", str(view))
        yield part, view


@pytest.mark.parametrize("command", ["trim-tail", "reindex"])
def test_repairs_refuse_a_read_only_mount(
    command: str, read_only_copy: tuple[Path, Path], tmp_path: Path
) -> None:
    part, view = read_only_copy
    before = file_hashes(part)
    backup = tmp_path / "backup"
    proc = run_kdump(command, "--apply", "--backup-dir", str(backup), str(view))
    _refused(proc, "read-only filesystem", str(view))
    assert file_hashes(part) == before
    assert not backup.exists()


def test_restore_refuses_a_read_only_mount(full_corpus: Path, tmp_path: Path) -> None:
    part = _trim_case(full_corpus, tmp_path / "rw")
    before = file_hashes(part)
    backup = tmp_path / "backup"
    assert run_kdump("trim-tail", "--apply", "--backup-dir", str(backup), str(part)).returncode == 0
    trimmed = file_hashes(part)
    # The manifest names the partition's own path: make that path read-only where it is.
    with _mounted(part, "--bind", str(part)):
        _mount("-o", "remount,ro,bind", str(part))
        proc = run_kdump("restore", str(backup))
        _refused(proc, "read-only filesystem")
        assert file_hashes(part) == trimmed
    assert run_kdump("restore", str(backup)).returncode == 0
    assert file_hashes(part) == before


def test_a_held_lock_is_still_exit_4(full_corpus: Path, tmp_path: Path) -> None:
    import fcntl

    log_dir = tmp_path / "logs"
    part = _trim_case(full_corpus, log_dir)
    (log_dir / "meta.properties").write_text("version=1\n")
    lock = log_dir / ".lock"
    lock.touch()
    with lock.open("w") as fh:
        fcntl.lockf(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        proc = run_kdump("trim-tail", "--apply", "--backup-dir", str(tmp_path / "b"), str(part))
    assert proc.returncode == ExitCode.REFUSED, proc.stderr


def test_salvage_refuses_an_output_that_does_not_fit(
    full_corpus: Path, tmp_path: Path, small_fs: Path
) -> None:
    part = _trim_case(full_corpus, tmp_path)
    before = file_hashes(part)
    _fill(small_fs, 128 << 10)  # the output needs the partition's ~330 KB twice over
    out = small_fs / "salvaged"
    proc = run_kdump("salvage", "--no-parquet", "--out", str(out), str(part))
    _refused(proc, "the salvage output", str(small_fs))
    assert not out.exists()
    assert file_hashes(part) == before


def test_several_partitions_are_checked_together_before_the_first_is_touched(
    full_corpus: Path, tmp_path: Path, small_fs: Path
) -> None:
    """Room for one partition's backup but not two: refused whole, the first one untouched too
    (each on its own would pass its own check, and the second would then fail half way)."""
    parts = [_trim_case(full_corpus, tmp_path / "logs" / str(i)) for i in range(2)]
    before = [file_hashes(p) for p in parts]
    _fill(small_fs, 160_000)
    proc = run_kdump("trim-tail", "--apply", "--backup-dir", str(small_fs / "b"), *map(str, parts))
    _refused(proc, "needs")
    assert [file_hashes(p) for p in parts] == before
    assert not (small_fs / "b").exists()
    # One alone fits: the refusal above was the sum's.
    alone = run_kdump("trim-tail", "--apply", "--backup-dir", str(small_fs / "b"), str(parts[0]))
    assert alone.returncode == 0, alone.stderr
