"""Manual pages as plain text (`kdump man` where man(1) is missing): every page of man/ renders,
with nothing of roff left over and the layout man gives a tagged option list."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kdump.render.man_text import render

MAN = Path(__file__).resolve().parents[2] / "man"
PAGES = sorted(MAN.glob("kdump*.[17]"))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_page_renders_without_roff_left(page: Path) -> None:
    text = render(page.read_text(encoding="utf-8"))
    assert text.startswith(page.stem.upper())
    for line in text.splitlines():
        assert not line.startswith("."), line
        assert not re.search(r"\\f[BIRP]|\\-|\\\((em|aq|dq|bu)", line), line
    assert ("NAME" in text and "SYNOPSIS" in text) or page.suffix == ".7"


def test_tagged_paragraphs_hang_as_man_lays_them_out() -> None:
    roff = (
        ".TH KDUMP 1\n.SH OPTIONS\n.TP\n.B \\-\\-deep\nAlso decode every record.\n"
        ".TP\n\\fB\\-\\-fail\\-on\\fR [\\fBinfo\\fR|\\fBerror\\fR]\nExit 1 at this severity.\n"
        ".IP \\(bu 2\nthe log\n.RS\n.nf\nkdump verify  DIR\n.fi\n.RE\n"
    )
    lines = render(roff).splitlines()
    assert "       --deep Also decode every record." in lines
    assert "       --fail-on [info|error]" in lines
    assert "              Exit 1 at this severity." in lines
    assert "       \u2022 the log" in lines
    assert "              kdump verify  DIR" in lines  # no-fill keeps its spacing, indented by .RS


def test_filled_text_wraps_at_the_width() -> None:
    words = " ".join(f"word{i}" for i in range(200))
    lines = render(f".TH X 1\n.SH DESCRIPTION\n{words}\n", width=60).splitlines()[3:]
    assert len(lines) > 10
    assert all(len(line) <= 60 and line.startswith("       word") for line in lines if line)


def test_font_macros_join_as_roff_does() -> None:
    text = render('.TH X 1\n.SH NAME\n.BR kdump\\-man (1),\n.RB ( "a b" ).\n.I word\n')
    assert "kdump-man(1), (a b). word" in text
