"""Crash safety of `reindex --apply` and `trim-tail --apply`: SIGKILL at every step.

`kdump.ops.safety.fault_point` kills the process when `KDUMP_CRASH_AT` names the step it reaches:
`after-backup` (the backup copy is written and fsynced), `after-temp-write` (the new contents are in
`<file>.kdump-tmp`), `after-rename` (the new file replaced the old one), `after-truncate` (the log was
cut). Each test runs the real CLI in a subprocess, kills it at one step and checks:

- every file is either its old bytes or its new bytes, never anything in between;
- the backup holds complete copies of what was about to change;
- `kdump restore <backup>` from the crashed run gives back the files byte for byte;
- running the command again completes the repair, and verify is then clean.
"""

from __future__ import annotations

import json
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from corruptions import copy_tree, file_hashes, flip_crc_byte, log_entries, run_kdump, shuffle_index_entries

from kdump.errors import RefusedError
from kdump.findings import Severity
from kdump.model.log_dir import discover
from kdump.ops.safety import MANIFEST, TMP_SUFFIX, Journal, restore
from kdump.ops.verify import VerifyOptions, verify_targets

Kdump = Callable[..., Result]
FAULT_POINTS = ["after-backup", "after-temp-write", "after-rename", "after-truncate"]
SEG = "00000000000000000547"  # txn-1's last segment, in every corpus
KILLED = -signal.SIGKILL


def _worst(part: Path) -> Severity | None:
    """The worst finding, besides the open transaction a cut of txn-1's last COMMIT marker leaves (as
    the broker's own recovery does; info, with no coordinator log here to say it hangs)."""
    reports = list(verify_targets([discover(str(part))], VerifyOptions(jobs=1)))
    found = [f for r in reports for f in r.findings if f.code != "transaction-open"]
    return max((f.severity for f in found), default=None)


def _manifest(backup: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((backup / MANIFEST).read_text())
    return doc


def _tmp_files(part: Path) -> list[Path]:
    return sorted(part.glob(f"*{TMP_SUFFIX}"))


# --- reindex ---------------------------------------------------------------------------------------


@pytest.fixture
def reindex_case(corpus_root: Path, tmp_path: Path) -> tuple[Path, Path, dict[str, bytes], dict[str, bytes]]:
    """txn-1 with its last segment's .index and .timeindex shuffled: reindex rewrites both, .index first."""
    src = corpus_root / "kafka-3.8.0" / "txn-1"
    part = copy_tree(src, tmp_path / "txn-1")
    shuffle_index_entries(seed=1).apply(part / f"{SEG}.index")
    shuffle_index_entries(seed=1, entry_size=12).apply(part / f"{SEG}.timeindex")
    names = [f"{SEG}.index", f"{SEG}.timeindex"]
    old = {n: (part / n).read_bytes() for n in names}
    new = {n: (src / n).read_bytes() for n in names}  # the broker's bytes are what reindex writes
    return src, part, old, new


@pytest.mark.parametrize("point", FAULT_POINTS)
def test_reindex_killed_at_each_step(
    point: str,
    reindex_case: tuple[Path, Path, dict[str, bytes], dict[str, bytes]],
    tmp_path: Path,
    kdump: Kdump,
) -> None:
    src, part, old, new = reindex_case
    damaged = file_hashes(part)
    backup = tmp_path / "crashed-backup"
    proc = run_kdump("reindex", "--apply", "--backup-dir", str(backup), str(part), crash_at=point)
    if point == "after-truncate":  # reindex never truncates: it runs to the end
        assert proc.returncode == 0, proc.stderr
        assert file_hashes(part) == file_hashes(src)
        return
    assert proc.returncode == KILLED, (proc.stdout, proc.stderr)

    index, timeindex = f"{SEG}.index", f"{SEG}.timeindex"
    for name in (index, timeindex):
        assert (part / name).read_bytes() in (old[name], new[name]), f"{name} is half-written"
    # The crash hit the first file (.index); the second was not touched yet.
    assert (part / index).read_bytes() == (new[index] if point == "after-rename" else old[index])
    assert (part / timeindex).read_bytes() == old[timeindex]
    # Its backup is complete, whatever the manifest had recorded when the process died.
    assert (backup / f"000-{index}").read_bytes() == old[index]
    steps = _manifest(backup)["steps"]
    expected_states = [] if point == "after-backup" else ["started"]
    assert [s["state"] for s in steps] == expected_states
    tmps = _tmp_files(part)
    if point == "after-temp-write":
        assert [t.name for t in tmps] == [index + TMP_SUFFIX]
        assert tmps[0].read_bytes() == new[index]  # complete, fsynced, never the target
    else:
        assert tmps == []

    # Undo from the crashed run's backup: back to the damaged files exactly.
    crashed_copy = tmp_path / "undo"
    shutil.copytree(part, crashed_copy)
    assert kdump("restore", str(backup)).exit_code == 0
    assert {k: v for k, v in file_hashes(part).items() if not k.endswith(TMP_SUFFIX)} == damaged

    # Or run it again from the crashed state: it completes, and verify is clean.
    shutil.rmtree(part)
    shutil.move(crashed_copy, part)
    again = kdump("reindex", "--apply", "--backup-dir", str(tmp_path / "second-backup"), str(part))
    assert again.exit_code == 0, again.output
    assert file_hashes(part) == file_hashes(src)
    assert _tmp_files(part) == []
    assert _worst(part) is None


# --- trim-tail -------------------------------------------------------------------------------------


@pytest.fixture
def trim_case(corpus_root: Path, tmp_path: Path) -> tuple[Path, bytes, int]:
    """txn-1 with a bad checksum in the last batch of its last segment: trim-tail rewrites the time
    index (whose final entry named that batch), then cuts the log (backup of the tail, truncate)."""
    part = copy_tree(corpus_root / "kafka-3.8.0" / "txn-1", tmp_path / "txn-1")
    log = part / f"{SEG}.log"
    flip_crc_byte(-1).apply(log)
    damaged = log.read_bytes()
    return part, damaged, log_entries(damaged)[-1].position


@pytest.fixture
def trim_reference(trim_case: tuple[Path, bytes, int], tmp_path: Path, kdump: Kdump) -> dict[str, str]:
    """The files an uninterrupted trim-tail --apply leaves."""
    part, _damaged, _cut = trim_case
    ref = copy_tree(part, tmp_path / "reference" / part.name)
    assert (
        kdump("trim-tail", "--apply", "--backup-dir", str(tmp_path / "reference-backup"), str(ref)).exit_code
        == 0
    )
    return file_hashes(ref)


@pytest.mark.parametrize("point", FAULT_POINTS)
def test_trim_tail_killed_at_each_step(
    point: str,
    trim_case: tuple[Path, bytes, int],
    trim_reference: dict[str, str],
    tmp_path: Path,
    kdump: Kdump,
) -> None:
    part, damaged, cut = trim_case
    log = part / f"{SEG}.log"
    timeindex = part / f"{SEG}.timeindex"
    old_timeindex = timeindex.read_bytes()
    damaged_hashes = file_hashes(part)
    backup = tmp_path / "crashed-backup"
    proc = run_kdump("trim-tail", "--apply", "--backup-dir", str(backup), str(part), crash_at=point)
    assert proc.returncode == KILLED, (proc.stdout, proc.stderr)

    # trim-tail first rewrites the time index (its final entry named the bad batch), then cuts the log.
    new_timeindex = _reference_bytes(tmp_path, timeindex.name)
    index_done = point in ("after-rename", "after-truncate")
    assert timeindex.read_bytes() == (new_timeindex if index_done else old_timeindex)
    # The log is whole or cut exactly at the broker's position, never anything else.
    assert log.read_bytes() == (damaged[:cut] if point == "after-truncate" else damaged)
    # Every backup is complete before the file it protects is touched.
    assert (backup / f"000-{timeindex.name}").read_bytes() == old_timeindex
    tails = list(backup.glob(f"*-{log.name}.tail-{cut}"))
    if point == "after-truncate":
        assert [t.read_bytes() for t in tails] == [damaged[cut:]]
    else:
        assert tails == []
    tmps = _tmp_files(part)
    if point == "after-temp-write":
        assert [t.read_bytes() for t in tmps] == [new_timeindex]
    else:
        assert tmps == []

    # Undo from the crashed run's backup: the damaged partition comes back byte for byte.
    crashed_copy = tmp_path / "crashed-state"
    shutil.copytree(part, crashed_copy)
    assert kdump("restore", str(backup)).exit_code == 0
    assert {k: v for k, v in file_hashes(part).items() if not k.endswith(TMP_SUFFIX)} == damaged_hashes

    # Or run trim-tail again from the crashed state: it finishes the job and verify is clean.
    shutil.rmtree(part)
    shutil.move(crashed_copy, part)
    again = kdump("trim-tail", "--apply", "--backup-dir", str(tmp_path / "second-backup"), str(part))
    assert again.exit_code == 0, again.output
    assert log.read_bytes() == damaged[:cut]
    assert kdump("verify", "--fail-on", "warning", str(part)).exit_code == 0
    assert _worst(part) is None
    # Exactly what an uninterrupted run leaves, with no temporary file behind.
    assert file_hashes(part) == trim_reference


def _reference_bytes(tmp_path: Path, name: str) -> bytes:
    return (tmp_path / "reference" / "txn-1" / name).read_bytes()


# --- the journal itself ----------------------------------------------------------------------------


def test_restore_refuses_a_file_changed_since_the_trim(tmp_path: Path) -> None:
    root = tmp_path / "p-0"
    root.mkdir()
    target = root / "00000000000000000000.log"
    target.write_bytes(b"x" * 100)
    journal = Journal.create(tmp_path / "backup", root, "trim-tail")
    journal.truncate(target, 60)
    assert target.read_bytes() == b"x" * 60
    target.write_bytes(b"y" * 70)  # someone wrote to it afterwards
    with pytest.raises(RefusedError, match="neither its original nor its trimmed size"):
        restore(tmp_path / "backup")
    assert target.read_bytes() == b"y" * 70


def test_journal_never_reuses_a_backup_dir(tmp_path: Path) -> None:
    root = tmp_path / "p-0"
    root.mkdir()
    Journal.create(tmp_path / "backup", root, "reindex")
    with pytest.raises(RefusedError, match="already exists"):
        Journal.create(tmp_path / "backup", root, "reindex")


def test_journal_refuses_paths_outside_the_partition(tmp_path: Path) -> None:
    root = tmp_path / "p-0"
    root.mkdir()
    outside = tmp_path / "elsewhere.index"
    outside.write_bytes(b"keep")
    (root / "00000000000000000000.index").symlink_to(outside)
    journal = Journal.create(tmp_path / "backup", root, "reindex")
    with pytest.raises(RefusedError):
        journal.replace(root / "00000000000000000000.index", b"new")
    with pytest.raises(RefusedError):
        journal.replace(outside, b"new")
    assert outside.read_bytes() == b"keep"
