"""Every session README.md and the man pages show is what kdump prints today, replayed from
`samples/` (`tests/docs/sessions.py`; `python tests/docs/sessions.py` rewrites them)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import sessions  # tests/docs is on sys.path: pytest puts a test's directory first (rootdir-less layout)

ALL = [s for d in sessions.DOCUMENTS for s in sessions.find_sessions(d, (sessions.REPO / d).read_text())]


def _spark_missing() -> str | None:
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        return f"pyspark/pyarrow not installed ({exc.name}); install kdump[spark]"
    if shutil.which("java") is None:
        return "no Java runtime on PATH"
    return None


def test_the_readme_shows_sessions() -> None:
    assert sum(s.document == "README.md" for s in ALL) >= 8


@pytest.mark.parametrize("document", sessions.DOCUMENTS)
def test_every_transcript_is_a_replayed_session(document: str) -> None:
    text = (sessions.REPO / document).read_text()
    assert sessions.unmarked_transcripts(document, text) == [], (
        f"{document}: blocks at these lines show output but carry no session mark"
    )


@pytest.mark.parametrize("session", ALL, ids=[s.label for s in ALL])
def test_session_replays(session: sessions.Session) -> None:
    if session.needs == "spark" and (reason := _spark_missing()):
        pytest.skip(reason)
    assert session.commands, "a session shows at least one command"
    assert all(not c.lstrip().startswith(("/", "~")) for c in session.commands), "paths are relative"
    replayed = sessions.replay(session)
    assert sessions.comparable(replayed) == sessions.comparable(session.lines), (
        f"{session.label} is stale: run  python tests/docs/sessions.py {session.document}"
    )


def test_roff_lines_round_trip() -> None:
    for text in ["-x", ".starts with a dot", "'quote", "back\\slash", "a - b -- c"]:
        assert sessions.roff_text(sessions.roff_source(text)) == text


def test_bash_is_there() -> None:
    assert subprocess.run(["bash", "-c", "true"], check=False).returncode == 0
