"""Manual pages as plain text, for hosts without `man` (a broker's container, the one-file build).

Renders the subset of man(7) roff that kdump's own pages use: sections and subsections, paragraphs,
tagged and indented paragraphs, relative indents, no-fill blocks, the font macros and escapes. It is
not a general roff formatter: `man -l` is used instead wherever it exists.
"""

from __future__ import annotations

import re
import textwrap

_ESCAPES = {
    "-": "-",
    "e": "\\",
    " ": " ",
    "&": "",
    "(em": "\u2014",
    "(en": "\u2013",
    "(aq": "'",
    "(dq": '"',
    "(bu": "\u2022",
    "(lq": "\u201c",
    "(rq": "\u201d",
    "(co": "\u00a9",
    "(rs": "\\",
}
_ESCAPE = re.compile(r"\\(f(?:\[[^\]]*\]|\(..|.)|\(..|\[[^\]]*\]|.)")
_TWO_FONT = {"BR", "RB", "IR", "RI", "BI", "IB"}
_ONE_FONT = {"B", "I", "SM", "SB"}


def _unescape(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code.startswith("f"):
            return ""  # font changes: plain text has one font
        if code.startswith("["):
            return _ESCAPES.get("(" + code[1:-1], "")
        return _ESCAPES.get(code, code)

    return _ESCAPE.sub(one, text)


def _arguments(rest: str) -> list[str]:
    """A macro's arguments: words, or double-quoted strings ("" inside one is a quote)."""
    args: list[str] = []
    for match in re.finditer(r'"((?:[^"]|"")*)"?|(\S+)', rest):
        args.append(match.group(1).replace('""', '"') if match.group(1) is not None else match.group(2))
    return args


class _Page:
    def __init__(self, width: int) -> None:
        self.width = width
        self.lines: list[str] = []
        self.words: list[str] = []
        self.base = 7  # the indent of a section's text
        self.tag: str | None = None  # a .TP/.IP tag waiting for its paragraph
        self.hanging = 7  # the extra indent of a tagged paragraph's text
        self.fill = True
        self.pending_blank = False

    def blank(self) -> None:
        self.flush()
        self.pending_blank = True

    def emit(self, line: str) -> None:
        if self.pending_blank and self.lines and self.lines[-1] != "":
            self.lines.append("")
        self.pending_blank = False
        self.lines.append(line.rstrip())

    def flush(self) -> None:
        if not self.words and self.tag is None:
            return
        text = " ".join(self.words)
        self.words = []
        indent = " " * self.base
        if self.tag is not None:
            tag, self.tag = self.tag, None
            body = " " * (self.base + self.hanging)
            if len(tag) < self.hanging and text:
                first = indent + tag.ljust(self.hanging)
                wrapped = textwrap.wrap(text, self.width, initial_indent=first, subsequent_indent=body)
                for line in wrapped:
                    self.emit(line)
                return
            self.emit(indent + tag)
            indent = body
        for line in textwrap.wrap(text, self.width, initial_indent=indent, subsequent_indent=indent):
            self.emit(line)

    def text(self, line: str) -> None:
        if self.fill:
            self.words.extend(line.split())
        else:
            self.emit(" " * self.base + line)


def render(roff: str, width: int = 80) -> str:
    """The page's text as `man` would lay it out on a terminal of `width` columns, near enough."""
    page = _Page(width)
    expect_tag = False
    for raw in roff.splitlines():
        if raw.startswith(('.\\"', "'\\\"")) or raw.strip() == ".":
            continue
        if not raw.startswith((".", "'")):
            if expect_tag:
                page.tag, expect_tag = _unescape(raw).strip(), False
            else:
                page.text(_unescape(raw))
            continue
        name, _, rest = raw[1:].strip().partition(" ")
        args = [_unescape(a) for a in _arguments(rest)]
        if name in _ONE_FONT or name in _TWO_FONT:
            joined = " ".join(args) if name in _ONE_FONT else "".join(args)
            if expect_tag:
                page.tag, expect_tag = joined, False
            else:
                page.text(joined)
        elif name == "TH":
            title = f"{args[0]}({args[1]})" if len(args) > 1 else (args[0] if args else "")
            page.emit(
                title + (args[4] if len(args) > 4 else "").center(max(0, width - 2 * len(title))) + title
            )
            page.blank()
        elif name in ("SH", "SS"):
            page.blank()
            heading = " ".join(args)
            page.emit(heading.upper() if name == "SH" else "   " + heading)
            page.base = 7
        elif name in ("PP", "P", "LP"):
            page.blank()
        elif name == "TP":
            page.blank()
            page.hanging = 7
            expect_tag = True
        elif name == "IP":
            page.blank()
            page.tag = args[0] if args else ""
            page.hanging = int(args[1]) if len(args) > 1 and args[1].isdigit() else 7
            if not page.tag:
                page.tag = None
        elif name == "RS":
            page.flush()
            page.base += 7
        elif name == "RE":
            page.flush()
            page.base = max(7, page.base - 7)
        elif name == "nf":
            page.flush()
            page.fill = False
        elif name == "fi":
            page.fill = True
        elif name == "br":
            page.flush()
        # .nh, .ad and anything else: no effect on plain text
    page.flush()
    return "\n".join(page.lines).rstrip() + "\n"
