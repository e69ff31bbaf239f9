"""A write, rename or fsync that fails part way through a repair: undo, then say where things stand.

A repair is a sequence of journaled steps (kdump.ops.repair.safety). When one of its os-level calls fails
(a disk that fills up, an I/O error, a filesystem remounted read-only, a permission taken away),
the steps already done are undone from the backup directory's manifest, newest first, exactly as
`kdump restore` would, so the partition ends as it was before the run, never half repaired. The
backup directory is then removed: every byte it held is back in place. When the undo fails too
(the filesystem went read-only, say), the partition is left part way and the message names the
one command that puts it back once the cause is fixed: `kdump restore BACKUP_DIR`.

Either way the failure is a `RepairFaultError` (exit 3, a path that could not be written), with
a message of one sentence that says which of the two states the partition is in and the command
to run next; never the "internal error" exit.
"""

from __future__ import annotations

import contextlib
import errno
import shlex
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

from kdump.errors import KdumpError, LogDirLockedError, RepairFaultError
from kdump.ops.repair.safety import MANIFEST, restore


def describe_os_error(exc: OSError) -> str:
    """An OSError in words, without Python's repr: `No space left on device (ENOSPC) on PATH`."""
    if isinstance(exc, KdumpError):
        return str(exc)
    name = errno.errorcode.get(exc.errno or 0)
    text = exc.strerror or (str(exc.args[0]) if exc.args else "I/O failure")
    if name:
        text += f" ({name})"
    if exc.filename is not None:
        text += f" on {exc.filename}"
    return text


def command_line(words: Sequence[str | Path]) -> str:
    """A command as it runs pasted into a shell."""
    return shlex.join(str(w) for w in words)


@contextlib.contextmanager
def undone_on_fault(
    command: str, root: Path, backup_dir: Path, rerun: Sequence[str | Path]
) -> Iterator[None]:
    """Run a repair's steps; on a failed os-level call, undo them and raise `RepairFaultError`.

    Args:
        command: the repair's name, as the user typed it (trim-tail, reindex, ...).
        root: the partition (or the directory of the segment) being repaired.
        backup_dir: the run's backup directory (created by the steps; it must not exist before).
        rerun: the command that runs the repair again once the cause is fixed.
    """
    try:
        yield
    except RepairFaultError:
        raise
    except OSError as exc:
        if isinstance(exc, LogDirLockedError):
            raise  # a lock or a refusal: nothing was written
        cause = describe_os_error(exc)
        undo_failure = _undo(backup_dir)
        if undo_failure is None:
            raise RepairFaultError(
                f"{command} stopped: {cause}; every change was undone and {root} is as it was before "
                f"the run; once the cause is fixed, run it again: {command_line(rerun)}",
                undone=True,
            ) from exc
        raise RepairFaultError(
            f"{command} stopped part way: {cause}, and undoing it failed too ({undo_failure}), so {root} "
            f"is part way through the repair; once the cause is fixed, put it back as it was: "
            f"{command_line(['kdump', 'restore', backup_dir])}",
            undone=False,
        ) from exc


def _undo(backup_dir: Path) -> str | None:
    """Undo the journaled steps and remove the backup directory; None when that worked, else why not."""
    if not backup_dir.exists():
        return None  # the run stopped before its backup directory existed: nothing was done
    if (backup_dir / MANIFEST).exists():
        try:
            restore(backup_dir)
        except OSError as exc:
            return describe_os_error(exc)
        except KdumpError as exc:
            return str(exc)
    # Every byte the backup held is back in the partition (or the run stopped before its first
    # step): the folder has nothing left to give, and a second run may want the same name.
    shutil.rmtree(backup_dir, ignore_errors=True)
    return None
