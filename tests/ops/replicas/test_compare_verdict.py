"""`compare` agrees with `verify` and with the broker: records counted as verify counts them (legacy
wrappers by the messages inside), and partitions of different topics refused, not compared."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from corpus import full_corpus_available, iter_partition_dirs, require_full_corpus, subset_root
from replica_sets import copy_partition

from kdump.formats.checkpoints import encode_partition_metadata
from kdump.model.log_dir import Target
from kdump.model.partition import PartitionDir
from kdump.ops.checks.verify import VerifyOptions, verify_targets
from kdump.ops.replicas.compare import compare_partition, exit_code
from kdump.ops.replicas.replica import load_replica

# Finding codes these tests produce (tests/test_findings_catalog.py checks every code has a test).
COVERED_CODES = frozenset({"topic-id-mismatch"})

LEGACY = "kafka-3.8.0-zk-legacy"


def _verify_records(part: Path) -> int:
    report = next(iter(verify_targets([Target(str(part), part, "partition", None)], VerifyOptions(jobs=1))))
    assert not report.findings, report.findings
    return report.records


def _legacy_partitions(root: Path) -> list[Path]:
    return [p for corpus, p, _ in iter_partition_dirs(root) if corpus == LEGACY]


def _assert_counts_as_verify(parts: list[Path]) -> int:
    wrapped = 0
    for part in parts:
        rep = load_replica(PartitionDir.load(part))
        assert sum(rep.counts) == _verify_records(part), part.name
        if not part.name.startswith("__"):  # not compacted: each batch holds every offset of its range
            spans = [last - base + 1 for base, last in zip(rep.bases, rep.lasts, strict=True)]
            assert rep.counts == spans, part.name
        wrapped += sum(1 for c in rep.counts if c > 1)
    return wrapped


def test_legacy_records_counted_as_verify_counts_them_in_the_bundled_subset(tmp_path: Path) -> None:
    parts = _legacy_partitions(subset_root(tmp_path))
    assert {p.name for p in parts} >= {"legacy-v0-lz4-0", "legacy-v1-lz4-0", "mixed-formats-0"}
    # Compressed wrappers holding several messages each: counting wrappers would count fewer.
    assert _assert_counts_as_verify(parts) > 0


@pytest.mark.skipif(not full_corpus_available(), reason="the full Kafka corpus (../shared/corpus) is absent")
def test_legacy_records_counted_as_verify_counts_them_in_the_full_corpus() -> None:
    parts = _legacy_partitions(require_full_corpus())
    assert "legacy-v0-gzip-0" in {p.name for p in parts}
    assert _assert_counts_as_verify(parts) > 0
    gzip = next(p for p in parts if p.name == "legacy-v0-gzip-0")
    result = compare_partition([PartitionDir.load(gzip), PartitionDir.load(gzip)], ["a", "b"])
    assert [sum(r.counts) for r in result.replicas] == [800, 800]


def _with_topic_id(src: Path, dst: Path, topic_id: uuid.UUID | None) -> Path:
    part = copy_partition(src, dst)
    if topic_id is not None:
        (part / "partition.metadata").write_bytes(encode_partition_metadata(topic_id))
    return part


def test_partitions_of_different_topics_are_refused(corpus_root: Path, tmp_path: Path) -> None:
    src = corpus_root / "kafka-3.8.0" / "txn-1"
    assert (src / "partition.metadata").is_file()
    a = copy_partition(src, tmp_path / "b1" / "txn-1")
    b = _with_topic_id(src, tmp_path / "b2" / "txn-1", uuid.UUID(int=0x1234))
    c = copy_partition(src, tmp_path / "b3" / "txn-1")
    result = compare_partition([PartitionDir.load(p) for p in (a, b, c)], [str(a), str(b), str(c)])
    [finding] = result.findings
    assert finding.code == "topic-id-mismatch"
    assert finding.file == str(b / "partition.metadata")
    assert finding.details["other_replica"] == str(a)
    assert result.refused
    assert not result.agree
    # Not compared: no pair, no divergence, no truncation computed against another topic's leader.
    assert result.pairs == []
    assert result.truncations == []
    assert exit_code([result]) == 1


def test_same_topic_id_or_none_known_is_compared(corpus_root: Path, tmp_path: Path) -> None:
    src = corpus_root / "kafka-3.8.0" / "txn-1"
    a = copy_partition(src, tmp_path / "b1" / "txn-1")
    b = copy_partition(src, tmp_path / "b2" / "txn-1")
    (b / "partition.metadata").unlink()  # a copy without the file cannot tell: compared as before
    result = compare_partition([PartitionDir.load(a), PartitionDir.load(b)], [str(a), str(b)])
    assert not result.refused
    assert result.agree
    assert exit_code([result]) == 0
