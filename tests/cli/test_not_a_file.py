"""Not a file, not read: every command on FIFOs, sockets, devices and /proc files, exit 3.

A FIFO named like a segment must never be opened for a blocking read (it would wait forever for a
writer), a device never read (/dev/zero never ends), a /proc file that says it is empty never
taken for an empty segment. Each case runs the real entry point in a subprocess with a timeout,
both given directly and inside a partition directory: exit 3, the entry named on stderr, no
traceback, and a FIFO with no writer never makes it wait.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from corruptions import copy_tree

SEG = "00000000000000000000.log"
KINDS = ["fifo", "socket", "device", "proc"]
COMMANDS = {
    "dump": ["dump"],
    "verify": ["verify"],
    "reindex": ["reindex"],
    "trim-tail": ["trim-tail"],
    "seek-by-time": ["seek-by-time", "0"],
    "schemas": ["schemas"],
    "salvage": ["salvage", "--no-parquet", "--out", "{out}"],
}


def _run(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kdump", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def specials(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """One entry of each kind, named like a segment where the name is ours to choose."""
    made: dict[str, Path] = {}
    fifo = tmp_path / "fifo" / SEG
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    made["fifo"] = fifo
    sock_path = tmp_path / "sock" / SEG
    sock_path.parent.mkdir()
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    made["socket"] = sock_path
    made["device"] = Path("/dev/null")
    made["proc"] = Path("/proc/self/mem")
    try:
        yield made
    finally:
        sock.close()


def _args(command: str, tmp_path: Path, path: Path) -> list[str]:
    words = [w.replace("{out}", str(tmp_path / "salvage-out")) for w in COMMANDS[command]]
    return [*words, str(path)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_given_directly_it_is_not_read_and_exits_3(
    command: str, kind: str, specials: dict[str, Path], tmp_path: Path
) -> None:
    path = specials[kind]
    if kind == "proc" and not path.exists():
        pytest.skip("no /proc here")
    proc = _run(*_args(command, tmp_path, path))
    assert proc.returncode == 3, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert str(path) in proc.stderr


@pytest.mark.parametrize("kind", ["fifo", "socket"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_inside_a_partition_it_is_a_finding_and_exit_3(
    command: str, kind: str, corpus_root: Path, tmp_path: Path
) -> None:
    part = copy_tree(corpus_root / "kafka-3.8.0" / "txn-1", tmp_path / "logs" / "txn-1")
    special = part / "00000000000000099999.log"  # named like a later segment
    if kind == "fifo":
        os.mkfifo(special)
        sock = None
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(special))
    try:
        args = _args(command, tmp_path, part)
        if command == "salvage":
            args[3] = str(tmp_path / "out" / "salvaged")
        proc = _run(*args)
    finally:
        if sock is not None:
            sock.close()
    assert proc.returncode == 3, (proc.returncode, proc.stdout[-500:], proc.stderr)
    assert "wrong-file-type" in proc.stdout + proc.stderr
    assert special.name in proc.stdout + proc.stderr


def test_compare_with_a_fifo_in_a_replica_exits_3(corpus_root: Path, tmp_path: Path) -> None:
    a = copy_tree(corpus_root / "kafka-3.8.0" / "txn-1", tmp_path / "a" / "txn-1")
    b = copy_tree(corpus_root / "kafka-3.8.0" / "txn-1", tmp_path / "b" / "txn-1")
    os.mkfifo(b / "00000000000000099999.log")
    proc = _run("compare", str(a), str(b))
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "is a FIFO" in proc.stderr


def test_restore_of_a_fifo_manifest_does_not_block(tmp_path: Path) -> None:
    backup = tmp_path / "backup"
    backup.mkdir()
    os.mkfifo(backup / "kdump-manifest.json")
    proc = _run("restore", str(backup), timeout=20)
    assert proc.returncode == 3, proc.stderr
    assert "is a FIFO" in proc.stderr


def test_a_fifo_swapped_in_after_the_check_never_blocks(tmp_path: Path) -> None:
    """The race: the type is checked, then the file is replaced by a FIFO before the open. The open
    is non-blocking and the descriptor checked again, so it fails at once."""
    from kdump.errors import PathError
    from kdump.scan import source

    fifo = tmp_path / SEG
    os.mkfifo(fifo)
    real_stat = Path.stat

    def regular_first(self: Path, *args: object, **kwargs: object) -> os.stat_result:
        st = real_stat(tmp_path / "regular")
        return st

    (tmp_path / "regular").write_bytes(b"x")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Path, "stat", regular_first)  # the check sees a regular file
        with pytest.raises(PathError, match="is a FIFO"):
            source.open_regular(fifo)
