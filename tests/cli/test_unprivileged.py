"""kdump as a user without privileges (issue 31): the permission checks root never meets.

Tests run as root here, and root writes into any directory and reads any file, so the repairs'
not-writable pre-flight and the unreadable-entry findings were never exercised. These tests run
the real `kdump` as `nobody` (setpriv, no groups, no capabilities) on a partition in a 0755 temp
dir that user can read; run as a non-root user, they run kdump as that user. A partition dir is
made 0555, so no user other than root can write it (not even its owner).

- `trim-tail --apply` / `reindex --apply` on a partition the user cannot write: refused before
  anything is touched, exit 5, one sentence;
- `verify` / `dump` of a 0000 segment or index: the unreadable-file finding and exit 3, and no
  finding that takes the unreadable file for absent (orphan-index, index-missing).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import build_partition
from corruptions import file_hashes, flip_crc_byte

from kdump.cli.exit_codes import ExitCode

MID = "00000000000000000030"
_SETPRIV = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def _prefix() -> list[str]:
    """How to run a command without privileges here; skips, saying why, where that cannot be done."""
    if sys.platform != "linux":
        pytest.skip("setpriv and Linux permissions are needed to drop root")
    if os.geteuid() != 0:
        return []  # already without privileges
    if shutil.which("setpriv") is None:
        pytest.skip("running as root and setpriv is missing: cannot run kdump as nobody")
    probe = subprocess.run(
        [*_SETPRIV, sys.executable, "-c", "import kdump.cli"],
        capture_output=True,
        text=True,
        check=False,
        cwd="/",
        timeout=60,
    )
    if probe.returncode != 0:
        pytest.skip(f"nobody cannot run this Python with kdump: {probe.stderr.strip()[-300:]}")
    return _SETPRIV


@pytest.fixture
def unprivileged() -> list[str]:
    return _prefix()


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A 0755 temp dir outside root's private pytest dir (0700), readable by any user."""
    base = Path(tempfile.mkdtemp(prefix="kdump-unprivileged-"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        for p in [base, *base.rglob("*")]:
            if not p.is_symlink():
                p.chmod(0o755 if p.is_dir() else 0o644)
        shutil.rmtree(base)


def _kdump(prefix: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "kdump", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=120,
        check=False,
    )


def _partition(base: Path) -> Path:
    part = base / "orders-0"
    build_partition(part, segments=3, batches_per_segment=3)
    for p in part.iterdir():
        p.chmod(0o644)
    return part


@pytest.mark.parametrize("command", ["trim-tail", "reindex"])
def test_a_repair_of_a_partition_this_user_cannot_write_is_refused_untouched(
    unprivileged: list[str], shared_dir: Path, command: str
) -> None:
    part = _partition(shared_dir)
    if command == "trim-tail":
        flip_crc_byte(-1).apply(part / f"{MID}.log")  # cuts the middle segment, removes the last
    else:
        (part / f"{MID}.index").write_bytes(b"\xff\xff\xff\x7f\x00\x00\x00\x00")  # an entry past the log
    part.chmod(0o555)
    room = shared_dir / "room"
    room.mkdir()
    room.chmod(0o777)  # the backup has room and may be made: only the partition is refused
    backup = room / "backup"
    before = file_hashes(part)
    dry = _kdump(unprivileged, command, str(part))
    assert dry.returncode == ExitCode.FINDINGS, (dry.returncode, dry.stdout, dry.stderr)
    proc = _kdump(unprivileged, command, "--apply", "--backup-dir", str(backup), str(part))
    assert proc.returncode == ExitCode.CANNOT_REPAIR, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "cannot write" in lines[0]
    assert str(part) in lines[0]
    assert "nothing was changed" in lines[0]
    assert file_hashes(part) == before
    assert not backup.exists()


@pytest.mark.parametrize("suffix", ["log", "index"])
def test_an_unreadable_segment_or_index_is_a_finding_and_exit_3(
    unprivileged: list[str], shared_dir: Path, suffix: str
) -> None:
    part = _partition(shared_dir)
    hidden = part / f"{MID}.{suffix}"
    hidden.chmod(0)
    verify = _kdump(unprivileged, "verify", "--format", "json", str(part))
    assert verify.returncode == ExitCode.UNREADABLE, (verify.stdout, verify.stderr)
    assert "Traceback" not in verify.stderr
    rows = [json.loads(line) for line in verify.stdout.splitlines() if line.strip()]
    findings = [(r["code"], r["file"]) for r in rows if r["type"] == "finding"]
    assert ("unreadable-file", str(hidden)) in findings, findings
    # The file is there, only unreadable: nothing may call it absent (before: orphan-index for the
    # indexes beside an unreadable log, index-missing with a reindex hint for an unreadable index).
    assert not [f for f in findings if f[0] in {"orphan-index", "index-missing"}], findings
    assert rows[-1]["scope"] == "overall"

    alone = _kdump(unprivileged, "dump", str(hidden))
    assert alone.returncode == ExitCode.UNREADABLE, (alone.stdout, alone.stderr)
    assert "Traceback" not in alone.stderr
    assert "Permission denied" in alone.stderr
    assert str(hidden) in alone.stderr

    whole = _kdump(unprivileged, "dump", "--format", "json", str(part))
    assert whole.returncode == ExitCode.UNREADABLE, (whole.stdout[-2000:], whole.stderr)
    assert "Traceback" not in whole.stderr
    assert str(hidden) in whole.stderr
    dumped = [json.loads(line) for line in whole.stdout.splitlines() if line.strip()]
    assert dumped, "the readable segments are still dumped"
