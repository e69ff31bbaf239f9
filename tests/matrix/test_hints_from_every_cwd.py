"""Every hint runs as printed from wherever the user stands: the log dir's parent, the log dir itself,
or the damaged partition's directory, with the partition given as an absolute path or relative to
that working directory (`.` from inside the partition).

The journey is the shell one (tests/matrix/test_journeys_shell.py): `kdump verify`, the first hint
it prints run through `sh -c` in that working directory, verify again, until no hint is left; then
verify is clean (or names only a transaction the cut left open, as the broker's recovery does). What
a repair leaves beside its work (trim-tail's backups, salvage's output) must not land inside the
log dir: verify of the log dir is clean at the end too.

Cases: every damage class of the matrix (tests/matrix/test_journeys.py, on its four real corpus
segments), and the corpus partitions (the full corpus beside the checkout, else the bundled subset)
torn at the tail, with a checksum byte flipped in the first batch, or a shuffled index (the first
four partitions each damage applies to). Each case walks from one working directory and path form,
the six combinations in turn, so every combination is walked by several damage classes and the
whole stays near a minute. KDUMP_SWEEP_ALL=1 walks
every case from every combination (minutes: the sweep behind the test).

Run with `-s` to see one `SWEEP` line per walk.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from corruptions import make_log_dir
from hint_shell import printed_hints, shell
from test_journeys import CASES, SUBJECTS, _build
from test_journeys_shell import CORPUS_DAMAGES, _corpus_partitions

Kdump = Callable[..., Result]
CWDS = ("parent", "log dir", "partition dir")
FORMS = ("absolute", "relative")
COMBOS = list(itertools.product(CWDS, FORMS))
ALL = os.environ.get("KDUMP_SWEEP_ALL") == "1"
MAX_STEPS = 4
CORPUS_WALKS = 4  # per damage, in the quick run: 12 corpus walks beside the 12 of the matrix


def _combos(i: int) -> list[tuple[str, str]]:
    return COMBOS if ALL else [COMBOS[i % len(COMBOS)]]


def _where(part: Path, cwd: str) -> Path:
    return {"parent": part.parent.parent, "log dir": part.parent, "partition dir": part}[cwd]


def _given(part: Path, where: Path, form: str) -> str:
    if form == "absolute":
        return str(part)
    return "." if where == part else str(part.relative_to(where))


def _clean(
    path: str, cwd: Path, scratch: Path, fail_on: str, flags: str
) -> tuple[bool, list[tuple[str, str]]]:
    """Whether verify passes at `fail_on`, or finds only a transaction a cut left open; what it found."""
    done = shell(f"kdump verify --format json --fail-on {fail_on} {flags} '{path}'", cwd, scratch)
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    found = [(r["code"], r["severity"]) for r in rows if r.get("type") == "finding"]
    return done.returncode == 0 or all(f == ("transaction-open", "info") for f in found), found


def sweep(
    part: Path, cwd: str, form: str, scratch: Path, fail_on: str = "info", flags: str = ""
) -> list[str]:
    """Walk the hints for `part` from `cwd`, the partition given in `form`; the hints run."""
    where = _where(part, cwd)
    given = _given(part, where, form)
    ran: list[str] = []
    while True:
        hints, status = printed_hints(given, where, scratch, fail_on, flags)
        if not hints:
            clean, left = (True, []) if status == 0 else _clean(given, where, scratch, fail_on, flags)
            assert clean, f"from the {cwd} ({given}): verify fails with no hint left after {ran}: {left}"
            break
        assert len(ran) < MAX_STEPS, f"from the {cwd} ({given}): still hints after {ran}: {hints}"
        done = shell(hints[0], where, scratch)
        assert done.returncode == 0, f"from the {cwd}: {hints[0]!r} exited {done.returncode}: {done.stderr}"
        ran.append(hints[0])
    # Nothing a repair wrote beside its work lies in the log dir: it verifies as clean as the partition.
    clean, left = _clean(str(part.parent), scratch, scratch, fail_on, flags)
    assert clean, f"the log dir after {ran}: {left}"
    return ran


@pytest.mark.parametrize(("i", "case"), list(enumerate(CASES)), ids=[f"{w}-{n}" for w, n, _ in CASES])
def test_matrix_hints_run_from_every_working_directory(
    i: int, case: tuple[str, str, object], corpus_root: Path, tmp_path: Path, kdump: Kdump
) -> None:
    where, name, damage = case
    subject, rel, limit = SUBJECTS[i % len(SUBJECTS)]
    for j, (cwd, form) in enumerate(_combos(i)):
        root = tmp_path / f"walk {j}"
        part = _build(corpus_root, rel, limit, root / "broker copies", kdump)
        logs = sorted(part.glob("*.log"))
        damage.apply(logs[1] if where == "middle" else logs[-1])  # type: ignore[attr-defined]
        ran = sweep(part, cwd, form, root / "scratch")
        assert ran, f"verify names no repair for {name}"
        print(f"SWEEP matrix {subject} {where}-{name} from the {cwd}, {form}: {len(ran)} hints, clean")


@pytest.mark.parametrize("damage", sorted(CORPUS_DAMAGES))
def test_corpus_hints_run_from_every_working_directory(
    damage: str, corpus_root: Path, tmp_path: Path
) -> None:
    walked = 0
    shift = sorted(CORPUS_DAMAGES).index(damage)  # each damage starts its partitions elsewhere
    for i, src in enumerate(_corpus_partitions(corpus_root)):
        if not ALL and walked == CORPUS_WALKS:
            break  # the rest walk in test_journeys_shell (from beside the log dir) and with KDUMP_SWEEP_ALL
        for j, (cwd, form) in enumerate(_combos(walked + shift)):
            case = tmp_path / f"case {i}-{j}"
            log_dir = make_log_dir(case / "broker copies" / "data", {src.name: src})
            part = log_dir / src.name
            for p in part.rglob("*"):
                p.chmod(p.stat().st_mode | 0o200)
            healthy, status = printed_hints(str(part), case, case, "warning")
            if healthy or status != 0 or not CORPUS_DAMAGES[damage](part):
                continue
            ran = sweep(part, cwd, form, case / "scratch", "warning", "--allow-empty")
            assert ran, f"verify names no repair for {damage} in {src}"
            print(
                f"SWEEP corpus {src.parent.name}/{src.name} {damage} from the {cwd}, {form}: {len(ran)} hints"
            )
            walked += 1
    assert walked, "no corpus partition could be damaged this way"
