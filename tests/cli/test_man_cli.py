"""`kdump man`: the manual without man(1), its roff source, and a wrong name's list of pages."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from kdump.cli import COMMANDS, cli

MAN = Path(__file__).resolve().parents[2] / "man"


def test_a_command_page_as_text_when_not_on_a_terminal() -> None:
    result = CliRunner().invoke(cli, ["man", "verify"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("KDUMP-VERIFY(1)")
    assert "\n       --deep Also decompress and decode every record" in result.output


def test_roff_is_the_page_itself() -> None:
    result = CliRunner().invoke(cli, ["man", "findings", "--roff"])
    assert result.exit_code == 0
    assert result.output == (MAN / "kdump-findings.7").read_text(encoding="utf-8")


def test_list_names_every_command_and_topic() -> None:
    result = CliRunner().invoke(cli, ["man", "--list"])
    assert set(result.output.split()) == {"kdump", "findings", "spark", *COMMANDS}


def test_a_wrong_name_exits_2_with_the_pages_there_are() -> None:
    result = CliRunner().invoke(cli, ["man", "verfiy"])
    assert result.exit_code == 2
    assert "no manual page 'verfiy'" in result.output
    assert "verify" in result.output


def test_version_names_the_compiled_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output.startswith("kdump, version ")
    monkeypatch.setenv("KDUMP_PURE_PYTHON", "1")
    pure = CliRunner().invoke(cli, ["--version"])
    assert "compiled paths: none (the pure-Python reference path)" in pure.output
