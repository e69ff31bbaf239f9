"""Run a repair hint exactly as kdump printed it, pasted into a POSIX shell.

`sh -c HINT` with this checkout's kdump first on the PATH (a shim running this interpreter's
`python -m kdump`), in a working directory of the test's choosing: the paths in the hint are the
ones the user gave, relative ones included (salvage's output goes to its own new directory beside
the log dir).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def _shim_dir(root: Path) -> Path:
    bin_dir = root / "kdump-bin"
    shim = bin_dir / "kdump"
    if not shim.exists():
        bin_dir.mkdir(parents=True, exist_ok=True)
        shim.write_text(f'#!/bin/sh\nexec {sys.executable} -m kdump "$@"\n')
        shim.chmod(0o755)
    return bin_dir


def shell(command: str, cwd: Path, scratch: Path) -> subprocess.CompletedProcess[str]:
    """Run `command` through `sh -c` in `cwd`, kdump on the PATH (its shim kept under `scratch`)."""
    env = {**os.environ, "PATH": f"{_shim_dir(scratch)}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.update({"NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "200"})
    env.pop("KDUMP_DEBUG", None)
    return subprocess.run(
        ["sh", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def printed_hints(
    path: str, cwd: Path, scratch: Path, fail_on: str = "info", flags: str = ""
) -> tuple[list[str], int]:
    """The distinct repair hints `kdump verify --format json --fail-on FAIL_ON [FLAGS] PATH`
    prints, in order, and its exit status."""
    done = shell(f"kdump verify --format json --fail-on {fail_on} {flags} {_quote(path)}", cwd, scratch)
    hints: list[str] = []
    for line in done.stdout.splitlines():
        row: dict[str, Any] = json.loads(line) if line.startswith("{") else {}
        if row.get("type") == "finding" and row.get("repair") and row["repair"] not in hints:
            hints.append(row["repair"])
    return hints, done.returncode


def _quote(path: str) -> str:
    import shlex

    return shlex.quote(path)
