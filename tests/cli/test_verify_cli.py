"""`kdump verify` on the command line: exit codes, --fail-on, --junit, JSON and text output."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from builders import build_partition
from click.testing import Result
from corruptions import append_zeros, flip_crc_byte, log_entries, run_kdump

FINDING_KEYS = {"type", "code", "severity", "file", "position", "offset", "message", "repair"}
SEG0 = "00000000000000000000"

Kdump = Callable[..., Result]


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    part = tmp_path / "clean-0"
    build_partition(part, segments=2, batches_per_segment=6)
    return part


@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    """A bad checksum in the 3rd batch of the first segment (an error)."""
    part = tmp_path / "damaged-0"
    build_partition(part, segments=2, batches_per_segment=6)
    flip_crc_byte(2).apply(part / f"{SEG0}.log")
    return part


@pytest.fixture
def warned(tmp_path: Path) -> Path:
    """Only a warning: a missing offset index."""
    part = tmp_path / "warned-0"
    build_partition(part, segments=1, batches_per_segment=6)
    (part / f"{SEG0}.index").unlink()
    return part


@pytest.fixture
def informed(tmp_path: Path) -> Path:
    """Only an INFO finding: a zero-filled preallocated index tail."""
    part = tmp_path / "informed-0"
    build_partition(part, segments=1, batches_per_segment=24)
    append_zeros(800).apply(part / f"{SEG0}.index")
    return part


def _rows(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


# --- exit codes ---------------------------------------------------------------------------------


def test_exit_0_when_clean(kdump: Kdump, clean: Path) -> None:
    result = kdump("verify", str(clean))
    assert result.exit_code == 0, result.output
    assert f"ok: {clean}: 2 segments" in result.stdout
    assert result.stdout.rstrip().endswith("exit 0")


def test_exit_1_on_error(kdump: Kdump, damaged: Path) -> None:
    result = kdump("verify", str(damaged))
    assert result.exit_code == 1
    position = log_entries((damaged / f"{SEG0}.log").read_bytes())[2].position
    assert f"ERROR crc-mismatch at {damaged / SEG0}.log:{position} offset 20" in result.stdout
    assert f"DAMAGED: {damaged}" in result.stdout


@pytest.mark.parametrize(
    ("fixture", "fail_on", "code"),
    [
        ("warned", "error", 0),
        ("warned", "warning", 1),
        ("warned", "info", 1),
        ("informed", "error", 0),
        ("informed", "warning", 0),
        ("informed", "info", 1),
        ("damaged", "error", 1),
        ("clean", "info", 0),
    ],
)
def test_fail_on_threshold(
    kdump: Kdump, request: pytest.FixtureRequest, fixture: str, fail_on: str, code: int
) -> None:
    part = request.getfixturevalue(fixture)
    result = kdump("verify", "--fail-on", fail_on, str(part))
    assert result.exit_code == code, result.output


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--fail-on", "fatal"],
        ["--no-such-option"],
        ["--jobs", "-1"],
        ["--master", "local[2]"],  # only with --engine spark
    ],
)
def test_exit_2_usage(kdump: Kdump, clean: Path, args: list[str]) -> None:
    result = kdump("verify", *args, *([str(clean)] if args else []))
    assert result.exit_code == 2, result.output


def test_exit_3_missing_path(kdump: Kdump, clean: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-0"
    result = kdump("verify", str(clean), str(missing))
    assert result.exit_code == 3
    assert f"{missing}: no such file or directory" in result.stderr
    assert f"ok: {clean}" in result.stdout  # the readable path is still checked


def test_exit_3_unreadable_file_beats_findings(kdump: Kdump, damaged: Path) -> None:
    snap = damaged / "00000000000000000099.snapshot"
    with snap.open("wb") as fh:
        fh.truncate((64 << 20) + 1)  # more than kdump reads whole: unreadable-file
    result = kdump("verify", "--format", "json", str(damaged))
    assert result.exit_code == 3
    codes = {r["code"] for r in _rows(result) if r["type"] == "finding"}
    assert {"unreadable-file", "crc-mismatch"} <= codes


def test_exit_codes_of_the_real_entry_point(clean: Path, damaged: Path, tmp_path: Path) -> None:
    assert run_kdump("verify", str(clean)).returncode == 0
    assert run_kdump("verify", str(damaged)).returncode == 1
    assert run_kdump("verify", "--fail-on", "nope", str(clean)).returncode == 2
    assert run_kdump("verify", str(tmp_path / "missing")).returncode == 3


# --- JSON ---------------------------------------------------------------------------------------


def test_json_findings_then_summaries(kdump: Kdump, damaged: Path, warned: Path, clean: Path) -> None:
    result = kdump("verify", "--format", "json", str(damaged), str(warned), str(clean))
    assert result.exit_code == 1
    rows = _rows(result)
    # Per partition: its findings, then its summary; the overall summary last.
    kinds = [(r["type"], r.get("scope")) for r in rows]
    assert kinds[-1] == ("summary", "overall")
    summaries = [r for r in rows if r["type"] == "summary" and r["scope"] == "partition"]
    assert [s["file"] for s in summaries] == [str(damaged), str(warned), str(clean)]
    by_partition: dict[str, list[dict[str, Any]]] = {}
    current: list[dict[str, Any]] = []
    for r in rows[:-1]:
        if r["type"] == "summary":
            by_partition[str(r["file"])] = current
            current = []
        else:
            current.append(r)
    assert current == []
    # The checksum error, then what it does to the indexes (they point past the broker's valid prefix).
    crc = by_partition[str(damaged)]
    assert crc[0]["code"] == "crc-mismatch"
    assert {r["severity"] for r in crc[1:]} <= {"warning", "info"}
    position = log_entries((damaged / f"{SEG0}.log").read_bytes())[2].position
    assert crc[0]["position"] == position
    assert crc[0]["offset"] == 20
    assert crc[0]["severity"] == "error"
    # Batches after the damaged one are valid: the hint gets them out before the trim.
    assert crc[0]["repair"] == f"kdump salvage {damaged} && kdump trim-tail --apply {damaged}"
    assert crc[0]["file"] == str(damaged / f"{SEG0}.log")
    assert [(r["code"], r["severity"], r["position"], r["offset"]) for r in by_partition[str(warned)]] == [
        ("index-missing", "warning", None, None)
    ]
    assert by_partition[str(clean)] == []
    for r in rows:
        if r["type"] == "finding":
            assert set(r) >= FINDING_KEYS
    damaged_summary = summaries[0]
    assert damaged_summary["findings"]["error"] == 1
    assert sum(damaged_summary["findings"].values()) == len(crc)
    assert damaged_summary["segments"] == 2
    assert damaged_summary["batches"] == 12
    assert damaged_summary["records"] == 120
    assert damaged_summary["first_offset"] == 0
    overall = rows[-1]
    assert overall["partitions"] == 3
    assert overall["exit_code"] == 1
    assert overall["findings"]["error"] == 1
    assert overall["findings"]["warning"] == damaged_summary["findings"]["warning"] + 1


def test_json_has_no_progress_or_text_noise(kdump: Kdump, clean: Path) -> None:
    result = kdump("verify", "--format", "json", str(clean))
    assert result.exit_code == 0
    assert result.stderr == ""
    assert [r["type"] for r in _rows(result)] == ["summary", "summary"]


# --- JUnit --------------------------------------------------------------------------------------


def test_junit_one_testcase_per_partition(
    kdump: Kdump, tmp_path: Path, damaged: Path, warned: Path, clean: Path, informed: Path
) -> None:
    report = tmp_path / "junit.xml"
    result = kdump("verify", "--junit", str(report), str(damaged), str(warned), str(clean), str(informed))
    assert result.exit_code == 1
    root = ET.parse(report).getroot()
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == [str(damaged), str(warned), str(clean), str(informed)]
    assert suite.get("tests") == "4"
    assert suite.get("failures") == "1"
    failure = cases[0].find("failure")
    assert failure is not None
    assert failure.get("type") == "crc-mismatch"
    assert "crc-mismatch" in (failure.text or "")
    assert cases[1].find("failure") is None
    assert "index-missing" in (cases[1].findtext("system-out") or "")
    assert cases[2].find("failure") is None
    assert cases[2].find("system-out") is None
    assert "index-preallocated-tail" in (cases[3].findtext("system-out") or "")


def test_junit_follows_fail_on(kdump: Kdump, tmp_path: Path, warned: Path, clean: Path) -> None:
    report = tmp_path / "junit.xml"
    assert (
        kdump("verify", "--fail-on", "warning", "--junit", str(report), str(warned), str(clean)).exit_code
        == 1
    )
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite is not None
    assert suite.get("failures") == "1"
    case = suite.findall("testcase")[0]
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("type") == "index-missing"


def test_junit_for_a_log_dir_lists_every_partition(kdump: Kdump, tmp_path: Path) -> None:
    log_dir = tmp_path / "logdir"
    for name in ("a-0", "b-0", "b-1"):
        build_partition(log_dir / name, segments=1, batches_per_segment=2)
    (log_dir / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=x\n")
    report = tmp_path / "junit.xml"
    assert kdump("verify", "--junit", str(report), str(log_dir)).exit_code == 0
    names = [c.get("name") for c in ET.parse(report).getroot().iter("testcase")]
    assert names == [str(log_dir / n) for n in ("a-0", "b-0", "b-1")]


# --- text ---------------------------------------------------------------------------------------


def test_text_finding_line_names_code_position_offset_and_repair(kdump: Kdump, warned: Path) -> None:
    result = kdump("verify", str(warned))
    line = next(x for x in result.stdout.splitlines() if "index-missing" in x)
    assert line == (
        f"WARNING index-missing at {warned / SEG0}.index: segment {SEG0} has no offset index "
        f"(repair: kdump reindex --apply {warned})"
    )
    assert "1 warnings" in result.stdout.splitlines()[-1]
