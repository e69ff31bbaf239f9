"""`kdump forecast` as an on-call runs it: its exit codes, text, JSON Lines and --image; it writes nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from corpus import require_full_corpus

from kdump.cli.exit_codes import ExitCode
from kdump.formats.filenames import CLEAN_SHUTDOWN_FILE


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    src = require_full_corpus() / "kafka-3.8.0"
    out = tmp_path / "data"
    out.mkdir()
    for name in ("__cluster_metadata-0", "c-none-0", "txn-0"):
        shutil.copytree(src / name, out / name)
    for f in (src / "_logdir-files").iterdir():
        # Without meta.properties the node is unknown: the corpus' metadata assigns it partitions this
        # subset leaves out, which a test that names the node sees created empty.
        if f.name != "meta.properties":
            shutil.copy(f, out / f.name)
    return out


def _kdump(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kdump", *args], capture_output=True, text=True, timeout=120, check=False
    )


def _state(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def test_exit_codes_follow_the_verdict(log_dir: Path) -> None:
    before = _state(log_dir)
    res = _kdump("forecast", str(log_dir))
    assert res.returncode == ExitCode.FORECAST_RECOVERS, res.stderr
    assert "STARTS AFTER RECOVERY" in res.stdout
    assert _state(log_dir) == before  # forecast never writes
    (log_dir / CLEAN_SHUTDOWN_FILE).write_bytes(b'{"version":0,"brokerEpoch":7}')
    assert _kdump("forecast", str(log_dir)).returncode == ExitCode.OK
    (log_dir / CLEAN_SHUTDOWN_FILE).unlink()
    seg = sorted((log_dir / "c-none-0").glob("*.log"))[-1]
    os.truncate(seg, seg.stat().st_size - 10)
    res = _kdump("forecast", str(log_dir))
    assert res.returncode == ExitCode.FORECAST_LOSES, res.stdout
    assert "kdump salvage " in res.stdout
    assert "c-none-0" in res.stdout
    (log_dir / "meta.properties").write_text("version=1\nnode.id=1\n")
    other = log_dir.parent / "data2"
    other.mkdir()
    (other / "meta.properties").write_text("version=1\nnode.id=2\ncluster.id=x\n")
    res = _kdump("forecast", str(log_dir), str(other))
    assert res.returncode == ExitCode.FORECAST_NO_START, res.stdout
    assert "different node ids" in res.stdout


def test_json_lines_and_image(log_dir: Path) -> None:
    res = _kdump("forecast", "--format", "json", str(log_dir))
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert rows[0]["type"] == "forecast"
    assert rows[0]["verdict"] == "starts-after-recovery"
    parts = {r["dir"]: r for r in rows if r["type"] == "partition" and r["action"] != "create-empty"}
    assert parts["c-none-0"]["log_end_offset"] == 3000
    res = _kdump("forecast", "--image", str(log_dir))
    assert res.returncode == 0
    image = json.loads(res.stdout)
    assert {t["name"] for t in image["topics"]} >= {"c-none", "txn"}


def test_groups_hurt_by_a_recovery_cut(tmp_path: Path) -> None:
    src = require_full_corpus() / "kafka-3.8.0"
    log_dir = tmp_path / "data"
    log_dir.mkdir()
    for name in ("__cluster_metadata-0", "__consumer_offsets-0", "c-gzip-0"):
        shutil.copytree(src / name, log_dir / name)
    for f in (src / "_logdir-files").iterdir():
        shutil.copy(f, log_dir / f.name)
    seg = sorted((log_dir / "c-gzip-0").glob("*.log"))[-1]
    os.truncate(seg, seg.stat().st_size - 10)
    res = _kdump("forecast", str(log_dir))
    assert res.returncode == ExitCode.FORECAST_LOSES, res.stdout
    assert "group kdump-cg2 (" in res.stdout, res.stdout
    assert "past log end" in res.stdout, res.stdout
    rows = [
        json.loads(line) for line in _kdump("forecast", "--format", "json", str(log_dir)).stdout.splitlines()
    ]
    hurt = [r for r in rows if r.get("group") == "kdump-cg2" and r.get("topic") == "c-gzip"]
    assert hurt
    assert hurt[0]["out_of_range"] == "past-log-end"
