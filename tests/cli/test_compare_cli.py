"""`kdump compare`: exit codes, the text table, JSON Lines records, log dirs matched by name."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from corruptions import make_log_dir
from replica_sets import append_foreign, batches, copy_partition, cut_at_batch, write_epochs

Run = Callable[..., Any]


@pytest.fixture
def pair(corpus_root: Path, tmp_path: Path) -> tuple[Path, Path, int]:
    """txn-1 on two brokers after an unclean election: the second wrote epoch 1 over the first's tail."""
    src = corpus_root / "kafka-3.8.0" / "txn-1"
    old = copy_partition(src, tmp_path / "broker1" / "txn-1")
    new = copy_partition(src, tmp_path / "broker2" / "txn-1")
    cut = cut_at_batch(new, -2)
    append_foreign(new, corpus_root / "kafka-3.8.0" / "timestamps-0", 3, epoch=1)
    write_epochs(new, [(0, batches(old)[0][1].base_offset or 0), (1, cut)])
    return old, new, cut


def objects(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_agreeing_replicas_exit_0(kdump: Run, corpus_root: Path, tmp_path: Path) -> None:
    src = corpus_root / "kafka-3.8.0" / "txn-1"
    a = copy_partition(src, tmp_path / "broker1" / "txn-1")
    b = copy_partition(src, tmp_path / "broker2" / "txn-1")
    result = kdump("compare", "--format", "text", str(a), str(b))
    assert result.exit_code == 0, result.output
    assert "replicas agree" in result.stdout
    assert result.stdout.splitlines()[-1] == "Total: 1 partitions: 1 agree, 0 diverge, 0 incomplete; exit 0"


def test_conflict_text_and_exit_1(kdump: Run, pair: tuple[Path, Path, int]) -> None:
    old, new, cut = pair
    result = kdump("compare", "--format", "text", "--leader", str(new), str(old), str(new))
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert any(line.strip().startswith(f"conflict  {cut}..") for line in lines), result.stdout
    truncation = next(line for line in lines if line.strip().startswith("if "))
    assert f"{old} truncates to {cut}" in truncation
    assert f"kdump dump --records --from-offset {cut}" in truncation


def test_json_records(kdump: Run, pair: tuple[Path, Path, int]) -> None:
    old, new, cut = pair
    result = kdump("compare", "--format", "json", "--leader", str(new), str(old), str(new))
    assert result.exit_code == 1
    rows = objects(result.stdout)
    [d] = [r for r in rows if r["type"] == "divergence"]
    assert d["kind"] == "conflict"
    assert d["first_offset"] == cut
    assert d["replicas"] == [str(old), str(new)]
    [t] = [r for r in rows if r["type"] == "truncation"]
    assert t["replica"] == str(old)
    assert t["truncate_to"] == cut
    assert t["records_removed"] > 0
    assert rows[-1] == {
        "type": "summary",
        "file": None,
        "scope": "overall",
        "partitions": 1,
        "agree": 0,
        "diverge": 1,
        "incomplete": 0,
        "refused": 0,
        "exit_code": 1,
    }


def test_dump_command_prints_what_truncation_removes(kdump: Run, pair: tuple[Path, Path, int]) -> None:
    old, new, _cut = pair
    rows = objects(kdump("compare", "--format", "json", "--leader", str(new), str(old), str(new)).stdout)
    [t] = [r for r in rows if r["type"] == "truncation"]
    argv = t["dump_command"].split()[1:]
    dumped = kdump(*argv[:-1], "--format", "json", argv[-1])
    assert dumped.exit_code == 0
    records = [r for r in objects(dumped.stdout) if r["type"] == "record"]
    assert len(records) == t["records_removed"]
    assert records[0]["offset"] == t["first_removed_offset"]


def test_without_leader_both_ways(kdump: Run, pair: tuple[Path, Path, int]) -> None:
    old, new, _ = pair
    rows = objects(kdump("compare", "--format", "json", str(old), str(new)).stdout)
    assert sorted((r["leader"], r["replica"]) for r in rows if r["type"] == "truncation") == sorted(
        [(str(old), str(new)), (str(new), str(old))]
    )


def test_log_dirs_are_matched_by_partition_name(kdump: Run, corpus_root: Path, tmp_path: Path) -> None:
    base = corpus_root / "kafka-3.8.0"
    one = make_log_dir(tmp_path / "b1", {"txn-1": base / "txn-1", "c-none-0": base / "c-none-0"})
    two = make_log_dir(tmp_path / "b2", {"txn-1": base / "txn-1", "timestamps-0": base / "timestamps-0"})
    for p in two.rglob("*"):
        p.chmod(p.stat().st_mode | 0o200)
    cut_at_batch(two / "txn-1", -1)
    result = kdump("compare", "--format", "json", str(one), str(two))
    assert result.exit_code == 1
    rows = objects(result.stdout)
    assert {r["partition"] for r in rows if r["type"] == "divergence"} == {"txn-1"}
    # One line for every partition without a second replica, not a line each.
    notes = [line for line in result.stderr.splitlines() if "no other replica" in line]
    assert notes == [
        "kdump: 2 partitions not compared, no other replica of them was given: c-none-0, timestamps-0"
    ]


def test_unreadable_replica_exits_3(kdump: Run, corpus_root: Path, tmp_path: Path) -> None:
    a = copy_partition(corpus_root / "kafka-3.8.0" / "txn-1", tmp_path / "b1" / "txn-1")
    result = kdump("compare", str(a), str(tmp_path / "missing" / "txn-1"))
    assert result.exit_code == 3
    assert "no such file or directory" in result.stderr


def test_damaged_replica_exits_3_and_says_what_was_not_compared(
    kdump: Run, corpus_root: Path, tmp_path: Path
) -> None:
    src = corpus_root / "kafka-3.8.0" / "txn-1"
    a = copy_partition(src, tmp_path / "b1" / "txn-1")
    b = copy_partition(src, tmp_path / "b2" / "txn-1")
    log, victim = batches(b)[-1]
    data = bytearray(log.read_bytes())
    data[victim.position + 70] ^= 0x01
    log.write_bytes(bytes(data))
    result = kdump("compare", "--format", "json", str(a), str(b))
    assert result.exit_code == 3
    rows = objects(result.stdout)
    [u] = [r for r in rows if r["type"] == "uncomparable"]
    assert (u["replica"], u["first_offset"]) == (str(b), victim.base_offset)
    assert [r["code"] for r in rows if r["type"] == "finding"] == ["crc-mismatch"]
    assert not [r for r in rows if r["type"] == "divergence"]


def test_one_path_is_a_usage_error(kdump: Run, tmp_path: Path) -> None:
    result = kdump("compare", str(tmp_path))
    assert result.exit_code == 2


def test_leader_given_as_its_log_dir(kdump: Run, corpus_root: Path, tmp_path: Path) -> None:
    base = corpus_root / "kafka-3.8.0"
    one = make_log_dir(tmp_path / "b1", {"txn-1": base / "txn-1"})
    two = make_log_dir(tmp_path / "b2", {"txn-1": base / "txn-1"})
    for p in two.rglob("*"):
        p.chmod(p.stat().st_mode | 0o200)
    cut = cut_at_batch(two / "txn-1", -1)
    rows = objects(kdump("compare", "--format", "json", "--leader", str(two), str(one), str(two)).stdout)
    [t] = [r for r in rows if r["type"] == "truncation"]
    assert (t["leader"], t["replica"], t["truncate_to"]) == (str(two / "txn-1"), str(one / "txn-1"), cut)
    stray = kdump("compare", "--leader", str(tmp_path / "elsewhere"), str(one), str(two))
    assert "not one of the replicas of txn-1" in stray.stderr


def test_legacy_replicas_fall_back_to_the_high_watermark(
    kdump: Run, corpus_root: Path, tmp_path: Path
) -> None:
    """v0 messages carry no leader epoch: a follower truncates to its high watermark, which the
    log dir's replication-offset-checkpoint holds."""
    from kdump.formats.checkpoints import encode_offset_checkpoint

    src = corpus_root / "kafka-3.8.0-zk-legacy" / "legacy-v0-none-0"
    one = make_log_dir(tmp_path / "b1", {"legacy-v0-none-0": src})
    two = make_log_dir(tmp_path / "b2", {"legacy-v0-none-0": src})
    for p in one.rglob("*"):
        p.chmod(p.stat().st_mode | 0o200)
    every = batches(one / "legacy-v0-none-0")
    high_watermark = every[len(every) // 2][1].last_offset
    (two / "replication-offset-checkpoint").write_bytes(
        encode_offset_checkpoint([("legacy-v0-none", 0, high_watermark)])
    )
    cut_at_batch(one / "legacy-v0-none-0", -5)
    rows = objects(kdump("compare", "--format", "json", "--leader", str(one), str(one), str(two)).stdout)
    [t] = [r for r in rows if r["type"] == "truncation"]
    assert t["method"] == "high-watermark"
    assert t["truncate_to"] == high_watermark
    assert t["first_removed_offset"] == high_watermark
    assert t["records_removed"] == every[-1][1].last_offset - high_watermark + 1
    # Without the checkpoint the high watermark is not known, and the output says so.
    (two / "replication-offset-checkpoint").unlink()
    text = kdump("compare", "--format", "text", "--leader", str(one), str(one), str(two)).stdout
    assert "which is not known here" in text


def test_rich_tables(kdump: Run, pair: tuple[Path, Path, int]) -> None:
    old, new, cut = pair
    result = kdump("compare", "--format", "rich", str(old), str(new))
    assert result.exit_code == 1
    assert "partition txn-1" in result.stdout
    assert "conflict" in result.stdout
    assert f"{cut}.." in result.stdout
