"""Kafka-flag mode gathers its lines into large writes: what a terminal or a pipe receives is
unchanged, stdout and stderr keep their order, and lines printed before a failure stay printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from builders import SegmentBuilder, records

KDUMP = [sys.executable, "-m", "kdump"]


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A segment whose batch lines are well over one write's worth (64 KiB)."""
    seg = SegmentBuilder()
    for _ in range(400):
        seg.add_v2(records(1, value_size=20))
    return seg.write(tmp_path_factory.mktemp("writes") / "writes-0")


def _run(*args: str) -> subprocess.CompletedProcess[bytes]:
    # Unbuffered, as with PYTHONUNBUFFERED or `python -u`: the case the gathering is for.
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [*KDUMP, *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=120, check=False
    )


def test_stderr_lines_stay_between_the_files_they_follow(log: Path, tmp_path: Path) -> None:
    other = tmp_path / "notes.txt"
    other.write_text("x")
    alone = _run("dump", "--files", str(log))
    assert alone.returncode == 0
    batches = alone.stdout.decode().splitlines()
    assert len(batches) == 402  # "Dumping ...", "Log starting offset: 0", 400 batches
    both = _run("dump", "--files", f"{log},{other},{log}")
    assert both.returncode == 0
    assert both.stdout.decode().splitlines() == [
        *batches,
        f"Dumping {other}",
        f"Ignoring unknown file {other}",
        *batches,
    ]


def test_lines_before_an_abort_are_printed_first(log: Path, tmp_path: Path) -> None:
    missing = tmp_path / "00000000000000000400.log"
    result = _run("dump", "--files", f"{log},{missing}")
    assert result.returncode == 1
    lines = result.stdout.decode().splitlines()
    assert lines[:402] == _run("dump", "--files", str(log)).stdout.decode().splitlines()
    assert lines[402:404] == [f"Dumping {missing}", "Log starting offset: 400"]
    assert lines[-1].startswith('Exception in thread "main" java.nio.file.NoSuchFileException')
