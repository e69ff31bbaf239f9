"""The one place kdump writes: broker-lock checks, backups, atomic replacement, fsync, restore.

Every repair follows the same discipline:
- refuse while a broker holds the log dir: Kafka holds an exclusive lock on `<log dir>/.lock`
  (`FileChannel.tryLock`, a POSIX record lock on Linux); kdump tries a non-blocking lock of its own
  and holds it for the whole repair, so a broker cannot start half way through;
- every byte removed or replaced is first copied into a backup directory, and a manifest there
  (written before each step, updated after) says how to undo it (`kdump restore`);
- new contents go to a temporary file created exclusively beside the target, are fsynced, renamed
  over the target, and the directory is fsynced: a crash leaves the old file or the new one;
- files are opened with O_NOFOLLOW and must resolve inside the directory being repaired.

The default backup directory is never inside a broker's log dir: a broker treats every directory
there as a partition and fails on names it cannot parse (or deletes ones ending in `-delete`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import signal
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kdump.errors import LogDirLockedError, PathError, RefusedError

LOCK_FILE = ".lock"
MANIFEST = "kdump-manifest.json"
TMP_SUFFIX = ".kdump-tmp"
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class _Calls:
    """The os-level calls that write: every write, rename and fsync of a repair goes through here, so
    that the fault tests can fail any one of them (ENOSPC, EIO, EROFS, EACCES) step by step."""

    open = staticmethod(os.open)
    write = staticmethod(os.write)
    fsync = staticmethod(os.fsync)
    replace = staticmethod(os.replace)
    link = staticmethod(os.link)
    unlink = staticmethod(os.unlink)
    ftruncate = staticmethod(os.ftruncate)
    mkdir = staticmethod(os.mkdir)


CALLS = _Calls()


def _absolute(path: Path) -> str:
    """An absolute path without resolving links (the manifest must name what was touched)."""
    return os.path.abspath(path)  # noqa: PTH100  (resolve() would follow symlinks)


def fault_point(name: str) -> None:
    """A controlled crash for crash-safety tests: `KDUMP_CRASH_AT=<name>` kills the process here."""
    if os.environ.get("KDUMP_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def _lock_holder_pid(fd: int) -> int | None:
    """Ask the kernel who holds a conflicting POSIX lock (F_GETLK), without taking one."""
    try:
        # struct flock: l_type, l_whence, l_start, l_len, l_pid (native layout and padding)
        request = struct.pack("@hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        reply = fcntl.fcntl(fd, fcntl.F_GETLK, request + b"\0" * 16)
        l_type, _whence, _start, _len, pid = struct.unpack_from("@hhqqi", reply)
    except OSError:
        return None
    return pid if l_type != fcntl.F_UNLCK else None


def _describe_pid(pid: int | None) -> str:
    if pid is None:
        return "another process"
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmd = ""
    if "kafka" in cmd.lower():
        return f"a Kafka broker (pid {pid})"
    return f"pid {pid}" + (f" ({cmd[:120]})" if cmd else "")


@contextlib.contextmanager
def log_dir_lock(log_dir: Path | None) -> Iterator[None]:
    """Hold `<log dir>/.lock` for the duration, or refuse when someone else holds it.

    A log dir without a `.lock` file has no running broker (the broker creates it at start and
    keeps it); kdump does not create one.

    Raises:
        LogDirLockedError: a broker (or another kdump) holds the lock.
    """
    if log_dir is None:
        yield
        return
    lock_path = log_dir / LOCK_FILE
    try:
        fd = os.open(lock_path, os.O_WRONLY | _O_NOFOLLOW | _O_CLOEXEC)
    except FileNotFoundError:
        yield
        return
    except OSError as exc:
        raise LogDirLockedError(
            f"cannot open {lock_path} to check the broker's lock: {exc.strerror}"
        ) from exc
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise
            holder = _describe_pid(_lock_holder_pid(fd))
            raise LogDirLockedError(
                f"{lock_path} is locked by {holder}: stop the broker before repairing this log dir"
            ) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            raise LogDirLockedError(f"{lock_path} is locked (flock) by another process") from exc
        yield
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """fsync a directory so renames and new names in it are durable."""
    fd = CALLS.open(path, os.O_RDONLY | _O_CLOEXEC)
    try:
        CALLS.fsync(fd)
    finally:
        os.close(fd)


def ensure_inside(path: Path, root: Path) -> None:
    """Refuse a path that is a symlink or resolves outside `root`."""
    if path.is_symlink():
        raise RefusedError(f"{path} is a symbolic link; kdump does not follow links when repairing")
    real_root = root.resolve()
    real = path.resolve()
    if real != real_root and real_root not in real.parents:
        raise RefusedError(f"{path} resolves outside {root}")


def _write_new(path: Path, data: bytes) -> None:
    """Create `path` exclusively (never clobbering, never through a link), write, fsync."""
    try:
        fd = CALLS.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o644)
    except FileExistsError as exc:
        raise RefusedError(
            f"{path} already exists; kdump never overwrites a backup or temporary file"
        ) from exc
    try:
        view = memoryview(data)
        while view:
            n = CALLS.write(fd, view)
            view = view[n:]
        CALLS.fsync(fd)
    except OSError:
        _discard(path)  # a half-written new file is never left to be mistaken for a whole one
        raise
    finally:
        os.close(fd)


def _discard(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def _copy_new(src: Path, dst: Path) -> None:
    """Copy a file into a new, exclusively created file, and fsync it."""
    try:
        sfd = os.open(src, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC)
    except OSError as exc:
        raise PathError(f"cannot read {src}: {exc.strerror}") from exc
    try:
        dfd = CALLS.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o644)
    except FileExistsError as exc:
        os.close(sfd)
        raise RefusedError(f"{dst} already exists; kdump never overwrites a backup") from exc
    except OSError:
        os.close(sfd)
        raise
    try:
        while True:
            chunk = os.read(sfd, 1 << 20)
            if not chunk:
                break
            view = memoryview(chunk)
            while view:
                view = view[CALLS.write(dfd, view) :]
        CALLS.fsync(dfd)
    except OSError:
        _discard(dst)
        raise
    finally:
        os.close(sfd)
        os.close(dfd)


def default_backup_dir(partition: Path, log_dir: Path | None, now: float | None = None) -> Path:
    """A new timestamped backup folder: beside the partition, or beside the log dir holding it."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    anchor = log_dir if log_dir is not None else partition.resolve().parent
    name = f"kdump-backup-{partition.name}-{stamp}"
    base = anchor.resolve().parent / f"{anchor.name}.kdump-backups" if log_dir is not None else anchor
    # Two repairs of a partition within a second (one hint after another): a name of its own each,
    # not a refusal of the second for a backup directory that exists.
    candidate, n = base / name, 1
    while candidate.exists():
        n += 1
        candidate = base / f"{name}-{n}"
    return candidate


@dataclass
class Journal:
    """The backup directory and its manifest: what was changed, and how to undo it."""

    backup_dir: Path
    root: Path
    command: str
    steps: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def create(cls, backup_dir: Path, root: Path, command: str) -> Journal:
        """Create the backup directory (it must not exist yet) and an empty manifest."""
        try:
            backup_dir.parent.mkdir(parents=True, exist_ok=True)
            CALLS.mkdir(backup_dir)
        except FileExistsError as exc:
            raise RefusedError(f"backup directory {backup_dir} already exists") from exc
        journal = cls(backup_dir, root.resolve(), command)
        journal._save()
        fsync_dir(backup_dir.parent)
        return journal

    def _save(self) -> None:
        doc = {"version": 1, "command": self.command, "root": str(self.root), "steps": self.steps}
        tmp = self.backup_dir / (MANIFEST + TMP_SUFFIX)
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        _write_new(tmp, json.dumps(doc, indent=2).encode())
        CALLS.replace(tmp, self.backup_dir / MANIFEST)
        fsync_dir(self.backup_dir)

    def _step(self, step: dict[str, Any]) -> dict[str, Any]:
        step["state"] = "started"
        self.steps.append(step)
        self._save()
        return step

    def _done(self, step: dict[str, Any]) -> None:
        step["state"] = "done"
        self._save()

    def replace(self, path: Path, data: bytes) -> None:
        """Back up `path` (if it exists) and atomically replace its contents with `data`."""
        ensure_inside(path, self.root)
        backup = None
        if path.exists():
            backup = self.backup_dir / f"{len(self.steps):03d}-{path.name}"
            _copy_new(path, backup)
            fault_point("after-backup")
        step = self._step(
            {
                "op": "replace",
                "path": _absolute(path),
                "backup": None if backup is None else _absolute(backup),
            }
        )
        tmp = path.with_name(path.name + TMP_SUFFIX)
        with contextlib.suppress(FileNotFoundError):
            if tmp.is_symlink():
                raise RefusedError(f"{tmp} is a symbolic link")
            tmp.unlink()  # a leftover of a crashed run: never trusted, never the target
        _write_new(tmp, data)
        fault_point("after-temp-write")
        CALLS.replace(tmp, path)
        fault_point("after-rename")
        fsync_dir(path.parent)
        self._done(step)

    def truncate(self, path: Path, size: int) -> None:
        """Back up the bytes after `size`, then truncate `path` to `size`."""
        ensure_inside(path, self.root)
        original = path.stat().st_size
        if size >= original:
            return
        tail = self.backup_dir / f"{len(self.steps):03d}-{path.name}.tail-{size}"
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC)
        try:
            os.lseek(fd, size, os.SEEK_SET)
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
        finally:
            os.close(fd)
        _write_new(tail, b"".join(chunks))
        fault_point("after-backup")
        step = self._step(
            {
                "op": "truncate",
                "path": _absolute(path),
                "size": size,
                "original_size": original,
                "backup": _absolute(tail),
            }
        )
        fd = CALLS.open(path, os.O_WRONLY | _O_NOFOLLOW | _O_CLOEXEC)
        try:
            CALLS.ftruncate(fd, size)
            CALLS.fsync(fd)
        finally:
            os.close(fd)
        fault_point("after-truncate")
        self._done(step)

    def move_out(self, path: Path) -> None:
        """Move a whole file into the backup directory (nothing is deleted)."""
        ensure_inside(path, self.root)
        dest = self.backup_dir / f"{len(self.steps):03d}-{path.name}"
        step = self._step({"op": "move", "path": _absolute(path), "backup": _absolute(dest)})
        try:
            CALLS.link(path, dest)  # same file system: a hard link, then the unlink below
        except OSError:
            _copy_new(path, dest)
        fsync_dir(self.backup_dir)
        fault_point("after-backup")
        CALLS.unlink(path)
        fsync_dir(path.parent)
        self._done(step)


@dataclass(frozen=True, slots=True)
class RestoreResult:
    """What `restore` put back."""

    backup_dir: Path
    restored: tuple[str, ...]


def restore(backup_dir: Path) -> RestoreResult:
    """Undo the steps recorded in a backup directory's manifest, newest first.

    A step recorded as started but not done is undone only as far as it got: a truncation whose
    file still has its original size, or a replacement whose file still has its old contents,
    needs nothing.
    """
    manifest = backup_dir / MANIFEST
    try:
        from kdump.scan.source import read_small_file

        doc = json.loads(read_small_file(manifest))
    except (OSError, ValueError) as exc:
        raise PathError(f"{manifest} cannot be read: {exc}") from exc
    root = Path(doc["root"])
    restored: list[str] = []
    for step in reversed(doc["steps"]):
        path = Path(step["path"])
        ensure_inside(path, root)
        backup = Path(step["backup"]) if step.get("backup") else None
        op = step["op"]
        if op == "truncate":
            assert backup is not None
            size = path.stat().st_size
            if size == step["original_size"]:
                continue
            if not _part_way_back(path, step["size"], size, backup):
                raise RefusedError(
                    f"{path} is {size} bytes, neither its original nor its trimmed size; not touched"
                )
            tail = backup.read_bytes()
            _put_tail_back(path, step["size"], size, tail)
            restored.append(str(path))
        elif op == "replace":
            if backup is None:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            else:
                tmp = path.with_name(path.name + TMP_SUFFIX)
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
                _copy_new(backup, tmp)
                CALLS.replace(tmp, path)
            fsync_dir(path.parent)
            restored.append(str(path))
        elif op == "move":
            assert backup is not None
            if path.exists():
                continue
            try:
                CALLS.link(backup, path)
            except OSError:
                tmp = path.with_name(path.name + TMP_SUFFIX)
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
                _copy_new(backup, tmp)
                CALLS.replace(tmp, path)  # never a half-copied file under the segment's name
            fsync_dir(path.parent)
            restored.append(str(path))
    return RestoreResult(backup_dir, tuple(restored))


def _part_way_back(path: Path, trimmed: int, size: int, backup: Path) -> bool:
    """Whether a file is its trimmed size, or between it and its original size with the tail's
    first bytes already back (a restore that stopped part way through appending them)."""
    if size == trimmed:
        return True
    if size < trimmed:
        return False
    with backup.open("rb") as fh:
        head = fh.read(size - trimmed)
    fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC)
    try:
        return os.pread(fd, size - trimmed, trimmed) == head and len(head) == size - trimmed
    finally:
        os.close(fd)


def _put_tail_back(path: Path, trimmed: int, size: int, tail: bytes) -> None:
    """Append the rest of a trimmed tail (all of it, or what a stopped restore had not written)."""
    fd = CALLS.open(path, os.O_WRONLY | os.O_APPEND | _O_NOFOLLOW | _O_CLOEXEC)
    try:
        view = memoryview(tail)[size - trimmed :]
        while view:
            view = view[CALLS.write(fd, view) :]
        CALLS.fsync(fd)
    finally:
        os.close(fd)
