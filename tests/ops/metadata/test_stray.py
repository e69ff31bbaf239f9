"""`kdump verify` reports a partition whose topic id the metadata log beside it does not know."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

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
