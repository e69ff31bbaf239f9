"""Broker tarballs read in place: the same findings as the unpacked log dir; damage is a finding."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
from corpus import CORPUS_DIRS

# Finding codes this module produces (tests/test_findings_catalog.py).
COVERED_CODES = {"archive-damaged", "archive-member-truncated"}


@pytest.fixture(scope="module")
def log_dir(corpus_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log dir (the first corpus directory, without its oracles) in a directory of its own."""
    root = tmp_path_factory.mktemp("tarballs")
    shutil.copytree(
        corpus_root / CORPUS_DIRS[0], root / "kafka-logs", ignore=shutil.ignore_patterns("expected")
    )
    return root / "kafka-logs"


def _tar(log_dir: Path, name: str) -> Path:
    """`tar c[z]f NAME kafka-logs`, as an incident team packs a broker's log dir."""
    out = log_dir.parent / name
    if name.endswith(".zst"):
        import zstandard

        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w") as tf:
            tf.add(log_dir, arcname=log_dir.name)
        out.write_bytes(zstandard.ZstdCompressor().compress(raw.getvalue()))
    else:
        with tarfile.open(out, "w:gz" if name.endswith(".gz") else "w") as tf:
            tf.add(log_dir, arcname=log_dir.name)
    return out


@pytest.mark.parametrize("name", ["broker1.tar", "broker1.tar.gz", "broker1.tar.zst"])
def test_tarball_verifies_as_its_log_dir(kdump: Any, log_dir: Path, name: str) -> None:
    archive = _tar(log_dir, name)
    here = kdump("verify", "--format", "json", "--deep", "--fail-on", "info", str(log_dir))
    there = kdump("verify", "--format", "json", "--deep", "--fail-on", "info", str(archive))
    assert there.exit_code == here.exit_code
    # Findings name the member as given: broker1.tar.gz/kafka-logs/<partition>/<file>.
    assert there.stdout.replace(f"{archive}/kafka-logs", "LOC") == here.stdout.replace(str(log_dir), "LOC")


def test_tarball_members_dump_and_seek(kdump: Any, log_dir: Path) -> None:
    archive = _tar(log_dir, "dump.tar.gz")
    for part in sorted(p for p in log_dir.iterdir() if p.is_dir() and any(p.glob("*.log"))):
        member = f"{archive}/kafka-logs/{part.name}"
        for args in (
            ("dump", "--records", "--format", "json"),
            ("seek-by-time", "--format", "json", "latest"),
        ):
            here = kdump(*args, str(part))
            there = kdump(*args, member)
            assert there.exit_code == here.exit_code
            assert there.stdout.replace(member, "LOC") == here.stdout.replace(str(part), "LOC")


def _codes(result: Any) -> list[str]:
    import json

    return [r["code"] for r in map(json.loads, result.stdout.splitlines()) if r["type"] == "finding"]


@pytest.mark.parametrize("name", ["cut.tar", "cut.tar.gz", "cut.tar.zst"])
def test_truncated_archive_is_a_finding(kdump: Any, log_dir: Path, name: str) -> None:
    archive = _tar(log_dir, name)
    data = archive.read_bytes()
    archive.write_bytes(data[: len(data) * 2 // 3])
    result = kdump("verify", "--format", "json", str(archive))
    assert result.exit_code == 1, result.output
    codes = _codes(result)
    assert "archive-damaged" in codes


def test_member_cut_short_is_a_finding(kdump: Any, log_dir: Path) -> None:
    archive = _tar(log_dir, "member.tar")
    with tarfile.open(archive) as tf:
        biggest = max((m for m in tf.getmembers() if m.name.endswith(".log")), key=lambda m: m.size)
    # Cut the archive in the middle of the biggest segment's data.
    archive.write_bytes(archive.read_bytes()[: biggest.offset_data + biggest.size // 2])
    result = kdump("verify", "--format", "json", str(archive))
    assert result.exit_code == 1
    codes = _codes(result)
    assert "archive-member-truncated" in codes
    assert "archive-damaged" in codes


def test_damaged_header_is_a_finding(kdump: Any, log_dir: Path) -> None:
    archive = _tar(log_dir, "header.tar")
    with tarfile.open(archive) as tf:
        third = tf.getmembers()[3]
    data = bytearray(archive.read_bytes())
    data[third.offset + 20] ^= 0xFF  # inside the name: the header checksum no longer matches
    archive.write_bytes(bytes(data))
    result = kdump("verify", "--format", "json", str(archive))
    assert result.exit_code == 1
    assert "archive-damaged" in _codes(result)


def test_repairs_refuse_tarballs(kdump: Any, log_dir: Path) -> None:
    archive = _tar(log_dir, "repair.tar.gz")
    for args in (("reindex", str(archive)), ("trim-tail", f"{archive}/kafka-logs/txn-1")):
        result = kdump(*args)
        assert result.exit_code == 3
        assert "repairs local files only" in result.stderr


def test_tarball_on_s3(kdump: Any, s3_store: Any, log_dir: Path) -> None:
    archive = _tar(log_dir, "remote.tar.gz")
    url = s3_store.upload(archive, "tarballs/broker1.tar.gz")
    here = kdump("verify", "--format", "json", str(log_dir))
    there = kdump("verify", "--format", "json", url)
    assert there.exit_code == here.exit_code
    assert there.stdout.replace(f"{url}/kafka-logs", "LOC") == here.stdout.replace(str(log_dir), "LOC")


def test_gnu_tar_archive(kdump: Any, log_dir: Path) -> None:
    """An archive made by GNU tar itself (long names, its own header flavour), when tar is at hand."""
    if shutil.which("tar") is None:
        pytest.skip("no tar command")
    archive = log_dir.parent / "gnu.tar.gz"
    subprocess.run(["tar", "czf", str(archive), "-C", str(log_dir.parent), log_dir.name], check=True)
    here = kdump("verify", "--format", "json", str(log_dir))
    there = kdump("verify", "--format", "json", str(archive))
    assert there.stdout.replace(f"{archive}/kafka-logs", "LOC") == here.stdout.replace(str(log_dir), "LOC")
