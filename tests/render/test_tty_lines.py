"""Record lines at a terminal: data never styles the terminal, long lines are cut with a mark that
says how much is left out and the option that shows it, and the lines are the text format's."""

from __future__ import annotations

import re

from kdump.render.tty_lines import LINE_LIMIT, tty_bytes

ANSI = re.compile(rb"\x1b\[[0-9;]*m")


def test_control_characters_in_data_are_escaped() -> None:
    line = b"| offset: 1 CreateTime: 5 keySize: 1 valueSize: 9 payload: a\x1b[2Jb\rc\x00\x7f\n"
    shown = tty_bytes(line, colour=False)
    assert shown == b"| offset: 1 CreateTime: 5 keySize: 1 valueSize: 9 payload: a\\x1b[2Jb\\x0dc\\x00\\x7f\n"


def test_long_lines_are_cut_with_a_mark_and_shown_whole_on_request() -> None:
    value = "é" * 800  # two bytes each: the cut must not split one
    line = f"| offset: 7 CreateTime: 5 keySize: -1 valueSize: 1600 payload: {value}\n".encode()
    short = b"| offset: 8 CreateTime: 5 keySize: -1 valueSize: 1 payload: x\n"
    shown = tty_bytes(line + short, colour=False)
    first, second, end = shown.split(b"\n")
    assert second + b"\n" == short
    assert end == b""
    kept, mark = first.decode("utf-8").split("…")
    assert line.startswith(kept.encode())
    hidden = len(line) - 1 - len(kept.encode())
    assert mark == f"(+{hidden} bytes; --full-values)"
    assert len(kept.encode()) <= LINE_LIMIT
    assert tty_bytes(line + short, full=True, colour=False) == line + short


def test_colour_marks_fields_and_strips_back_to_the_text_lines() -> None:
    text = (
        b"Dumping orders-0/00000000000000000000.log\n"
        b"baseOffset: 0 lastOffset: 0 count: 1 position: 0 CreateTime: 5 size: 80 isvalid: false\n"
        b"| offset: 0 CreateTime: 5 keySize: 1 valueSize: 1 sequence: -1 headerKeys: [h] key: k payload: v"
        b" headers: [h=null]\n"
        b"ERROR crc-mismatch at f:0 offset 0: differs\n"
    )
    shown = tty_bytes(text)
    assert ANSI.sub(b"", shown) == text
    assert b"\x1b[1;36m| offset:\x1b[0m 0" in shown
    assert b"\x1b[1;31misvalid: false\x1b[0m" in shown
    assert shown.startswith(b"\x1b[1mDumping\x1b[0m ")
