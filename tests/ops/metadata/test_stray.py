"""`kdump verify` reports a partition whose topic id the metadata log beside it does not know."""

from __future__ import annotations

import os
import shutil
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from corpus import require_full_corpus

from kdump.formats.checkpoints import encode_partition_metadata
from kdump.model.partition import PartitionDir
from kdump.ops.metadata.stray import topic_id_findings

COVERED_CODES = {"topic-id-unknown"}


def _log_dir(tmp_path: Path) -> Path:
    src = require_full_corpus() / "kafka-3.8.0"
    out = tmp_path / "data"
    out.mkdir()
    for name in ("__cluster_metadata-0", "c-none-0", "txn-0"):
        shutil.copytree(src / name, out / name)
    return out


def test_known_topic_ids_are_quiet(tmp_path: Path) -> None:
    log_dir = _log_dir(tmp_path)
    for name in ("c-none-0", "txn-0", "__cluster_metadata-0"):
        assert topic_id_findings(PartitionDir.load(log_dir / name)) == []


def test_recreated_topic_is_reported(tmp_path: Path) -> None:
    log_dir = _log_dir(tmp_path)
    (log_dir / "txn-0" / "partition.metadata").write_bytes(encode_partition_metadata(uuid.UUID(int=9)))
    found = topic_id_findings(PartitionDir.load(log_dir / "txn-0"))
    assert [f.code for f in found] == ["topic-id-unknown"]
    assert "-stray" in found[0].message


def test_verify_reports_it(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from kdump.cli import cli

    log_dir = _log_dir(tmp_path)
    shutil.copytree(log_dir / "c-none-0", log_dir / "c-none-7")
    result = CliRunner().invoke(cli, ["verify", str(log_dir / "c-none-7")])
    assert result.exit_code == 1, result.output
    assert "topic-id-unknown" in result.output


def test_verify_lists_the_metadata_log_once_per_log_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The image is replayed once per log dir, not looked up again (a listing of `__cluster_metadata-0`
    and a stat of each of its files) for every partition."""
    from kdump.model.log_dir import discover
    from kdump.ops.checks.verify import VerifyOptions, verify_targets

    log_dir = _log_dir(tmp_path)
    for n in range(1, 6):
        shutil.copytree(log_dir / "c-none-0", log_dir / f"c-none-{n}")
    metadata = str(log_dir / "__cluster_metadata-0")
    listed: Counter[str] = Counter()
    real_listdir, real_scandir = os.listdir, os.scandir

    def listdir(path: Any = ".") -> list[str]:
        listed[os.fspath(path)] += 1
        return real_listdir(path)

    def scandir(path: Any = ".") -> Any:  # the discovery lists by readdir with entry types
        listed[os.fspath(path)] += 1
        return real_scandir(path)

    monkeypatch.setattr(os, "listdir", listdir)
    monkeypatch.setattr(os, "scandir", scandir)
    reports = list(verify_targets([discover(str(log_dir))], VerifyOptions(jobs=1)))
    unknown = [r for r in reports if any(f.code == "topic-id-unknown" for f in r.findings)]
    assert len(unknown) == 5  # c-none has one partition: 1-5 are not in the metadata
    # Before: 9 (the discovery's, then one per partition holding partition.metadata, and the replay's).
    assert listed[metadata] <= 3  # the discovery's, the image's stamp, the replay's (when not cached)
