"""`kdump dump --records` at a terminal (a pseudo-terminal here) and `--format kcat` end to end."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from builders import SegmentBuilder, records
from click.testing import Result

from kdump.cli.dump import TABLE_MAX_LOG_BYTES

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run_at_terminal(*args: str, env: dict[str, str] | None = None) -> str:
    """kdump's standard output when it is a terminal (a pseudo-terminal of 100 columns)."""
    primary, secondary = os.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kdump", *args],
            stdout=secondary,
            stderr=subprocess.PIPE,
            env={**os.environ, "COLUMNS": "100", **(env or {})},
        )
        os.close(secondary)
        chunks = []
        while True:
            try:
                data = os.read(primary, 1 << 16)
            except OSError:  # the other side closed (Linux says EIO)
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    finally:
        os.close(primary)
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def test_records_stream_as_coloured_lines_at_a_terminal(corpus_root: Path) -> None:
    part = corpus_root / "kafka-3.8.0" / "txn-1"
    shown = run_at_terminal("dump", "--records", str(part))
    plain = subprocess.run(
        [sys.executable, "-m", "kdump", "dump", "--records", "--format", "text", "--full-values", str(part)],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8")  # bytes: universal newlines would turn carriage returns in data into line ends
    assert "\x1b[" in shown
    assert "│" not in shown
    assert "┃" not in shown
    lines = ANSI.sub("", shown).split("\n")
    expected = escaped(plain).split("\n")
    # The text format's lines, long ones cut with the mark that names the option showing them whole.
    assert len(lines) == len(expected)
    cut = 0
    for got, want in zip(lines, expected, strict=True):
        if got != want:
            kept, _, mark = got.partition("…")
            assert want.startswith(kept), got
            assert re.fullmatch(r"\(\+\d+ bytes; --full-values\)", mark), got
            cut += 1
    assert cut > 0
    first = next(p for p in sorted(part.glob("*.log")))
    assert sum(str(first) in line for line in lines) == 1  # the file is named once
    whole = ANSI.sub("", run_at_terminal("dump", "--records", "--full-values", str(part)))
    assert whole == escaped(plain)


def escaped(text: str) -> str:
    """Control characters in data as a terminal is shown them."""
    return re.sub(
        "[\x00-\x09\x0b-\x1f\x7f-\x9f]",
        lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x80 else f"\\u{ord(m[0]):04x}",
        text,
    )


def test_batches_of_a_small_log_stay_a_table_at_a_terminal(corpus_root: Path) -> None:
    shown = run_at_terminal("dump", str(corpus_root / "kafka-3.8.0" / "txn-1"), env={"NO_COLOR": "1"})
    assert "│" in shown
    assert "baseOffset:" not in shown


def test_batches_of_a_big_log_stream_as_lines_at_a_terminal(tmp_path: Path) -> None:
    part = tmp_path / "big-0"
    seg = SegmentBuilder()
    for _ in range(5):
        seg.add_v2(records(1, value_size=1 << 20))
    seg.write(part)
    assert sum(p.stat().st_size for p in part.glob("*.log")) >= TABLE_MAX_LOG_BYTES
    shown = ANSI.sub("", run_at_terminal("dump", str(part)))
    plain = subprocess.run(
        [sys.executable, "-m", "kdump", "dump", "--format", "text", str(part)],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8")
    assert shown == plain
    assert shown.count("\nbaseOffset: ") == 5


def test_kcat_format_matches_the_json_records(kdump: Callable[..., Result], corpus_root: Path) -> None:
    part = str(corpus_root / "kafka-3.8.0" / "txn-1")
    kcat = kdump("dump", "--format", "kcat", part)
    assert kcat.exit_code == 0, kcat.output
    rows = [json.loads(line) for line in kcat.stdout.splitlines()]
    records = [
        r
        for line in kdump("dump", "--records", "--format", "json", part).stdout.splitlines()
        if (r := json.loads(line))["type"] == "record" and "control" not in r
    ]
    assert len(rows) == len(records) > 0
    for row, record in zip(rows, records, strict=True):
        assert (row["topic"], row["partition"]) == ("txn", 1) == (record["topic"], record["partition"])
        assert (row["offset"], row["ts"], row["key"], row["payload"]) == (
            record["offset"],
            record["timestamp"],
            record["key"],
            record["value"],
        )
        assert row["tstype"] == "create"
        assert row["broker"] == -1
        flat = [x for h in record["headers"] for x in (h["key"], h["value"])]
        assert row.get("headers", []) == flat


def bar_on_terminal_stderr(args: list[str], stdout: Path) -> str:
    """What kdump writes to stderr when stderr is a terminal and stdout a file."""
    primary, secondary = os.openpty()
    try:
        with stdout.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kdump", *args],
                stdout=out,
                stderr=secondary,
                env={**os.environ, "COLUMNS": "100", "KDUMP_PROGRESS_DELAY": "0"},
            )
            os.close(secondary)
            chunks = []
            while True:
                try:
                    data = os.read(primary, 1 << 16)
                except OSError:
                    break
                if not data:
                    break
                chunks.append(data)
            proc.wait(timeout=120)
    finally:
        os.close(primary)
    return b"".join(chunks).decode("utf-8")


def test_a_dump_to_a_file_draws_a_bar_on_the_terminal_and_finishes_it(
    tmp_path: Path, corpus_root: Path
) -> None:
    part = str(corpus_root / "kafka-3.8.0" / "txn-1")
    err = bar_on_terminal_stderr(["dump", "--records", part], tmp_path / "out.txt")
    assert "dumping ━" in err
    final = err.rsplit("\x1b[2K", 1)[1]
    assert re.fullmatch(r"dumping ━+ \d+\.\d/\d+\.\d MiB done in \d:\d\d:\d\d\r?\n", final), final
    assert "\x1b" not in (tmp_path / "out.txt").read_text()  # the bar never reaches stdout


def test_no_bar_when_stderr_is_not_a_terminal(corpus_root: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kdump", "dump", "--records", str(corpus_root / "kafka-3.8.0" / "txn-1")],
        capture_output=True,
        env={**os.environ, "KDUMP_PROGRESS_DELAY": "0"},
        check=True,
    )
    assert done.stderr == b""
    assert b"\x1b" not in done.stdout


def test_kcat_findings_go_to_stderr(kdump: Callable[..., Result]) -> None:
    damaged = Path(__file__).resolve().parents[2] / "samples" / "damaged" / "bad-crc-0"
    result = kdump("dump", "--format", "kcat", str(damaged))
    assert all(json.loads(line)["topic"] == "bad-crc" for line in result.stdout.splitlines())
    assert "kdump: ERROR crc-mismatch at " in result.stderr
