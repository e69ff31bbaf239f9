"""Stray segment copies are quarantined into the backup, never answered by cutting good data.

A journey as an on-call walks it: verify names `segment-stray` with `kdump quarantine --apply
PARTITION`; the hint runs as printed through `sh -c` (the real entry point on PATH); verify is then
clean with every offset of the good segments kept; `kdump restore` puts the copy back byte for byte.
A broker holding the lock is refused (exit 4) with nothing moved.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from builders import build_partition
from corruptions import file_hashes, held_lock, run_kdump

from kdump.findings import Finding, Severity
from kdump.model.log_dir import discover
from kdump.ops.checks.verify import VerifyOptions, verify_targets
from kdump.ops.repair.quarantine import apply_quarantine, plan_quarantine
from kdump.store.hints import repair_command

COVERED_CODES = {"segment-stray", "swap-loses-offsets"}


def _findings(path: Path) -> list[Finding]:
    reports = verify_targets([discover(str(path))], VerifyOptions(jobs=1))
    return [f for r in reports for f in r.findings if f.severity >= Severity.WARNING]


def _stray_inside_range(tmp_path: Path) -> tuple[Path, Path]:
    """Segments 0, 60, 120, 180; a copy of segment 0 saved as segment 70 (inside 60's range)."""
    part = tmp_path / "data" / "orders-0"
    logs = build_partition(part, segments=4, batches_per_segment=12, records_per_batch=5)
    (tmp_path / "data" / "meta.properties").write_text("version=1\nnode.id=1\n")
    for ext in (".log", ".index", ".timeindex"):
        shutil.copy(logs[0].with_suffix(ext), part / f"{70:020d}{ext}")
    return part, part / f"{70:020d}.log"


def test_a_copy_inside_another_segments_range_is_one_stray_finding(tmp_path: Path) -> None:
    part, stray = _stray_inside_range(tmp_path)
    found = _findings(part)
    # One finding, no trim-tail --to-offset, no offset-hole for offsets that are present.
    assert [(f.code, f.file, f.offset) for f in found] == [("segment-stray", str(stray), 0)]
    assert found[0].severity == Severity.ERROR
    assert repair_command(found[0]) == f"kdump quarantine --apply {part}"


def test_a_segment_copied_under_no_segment_name_is_stray(tmp_path: Path) -> None:
    part = tmp_path / "orders-0"
    logs = build_partition(part, segments=3, batches_per_segment=12, records_per_batch=5)
    (part / "copy.log").write_bytes(logs[1].read_bytes()[:9000])  # truncated as well
    found = _findings(part)
    assert [(f.code, Path(f.file).name) for f in found] == [("segment-stray", "copy.log")]


def test_a_file_whose_offsets_no_other_segment_holds_is_not_stray(tmp_path: Path) -> None:
    part, _stray = _stray_inside_range(tmp_path)
    for ext in (".log", ".index", ".timeindex"):
        (part / f"{0:020d}{ext}").unlink()  # the only other holder of offsets 0..59
    assert "segment-stray" not in {f.code for f in _findings(part)}
    assert all(p.files == () for p in plan_quarantine(discover(str(part))))


def test_quarantine_moves_the_copy_keeps_every_good_offset_and_restore_undoes_it(tmp_path: Path) -> None:
    part, stray = _stray_inside_range(tmp_path)
    before = file_hashes(part)
    [plan] = plan_quarantine(discover(str(part)))
    assert sorted(p.name for p in plan.files) == [
        f"{70:020d}{ext}" for ext in (".index", ".log", ".timeindex")
    ]
    backup = apply_quarantine(plan)
    assert backup is not None
    assert backup.parent == tmp_path / "data.kdump-backups"
    assert not stray.exists()
    assert _findings(part) == []
    reports = list(verify_targets([discover(str(part))], VerifyOptions(jobs=1)))
    assert (reports[0].first_offset, reports[0].last_offset, reports[0].records) == (0, 239, 240)
    result = run_kdump("restore", str(backup))
    assert result.returncode == 0, result.stderr
    assert file_hashes(part) == before


def test_the_printed_hint_runs_as_printed_and_ends_clean(tmp_path: Path) -> None:
    part, _ = _stray_inside_range(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "kdump").write_text(f'#!/bin/sh\nexec {sys.executable} -m kdump "$@"\n')
    (bin_dir / "kdump").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    verify = run_kdump("verify", "--format", "json", str(part))
    assert verify.returncode == 1
    hints = {r["repair"] for r in map(json.loads, verify.stdout.splitlines()) if r.get("repair")}
    assert hints == {f"kdump quarantine --apply {part}"}
    for hint in hints:
        done = subprocess.run(["sh", "-c", hint], env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    again = run_kdump("verify", str(part))
    assert again.returncode == 0, again.stdout


def test_a_held_lock_is_refused_with_nothing_moved(tmp_path: Path) -> None:
    part, _ = _stray_inside_range(tmp_path)
    (tmp_path / "data" / ".lock").write_bytes(b"")
    before = file_hashes(part)
    with held_lock(tmp_path / "data") as holder:
        result = run_kdump("quarantine", "--apply", str(part))
    assert result.returncode == 4, result.stdout + result.stderr
    assert f"pid {holder.pid}" in result.stderr
    assert file_hashes(part) == before
    assert not (tmp_path / "data.kdump-backups").exists()


def test_the_dry_run_moves_nothing_and_says_what_it_would(tmp_path: Path) -> None:
    part, stray = _stray_inside_range(tmp_path)
    result = run_kdump("quarantine", str(part))
    assert result.returncode == 1
    assert f"would move {stray}" in result.stdout
    assert stray.exists()


@pytest.mark.parametrize("fmt", ["json"])
def test_json_rows(tmp_path: Path, fmt: str) -> None:
    part, stray = _stray_inside_range(tmp_path)
    rows = [json.loads(x) for x in run_kdump("quarantine", "--format", fmt, str(part)).stdout.splitlines()]
    assert rows[-1] == {
        "type": "quarantine-summary",
        "file": None,
        "files": 3,
        "applied": False,
        "partitions": 1,
    }
    assert str(stray) in {r["file"] for r in rows}


def _half_swap(tmp_path: Path) -> tuple[Path, Path]:
    """A `.log.swap` of segment 60 holding only the first half of its batches (a cleaner killed)."""
    from corruptions import log_entries

    part = tmp_path / "data" / "orders-0"
    logs = build_partition(part, segments=4, batches_per_segment=12, records_per_batch=5)
    data = logs[1].read_bytes()
    entries = log_entries(data)
    swap = part / f"{logs[1].name}.swap"
    swap.write_bytes(data[: entries[len(entries) // 2].position])
    return part, swap


def test_a_swap_the_broker_completes_with_fewer_offsets_is_an_error_quarantine_repairs(
    tmp_path: Path,
) -> None:
    part, swap = _half_swap(tmp_path)
    found = _findings(part)
    assert [(f.code, f.file, f.offset, f.severity) for f in found] == [
        ("swap-loses-offsets", str(swap), 90, Severity.ERROR)
    ]
    assert found[0].details["lost"] == 30
    assert repair_command(found[0]) == f"kdump quarantine --apply {part}"
    [plan] = plan_quarantine(discover(str(part)))
    assert plan.files == (swap,)
    backup = apply_quarantine(plan)
    assert backup is not None
    assert _findings(part) == []
    assert run_kdump("restore", str(backup)).returncode == 0
    assert swap.exists()


def test_a_whole_swap_and_a_swap_beside_a_cleaned_file_stay_leftovers(tmp_path: Path) -> None:
    part, swap = _half_swap(tmp_path)
    swap.write_bytes((part / swap.name.removesuffix(".swap")).read_bytes())  # a complete swap: nothing lost
    assert [f.code for f in _findings(part)] == ["leftover-file"]
    swap.write_bytes(swap.read_bytes()[:5000])
    (part / f"{0:020d}.log.cleaned").write_bytes(b"")  # an unfinished split: the broker deletes the swap
    assert [f.code for f in _findings(part)] == ["leftover-file"]
