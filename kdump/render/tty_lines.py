"""Record dumps at a terminal: the text format's lines, made safe and readable, as fast as text.

A table cell per record costs rich about a millisecond; a terminal reads lines. So a record-level
dump at a terminal is the text format (rendered by the compiled path where it can be), then per
chunk of lines, with whole-chunk byte operations only:

- control characters in data are shown as `\\xNN` (the utf8 encoding's own escape; C1 ones as
  `\\u00NN`), so a key or value never moves the cursor or changes colours, and a value's carriage
  returns do not overwrite what precedes them (a line feed in data still starts a new line);
- a line longer than `LINE_LIMIT` characters is cut there with a visible mark that says how much
  is left out and the option that shows it whole (`…(+N bytes; --full-values)`);
- the labels that find a record's fields (offset, key, payload, headers), batch lines' starts,
  findings' severities and failed checksums are coloured.
"""

from __future__ import annotations

import io
import os
import re
from typing import IO

# Longest record line shown whole unless --full-values is given (bytes; ~10 terminal lines of 100).
LINE_LIMIT = 1000
MARK = "\N{HORIZONTAL ELLIPSIS}(+{} bytes; --full-values)"

# C0 controls but the newline, DEL, and the C1 controls (U+0080..U+009F, which some terminals obey).
_CONTROL = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")
_C0 = bytes([*range(0x0A), *range(0x0B, 0x20), 0x7F])
_C1 = re.compile(rb"\xc2[\x80-\x9f]")

_RESET = b"\x1b[0m"
# Each pair is one pass over a chunk: the first three occur on every record line, so they are few.
_STYLES = (
    (b"| offset: ", b"\x1b[1;36m| offset:" + _RESET + b" "),
    (b" key: ", b" \x1b[33mkey:" + _RESET + b" "),
    (b" payload: ", b" \x1b[32mpayload:" + _RESET + b" "),
    (b" headers: [", b" \x1b[35mheaders:" + _RESET + b" ["),
    (b"\nbaseOffset: ", b"\n\x1b[1;34mbaseOffset:" + _RESET + b" "),
    (b" isvalid: false\n", b" \x1b[1;31misvalid: false" + _RESET + b"\n"),
    (b"\nERROR ", b"\n\x1b[1;31mERROR" + _RESET + b" "),
    (b"\nWARNING ", b"\n\x1b[33mWARNING" + _RESET + b" "),
    (b"\nSummary: ", b"\n\x1b[1mSummary:" + _RESET + b" "),
    (b"\nDumping ", b"\n\x1b[1mDumping" + _RESET + b" "),
)


def colour_enabled() -> bool:
    """Colour unless NO_COLOR is set or the terminal is dumb (what rich honours too)."""
    return "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


def _escape(m: re.Match[bytes]) -> bytes:
    found = m[0]
    return b"\\x%02x" % found[0] if len(found) == 1 else b"\\u%04x" % found[1]


def _cut(line: bytes, limit: int) -> bytes:
    """`line` cut at `limit` bytes (backed off to a UTF-8 character boundary), with the mark."""
    end = limit
    while end > 0 and line[end] & 0xC0 == 0x80:
        end -= 1
    return line[:end] + MARK.format(len(line) - end).encode()


def tty_bytes(data: bytes, *, full: bool = False, colour: bool = True, limit: int = LINE_LIMIT) -> bytes:
    """Newline-terminated text-format lines as shown at a terminal (see the module's description)."""
    # Whole-chunk checks first (translate and find run at memory speed; the expression does not).
    if len(data.translate(None, _C0)) != len(data) or (b"\xc2" in data and _C1.search(data) is not None):
        data = _CONTROL.sub(_escape, data)
    if not full and len(data) > limit:
        lines = data.split(b"\n")
        if max(map(len, lines)) > limit:
            data = b"\n".join(_cut(line, limit) if len(line) > limit else line for line in lines)
    if not colour:
        return data
    # A leading newline lets the line-start patterns match the chunk's first line; dropped after.
    data = b"\n" + data
    for plain, styled in _STYLES:
        data = data.replace(plain, styled)
    return data[1:]


class TtyWriter(io.TextIOBase):
    """A text stream that shows what is written to it (whole lines) as `tty_bytes` does, on `out`."""

    def __init__(self, out: IO[str], *, full: bool = False) -> None:
        self.out = out
        self.full = full
        self.colour = colour_enabled()

    def write(self, text: str) -> int:
        data = tty_bytes(text.encode("utf-8"), full=self.full, colour=self.colour)
        sink = getattr(self.out, "buffer", None)
        if sink is not None:
            self.out.flush()
            sink.write(data)
        else:
            self.out.write(data.decode("utf-8"))
        return len(text)

    def flush(self) -> None:
        self.out.flush()
