"""The progress bar: drawn in place, erased before anything else is printed, left finished on a
line of its own, and not drawn at all for a quick run."""

from __future__ import annotations

import io

import pytest

from kdump.render import progress
from kdump.render.progress import ProgressBar


@pytest.fixture(autouse=True)
def every_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "INTERVAL", 0.0)


def test_a_quick_run_shows_no_bar() -> None:
    out = io.StringIO()
    bar = ProgressBar("verifying", 100 << 20, out, delay=60)
    bar(50 << 20)
    bar.clear()
    bar.finish()
    assert out.getvalue() == ""


def test_the_bar_is_erased_before_other_output_and_finished_on_its_own_line() -> None:
    out = io.StringIO()
    bar = ProgressBar("verifying", 450 << 20, out, delay=0)
    bar(150 << 20)
    assert out.getvalue().startswith("\r\x1b[2Kverifying ━")
    assert "150.0/450.0 MiB" in out.getvalue()
    bar.clear()
    assert out.getvalue().endswith("\r\x1b[2K")  # the line is empty again: nothing is glued to it
    bar(300 << 20)
    bar.finish()
    text = out.getvalue()
    assert text.endswith("\n")
    last = text.rsplit("\r\x1b[2K", 1)[1]
    assert last.startswith("verifying " + "━" * 10)
    assert "450.0/450.0 MiB done in 0:00:0" in last
    assert "╺" not in last
    bar(1)  # a step after the end draws nothing more
    bar.finish()
    assert out.getvalue() == text


def test_a_bar_over_partitions_counts_a_step_a_partition() -> None:
    """A streamed log dir's bar counts partitions, whatever bytes each step says it checked."""
    out = io.StringIO()
    bar = ProgressBar("verifying", 12_000, out, delay=0, partitions=True)
    bar(5 << 20)
    bar(0)
    assert "2/12,000 partitions" in out.getvalue()
    bar.finish()
    last = out.getvalue().rsplit("\r\x1b[2K", 1)[1]
    assert last.startswith("verifying " + "━" * 10)
    assert "12,000/12,000 partitions done in 0:00:0" in last
