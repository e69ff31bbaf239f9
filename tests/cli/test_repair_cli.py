"""`kdump reindex`, `kdump trim-tail` and `kdump restore` on the command line.

Dry run by default (exit 1 when something would change, 0 when nothing would), `--apply` writes
(exit 0) with every replaced byte in the backup dir, JSON rows for scripts, several paths at once,
and the exit codes for usage (2), unreadable paths (3) and refusals (4).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from builders import SegmentBuilder, build_partition, records
from click.testing import Result
from corruptions import (
    append_garbage,
    file_hashes,
    flip_crc_byte,
    log_entries,
    run_kdump,
    shuffle_index_entries,
    truncate_inside,
)

from kdump.ops.repair.safety import MANIFEST

Kdump = Callable[..., Result]
SEG0 = "00000000000000000000"


def _rows(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


@pytest.fixture
def part(tmp_path: Path) -> Path:
    p = tmp_path / "orders-0"
    build_partition(p, segments=2, batches_per_segment=10, value_size=300)
    return p


# --- reindex --------------------------------------------------------------------------------------


def test_reindex_dry_run_then_apply(kdump: Kdump, part: Path, tmp_path: Path) -> None:
    healthy = file_hashes(part)
    assert kdump("reindex", str(part)).exit_code == 0
    shuffle_index_entries(seed=2).apply(part / f"{SEG0}.index")
    damaged = file_hashes(part)
    dry = kdump("reindex", str(part))
    assert dry.exit_code == 1
    assert f"would rewrite {part / SEG0}.index: index:" in dry.stdout
    assert "1 files would change; run again with --apply" in dry.stdout
    assert file_hashes(part) == damaged  # a dry run writes nothing
    backup = tmp_path / "backup"
    done = kdump("reindex", "--apply", "--backup-dir", str(backup), str(part))
    assert done.exit_code == 0
    assert f"rewrote 1 files of {part}; backup in {backup}" in done.stdout
    assert file_hashes(part) == healthy
    manifest = json.loads((backup / MANIFEST).read_text())
    assert manifest["command"] == "reindex"
    assert [s["state"] for s in manifest["steps"]] == ["done"]
    assert kdump("restore", str(backup)).exit_code == 0
    assert file_hashes(part) == damaged


def test_reindex_index_interval_bytes(kdump: Kdump, tmp_path: Path) -> None:
    p = tmp_path / "dense-0"
    seg = SegmentBuilder()
    for k in range(30):
        seg.add_v2(records(2, start_ts=1_700_000_000_000 + 2 * k, value_size=40))
    seg.write(p, interval_bytes=100)
    assert kdump("reindex", "--rebuild-all", "--index-interval-bytes", "100", str(p)).exit_code == 0
    dry = kdump("reindex", "--rebuild-all", str(p))  # the default 4096 would index far fewer batches
    assert dry.exit_code == 1
    assert "missing" not in dry.stdout
    assert "extra" in dry.stdout
    # Without --rebuild-all the dense index stands: verify finds every entry of it correct.
    kept = kdump("reindex", str(p))
    assert kept.exit_code == 0
    assert "verify finds them correct: kept" in kept.stdout


def test_reindex_json_apply_rows(kdump: Kdump, part: Path, tmp_path: Path) -> None:
    (part / f"{SEG0}.timeindex").unlink()
    backup = tmp_path / "backup"
    result = kdump("reindex", "--apply", "--format", "json", "--backup-dir", str(backup), str(part))
    assert result.exit_code == 0
    rows = _rows(result)
    assert rows[0]["type"] == "reindex-change"
    assert rows[0]["kind"] == "timeindex"
    assert rows[0]["exists"] is False
    assert rows[0]["applied"] is True
    assert rows[0]["backup_dir"] == str(backup)
    summary = rows[-1]
    assert str(summary["type"]).endswith("summary")
    assert (summary["files"], summary["applied"], summary["partitions"]) == (1, True, 1)


def test_reindex_several_partitions_get_one_backup_subdir_each(kdump: Kdump, tmp_path: Path) -> None:
    parts = [tmp_path / "a-0", tmp_path / "b-0"]
    for p in parts:
        build_partition(p, segments=1, batches_per_segment=8, value_size=600)
        shuffle_index_entries(seed=4).apply(p / f"{SEG0}.index")
    damaged = [file_hashes(p) for p in parts]
    backup = tmp_path / "backup"
    assert kdump("reindex", "--apply", "--backup-dir", str(backup), *map(str, parts)).exit_code == 0
    assert sorted(d.name for d in backup.iterdir()) == ["a-0", "b-0"]
    for p, before in zip(parts, damaged, strict=True):
        assert kdump("restore", str(backup / p.name)).exit_code == 0
        assert file_hashes(p) == before


def test_reindex_a_segment_file(kdump: Kdump, part: Path, tmp_path: Path) -> None:
    (part / f"{SEG0}.index").unlink()
    dry = kdump("reindex", str(part / f"{SEG0}.log"))
    assert dry.exit_code == 1
    assert f"{SEG0}.index: create index" in dry.stdout
    assert (
        kdump("reindex", "--apply", "--backup-dir", str(tmp_path / "b"), str(part / f"{SEG0}.log")).exit_code
        == 0
    )
    assert kdump("reindex", str(part)).exit_code == 0


def test_reindex_an_index_file_rebuilds_its_segment(kdump: Kdump, part: Path, tmp_path: Path) -> None:
    healthy = file_hashes(part)
    shuffle_index_entries(seed=3).apply(part / f"{SEG0}.index")
    dry = kdump("reindex", str(part / f"{SEG0}.index"))
    assert dry.exit_code == 1
    assert (
        kdump(
            "reindex", "--apply", "--backup-dir", str(tmp_path / "b"), str(part / f"{SEG0}.index")
        ).exit_code
        == 0
    )
    assert file_hashes(part) == healthy


def test_reindex_unreadable_path_exit_3(kdump: Kdump, part: Path, tmp_path: Path) -> None:
    result = kdump("reindex", str(part), str(tmp_path / "missing-0"))
    assert result.exit_code == 3
    assert "missing-0: no such file or directory" in result.stderr


@pytest.mark.parametrize(
    "args",
    [["reindex"], ["reindex", "--index-interval-bytes", "-5", "x"], ["trim-tail", "--to-offset", "-1", "x"]],
)
def test_usage_errors_exit_2(kdump: Kdump, args: list[str]) -> None:
    assert kdump(*args).exit_code == 2


# --- trim-tail ------------------------------------------------------------------------------------


def test_trim_tail_dry_run_describes_the_cut(kdump: Kdump, part: Path) -> None:
    log = part / "00000000000000000100.log"
    entries = log_entries(log.read_bytes())
    truncate_inside(-1, 20).apply(log)
    size = log.stat().st_size
    dry = kdump("trim-tail", str(part))
    assert dry.exit_code == 1
    last = entries[-1]
    assert dry.stdout.startswith(f"{log}: cut at position {last.position} of {size} (partial-trailing-batch")
    assert f"removes {size - last.position} bytes" in dry.stdout
    assert f"new log end offset {entries[-2].last_offset + 1}" in dry.stdout
    assert "run again with --apply" in dry.stdout
    assert log.stat().st_size == size


def test_trim_tail_json_rows_and_apply(kdump: Kdump, part: Path, tmp_path: Path) -> None:
    log = part / "00000000000000000100.log"
    entries = log_entries(log.read_bytes())
    flip_crc_byte(5).apply(log)
    (row,) = _rows(kdump("trim-tail", "--format", "json", str(part)))
    assert row["type"] == "trim-plan"
    assert row["segment"] == str(log)
    assert row["cut_position"] == entries[5].position
    assert row["removed_batches"] == len(entries) - 5
    assert row["salvageable_batches"] == len(entries) - 6
    assert row["removed_first_offset"] == entries[5].base_offset
    assert row["removed_last_offset"] == entries[-1].last_offset
    assert str(row["reason"]).startswith("crc-mismatch")
    assert row["applied"] is False
    backup = tmp_path / "backup"
    result = kdump("trim-tail", "--apply", "--format", "json", "--backup-dir", str(backup), str(part))
    assert result.exit_code == 0
    (applied,) = _rows(result)
    assert applied["applied"] is True
    assert applied["backup_dir"] == str(backup)
    assert log.stat().st_size == entries[5].position


def test_trim_tail_nothing_to_do(kdump: Kdump, part: Path) -> None:
    result = kdump("trim-tail", str(part))
    assert result.exit_code == 0
    assert result.stdout.strip() == f"{part}: nothing to trim"
    assert kdump("trim-tail", "--apply", str(part)).exit_code == 0
    assert not any(p.name.startswith("kdump-backup") for p in part.parent.iterdir())


def test_trim_tail_a_segment_file(kdump: Kdump, part: Path, tmp_path: Path) -> None:
    log = part / f"{SEG0}.log"
    size = log.stat().st_size
    append_garbage(64, seed=5).apply(log)
    assert kdump("trim-tail", str(log)).exit_code == 1
    assert kdump("trim-tail", "--apply", "--backup-dir", str(tmp_path / "b"), str(log)).exit_code == 0
    assert log.stat().st_size == size


def test_trim_tail_refuses_a_file_that_is_not_a_log(kdump: Kdump, part: Path) -> None:
    before = file_hashes(part)
    result = run_kdump("trim-tail", "--apply", str(part / f"{SEG0}.index"))
    assert result.returncode == 5  # cannot repair: nothing touched, and not the lock's 4
    assert "is not a segment .log file" in result.stderr
    assert file_hashes(part) == before


def test_trim_tail_default_backup_dir_is_outside_the_log_dir(kdump: Kdump, tmp_path: Path) -> None:
    """A broker treats every directory in its log dir as a partition: the backup must not land there."""
    log_dir = tmp_path / "data"
    part = log_dir / "orders-0"
    build_partition(part, segments=2, batches_per_segment=10, value_size=300)
    (log_dir / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=x\n")
    append_garbage(64, seed=6).apply(part / "00000000000000000100.log")
    result = kdump("trim-tail", "--apply", str(part))
    assert result.exit_code == 0
    (backup,) = (tmp_path / "data.kdump-backups").iterdir()
    assert backup.name.startswith("kdump-backup-orders-0-")
    assert f"undo: kdump restore {backup}" in result.stdout
    assert (backup / MANIFEST).exists()
    assert sorted(p.name for p in log_dir.iterdir()) == ["meta.properties", "orders-0"]


# --- restore --------------------------------------------------------------------------------------


def test_restore_lists_what_it_put_back(kdump: Kdump, part: Path, tmp_path: Path) -> None:
    log = part / "00000000000000000100.log"
    flip_crc_byte(-1).apply(log)
    damaged = file_hashes(part)
    backup = tmp_path / "backup"
    assert kdump("trim-tail", "--apply", "--backup-dir", str(backup), str(part)).exit_code == 0
    result = kdump("restore", str(backup))
    assert result.exit_code == 0
    assert f"restored {log}" in result.stdout
    assert result.stdout.splitlines()[-1].startswith("restored ")
    assert file_hashes(part) == damaged


def test_restore_errors(kdump: Kdump, tmp_path: Path) -> None:
    assert kdump("restore", str(tmp_path / "missing")).exit_code == 3  # a path that cannot be read
    empty = tmp_path / "empty"
    empty.mkdir()
    result = kdump("restore", str(empty))
    assert result.exit_code == 3
    assert MANIFEST in result.stderr
