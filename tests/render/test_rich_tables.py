"""The rich tables people read at a terminal: every partition name, offset and timestamp whole.

Rendered on the real corpus layout to a rich Console of a fixed width (80 and 120 columns, as a
terminal), then read back: each table row's cells are compared with what the data holds. rich cuts
cells with an ellipsis when a table is wider than the terminal; a cut name of three partitions
(`.../kafka-3.8.0/txn…`) cannot tell them apart, and a cut offset is a wrong one.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console

from kdump.findings import Severity
from kdump.formats.batch import BatchHeader, decode_v2_header
from kdump.formats.records import NewRecord, Record, build_v2_batch
from kdump.model.log_dir import discover
from kdump.ops.checks.verify import VerifyOptions, verify_targets
from kdump.ops.dump.files import FileStart
from kdump.ops.dump.stream import DumpOptions, dump_targets
from kdump.render.rich_tty import Col, cell, common_root, fitted_table, printable, verify_table, write_rich

WIDTHS = [80, 120]


def _console(width: int) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    console = Console(
        file=out, width=width, force_terminal=True, color_system=None, markup=False, highlight=False
    )
    return console, out


def _rows(text: str) -> list[list[str]]:
    """The body rows of every table in `text`, as stripped cells (a wrapped row's continuation lines
    have an empty first cell)."""
    rows = []
    for line in text.splitlines():
        if line.startswith("│"):
            rows.append([c.strip() for c in line.strip("│").split("│")])
    return rows


def _check_fits(text: str, width: int) -> None:
    assert "…" not in text, text
    assert max(cell_len(line) for line in text.splitlines()) <= width


@pytest.mark.parametrize("width", WIDTHS)
def test_verify_table_keeps_every_partition_name_and_offsets_whole(width: int, corpus_logdirs: Path) -> None:
    corpus_root = corpus_logdirs
    dirs = [corpus_root / "kafka-3.8.0", corpus_root / "kafka-3.8.0-zk-legacy"]
    reports = list(verify_targets([discover(str(d)) for d in dirs if d.is_dir()], VerifyOptions(jobs=1)))
    assert len(reports) > 3
    console, out = _console(width)
    verify_table(console, reports, 0)
    text = out.getvalue()
    _check_fits(text, width)
    # The title wraps at a space when the table is narrower than it (the bundled subset's names are
    # short): the root it names is still whole.
    assert f"(partitions in {corpus_root})" in " ".join(text.split())
    rows = [r for r in _rows(text) if r[0]]
    # The name relative to the root the partitions share: log dir and partition, which tell the
    # partitions apart (txn-0, txn-1, txn-input-0 ...).
    # A log dir's roll-up row: its name beside its partitions', and what it is.
    names = [
        str(Path(r.label).relative_to(corpus_root)) + ("" if r.is_leaf else " (log dir)") for r in reports
    ]
    assert [r[0] for r in rows] == names
    assert len(set(names)) == len(names)
    header = [
        c.strip()
        for c in next(line for line in text.splitlines() if line.startswith("┃")).strip("┃").split("┃")
    ]
    for report, row in zip(reports, rows, strict=True):
        cells = dict(zip(header, row, strict=True))
        expected = "" if report.first_offset is None else f"{report.first_offset}..{report.last_offset}"
        assert cells["offsets"] == expected
        assert cells["errors"] == str(report.total(Severity.ERROR))
        assert cells["warnings"] == str(report.total(Severity.WARNING))


def test_verify_table_of_one_partition_names_it_by_its_directory(corpus_root: Path) -> None:
    part = corpus_root / "kafka-3.8.0" / "txn-1"
    reports = list(verify_targets([discover(str(part))], VerifyOptions(jobs=1)))
    console, out = _console(80)
    verify_table(console, reports, 0)
    assert _rows(out.getvalue())[0][0] == "txn-1"


def _dump(width: int, part: Path, records: bool, full: bool = True) -> tuple[str, list[object]]:
    events = list(dump_targets([discover(str(part))], DumpOptions(records=records)))
    console, out = _console(width)
    write_rich(iter(events), out, console=console, full_values=full)
    return out.getvalue(), events


@pytest.mark.parametrize("width", WIDTHS)
def test_batch_table_keeps_positions_offsets_and_timestamps_whole(width: int, corpus_root: Path) -> None:
    text, events = _dump(width, corpus_root / "kafka-3.8.0" / "txn-1", records=False)
    _check_fits(text, width)
    batches = [e for e in events if isinstance(e, BatchHeader)]
    rows = [r for r in _rows(text) if r[0]]
    assert len(rows) == len(batches) > 0
    header = [
        c.strip()
        for c in next(line for line in text.splitlines() if line.startswith("┃")).strip("┃").split("┃")
    ]
    for h, row in zip(batches, rows, strict=True):
        cells = dict(zip(header, row, strict=True))
        assert cells["position"] == str(h.position)
        assert cells["offsets"] == f"{h.base_offset}..{h.last_offset}"
        assert cells["max timestamp"] == str(h.max_timestamp)
        assert cells["crc"] == "ok"


@pytest.mark.parametrize("width", WIDTHS)
def test_record_table_keeps_offsets_and_timestamps_whole(width: int, corpus_root: Path) -> None:
    text, events = _dump(width, corpus_root / "kafka-3.8.0" / "txn-1", records=True)
    _check_fits(text, width)
    records = [e for e in events if isinstance(e, Record)]
    rows = [r for r in _rows(text) if r[0]]
    assert [(r[0], r[1]) for r in rows] == [(str(r.offset), str(r.timestamp)) for r in records]


def test_columns_are_dropped_before_a_kept_one_is_cut() -> None:
    cols = [Col("name", keep=True), Col("extra", drop=1), Col("more", drop=2), Col("offsets", keep=True)]
    name, extra, more, offsets = "a" * 30, "x" * 20, "y" * 20, "123456789..123456799"
    rows = [([name, extra, more, offsets], None)]
    # 30 + 20 + 20 + 20 of text, 3 per column of padding and rules, 1 more: 103 columns.
    for width, shown in (
        (120, [name, extra, more, offsets]),
        (80, [name, more, offsets]),
        (60, [name, offsets]),
    ):
        console, out = _console(width)
        console.print(fitted_table("t", cols, rows, width))
        text = out.getvalue()
        _check_fits(text, width)
        assert _rows(text) == [shown]


def test_kept_columns_fold_rather_than_cut_when_nothing_else_is_left() -> None:
    cols = [Col("name", keep=True), Col("offsets", keep=True)]
    name = "n" * 50
    console, out = _console(40)
    console.print(fitted_table("t", cols, [([name, "0..1"], None)], 40))
    text = out.getvalue()
    assert "…" not in text
    assert "".join(r[0] for r in _rows(text)) == name  # every character, over two lines


def test_common_root() -> None:
    assert common_root(["/d/logs/a-0", "/d/logs/b-0"]) == "/d/logs"
    assert common_root(["/d/b1/a-0", "/d/b2/a-0"]) == "/d"
    assert common_root(["a-0"]) is None
    assert common_root(["x/a-0", "/abs/b-0"]) is None


def test_long_values_are_cut_with_a_mark_naming_the_option() -> None:
    long = "v" * 250 + "\u00e9" * 10
    assert cell(long, full=False) == "v" * 200 + "\u2026(+70 bytes; --full-values)"
    assert cell(long, full=True) == long
    assert cell("short", full=False) == "short"


def test_record_table_shows_null_header_values_as_null_and_the_file_name_once() -> None:
    header = decode_v2_header(*_one_batch())
    events = [
        FileStart("t-0/00000000000000000000.log", "log", header.size, 0),
        header,
        Record(0, 1, b"k", b"x" * 300, ((b"h", None), (b"g", b"1")), 0),
    ]
    console, out = _console(400)
    write_rich(iter(events), out, console=console)
    text = out.getvalue()
    assert text.count("t-0/00000000000000000000.log") == 1
    assert "h=null" in text
    assert "None" not in text
    assert "x" * 200 + "\u2026(+100 bytes; --full-values)" in text


def _one_batch() -> tuple[bytes, int, int]:
    batch = build_v2_batch(0, [NewRecord(b"k", b"v", 1)])
    return batch, 0, len(batch)


def test_control_characters_in_data_are_escaped_in_tables() -> None:
    # Raw, a terminal would act on them, and rich counts them as zero wide.
    assert printable("k\x00e\x1b[2Jy\x7f") == "k\\x00e\\x1b[2Jy\\x7f"


def _kdump_rich(width: int, *args: str) -> str:
    # A terminal of `width` columns, as the COLUMNS a shell exports says.
    env = {**os.environ, "COLUMNS": str(width), "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "kdump", *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("width", WIDTHS)
def test_seek_table_keeps_partition_names_and_offsets_whole(width: int, corpus_logdirs: Path) -> None:
    log_dir = corpus_logdirs / "kafka-3.8.0"
    text = _kdump_rich(width, "seek-by-time", "--format", "json", "latest", str(log_dir))
    answers = [json.loads(line) for line in text.splitlines()]
    text = _kdump_rich(width, "seek-by-time", "--format", "rich", "latest", str(log_dir))
    _check_fits(text, width)
    rows = [r for r in _rows(text) if r[0]]
    assert [(r[0], r[1]) for r in rows] == [
        (str(Path(a["partition"]).relative_to(log_dir)), str(a["offset"])) for a in answers
    ]


@pytest.mark.parametrize("width", WIDTHS)
def test_verify_at_a_terminal_keeps_partition_names_whole(width: int, corpus_logdirs: Path) -> None:
    log_dir = corpus_logdirs / "kafka-3.8.0"
    text = _kdump_rich(width, "verify", "--format", "rich", str(log_dir))
    # Finding lines are printed whole, never broken by rich (their repair hints are pasted into a
    # shell): the terminal wraps them. The table fits.
    findings = ("ERROR ", "WARNING ", "INFO ")
    _check_fits("\n".join(line for line in text.splitlines() if not line.startswith(findings)), width)
    names = sorted(p.name for p in log_dir.iterdir() if p.is_dir() and "-" in p.name and p.name[-1].isdigit())
    rows = [r[0] for r in _rows(text) if r[0]]
    assert sorted(r for r in rows if not r.endswith("(log dir)")) == names
    assert "kafka-3.8.0 (log dir)" in rows
