"""The terminal sessions shown in README.md and the man pages, replayed from `samples/`.

A session is a block that shows commands *and* what they printed: in README.md a ```console block,
in a man page a `.nf` ... `.fi` block with `$ ` lines and output. Each is marked just before it,
`<!-- session -->` (README) or `.\\" session` (roff), optionally with a set-up that runs first,
unseen: `<!-- session: cp -r samples/damaged/torn-tail-0 . -->`. A block that shows commands only
is an example of usage and is not replayed.

Replaying a session: a fresh directory holding a copy of `samples/` (shown as `~/demo` where kdump
prints an absolute path), the set-up, then each `$ ` command in order in one bash, as a user at a
100-column shell would type them (output not to a terminal), with `kdump` on the PATH being this
checkout's; stdout and stderr together, as a terminal shows them.
`python tests/docs/sessions.py` writes every session's output into the documents;
`tests/docs/test_sessions.py` fails when a document differs from its replay.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = ("README.md", *sorted(f"man/{p.name}" for p in (REPO / "man").glob("kdump*.[17]")))

_MD_MARK = re.compile(r"^<!-- session(?:: (?P<setup>.*?))? -->$")
_ROFF_MARK = re.compile(r'^\.\\" session(?:: (?P<setup>.*))?$')
_NEEDS = re.compile(r"^needs (?P<what>\w+); ?")
# What differs from run to run and is not the point of any session: backup directories' UTC times.
_VOLATILE = (re.compile(r"\d{8}T\d{6}Z"),)
SHOWN_HOME = "~/demo"
"""How the session's directory appears where kdump prints an absolute path."""
_SEPARATOR = "\x1e-kdump-session-\x1e"


@dataclass
class Session:
    """One session of a document: where its lines are, its set-up, commands and output lines."""

    document: str
    start: int  # index of the first line inside the block
    end: int  # index of the closing line
    setup: str
    needs: str | None
    lines: list[str]  # the block's lines as shown (roff escapes resolved)

    @property
    def commands(self) -> list[str]:
        return [line[2:] for line in self.lines if line.startswith("$ ")]

    @property
    def label(self) -> str:
        return f"{self.document}:{self.start}"


# --- roff text --------------------------------------------------------------------------------------

_ROFF_IN = {"\\-": "-", "\\e": "\\", "\\&": "", "\\(aq": "'", "\\(dq": '"', "\\(ti": "~", "\\(ga": "`"}
_ROFF_ESCAPE = re.compile(r"\\\(..|\\[-e&]")


def roff_text(line: str) -> str:
    """The text a `.nf` block's source line shows."""
    return _ROFF_ESCAPE.sub(lambda m: _ROFF_IN.get(m.group(), m.group()), line)


def roff_source(text: str) -> str:
    """A `.nf` block's source line that shows `text` exactly."""
    out = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + out if out.startswith((".", "'")) else out


# --- finding sessions -------------------------------------------------------------------------------


def find_sessions(document: str, text: str) -> Iterator[Session]:
    """Every marked session of a document (README.md or a man page), in order."""
    lines = text.splitlines()
    roff = not document.endswith(".md")
    mark, opening, closing = (_ROFF_MARK, ".nf", ".fi") if roff else (_MD_MARK, "```console", "```")
    i = 0
    while i < len(lines):
        m = mark.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and roff and lines[j].startswith((".PP", ".RS")):
            j += 1
        if j >= len(lines) or lines[j] != opening:
            raise ValueError(f"{document}:{i + 1}: a session mark not followed by {opening}")
        k = j + 1
        while k < len(lines) and lines[k] != closing:
            k += 1
        setup = m.group("setup") or ""
        needs = None
        n = _NEEDS.match(setup)
        if n:
            needs, setup = n.group("what"), setup[n.end() :]
        shown = [roff_text(line) if roff else line for line in lines[j + 1 : k]]
        yield Session(document, j + 1, k, setup, needs, shown)
        i = k + 1


def unmarked_transcripts(document: str, text: str) -> list[int]:
    """Line numbers of blocks that show output after a `$ ` command but carry no session mark."""
    lines = text.splitlines()
    roff = not document.endswith(".md")
    mark, opening, closing = (_ROFF_MARK, ".nf", ".fi") if roff else (_MD_MARK, "```console", "```")
    found: list[int] = []
    for j, line in enumerate(lines):
        if line != opening:
            continue
        k = j + 1
        while k < len(lines) and lines[k] != closing:
            k += 1
        body = lines[j + 1 : k]
        shows_output = any(b.startswith("$ ") for b in body) and any(
            not b.startswith("$ ") and not b.startswith("    ") for b in body
        )
        before = j - 1
        while roff and before >= 0 and lines[before].startswith((".PP", ".RS")):
            before -= 1
        if (shows_output or not roff) and not (before >= 0 and mark.match(lines[before])):
            found.append(j + 1)
    return found


# --- replaying --------------------------------------------------------------------------------------


def _kdump_shim(bin_dir: Path) -> None:
    """A `kdump` on the PATH that runs this checkout's kdump with this Python."""
    shim = bin_dir / "kdump"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kdump "$@"\n')
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _environment(bin_dir: Path) -> dict[str, str]:
    keep = ("HOME", "JAVA_HOME", "AWS_ENDPOINT_URL", "SYSTEMROOT")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
        PYTHONPATH=str(REPO),
        COLUMNS="100",
        LINES="40",
        TERM="dumb",
        NO_COLOR="1",
        LC_ALL="C.UTF-8",
        TZ="UTC",
        PYTHONUNBUFFERED="1",
    )
    return env


def replay(session: Session) -> list[str]:
    """The session's lines as replayed now: each command, then what it printed."""
    with tempfile.TemporaryDirectory(prefix="kdump-session-") as tmp:
        root = Path(tmp)
        work = root / "demo"
        bin_dir = root / "bin"
        bin_dir.mkdir()
        _kdump_shim(bin_dir)
        shutil.copytree(
            REPO / "samples", work / "samples", ignore=shutil.ignore_patterns("*.py", "README.md")
        )
        # One shell for the whole session, as a user's: `cd` and variables carry over, and each
        # command sees the exit status of the one before (for `echo $?`).
        script = ["exec 2>&1"]
        if session.setup:
            script += [f"{{ {session.setup} ; }} >/dev/null || exit 97"]
        for command in session.commands:
            script += ["__status=$?", f"printf '{_SEPARATOR}\\n'", "(exit $__status)", command]
        done = subprocess.run(
            ["bash", "-c", "\n".join(script)],
            cwd=work,
            env=_environment(bin_dir),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            text=True,
            timeout=900,
            check=False,
        )
        if done.returncode == 97:
            raise RuntimeError(f"{session.label}: the set-up failed")
        chunks = done.stdout.split(f"{_SEPARATOR}\n")
        if chunks[0].strip():
            raise RuntimeError(f"{session.label}: the set-up printed {chunks[0]!r}")
        shown: list[str] = []
        for command, out in zip(session.commands, chunks[1:], strict=True):
            shown.append(f"$ {command}")
            # Where kdump prints an absolute path, the session's directory reads as the user's.
            shown.extend(out.replace(str(work), SHOWN_HOME).splitlines())
        return shown


def comparable(lines: list[str]) -> list[str]:
    """Lines with what differs from run to run masked."""
    out = []
    for line in lines:
        for pattern in _VOLATILE:
            line = pattern.sub("<time>", line)
        out.append(line)
    return out


def write_document(document: str, replayed: dict[int, list[str]]) -> None:
    """Put each replayed session's lines (by start line) into the document."""
    path = REPO / document
    lines = path.read_text().splitlines()
    roff = not document.endswith(".md")
    sessions = sorted(find_sessions(document, "\n".join(lines)), key=lambda s: -s.start)
    for s in sessions:
        if s.start in replayed:
            new = replayed[s.start]
            lines[s.start : s.end] = [roff_source(x) for x in new] if roff else new
    path.write_text("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("documents", nargs="*", default=list(DOCUMENTS))
    args = parser.parse_args()
    for document in args.documents:
        text = (REPO / document).read_text()
        replayed = {s.start: replay(s) for s in find_sessions(document, text)}
        write_document(document, replayed)
        print(f"{document}: {len(replayed)} sessions", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
