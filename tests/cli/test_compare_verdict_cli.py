"""`kdump compare` refuses partitions of different topics: a finding, exit 1, never "agree"."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from replica_sets import copy_partition

from kdump.formats.checkpoints import encode_partition_metadata

Run = Callable[..., Any]


@pytest.fixture
def two_topics(corpus_root: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The same real partition on two brokers, the second's partition.metadata naming another topic id
    (a topic deleted and re-created under the same name)."""
    src = corpus_root / "kafka-3.8.0" / "c-none-0"
    a = copy_partition(src, tmp_path / "broker1" / "c-none-0")
    b = copy_partition(src, tmp_path / "broker2" / "c-none-0")
    (b / "partition.metadata").write_bytes(encode_partition_metadata(uuid.UUID(int=0xC0FFEE)))
    return a, b


def test_text_names_the_mismatch_and_exits_1(kdump: Run, two_topics: tuple[Path, Path]) -> None:
    a, b = two_topics
    result = kdump("compare", "--format", "text", str(a), str(b))
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert any(
        line.strip().startswith(f"ERROR topic-id-mismatch at {b / 'partition.metadata'}:") for line in lines
    ), result.stdout
    assert "replicas agree" not in result.stdout
    assert "vs" not in result.stdout
    assert lines[-1] == (
        "Total: 1 partitions: 0 agree, 0 diverge, 0 incomplete, 1 not compared (different topic ids); exit 1"
    )


def test_log_dirs_matched_by_name_are_refused_in_json(kdump: Run, two_topics: tuple[Path, Path]) -> None:
    a, b = two_topics
    result = kdump("compare", "--format", "json", str(a.parent), str(b.parent))
    assert result.exit_code == 1, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    [finding] = [r for r in rows if r["type"] == "finding"]
    assert finding["code"] == "topic-id-mismatch"
    assert finding["severity"] == "error"
    assert not [r for r in rows if r["type"] in ("divergence", "truncation")]
    partition, overall = rows[-2], rows[-1]
    assert partition["refused"] is True
    assert partition["agree"] is False
    assert overall["refused"] == 1
    assert overall["agree"] == 0
    assert overall["exit_code"] == 1


def test_fleet_rows_carry_the_refusal(two_topics: tuple[Path, Path]) -> None:
    from kdump.model.partition import PartitionDir
    from kdump.ops.replicas.compare import compare_partition
    from kdump.spark.compare import COLUMNS, comparison_rows

    a, b = two_topics
    rows = comparison_rows(compare_partition([PartitionDir.load(a), PartitionDir.load(b)], [str(a), str(b)]))
    [row] = rows
    assert row["kind"] == "topic-id-mismatch"
    assert (row["replica_a"], row["replica_b"]) == (str(a), str(b))
    assert set(row) == {name for name, _ in COLUMNS}


def test_nothing_readable_is_exit_3_not_an_internal_error(kdump: Run, tmp_path: Path) -> None:
    result = kdump("compare", str(tmp_path / "gone1"), str(tmp_path / "gone2"))
    assert result.exit_code == 3, result.output
    assert result.stdout.splitlines()[-1] == "Total: 0 partitions: 0 agree, 0 diverge, 0 incomplete; exit 3"
