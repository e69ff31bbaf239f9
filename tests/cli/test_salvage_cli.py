"""`kdump salvage` on the command line: exit codes, the text and JSON reports, refusals, read-only input."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from builders import build_partition
from click.testing import Result
from corruptions import chmod_read_only, chmod_writable, copy_tree, flip_body_byte, run_kdump, tree_state

Kdump = Callable[..., Result]


def _damaged(tmp_path: Path) -> Path:
    part = tmp_path / "in" / "orders-0"
    logs = build_partition(part, segments=2, batches_per_segment=4, records_per_batch=10)
    flip_body_byte(1).apply(logs[0])  # the second batch of the first segment: offsets 10..19
    return part


def test_a_damaged_partition_exits_0_and_says_what_was_lost(kdump: Kdump, tmp_path: Path) -> None:
    part = _damaged(tmp_path)
    out = tmp_path / "out"
    result = kdump("salvage", str(part), "--out", str(out), "--format", "text")
    # Exit 0: everything that verifies was written; the loss is the report's to say, and a printed
    # `salvage ... && trim-tail --apply ...` goes on to the trim.
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "damaged region 1: " in text
    assert "lost offsets: 10..19 (10 offsets)" in text
    assert "lost for good: 10..19" in text
    assert "records: 70 recovered (0 control)" in text
    # verify's own verdict on the clean partition, as `kdump verify` of it gives it: the lost
    # offsets are a hole there.
    assert "verify: 0 errors, 1 warnings" in text
    assert "offset-hole: " in text
    assert "offsets 10..19 are missing" in text
    assert 'write.format("kafka")' in text
    assert sorted(p.name for p in out.iterdir()) == [
        "orders-0",
        "partial-unverified.jsonl",
        "records.jsonl",
        "records.parquet",
        "report.json",
    ]
    report = json.loads((out / "report.json").read_text())
    assert report["lost_offsets"] == [{"first": 10, "last": 19}]
    assert report["regions"][0]["recovered_after"]["how"] == {"framing": 2, "intact": 4}


def test_an_intact_partition_exits_0(kdump: Kdump, tmp_path: Path) -> None:
    part = tmp_path / "in" / "orders-0"
    build_partition(part, segments=2)
    result = kdump("salvage", str(part), "--out", str(tmp_path / "out"), "--format", "json", "--no-parquet")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["type"] == "salvage-report"
    assert report["lost_offsets"] == []
    assert report["records"]["parquet"] is None
    assert not (tmp_path / "out" / "records.parquet").exists()


def test_records_jsonl_holds_dump_json_record_lines(kdump: Kdump, corpus_root: Path, tmp_path: Path) -> None:
    part = corpus_root / "kafka-3.8.0" / "txn-1"
    assert kdump("salvage", str(part), "--out", str(tmp_path / "out")).exit_code == 0
    dumped = kdump("dump", "--records", "--format", "json", "--jobs", "1", str(part)).stdout
    records = [line for line in dumped.splitlines() if json.loads(line)["type"] == "record"]
    assert (tmp_path / "out" / "records.jsonl").read_text().splitlines() == records
    assert any('"control":{"type":"COMMIT"' in line for line in records)


def test_a_non_empty_out_is_refused_with_exit_4(kdump: Kdump, tmp_path: Path) -> None:
    part = _damaged(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "precious").write_text("keep")
    result = run_kdump("salvage", str(part), "--out", str(out))
    assert result.returncode == 4
    assert "not empty" in result.stderr
    assert [p.name for p in out.iterdir()] == ["precious"]


def test_a_log_dir_is_not_a_partition(kdump: Kdump, tmp_path: Path) -> None:
    part = _damaged(tmp_path)
    result = kdump("salvage", str(part.parent), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "not a partition directory" in result.stderr


def test_a_missing_input_exits_3(kdump: Kdump, tmp_path: Path) -> None:
    result = kdump("salvage", str(tmp_path / "nope-0"), "--out", str(tmp_path / "out"))
    assert result.exit_code == 3


def test_a_read_only_input_is_read_and_left_as_it_was(corpus_root: Path, tmp_path: Path) -> None:
    part = copy_tree(corpus_root / "kafka-3.8.0" / "timestamps-0", tmp_path / "in" / "timestamps-0")
    flip_body_byte(2).apply(next(iter(sorted(part.glob("*.log")))))
    chmod_read_only(part)
    before = tree_state(part)
    try:
        result = run_kdump("salvage", str(part), "--out", str(tmp_path / "out"))
        assert result.returncode == 0, result.stderr  # written whole: the loss is in the report
        assert tree_state(part) == before
    finally:
        chmod_writable(part)


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_names_the_outputs(kdump: Kdump, flag: str) -> None:
    text = kdump("salvage", flag).stdout
    for word in ("records.jsonl", "records.parquet", "report.json", "partial-", "--out"):
        assert word in text


def test_a_leftover_segment_is_named_in_the_report(kdump: Kdump, tmp_path: Path) -> None:
    part = tmp_path / "in" / "orders-0"
    logs = build_partition(part, segments=2)
    logs[0].rename(logs[0].with_name(logs[0].name + ".deleted"))
    result = kdump("salvage", "--no-parquet", str(part), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0  # the broker deletes a .deleted segment: the report names it
    assert f"not read: {logs[0]}.deleted" in result.stdout
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["not_read"] == [f"{logs[0]}.deleted"]
