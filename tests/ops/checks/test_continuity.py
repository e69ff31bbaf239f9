"""Offset holes: an error in a topic that is not compacted, legal where healthy brokers leave gaps.

The holes are made the way they happen: a segment of a real partition goes missing (a copy that
lost a file, a trim that kept the later segments). The cleanup policy comes from the real KRaft
metadata log beside the partition, the log dir's cleaner checkpoint, or the cleaner's own mark in
the batches.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from builders import build_partition
from corruptions import log_entries

from kdump.findings import Finding, Severity
from kdump.formats.checkpoints import encode_offset_checkpoint
from kdump.model.log_dir import discover
from kdump.model.partition import PartitionDir
from kdump.ops.checks.continuity import cleanup_policy
from kdump.ops.checks.segment import check_segment
from kdump.ops.checks.verify import VerifyOptions, verify_targets

COVERED_CODES = {"offset-hole"}

REPO = Path(__file__).resolve().parents[3]
HEALTHY = ("kafka-3.8.0", "kafka-3.8.0-running-copy", "kafka-3.8.0-zk-legacy")


def _findings(path: Path) -> list[Finding]:
    reports = verify_targets([discover(str(path))], VerifyOptions(jobs=1, allow_empty=True))
    return [f for r in reports for f in r.findings]


def _holes(path: Path) -> list[tuple[int | None, int, Severity]]:
    return [(f.offset, f.details["gap"], f.severity) for f in _findings(path) if f.code == "offset-hole"]


def _drop_segment(part: Path, base: int) -> None:
    for p in part.glob(f"{base:020d}.*"):
        p.unlink()


def _log_dir_with(src_root: Path, tmp_path: Path, *names: str) -> Path:
    log_dir = tmp_path / "data"
    log_dir.mkdir()
    for name in names:
        if not (src_root / name).is_dir():
            pytest.skip(f"{name} is not in this corpus")
        shutil.copytree(src_root / name, log_dir / name)
    return log_dir


def _middle(part: Path) -> int:
    bases = sorted(int(p.name.split(".")[0]) for p in part.glob("*.log"))
    if len(bases) < 3:
        pytest.skip(f"{part.name} has {len(bases)} segments here: the full corpus has more")
    return bases[len(bases) // 2]


def test_a_lost_segment_of_a_delete_topic_is_an_error(corpus_root: Path, tmp_path: Path) -> None:
    """c-none sets no cleanup.policy in the metadata log: the broker default, delete."""
    log_dir = _log_dir_with(corpus_root / "kafka-3.8.0", tmp_path, "c-none-0", "__cluster_metadata-0")
    part = log_dir / "c-none-0"
    assert _holes(part) == []
    base = _middle(part)
    following = sorted(
        int(p.name.split(".")[0]) for p in part.glob("*.log") if int(p.name.split(".")[0]) > base
    )[0]
    _drop_segment(part, base)
    assert _holes(part) == [(base, following - base, Severity.ERROR)]
    policy, source = cleanup_policy(PartitionDir.load(part), ())
    assert policy == "delete"
    assert "sets no cleanup.policy" in source


def test_a_batch_missing_inside_a_segment_of_a_delete_topic_is_an_error(
    corpus_root: Path, tmp_path: Path
) -> None:
    """timestamps sets no cleanup.policy in the metadata log: the broker default, delete."""
    log_dir = _log_dir_with(corpus_root / "kafka-3.8.0", tmp_path, "timestamps-0", "__cluster_metadata-0")
    part = log_dir / "timestamps-0"
    log = sorted(part.glob("*.log"))[-1]
    data = log.read_bytes()
    entries = log_entries(data)
    assert len(entries) >= 3
    gone = entries[1]
    log.write_bytes(data[: gone.position] + data[gone.end :])
    holes = [f for f in _findings(part) if f.code == "offset-hole"]
    assert [(f.file, f.offset, f.details["gap"], f.severity) for f in holes] == [
        (str(log), gone.base_offset, gone.last_offset - (gone.base_offset or 0) + 1, Severity.ERROR)
    ]
    assert "not compacted" in holes[0].message


def test_a_compacted_topic_may_skip_offsets(corpus_root: Path, tmp_path: Path) -> None:
    """compacted has cleanup.policy=compact in the metadata log: a missing range is the cleaner's."""
    log_dir = _log_dir_with(corpus_root / "kafka-3.8.0", tmp_path, "compacted-0", "__cluster_metadata-0")
    part = log_dir / "compacted-0"
    _drop_segment(part, _middle(part))
    assert _holes(part) == []
    assert cleanup_policy(PartitionDir.load(part), ())[0] == "compact"


def test_without_a_policy_a_hole_is_a_warning_and_the_cleaner_checkpoint_settles_it(tmp_path: Path) -> None:
    part = tmp_path / "orders-3"
    build_partition(part, segments=3, batches_per_segment=4)  # offsets 0..119, segments 0, 40, 80
    assert _holes(part) == []
    _drop_segment(part, 40)
    assert _holes(part) == [(40, 40, Severity.WARNING)]
    (tmp_path / "cleaner-offset-checkpoint").write_bytes(encode_offset_checkpoint([("orders", 3, 80)]))
    assert _holes(part) == []


def test_the_cleaners_mark_in_the_batches_says_compacted() -> None:
    """The bundled sample has no metadata log; its batches hold fewer records than offsets."""
    part = REPO / "samples" / "logdir" / "compacted-sparse-0"
    loaded = PartitionDir.load(part)
    assert cleanup_policy(loaded, ())[0] is None  # the batches are the only witness
    results = [check_segment(seg) for seg in loaded.segments if seg.log is not None]
    policy, source = cleanup_policy(loaded, results)
    assert policy == "compact"
    assert "fewer records than offsets" in source
    assert any(f.code == "offset-gap" for f in _findings(part))  # the gap is there, and legal
    assert _holes(part) == []


def test_healthy_data_has_no_hole(corpus_logdirs: Path) -> None:
    """Every partition a real broker wrote (delete and compacted topics, transactions, idempotent and
    legacy v0/v1 data, a running copy) and the bundled samples: no offset-hole."""
    trees = [corpus_logdirs / name for name in HEALTHY if (corpus_logdirs / name).is_dir()]
    trees.append(REPO / "samples" / "logdir")
    assert trees
    for tree in trees:
        assert [f for f in _findings(tree) if f.code == "offset-hole"] == [], tree
