"""Topic configs replayed from a real KRaft metadata log, and the index interval reindex uses."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from kdump.ops.common.topic_config import IntervalResolver, topic_configs

Run = Callable[..., Result]


def _metadata(corpus_root: Path) -> Path:
    meta = corpus_root / "kafka-3.8.0" / "__cluster_metadata-0"
    if not meta.is_dir():
        pytest.skip("__cluster_metadata-0 is not in this corpus")
    return meta


def test_topic_configs_are_replayed_in_order(corpus_root: Path) -> None:
    configs = topic_configs(_metadata(corpus_root))
    # Corpus README: idx-dense has index.interval.bytes=100, big-record max.message.bytes=8388608.
    assert configs["idx-dense"]["index.interval.bytes"] == "100"
    assert configs["big-record"]["max.message.bytes"] == "8388608"
    # compacted was deleted and re-created once; its final configs are the re-created topic's.
    assert configs["compacted"]["cleanup.policy"] == "compact"
    assert "index.interval.bytes" not in configs.get("c-none", {})


def test_resolver_prefers_explicit_then_topic_then_default(corpus_root: Path, tmp_path: Path) -> None:
    meta = _metadata(corpus_root)
    log_dir = meta.parent
    assert IntervalResolver(None).for_partition(log_dir / "idx-dense-0", log_dir)[0] == 100
    assert IntervalResolver(None).for_partition(log_dir / "c-none-0", log_dir)[0] == 4096
    assert IntervalResolver(512).for_partition(log_dir / "idx-dense-0", log_dir) == (
        512,
        "--index-interval-bytes",
    )
    # A copy of the partition outside any log dir: the metadata log must be named.
    assert IntervalResolver(None).for_partition(tmp_path / "idx-dense-0", None)[0] == 4096
    assert IntervalResolver(None, meta).for_partition(tmp_path / "idx-dense-0", None)[0] == 100


def test_reindex_uses_the_topics_interval(full_corpus: Path, tmp_path: Path, kdump: Run) -> None:
    log_dir = tmp_path / "data"
    log_dir.mkdir()
    (log_dir / "meta.properties").write_bytes(
        (full_corpus / "kafka-3.8.0" / "_logdir-files" / "meta.properties").read_bytes()
    )
    for name in ("idx-dense-0", "__cluster_metadata-0"):
        shutil.copytree(full_corpus / "kafka-3.8.0" / name, log_dir / name)
    # The broker wrote idx-dense's indexes with interval 100: read from the metadata log, the
    # rebuild is byte-identical, so there is nothing to do.
    result = kdump("reindex", str(log_dir / "idx-dense-0"))
    assert result.exit_code == 0, result.stdout
    # Given the default instead, the recovery rule would change most entries.
    result = kdump("reindex", "--rebuild-all", "--index-interval-bytes", "4096", str(log_dir / "idx-dense-0"))
    assert result.exit_code == 1
    assert "index.interval.bytes 4096 (--index-interval-bytes)" in result.stdout
