"""What an operator types at a terminal: values as kdump prints them, and typos that get an answer.

Severities and other choices are printed in upper case (`WARNING crc-mismatch ...`): given back that
way they are accepted. A mistyped command or option is a usage error (exit 2) that names the close
matches.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from builders import SegmentBuilder, records
from click.testing import Result

from kdump.cli import close_commands

Kdump = Callable[..., Result]


@pytest.fixture
def part(tmp_path: Path) -> Path:
    part = tmp_path / "orders-0"
    seg = SegmentBuilder()
    seg.add_v2(records(3))
    seg.write(part)
    return part


@pytest.mark.parametrize("value", ["WARNING", "Warning", "warning"])
def test_fail_on_accepts_the_severity_as_printed(kdump: Kdump, part: Path, value: str) -> None:
    result = kdump("verify", "--fail-on", value, str(part))
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["dump", "--format", "JSON"], "json"),
        (["dump", "--encoding", "HEX", "--records", "--format", "json"], "json"),
        (["dump", "--decode", "NONE", "--format", "json"], "json"),
        (["verify", "--format", "Json"], "json"),
    ],
)
def test_choices_are_accepted_in_any_case(kdump: Kdump, part: Path, args: list[str], shown: str) -> None:
    result = kdump(*args, str(part))
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert rows
    if "--encoding" in args:
        record = next(r for r in rows if r["type"] == "record")
        assert set(record["value"]) <= set("0123456789abcdef")


def test_a_choice_still_refuses_what_it_does_not_have(kdump: Kdump, part: Path) -> None:
    result = kdump("verify", "--fail-on", "FATAL", str(part))
    assert result.exit_code == 2
    assert "'FATAL' is not one of" in result.stderr


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("verfiy", "'verify'"), ("dmup", "'dump'"), ("seek", "'seek-by-time'"), ("salvge", "'salvage'")],
)
def test_a_mistyped_command_gets_the_close_matches(kdump: Kdump, typed: str, meant: str) -> None:
    result = kdump(typed, "x")
    assert result.exit_code == 2
    assert f"No such command '{typed}'. Did you mean {meant}?" in result.stderr


def test_a_command_far_from_any_gets_no_guess(kdump: Kdump) -> None:
    result = kdump("xyzzy")
    assert result.exit_code == 2
    assert "No such command 'xyzzy'." in result.stderr
    assert "Did you mean" not in result.stderr
    assert close_commands("xyzzy") == []


def test_a_command_in_upper_case_is_the_command(kdump: Kdump, part: Path) -> None:
    result = kdump("VERIFY", str(part))
    assert result.exit_code == 0, result.stderr


def test_close_commands_lists_several_when_several_are_close() -> None:
    assert close_commands("re") == ["reindex", "restore"]


def test_a_mistyped_option_gets_the_close_match(kdump: Kdump, part: Path) -> None:
    result = kdump("dump", "--deep-iterations", str(part))
    assert result.exit_code == 2
    # click's own suggestion, now that the flag exists: '--deep-iteration' first.
    assert "Did you mean one of: '--deep-iteration'," in result.stderr


def test_schema_order_is_read_in_any_case(kdump: Kdump, part: Path) -> None:
    result = kdump(
        "dump", "--value-type", "RAW", "--schema-order", "Files,TOPIC", "--format", "json", str(part)
    )
    assert result.exit_code == 0, result.stderr


def test_kafkas_flags_given_to_kdump_itself_point_to_dump(kdump: Kdump) -> None:
    result = kdump("--deep-iteration", "--print-data-log", "--files", "x.log")
    assert result.exit_code == 2
    assert (
        "--deep-iteration is a flag of Kafka's kafka-dump-log.sh: kdump takes it after 'dump' "
        "(kdump dump --deep-iteration --print-data-log --files x.log)."
    ) in result.stderr
    other = kdump("--nope")
    assert other.exit_code == 2
    assert "No such option '--nope'." in other.stderr
