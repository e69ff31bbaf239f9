"""What an operator sees in a real terminal: tmux at 100 columns, read back with capture-pane.

A finished progress bar stands on a line of its own with nothing glued to it, and a record dump
streams as lines. Skips when tmux is not installed (Debian: apt-get install tmux).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import build_partition

from kdump.ops.checks.log_dir_stream import STREAM_MIN

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (Debian: apt-get install tmux)")
REPO = Path(__file__).resolve().parents[2]
BAR = re.compile(r"^verifying ━+ \d+\.\d/\d+\.\d MiB done in \d:\d\d:\d\d$")


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Path]:
    """A private tmux server (its own socket), killed at the end."""
    sock = tmp_path / "tmux.sock"
    yield sock
    subprocess.run([str(TMUX), "-S", str(sock), "kill-server"], capture_output=True, check=False)


def run_in_pane(sock: Path, args: list[str], env: dict[str, str] | None = None) -> list[str]:
    """Run kdump in a new 100x50 pane and return every line the pane shows (history included)."""
    settings = {"PYTHONPATH": str(REPO), "KDUMP_PROGRESS_DELAY": "0", **(env or {})}
    assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in settings.items())
    command = f"env {assignments} {shlex.quote(sys.executable)} -m kdump {shlex.join(args)}; echo __done__; sleep 600"
    subprocess.run(
        [str(TMUX), "-S", str(sock), "-f", os.devnull, "new-session", "-d", "-x", "100", "-y", "50", command],
        check=True,
    )
    deadline = time.monotonic() + 120
    while True:
        shown = subprocess.run(
            [str(TMUX), "-S", str(sock), "capture-pane", "-p", "-J", "-S", "-", "-E", "-"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        if "__done__" in shown or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    lines = [line.rstrip() for line in shown.splitlines()]
    assert "__done__" in lines, shown
    return lines[: lines.index("__done__")]


def test_a_finished_progress_bar_stands_alone(tmux: Path, corpus_root: Path) -> None:
    lines = run_in_pane(tmux, ["verify", "--jobs", "1", str(corpus_root / "kafka-3.8.0")])
    bars = [i for i, line in enumerate(lines) if line.startswith("verifying")]
    assert len(bars) == 1, lines  # drawn in place, never left half-way on a line of its own
    bar = lines[bars[0]]
    assert BAR.match(bar), bar
    assert "╺" not in bar  # finished
    # The total's table comes next, on a line of its own (it was glued onto a frozen bar before).
    assert lines[bars[0] + 1].startswith("kdump verify: exit"), lines


def test_a_big_log_dirs_bar_counts_partitions(tmux: Path, tmp_path: Path) -> None:
    """A log dir streamed partition by partition (STREAM_MIN of them or more) gets a bar over its
    partitions, counted from its listing, not over bytes a `stat` of each would have summed first."""
    log_dir = tmp_path / "kafka-logs"
    for i in range(STREAM_MIN):
        build_partition(log_dir / f"orders-{i}", segments=1, batches_per_segment=1)
    lines = run_in_pane(tmux, ["verify", str(log_dir)])
    bars = [line for line in lines if line.startswith("verifying")]
    assert len(bars) == 1, lines
    assert re.match(rf"^verifying ━+ {STREAM_MIN}/{STREAM_MIN} partitions done in \d:\d\d:\d\d$", bars[0]), (
        bars
    )


def test_a_record_dump_streams_as_lines(tmux: Path) -> None:
    # The sample's txn-1 is the corpus partition whole (612 records), on every machine; the bundled
    # subset keeps only its last segment.
    part = Path(__file__).resolve().parents[2] / "samples" / "logdir" / "txn-1"
    lines = run_in_pane(tmux, ["dump", "--records", str(part)])
    records = [line for line in lines if line.startswith("| offset: ")]
    assert len(records) > 100
    assert not any("│" in line or "┃" in line for line in lines)  # lines, not a table
    assert lines[-1].startswith("Summary: ")
    assert not any(line.startswith("dumping") for line in lines)  # the stream is the progress there
