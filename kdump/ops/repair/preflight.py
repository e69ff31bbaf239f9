"""A repair's pre-flight: room, a writable filesystem and writable directories, checked before any
byte is touched.

A repair that fails half way through on a full or read-only disk is the worst outcome at the worst
hour (issue: a trim-tail on a full disk moved the later segments away and rebuilt the indexes, then
died before the cut). Its plan knows every byte it will write: the backup copies, the moved files
when the backup is on another filesystem, the rewritten files (each written beside the old one
before the rename) and the manifest. `check_room` adds those up per filesystem and refuses the
repair with `CannotRepairError` (exit 5) when any filesystem lacks the room or the inodes, is
mounted read-only, or a directory the repair writes in (or a file it truncates) is not writable.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kdump.errors import CannotRepairError

if TYPE_CHECKING:
    from kdump.ops.repair.reindex import FileChange

# Room kept for the manifest (written to a temporary file, then renamed: two copies at a time) and
# the new directory entries, per filesystem, on top of the files' own blocks.
MANIFEST_ROOM = 64 << 10


@dataclass(frozen=True, slots=True)
class Need:
    """New bytes a repair writes under a directory (which may not exist yet)."""

    directory: Path
    sizes: tuple[int, ...]  # one size per new file: each takes whole blocks
    what: str  # "the backup", "the rewritten files", ...


@dataclass(frozen=True, slots=True)
class Writable:
    """A file a repair changes in place (truncates or appends to): it must be writable."""

    path: Path


def existing_ancestor(path: Path) -> Path:
    """The path itself, or the nearest parent that exists (where a new directory would be made)."""
    path = Path(os.path.abspath(path))  # noqa: PTH100  (links are followed by stat below, as mkdir does)
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def same_filesystem(a: Path, b: Path) -> bool:
    """Whether two paths (or where they would be created) are on one filesystem."""
    try:
        return existing_ancestor(a).stat().st_dev == existing_ancestor(b).stat().st_dev
    except OSError:
        return False


def check_room(command: str, needs: Iterable[Need], files: Iterable[Writable] = ()) -> None:
    """Refuse, before anything is touched, a repair that cannot finish here.

    Raises:
        CannotRepairError: one sentence naming the filesystem or path, what is needed and what is
            there, and that nothing was changed.
    """
    per_fs: dict[int, tuple[Path, list[Need]]] = {}
    for need in needs:
        where = existing_ancestor(need.directory)
        if not where.is_dir():
            raise CannotRepairError(
                f"{command} would write {need.what} under {need.directory}, but {where} is not a "
                "directory; nothing was changed"
            )
        _check_writable(command, where, need.what)
        dev = where.stat().st_dev
        per_fs.setdefault(dev, (where, []))[1].append(need)
    for path in (f.path for f in files):
        _check_writable(command, path, "the repaired files")
    for where, group in per_fs.values():
        _check_space(command, where, group)


def _check_writable(command: str, path: Path, what: str) -> None:
    try:
        vfs = os.statvfs(path)
    except OSError as exc:
        raise CannotRepairError(
            f"{command} cannot check {path} ({exc.strerror}); nothing was changed"
        ) from exc
    if vfs.f_flag & os.ST_RDONLY:
        raise CannotRepairError(
            f"{command} would write {what} in {path}, which is on a read-only filesystem; nothing was changed"
        )
    mode = os.W_OK | (os.X_OK if path.is_dir() else 0)
    if not os.access(path, mode):
        raise CannotRepairError(
            f"{command} would write {what} in {path}, which this user cannot write; nothing was changed"
        )


def _check_space(command: str, where: Path, group: list[Need]) -> None:
    vfs = os.statvfs(where)
    block = vfs.f_frsize or vfs.f_bsize or 4096
    sizes = [s for need in group for s in need.sizes]
    needed = sum(-(-s // block) * block for s in sizes) + MANIFEST_ROOM
    free = vfs.f_bavail * block
    what = " and ".join(dict.fromkeys(need.what for need in group))
    if needed > free:
        raise CannotRepairError(
            f"{command} needs {needed} bytes for {what} on the filesystem of {where}, which has "
            f"{free} free; nothing was changed: free some space, or give --backup-dir on another "
            "filesystem"
        )
    inodes = len(sizes) + 4  # the files, the manifest and its temporary copy, the backup folders
    if vfs.f_files and inodes > vfs.f_favail:
        raise CannotRepairError(
            f"{command} needs {inodes} new files for {what} on the filesystem of {where}, which has "
            f"{vfs.f_favail} free inodes; nothing was changed"
        )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def reindex_needs(changes: Sequence[FileChange], backup_dir: Path) -> list[Need]:
    """The new files an applied reindex writes: a backup copy of each file it replaces, and each
    new file beside the old one until the rename."""
    needs = [Need(backup_dir, tuple(_size(c.path) for c in changes if c.exists), "the backup")]
    for d in dict.fromkeys(c.path.parent for c in changes):
        needs.append(
            Need(d, tuple(len(c.data) for c in changes if c.path.parent == d), "the rewritten files")
        )
    return needs


def restore_needs(backup_dir: Path, manifest: dict[str, Any]) -> tuple[list[Need], list[Writable]]:
    """What `restore` writes: each cut tail appended back, each replaced file copied back beside
    the current one, each moved file copied back where it cannot be a hard link."""
    needs: list[Need] = []
    files: list[Writable] = []
    for step in manifest.get("steps", []):
        path = Path(step["path"])
        backup = Path(step["backup"]) if step.get("backup") else None
        if backup is None:
            continue
        if step["op"] == "truncate":
            needs.append(Need(path.parent, (_size(backup),), "the restored files"))
            if path.exists():
                files.append(Writable(path))
        elif step["op"] == "replace" or not same_filesystem(backup, path.parent):
            needs.append(Need(path.parent, (_size(backup),), "the restored files"))
        else:
            needs.append(Need(path.parent, (), "the restored files"))
    return needs, files


def read_manifest(path: Path) -> dict[str, Any]:
    """A backup directory's manifest as a JSON object (ValueError when it is not one)."""
    from kdump.scan.source import read_small_file

    doc = json.loads(read_small_file(path))  # a FIFO put in its place is never read
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    return doc
