"""Faults inside a repair: ENOSPC, EIO, EROFS and EACCES at every write, rename and fsync step.

Beside the kill tests (test_safety_crash.py): here the process lives on and must say where things
stand. Every os-level call a repair makes goes through `kdump.ops.repair.safety.CALLS`; a first run of
each command records the calls in order, then one run per (call, errno) fails exactly that call:

- trim-tail, reindex: the partition ends as before, byte for byte (the steps done are undone from
  the journal and the backup folder removed), the exit is 3, never 70, and the one sentence on
  stderr says so and names the command that runs the repair again; that command, pasted, finishes
  the repair exactly as an uninterrupted run does;
- restore: the exit is 3 and the message names `kdump restore BACKUP`, which finishes it: the
  partition is then the damaged one again, byte for byte;
- a fault that persists (every call from one step on fails, as on a disk remounted read-only) makes
  the undo fail too: the message says the partition is part way and names `kdump restore BACKUP`,
  which puts it back byte for byte once the fault is gone.

A backup that spans a killed run and the run that completes it restores byte for byte too.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from corruptions import copy_tree, file_hashes, flip_crc_byte, run_kdump, shuffle_index_entries

from kdump.cli.exit_codes import ExitCode
from kdump.ops.repair import safety
from kdump.ops.repair.safety import TMP_SUFFIX

Kdump = Callable[..., "Run"]
ERRNOS = [errno.ENOSPC, errno.EIO, errno.EROFS, errno.EACCES]
# Which step each os-level call is: the calls that put bytes down (write, truncate, create a file,
# a directory or a link), the ones that rename or remove a name, and fsync.
STEP = {
    "write": "write",
    "ftruncate": "write",
    "open": "write",
    "mkdir": "write",
    "link": "write",
    "replace": "rename",
    "unlink": "rename",
    "fsync": "fsync",
}
MID = "00000000000000000299"  # txn-1's middle segment
LAST = "00000000000000000547"


@dataclass
class Injector:
    """Wraps every `safety.CALLS` function: records the calls, fails the n-th (or every one from it)."""

    fail_at: int | None = None
    err: int = errno.EIO
    persist: bool = False
    calls: list[tuple[str, str]] = field(default_factory=list)
    fired: int = 0

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            index = len(self.calls)
            self.calls.append((name, str(args[0]) if args and isinstance(args[0], (str, Path)) else ""))
            if self.fail_at is not None and (
                index == self.fail_at or (self.persist and index > self.fail_at)
            ):
                self.fired += 1
                raise OSError(self.err, f"injected {errno.errorcode[self.err]}")
            return fn(*args, **kwargs)

        return call


@pytest.fixture
def inject(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Injector]:
    def install(fail_at: int | None = None, err: int = errno.EIO, persist: bool = False) -> Injector:
        injector = Injector(fail_at, err, persist)
        for name in STEP:
            monkeypatch.setattr(safety.CALLS, name, injector.wrap(name, getattr(safety._Calls, name)))
        return injector

    return install


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


@pytest.fixture
def kdump(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Run]:
    """The real entry point (`kdump.cli.main`, which maps errors to exit codes) run in-process, so
    the injected faults reach it."""
    from kdump.cli import main

    def run(*args: str) -> Run:
        out, err = io.StringIO(), io.StringIO()
        monkeypatch.setattr(sys, "argv", ["kdump", *args])
        monkeypatch.setenv("COLUMNS", "200")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        return Run(code, out.getvalue(), err.getvalue())

    return run


def _errnos(index: int) -> list[int]:
    """Every errno at every step with KDUMP_FULL_FAULT_MATRIX=1 (about 1,000 runs, minutes); by
    default one errno per step, in turn, so each errno meets every kind of step (the handling does
    not depend on the errno, only the message names it)."""
    if os.environ.get("KDUMP_FULL_FAULT_MATRIX"):
        return ERRNOS
    return [ERRNOS[index % len(ERRNOS)]]


def _no_tmp(part: Path) -> None:
    assert sorted(part.glob(f"*{TMP_SUFFIX}")) == []


def _rerun_command(stderr: str) -> list[str]:
    marker = "run it again: "
    assert marker in stderr, stderr
    return shlex.split(stderr.split(marker, 1)[1].strip().splitlines()[0])


# --- the cases -------------------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    part: Path
    args: list[str]  # the command, without --backup-dir and the path
    before: dict[str, str]
    after: dict[str, str]  # what an uninterrupted run leaves


def _trim_case(src: Path, where: Path, kdump: Kdump) -> Case:
    """A bad checksum in the middle segment's last batch: trim-tail rewrites that segment's time
    index, moves the last segment (log, indexes, snapshot) aside, then cuts the log."""
    part = copy_tree(src, where / "txn-1")
    flip_crc_byte(-1).apply(part / f"{MID}.log")
    return _with_reference(
        Case("trim-tail", part, ["trim-tail", "--apply"], file_hashes(part), {}), where, kdump
    )


def _reindex_case(src: Path, where: Path, kdump: Kdump) -> Case:
    part = copy_tree(src, where / "txn-1")
    shuffle_index_entries(seed=1).apply(part / f"{LAST}.index")
    shuffle_index_entries(seed=1, entry_size=12).apply(part / f"{LAST}.timeindex")
    return _with_reference(Case("reindex", part, ["reindex", "--apply"], file_hashes(part), {}), where, kdump)


_REFERENCES: dict[str, dict[str, str]] = {}


def _with_reference(case: Case, where: Path, kdump: Kdump) -> Case:
    if case.name in _REFERENCES:
        case.after = _REFERENCES[case.name]
        return case
    ref = copy_tree(case.part, where / "reference" / case.part.name)
    result = kdump(*case.args, "--backup-dir", str(where / "reference-backup"), str(ref))
    assert result.exit_code == 0, result.output
    case.after = _REFERENCES[case.name] = file_hashes(ref)
    assert case.after != case.before
    return case


MAKERS = {"trim-tail": _trim_case, "reindex": _reindex_case}


def _record(
    case_maker: Callable[..., Case], src: Path, where: Path, kdump: Kdump, inject: Callable[..., Injector]
) -> list[tuple[str, str]]:
    case = case_maker(src, where, kdump)
    injector = inject()
    result = kdump(*case.args, "--backup-dir", str(where / "recorded-backup"), str(case.part))
    assert result.exit_code == 0, result.output
    assert file_hashes(case.part) == case.after
    return list(injector.calls)


@pytest.mark.parametrize("command", sorted(MAKERS))
def test_every_fault_at_every_step_leaves_the_partition_as_before(
    command: str, full_corpus: Path, tmp_path: Path, kdump: Kdump, inject: Callable[..., Injector]
) -> None:
    src = full_corpus / "kafka-3.8.0" / "txn-1"
    make = MAKERS[command]
    calls = _record(make, src, tmp_path / "record", kdump, inject)
    steps = {STEP[name] for name, _ in calls}
    assert steps == {"write", "rename", "fsync"}, calls
    outcomes: dict[tuple[str, int], int] = {}
    for index, (name, _path) in enumerate(calls):
        for err in _errnos(index):
            where = tmp_path / f"{index}-{err}"
            case = make(src, where, kdump)
            backup = where / "backup"
            injector = inject(fail_at=index, err=err)
            result = kdump(*case.args, "--backup-dir", str(backup), str(case.part))
            assert injector.fired == 1
            if name == "link":
                # A hard link into the backup is a shortcut: when it fails, the file is copied.
                assert result.exit_code == 0, result.output
                assert file_hashes(case.part) == case.after
                outcomes[("link, then a copy", err)] = outcomes.get(("link, then a copy", err), 0) + 1
                shutil.rmtree(where)
                continue
            # Never the "internal error" exit; a path that could not be written: 3.
            assert result.exit_code == ExitCode.UNREADABLE, (index, name, err, result.stderr)
            assert "Traceback" not in result.stderr
            assert "internal error" not in result.stderr
            assert "every change was undone" in result.stderr, result.stderr
            assert errno.errorcode[err] in result.stderr
            # As before, byte for byte; nothing half written is left; the emptied backup is gone.
            assert file_hashes(case.part) == case.before, (index, name, err)
            _no_tmp(case.part)
            assert not backup.exists()
            # The command it names, pasted, finishes the repair as an uninterrupted run does.
            again = _rerun_command(result.stderr)
            assert again[:2] == ["kdump", command]
            inject()  # the fault is gone
            finished = kdump(*again[1:])
            assert finished.exit_code == 0, finished.output
            assert file_hashes(case.part) == case.after
            outcomes[(STEP[name], err)] = outcomes.get((STEP[name], err), 0) + 1
            shutil.rmtree(where)
    # Every kind of step met every errno.
    assert {"write", "rename", "fsync"} <= {step for step, _ in outcomes}
    print(f"{command}: {len(calls)} calls, all as before: {sorted(outcomes.items())}")


@pytest.mark.parametrize("command", sorted(MAKERS))
def test_a_fault_that_persists_says_part_way_and_restore_puts_it_back(
    command: str, full_corpus: Path, tmp_path: Path, kdump: Kdump, inject: Callable[..., Injector]
) -> None:
    src = full_corpus / "kafka-3.8.0" / "txn-1"
    make = MAKERS[command]
    calls = _record(make, src, tmp_path / "record", kdump, inject)
    # From the first rename of a partition file on (the first change that shows), every call fails.
    first_change = next(
        i for i, (name, path) in enumerate(calls) if name == "replace" and "manifest" not in path
    )
    for index in (first_change, first_change + 1, len(calls) - 1):
        where = tmp_path / f"persist-{index}"
        case = make(src, where, kdump)
        backup = where / "backup"
        inject(fail_at=index, err=errno.EROFS, persist=True)
        result = kdump(*case.args, "--backup-dir", str(backup), str(case.part))
        assert result.exit_code == ExitCode.UNREADABLE, result.stderr
        assert "part way" in result.stderr, result.stderr
        assert "undoing it failed too" in result.stderr
        marker = "put it back as it was: "
        words = shlex.split(result.stderr.split(marker, 1)[1].strip())
        assert words == ["kdump", "restore", str(backup)]
        inject()  # the filesystem is writable again
        assert kdump(*words[1:]).exit_code == 0
        assert {k: v for k, v in file_hashes(case.part).items() if not k.endswith(TMP_SUFFIX)} == case.before


def test_every_fault_in_restore_is_finished_by_running_it_again(
    full_corpus: Path, tmp_path: Path, kdump: Kdump, inject: Callable[..., Injector]
) -> None:
    src = full_corpus / "kafka-3.8.0" / "txn-1"
    record = _trim_case(src, tmp_path / "record", kdump)
    assert (
        kdump("trim-tail", "--apply", "--backup-dir", str(tmp_path / "rb"), str(record.part)).exit_code == 0
    )
    injector = inject()
    assert kdump("restore", str(tmp_path / "rb")).exit_code == 0
    calls = injector.calls
    assert file_hashes(record.part) == record.before
    for index, (name, _path) in enumerate(calls):
        for err in _errnos(index):
            where = tmp_path / f"{index}-{err}"
            case = _trim_case(src, where, kdump)
            backup = where / "backup"
            inject()
            assert kdump("trim-tail", "--apply", "--backup-dir", str(backup), str(case.part)).exit_code == 0
            injector = inject(fail_at=index, err=err)
            result = kdump("restore", str(backup))
            assert injector.fired == 1
            if name == "link":  # a hard link back is a shortcut: when it fails, the file is copied
                assert result.exit_code == 0, result.output
                assert file_hashes(case.part) == case.before
                shutil.rmtree(where)
                continue
            assert result.exit_code == ExitCode.UNREADABLE, (index, name, err, result.stderr)
            assert "internal error" not in result.stderr
            marker = "run it again to finish: "
            words = shlex.split(result.stderr.split(marker, 1)[1].strip())
            assert words == ["kdump", "restore", str(backup)], result.stderr
            inject()
            assert kdump(*words[1:]).exit_code == 0
            assert {
                k: v for k, v in file_hashes(case.part).items() if not k.endswith(TMP_SUFFIX)
            } == case.before
            shutil.rmtree(where)


@pytest.mark.parametrize("point", ["after-backup", "after-temp-write", "after-rename", "after-truncate"])
def test_a_backup_spanning_a_killed_run_and_its_completion_restores_byte_for_byte(
    point: str, full_corpus: Path, tmp_path: Path, kdump: Kdump
) -> None:
    case = _trim_case(full_corpus / "kafka-3.8.0" / "txn-1", tmp_path, kdump)
    first, second = tmp_path / "first-backup", tmp_path / "second-backup"
    killed = run_kdump("trim-tail", "--apply", "--backup-dir", str(first), str(case.part), crash_at=point)
    assert killed.returncode < 0, killed.stderr
    done = kdump("trim-tail", "--apply", "--backup-dir", str(second), str(case.part))
    assert done.exit_code == 0, done.output
    assert file_hashes(case.part) == case.after
    # Undo the completion, then the killed run: the damaged partition, byte for byte. (Killed after
    # the cut, its last step, the first run had done everything and the second had nothing to do.)
    assert second.exists() == (point != "after-truncate")
    if second.exists():
        assert kdump("restore", str(second)).exit_code == 0
    assert kdump("restore", str(first)).exit_code == 0
    assert {k: v for k, v in file_hashes(case.part).items() if not k.endswith(TMP_SUFFIX)} == case.before


# --- salvage's output ------------------------------------------------------------------------------


def _output_hashes(out: Path) -> dict[str, str]:
    """The salvage output that does not name where it was written: the clean partition, records."""
    hashes = {f"txn-1/{k}": v for k, v in file_hashes(out / "txn-1").items()}
    hashes["records.jsonl"] = file_hashes(out)["records.jsonl"]
    return hashes


def test_every_fault_in_salvage_output_removes_it_and_the_rerun_finishes(
    full_corpus: Path, tmp_path: Path, kdump: Kdump, inject: Callable[..., Injector]
) -> None:
    part = copy_tree(full_corpus / "kafka-3.8.0" / "txn-1", tmp_path / "logs" / "txn-1")
    flip_crc_byte(-1).apply(part / f"{MID}.log")
    source = file_hashes(part)
    injector = inject()
    reference = kdump("salvage", "--no-parquet", "--out", str(tmp_path / "outs" / "reference"), str(part))
    assert reference.exit_code in (0, 1), reference.output
    calls = list(injector.calls)
    expected = _output_hashes(tmp_path / "outs" / "reference")
    assert {STEP[name] for name, _ in calls} == {"write", "fsync"}  # salvage renames nothing
    for index, (name, _path) in enumerate(calls):
        for err in _errnos(index):
            out = tmp_path / "outs" / f"out-{index}-{err}"
            injector = inject(fail_at=index, err=err)
            result = kdump("salvage", "--no-parquet", "--out", str(out), str(part))
            assert injector.fired == 1
            assert result.exit_code == ExitCode.UNREADABLE, (index, name, err, result.stderr)
            assert "internal error" not in result.stderr
            assert "was not touched" in result.stderr, result.stderr
            assert not out.exists()
            assert file_hashes(part) == source
            again = _rerun_command(result.stderr)
            inject()
            finished = kdump(*again[1:])
            assert finished.exit_code == reference.exit_code, finished.output
            assert _output_hashes(out) == expected
            shutil.rmtree(out)
    print(f"salvage: {len(calls)} calls, all removed and rerun")


def test_a_restore_stopped_half_way_through_a_tail_finishes_it(tmp_path: Path) -> None:
    """A short write then a full disk: part of the cut tail is back. The next restore appends the
    rest (the bytes already back match the tail's start), never refuses or doubles them."""
    from kdump.errors import RefusedError
    from kdump.ops.repair.safety import Journal, restore

    root = tmp_path / "p-0"
    root.mkdir()
    log = root / "00000000000000000000.log"
    original = bytes(range(256)) * 4
    log.write_bytes(original)
    Journal.create(tmp_path / "backup", root, "trim-tail").truncate(log, 100)
    with log.open("ab") as fh:
        fh.write(original[100:400])  # the stopped restore's first 300 bytes
    restore(tmp_path / "backup")
    assert log.read_bytes() == original
    # Bytes that are not the tail's are never taken for it.
    Journal.create(tmp_path / "backup2", root, "trim-tail").truncate(log, 100)
    with log.open("ab") as fh:
        fh.write(b"\xff" * 10)
    with pytest.raises(RefusedError, match="neither its original nor its trimmed size"):
        restore(tmp_path / "backup2")
