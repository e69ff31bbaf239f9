"""Journeys as a user walks them: verify, paste every printed hint into a shell, verify again.

Each hint `kdump verify` prints is run through `sh -c` exactly as printed (a POSIX shell, this
checkout's kdump first on the PATH), one at a time, verify asked again after each, until it prints
none; then `kdump verify --fail-on info` must be clean (exit 0). The partitions lie under a path
with a space in it, and verify is given them as a user would: an absolute path, or a path relative
to the shell's working directory (each step in a fresh one beside the others, where salvage's `DIR`
is created). At the end, `kdump restore` of the log dir's backup root puts the damaged copy back
byte for byte: every repair kept its word.

Two sources of damage:
- the damage matrix of tests/matrix/test_journeys.py (four real corpus segments split into
  three-segment partitions, each damage in the middle segment or at the tail);
- every partition of the corpus (the bundled subset, or the full corpus beside the checkout), its
  last segment torn inside its last batch, a checksum byte flipped in its first batch, or its
  first offset index shuffled: the torn tail and shuffled index of the copies in the issue.

Run with `-s` to see one `JOURNEY` line per journey (hints run, clean or not).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from corruptions import (
    Damage,
    flip_crc_byte,
    log_entries,
    make_log_dir,
    shuffle_index_entries,
    truncate_inside,
)
from hint_shell import printed_hints, shell
from test_journeys import CASES, SUBJECTS, _build

Kdump = Callable[..., Result]
SPACE = "broker copies"  # every journey's log dir lies under a path with a space in it
MAX_STEPS = 4
ALLOW_EMPTY = "--allow-empty"


def _hashes(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


def _only_open_transactions(path: Path, work: Path, flags: str) -> bool:
    """Whether all verify still finds is `transaction-open` info: a cut that takes a transaction's
    COMMIT marker leaves it open, as the broker's own recovery does (no coordinator log here to say
    it hangs), and no repair invents a marker."""
    final = shell(f"kdump verify --format json --fail-on info {flags} '{path}'", work, work)
    rows = [json.loads(line) for line in final.stdout.splitlines() if line.strip()]
    left = [(r["code"], r["severity"]) for r in rows if r.get("type") == "finding"]
    return bool(left) and all(f == ("transaction-open", "info") for f in left)


def walk(
    part: Path, work: Path, *, relative: bool, fail_on: str = "info", flags: str = ""
) -> tuple[int, list[str]]:
    """Follow verify's hints for `part` as printed until it prints none; the number of hints run
    and the hints. Each step runs in a fresh directory under `work`."""
    ran: list[str] = []
    step = 0
    while True:
        cwd = work / f"step {step}"
        cwd.mkdir(parents=True)
        given = str(Path("..", "..", *part.relative_to(work.parent).parts)) if relative else str(part)
        hints, status = printed_hints(given, cwd, work, fail_on, flags)
        if not hints:
            assert status == 0 or _only_open_transactions(part, work, flags), (
                f"verify fails with no hint left after {ran}"
            )
            return len(ran), ran
        assert step < MAX_STEPS, f"still hints after {ran}: {hints}"
        done = shell(hints[0], cwd, work)
        assert done.returncode == 0, f"{hints[0]!r} exited {done.returncode}: {done.stderr}"
        ran.append(hints[0])
        step += 1


def _finish(
    log_dir: Path,
    damaged: dict[str, str],
    work: Path,
    label: str,
    ran: list[str],
    fail_on: str = "info",
    flags: str = "",
) -> None:
    final = shell(f"kdump verify --fail-on {fail_on} {flags} '{log_dir}'", work, work)
    assert final.returncode == 0 or _only_open_transactions(log_dir, work, flags), final.stdout
    print(f"JOURNEY {label}: {len(ran)} hints run, clean")
    # Undo every repair at once from the log dir's backup root: the damaged copy comes back.
    backups = log_dir.parent / f"{log_dir.name}.kdump-backups"
    if ran and any("trim-tail" in h or "reindex" in h for h in ran):
        undone = shell(f"kdump restore '{backups}'", work, work)
        assert undone.returncode == 0, undone.stderr
        assert _hashes(log_dir) == damaged


@pytest.mark.parametrize(("subject", "rel", "limit"), SUBJECTS, ids=[s[0] for s in SUBJECTS])
@pytest.mark.parametrize(("where", "name", "damage"), CASES, ids=[f"{w}-{n}" for w, n, _ in CASES])
@pytest.mark.parametrize("relative", [False, True], ids=["absolute", "relative"])
def test_every_printed_hint_runs_in_a_shell_and_ends_clean(
    subject: str,
    rel: str,
    limit: int | None,
    where: str,
    name: str,
    damage: Damage,
    relative: bool,
    corpus_root: Path,
    tmp_path: Path,
    kdump: Kdump,
) -> None:
    part = _build(corpus_root, rel, limit, tmp_path / SPACE, kdump)
    log_dir = part.parent
    shutil.rmtree(tmp_path / SPACE / "reindex-backup")  # the set-up's own reindex, not a journey's
    logs = sorted(part.glob("*.log"))
    damage.apply(logs[1] if where == "middle" else logs[-1])
    damaged = _hashes(log_dir)
    count, ran = walk(part, tmp_path / "shell", relative=relative)
    assert count, f"verify names no repair for {name}"
    _finish(
        log_dir,
        damaged,
        tmp_path / "shell",
        f"matrix {subject} {where}-{name} {'rel' if relative else 'abs'}",
        ran,
    )


def _corpus_partitions(root: Path) -> list[Path]:
    return sorted(
        p for d in root.iterdir() if d.is_dir() for p in d.iterdir() if p.is_dir() and list(p.glob("*.log"))
    )


def _torn_tail(part: Path) -> bool:
    log = max((p for p in part.glob("*.log") if p.stat().st_size), default=None)
    if log is None or len(log_entries(log.read_bytes())) < 2:
        return False
    truncate_inside(-1, 30).apply(log)
    return True


def _crc_first_batch(part: Path) -> bool:
    log = min((p for p in part.glob("*.log") if p.stat().st_size), default=None)
    if log is None or len(log_entries(log.read_bytes())) < 2:
        return False
    flip_crc_byte(0).apply(log)
    return True


def _shuffled_index(part: Path) -> bool:
    for index in sorted(part.glob("*.index")):
        if (
            index.stat().st_size >= 32
            and len(set(index.read_bytes()[i : i + 8] for i in range(0, 32, 8))) == 4
        ):
            before = index.read_bytes()
            shuffle_index_entries(seed=3).apply(index)
            return index.read_bytes() != before
    return False


CORPUS_DAMAGES: dict[str, Callable[[Path], bool]] = {
    "torn-tail": _torn_tail,
    "crc-first-batch": _crc_first_batch,
    "shuffled-index": _shuffled_index,
}


@pytest.mark.parametrize("damage", sorted(CORPUS_DAMAGES))
def test_every_hint_for_damaged_corpus_partitions_runs_and_ends_clean(
    damage: str, corpus_root: Path, tmp_path: Path
) -> None:
    """Each corpus partition, damaged, in a log dir of its own under a path with a space."""
    walked = 0
    for i, src in enumerate(_corpus_partitions(corpus_root)):
        case = tmp_path / f"case {i}"
        log_dir = make_log_dir(case / SPACE / "data", {src.name: src})
        part = log_dir / src.name
        for p in part.rglob("*"):
            p.chmod(p.stat().st_mode | 0o200)
        # Info findings (compaction gaps, preallocated index tails) are legal and stay: the corpus
        # journeys end clean at --fail-on warning.
        healthy, status = printed_hints(str(part), case, case, "warning")
        if healthy or status != 0:
            continue  # a partition that does not verify clean as it is (a leftover kept on purpose)
        if not CORPUS_DAMAGES[damage](part):
            continue
        damaged = _hashes(log_dir)
        # A damaged first batch of a one-segment partition is cut with all after it (salvaged first):
        # the partition is left empty, which verify passes only with --allow-empty.
        count, ran = walk(part, case / "shell", relative=i % 2 == 1, fail_on="warning", flags=ALLOW_EMPTY)
        assert count, f"verify names no repair for {damage} in {src}"
        label = f"corpus {src.parent.name}/{src.name} {damage}"
        _finish(log_dir, damaged, case / "shell", label, ran, "warning", ALLOW_EMPTY)
        walked += 1
    assert walked, "no corpus partition could be damaged this way"
