"""A repair hint on a terminal is one line: copied from the screen and pasted, it runs whole.

rich used to break a finding's line at the terminal's width, inserting a newline inside the hint
(`kdump trim-tail --apply` on one line, the path on the next): pasted, a shell runs half a command.
And the verify table folded long partition paths inside their cell. Read back from a real terminal
(tmux at 100 columns, capture-pane joining the lines the terminal wrapped itself), the hint and the
path stand whole on one line. Skips when tmux is not installed (Debian: apt-get install tmux).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_terminal_tmux import TMUX, run_in_pane, tmux  # noqa: F401 (the fixture)

pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (Debian: apt-get install tmux)")
SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "damaged" / "torn-tail-0"


def test_a_hint_and_its_path_are_never_broken_across_lines(tmux: Path, tmp_path: Path) -> None:  # noqa: F811
    # A path long enough that every finding line, and the table's partition name, pass 100 columns.
    deep = tmp_path / ("copies of the broker disk taken at three in the morning " * 2).strip() / "torn-tail-0"
    shutil.copytree(SAMPLE, deep)
    hint = f"kdump trim-tail --apply '{deep}'"
    lines = run_in_pane(tmux, ["verify", str(deep)])
    findings = [line for line in lines if line.startswith(("ERROR ", "WARNING "))]
    assert len(findings) == 2, lines
    for line in findings:
        assert line.endswith(f"(repair: {hint})"), lines  # whole, on the line it belongs to
    assert not any(line.strip().startswith(str(deep)[40:]) for line in lines)  # no path's tail alone
    # The table names the partition whole on one row (the terminal wraps it on screen, rich does not).
    assert any(str(deep.relative_to(deep.parent.parent)) in line or str(deep) in line for line in lines), (
        lines
    )
