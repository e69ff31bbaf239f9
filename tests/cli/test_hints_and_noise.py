"""Hints that run as printed, and output that shows what to act on (issue: the gate as an on-call meets it).

- salvage exits 0 once it wrote what it could (its report carries the loss), so the printed
  `kdump salvage P && kdump trim-tail --apply P` goes on to the trim (salvage's output in a new
  directory beside the one holding P);
- salvage's report of its clean partition says what `kdump verify` of it says;
- a segment copied out of its partition (`copy.log`) is named by its hint, and trim-tail and salvage
  work on it; a file that holds no segment is refused with exit 5, not the lock's 4;
- `verify --show` / `--quiet`, one line per partition only where something is shown;
- `trim-tail LOGDIR` counts the clean partitions in one line; `restore` takes several backups
  or a backup root; a filtered dump's summary counts what it showed.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from click.testing import Result
from corruptions import make_log_dir, run_kdump, truncate_inside
from hint_shell import printed_hints, shell

from kdump.cli.exit_codes import ExitCode

Kdump = Callable[..., Result]
SAMPLES = Path(__file__).resolve().parents[2] / "samples"
BAD_CRC = SAMPLES / "damaged" / "bad-crc-0"
TORN = SAMPLES / "damaged" / "torn-tail-0"


def _rows(result: Result) -> list[dict[str, object]]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def test_salvage_exits_0_when_it_wrote_what_it_could_and_the_hint_goes_on(tmp_path: Path) -> None:
    part = shutil.copytree(BAD_CRC, tmp_path / "a copy" / "bad-crc-0")
    hints, status = printed_hints(str(part), tmp_path, tmp_path)
    assert status == 1
    assert hints[0] == f"kdump salvage '{part}' && kdump trim-tail --apply '{part}'"
    done = shell(hints[0], tmp_path, tmp_path)
    assert done.returncode == 0, done.stderr
    (out,) = (tmp_path / "a copy.kdump-salvage").glob("bad-crc-0-*")
    report = json.loads((out / "report.json").read_text())
    assert report["lost_offsets"] == [{"first": 2676, "last": 2679}]  # the loss is the report's to say
    assert printed_hints(str(part), tmp_path, tmp_path) == ([], 0)  # and the trim ran


def test_salvage_report_and_verify_agree_on_the_clean_partition(kdump: Kdump, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = kdump("salvage", "--format", "json", "--no-parquet", str(BAD_CRC), "--out", str(out))
    assert result.exit_code == ExitCode.OK, result.output
    said = next(r for r in _rows(result) if r["type"] == "salvage-report")["clean_partition"]["verify"]
    checked = next(
        r
        for r in _rows(kdump("verify", "--format", "json", str(out / "bad-crc-0")))
        if r.get("scope") == "partition"
    )
    assert checked["findings"] == {"error": said["errors"], "warning": said["warnings"], "info": said["info"]}
    assert said["warnings"] == 1  # the lost offsets are a hole in the clean partition, and it says so
    assert [f["code"] for f in said["findings"] if f["severity"] == "warning"] == ["offset-hole"]


def test_a_segment_copied_out_of_its_partition_is_repaired_where_it_is(tmp_path: Path) -> None:
    """In a log dir with other partitions: the hint names the file, never `.` or the log dir."""
    log_dir = make_log_dir(tmp_path / "my data", {"c-none-0": SAMPLES / "logdir" / "c-none-0"})
    copy = log_dir / "copy.log"
    shutil.copyfile(next(TORN.glob("*0547.log")), copy)
    truncate_inside(-1, 30).apply(copy)
    others = _files(log_dir / "c-none-0")
    hints, status = printed_hints("copy.log", log_dir, tmp_path)
    assert status == 1
    assert hints == ["kdump trim-tail --apply copy.log"]
    done = shell(hints[0], log_dir, tmp_path)
    assert done.returncode == 0, done.stderr
    assert printed_hints("copy.log", log_dir, tmp_path) == ([], 0)
    assert _files(log_dir / "c-none-0") == others  # nothing else was planned or cut


def test_salvage_takes_a_segment_given_alone(kdump: Kdump, tmp_path: Path) -> None:
    copy = tmp_path / "copy.log"
    shutil.copyfile(next(BAD_CRC.glob("*.log")), copy)
    result = kdump("salvage", "--no-parquet", str(copy), "--out", str(tmp_path / "out"))
    assert result.exit_code == ExitCode.OK, result.output
    assert "lost for good: 2676..2679" in result.stdout


def test_trim_tail_of_a_file_that_is_no_segment_cannot_repair(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a segment\n")
    result = run_kdump("trim-tail", "--apply", str(notes))  # the real entry point maps the refusal
    assert result.returncode == ExitCode.CANNOT_REPAIR == 5
    assert "is not a segment .log file" in result.stderr
    assert notes.read_text() == "not a segment\n"


def _mixed_log_dir(tmp_path: Path) -> Path:
    return make_log_dir(
        tmp_path / "data",
        {
            "torn-tail-0": TORN,
            "c-none-0": SAMPLES / "logdir" / "c-none-0",
            "txn-1": SAMPLES / "logdir" / "txn-1",
        },
    )


def test_show_warning_shows_what_to_act_on(kdump: Kdump, tmp_path: Path) -> None:
    log_dir = _mixed_log_dir(tmp_path)
    every = kdump("verify", str(log_dir))
    shown = kdump("verify", "--show", "warning", str(log_dir))
    assert shown.exit_code == every.exit_code == 1
    lines = shown.stdout.splitlines()
    assert [line.split()[0] for line in lines] == ["ERROR", "WARNING", "DAMAGED:", "DAMAGED:", "Total:"]
    assert not any("c-none-0" in line or "txn-1" in line for line in lines)  # nothing found there
    assert lines[-1] == every.stdout.splitlines()[-1]  # the total counts everything
    quiet = kdump("verify", "--quiet", str(log_dir)).stdout.splitlines()
    assert [line.split()[0] for line in quiet] == ["ERROR", "DAMAGED:", "DAMAGED:", "Total:"]
    rows = _rows(kdump("verify", "--show", "error", "--format", "json", str(log_dir)))
    assert {r["severity"] for r in rows if r["type"] == "finding"} == {"error"}
    assert {r["scope"] for r in rows if r["type"] == "summary"} == {"partition", "log-dir", "overall"}
    assert sum(1 for r in rows if r.get("scope") == "partition") == 1  # the damaged one only


def test_show_info_on_a_clean_log_dir_and_show_error_print_only_the_total(kdump: Kdump) -> None:
    result = kdump("verify", "--show", "error", str(SAMPLES / "logdir"))
    assert result.exit_code == 0
    assert [line.split(":")[0] for line in result.stdout.splitlines()] == ["Total"]


def test_trim_tail_of_a_log_dir_counts_the_clean_partitions(kdump: Kdump, tmp_path: Path) -> None:
    log_dir = _mixed_log_dir(tmp_path)
    out = kdump("trim-tail", str(log_dir)).stdout.splitlines()
    assert not any(line.endswith(": nothing to trim") for line in out)
    assert "nothing to trim in 2 of 3 partitions" in out
    assert sum(1 for line in out if ": cut at position" in line) == 1


def test_restore_takes_several_backups_and_a_backup_root(kdump: Kdump, tmp_path: Path) -> None:
    log_dir = make_log_dir(tmp_path / "data", {"a-0": TORN, "b-0": TORN})
    damaged = _files(log_dir)
    root = tmp_path / "backups"
    assert kdump("trim-tail", "--apply", "--backup-dir", str(root), str(log_dir)).exit_code == 0
    assert sorted(p.name for p in root.iterdir()) == ["a-0", "b-0"]
    assert _files(log_dir) != damaged
    result = kdump("restore", str(root))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == "restored 6 files from 2 backups"
    assert _files(log_dir) == damaged
    # Two backups given one by one, the same.
    assert kdump("trim-tail", "--apply", "--backup-dir", str(tmp_path / "again"), str(log_dir)).exit_code == 0
    both = kdump("restore", str(tmp_path / "again" / "a-0"), str(tmp_path / "again" / "b-0"))
    assert both.exit_code == 0, both.output
    assert _files(log_dir) == damaged


def test_restore_undoes_two_repairs_of_one_partition_newest_first(kdump: Kdump, tmp_path: Path) -> None:
    log_dir = make_log_dir(tmp_path / "data", {"torn-0": TORN})
    part = log_dir / "torn-0"
    damaged = _files(log_dir)
    assert kdump("trim-tail", "--apply", str(part)).exit_code == 0
    assert kdump("trim-tail", "--to-offset", "600", "--apply", str(part)).exit_code == 0  # the same second
    backups = tmp_path / "data.kdump-backups"
    assert len(list(backups.iterdir())) == 2
    assert kdump("restore", str(backups)).exit_code == 0
    assert _files(log_dir) == damaged


def test_a_filtered_dump_summary_counts_what_it_showed(kdump: Kdump) -> None:
    txn = str(SAMPLES / "logdir" / "txn-1")
    out = kdump("dump", "--records", "--from-offset", "560", "--to-offset", "560", txn).stdout.splitlines()
    assert sum(1 for line in out if line.startswith("| offset: ")) == 1
    assert re.match(r"Summary: shown 1 batches, 1 records, offsets 560\.\.560; of \d+ batches", out[-1]), out[
        -1
    ]
    (summary,) = [
        r
        for r in _rows(
            kdump("dump", "--format", "json", "--records", "--from-offset", "560", "--to-offset", "560", txn)
        )
        if r["type"] == "summary"
    ]
    assert summary["shown"] == {"batches": 1, "records": 1, "first_offset": 560, "last_offset": 560}
    unfiltered = [r for r in _rows(kdump("dump", "--format", "json", txn)) if r["type"] == "summary"]
    assert all("shown" not in r for r in unfiltered)


def _files(root: Path) -> dict[str, bytes]:
    """Every file under `root` (partitions included) with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_undo_a_trim_prints_runs_as_printed_under_a_path_with_a_space(tmp_path: Path) -> None:
    from corruptions import file_hashes

    log_dir = make_log_dir(tmp_path / "broker copies" / "data", {"torn-tail-0": TORN})
    part = log_dir / "torn-tail-0"
    before = file_hashes(part)
    done = shell(f"kdump trim-tail --apply '{part}'", part, tmp_path)
    assert done.returncode == 0, done.stderr
    undo = re.search(r"\(undo: (kdump restore .*)\)$", done.stdout.strip())
    assert undo is not None, done.stdout
    assert file_hashes(part) != before
    undone = shell(undo.group(1), part, tmp_path)
    assert undone.returncode == 0, undone.stderr
    assert file_hashes(part) == before
