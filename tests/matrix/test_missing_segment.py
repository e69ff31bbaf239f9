"""A segment gone from the middle of a partition (deleted, or not copied): what verify says, and the
two ways out its finding names, walked as a user walks them.

The broker does not notice such a hole (LogLoader checks no continuity; LocalLog.read goes on from
the next segment when the segment before the hole has no batch at or above the fetch offset), so
the records are lost silently: `offset-hole` names the files gone, and no file repair brings them
back (NO_REPAIR). Its text says what to do:

- copy the three files it names from another replica's copy (here: the undamaged copy);
- or, on a follower, the cut it prints, pasted into a shell from the parent, the log dir or the
  partition dir, with the partition given as an absolute or a relative path, after which the
  broker fetches the offsets again from the leader.

Either way `kdump verify --fail-on info` is clean afterwards.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from hint_shell import printed_hints, shell
from test_journeys import SUBJECTS, _build

Kdump = Callable[..., Result]


def _hole(corpus_root: Path, tmp_path: Path, kdump: Kdump) -> tuple[Path, Path, str]:
    """A three-segment partition of real batches under a path with a space, its middle segment
    gone; an undamaged replica of it; the middle segment's base name."""
    _, rel, limit = SUBJECTS[0]
    part = _build(corpus_root, rel, limit, tmp_path / "broker copies", kdump)
    replica = shutil.copytree(part, tmp_path / "replica" / part.name)
    middle = sorted(part.glob("*.log"))[1].stem
    for suffix in (".log", ".index", ".timeindex"):
        (part / f"{middle}{suffix}").unlink()
    return part, replica, middle


def _finding(cwd: Path, given: str, scratch: Path) -> dict[str, object]:
    done = shell(f"kdump verify --format json --fail-on info '{given}'", cwd, scratch)
    assert done.returncode == 1, done.stdout
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    (hole,) = [r for r in rows if r.get("type") == "finding"]
    assert hole["code"] == "offset-hole"
    assert not hole.get("repair")  # no file repair brings the bytes back
    return hole


def test_the_finding_names_the_files_gone_and_copying_them_back_ends_clean(
    corpus_root: Path, tmp_path: Path, kdump: Kdump
) -> None:
    part, replica, middle = _hole(corpus_root, tmp_path, kdump)
    hole = _finding(tmp_path, str(part), tmp_path)
    message = str(hole["message"])
    assert hole["offset"] == int(middle)
    for suffix in (".log", ".index", ".timeindex"):
        assert f"{middle}{suffix}" in message
    assert "consumers skip those records silently" in message
    assert "kdump compare" in message
    for suffix in (".log", ".index", ".timeindex"):  # what the text says, from the other replica
        shutil.copyfile(replica / f"{middle}{suffix}", part / f"{middle}{suffix}")
    assert printed_hints(str(part), tmp_path, tmp_path) == ([], 0)


@pytest.mark.parametrize("cwd", ["parent", "log dir", "partition dir"])
@pytest.mark.parametrize("relative", [False, True], ids=["absolute", "relative"])
def test_the_follower_cut_it_prints_runs_as_printed_and_ends_clean(
    cwd: str, relative: bool, corpus_root: Path, tmp_path: Path, kdump: Kdump
) -> None:
    part, _, middle = _hole(corpus_root, tmp_path, kdump)
    where = {"parent": part.parent.parent, "log dir": part.parent, "partition dir": part}[cwd]
    given = (str(part.relative_to(where)) if where != part else ".") if relative else str(part)
    message = str(_finding(where, given, tmp_path)["message"])
    cut = re.search(r"kdump trim-tail --to-offset \d+ --apply \S+(?: \S+)*? (?=\(it moves)", message)
    assert cut is not None, message
    assert f"--to-offset {int(middle)} " in cut.group(0)  # the hole's first offset
    done = shell(cut.group(0).strip(), where, tmp_path)
    assert done.returncode == 0, done.stderr
    assert printed_hints(given, where, tmp_path) == ([], 0)
    # The later segment and the rest of the first are in the backup, whole: restore puts them back.
    backups = part.parent.parent / f"{part.parent.name}.kdump-backups"
    assert any(backups.rglob(f"*{sorted((tmp_path / 'replica').rglob('*.log'))[-1].name}"))
