"""Every long command draws its bar on a terminal's stderr and leaves it finished on its own line
(stdout here is a file, so only the bar is on the terminal)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from test_dump_terminal import bar_on_terminal_stderr


@pytest.mark.parametrize("command", ["verify", "reindex", "salvage", "compare", "seek-by-time", "dump"])
def test_long_commands_finish_their_bar_on_its_own_line(
    command: str, tmp_path: Path, corpus_root: Path
) -> None:
    part = tmp_path / "b1" / "txn-1"
    shutil.copytree(corpus_root / "kafka-3.8.0" / "txn-1", part)
    args = {
        "verify": ["verify", str(part)],
        "reindex": ["reindex", str(part)],
        "salvage": ["salvage", str(part), "--out", str(tmp_path / "out")],
        "compare": ["compare", str(part), str(shutil.copytree(part, tmp_path / "b2" / "txn-1"))],
        "seek-by-time": ["seek-by-time", "latest", str(part)],
        "dump": ["dump", str(part)],
    }[command]
    label = {"verify": "verifying", "reindex": "reading", "salvage": "salvaging", "compare": "comparing"}.get(
        command, "seeking" if command == "seek-by-time" else "dumping"
    )
    err = bar_on_terminal_stderr(args, tmp_path / "stdout")
    final = err.rsplit("\x1b[2K", 1)[-1]
    assert re.fullmatch(rf"{label} ━+ \d+\.\d/\d+\.\d MiB done in \d:\d\d:\d\d\r?\n", final), err
