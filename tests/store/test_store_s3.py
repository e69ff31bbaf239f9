"""The read-only commands on s3:// (a real S3 server, see tests/s3_server.py) give exactly what the
same files give locally: every finding, every batch and record, every seek answer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from corpus import CORPUS_DIRS


@pytest.fixture(scope="module")
def uploaded(s3_store: Any, corpus_root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The corpus log dirs (without their oracles) locally and in the store."""
    local = tmp_path_factory.mktemp("s3copy") / "logs"
    for name in CORPUS_DIRS:
        shutil.copytree(corpus_root / name, local / name, ignore=shutil.ignore_patterns("expected"))
    return local, s3_store.upload(local, "store-tests/logs")


def _same(kdump: Any, local: Path, url: str, *args: str) -> str:
    """Run a command on the local path and on its URL; both outputs and exit codes must agree."""
    here = kdump(*args, str(local))
    there = kdump(*args, url)
    assert there.exit_code == here.exit_code, there.output
    assert there.stdout.replace(url, "LOC") == here.stdout.replace(str(local), "LOC")
    return there.stdout


@pytest.mark.parametrize("name", CORPUS_DIRS)
def test_verify_on_s3_equals_local(kdump: Any, uploaded: tuple[Path, str], name: str) -> None:
    local, url = uploaded
    out = _same(kdump, local / name, f"{url}/{name}", "verify", "--format", "json", "--fail-on", "info")
    rows = [json.loads(line) for line in out.splitlines()]
    assert any(r["type"] == "summary" for r in rows)
    # Findings and rows name the remote path as given.
    assert all(r["file"].startswith(f"{url}/{name}") for r in rows if r.get("file"))


def test_verify_deep_on_s3_equals_local(kdump: Any, uploaded: tuple[Path, str]) -> None:
    local, url = uploaded
    _same(kdump, local, url, "verify", "--deep", "--format", "json", "--fail-on", "info")


def _partitions(local: Path) -> list[Path]:
    return sorted(p for p in local.glob("*/*") if p.is_dir() and any(p.glob("*.log")))


def test_dump_records_on_s3_equals_local(kdump: Any, uploaded: tuple[Path, str]) -> None:
    local, url = uploaded
    parts = _partitions(local)
    assert parts
    for part in parts:
        rel = part.relative_to(local).as_posix()
        out = _same(kdump, part, f"{url}/{rel}", "dump", "--records", "--format", "json")
        assert '"type":"record"' in out or '"type":"batch"' in out or "summary" in out


def test_dump_batches_text_on_s3_equals_local(kdump: Any, uploaded: tuple[Path, str]) -> None:
    local, url = uploaded
    for part in _partitions(local):
        rel = part.relative_to(local).as_posix()
        _same(kdump, part, f"{url}/{rel}", "dump", "--format", "text")


@pytest.mark.parametrize("when", ["earliest", "latest", "max-timestamp", "1795297245500"])
def test_seek_on_s3_equals_local(kdump: Any, uploaded: tuple[Path, str], when: str) -> None:
    local, url = uploaded
    for part in _partitions(local):
        rel = part.relative_to(local).as_posix()
        here = kdump("seek-by-time", "--format", "json", when, str(part))
        there = kdump("seek-by-time", "--format", "json", when, f"{url}/{rel}")
        assert there.exit_code == here.exit_code
        a = json.loads(here.stdout.replace(str(part), "LOC"))
        b = json.loads(there.stdout.replace(f"{url}/{rel}", "LOC"))
        if a["used_mtime"]:
            # No batch has a timestamp, so the broker's rule falls back to the file's modification
            # time; an object store keeps the upload's time instead: only that may differ.
            assert b["used_mtime"]
            for row in (a, b):
                for key in (
                    "segment_largest_timestamp",
                    "notes",
                    "offset",
                    "timestamp",
                    "segment",
                    "position",
                ):
                    row.pop(key, None)
        assert a == b


def test_missing_url_is_unreadable(kdump: Any, uploaded: tuple[Path, str]) -> None:
    _local, url = uploaded
    result = kdump("verify", f"{url}/no-such-dir")
    assert result.exit_code == 3
    assert "no such file or directory" in result.stderr


@pytest.mark.parametrize("command", ["reindex", "trim-tail", "restore"])
def test_repairs_refuse_urls(kdump: Any, uploaded: tuple[Path, str], command: str) -> None:
    _local, url = uploaded
    result = kdump(command, f"{url}/kafka-3.8.0")
    assert result.exit_code == 3
    assert "repairs local files only" in result.stderr
    assert result.stderr.count(".") <= 3  # one sentence


def test_coverage_counts_bytes_present(kdump: Any, uploaded: tuple[Path, str]) -> None:
    """The summary's bytes (present and checked) are the same remote as local."""
    local, url = uploaded
    name = CORPUS_DIRS[0]
    here = [json.loads(x) for x in kdump("verify", "--format", "json", str(local / name)).stdout.splitlines()]
    there = [json.loads(x) for x in kdump("verify", "--format", "json", f"{url}/{name}").stdout.splitlines()]
    pick = [(r["size"], r["valid_bytes"]) for r in here if r["type"] == "summary" and r["file"]]
    assert pick
    assert pick == [(r["size"], r["valid_bytes"]) for r in there if r["type"] == "summary" and r["file"]]
    assert any(size for size, _ in pick)
