"""The one classifier: what each path under a given path is, and what kdump can do with it.

Every command that takes paths sees the disk through this module. It answers two questions for
each directory entry, without reading file contents:

- what the entry *is* on disk (`probe`): a regular file, a directory, a symlink loop, a dangling
  symlink, a FIFO, socket or device (never opened: reading one could block or never end), or
  something that cannot even be looked at;
- what Kafka would take it *for* by its name (`classify_name`): a segment's log, one of its
  indexes, a producer snapshot or KRaft snapshot, a state file (checkpoints, `partition.metadata`,
  `meta.properties`, the lock), a leftover of an unfinished operation (`.deleted`, `.cleaned`,
  `.swap`, `.tmp`, `.part`), or nothing kdump recognises.

Entries that cannot be read, are of the wrong type, or are not recognised become findings here
(`entry_findings`), so no caller can skip them in silence.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import stat
from enum import StrEnum
from pathlib import Path, PosixPath
from typing import NamedTuple

from kdump.errors import PathError
from kdump.findings import Finding, Severity, make_finding
from kdump.formats.filenames import (
    BOOTSTRAP_CHECKPOINT,
    CLEAN_SHUTDOWN_FILE,
    LOCK_FILE,
    LOG_DIR_FILES,
    OFFSET_CHECKPOINT_FILES,
    PARTITION_DIR_FILES,
    TMP_SUFFIX,
    parse_segment_file_name,
)
from kdump.store.paths import StoredPath
from kdump.store.queries import listdir


class FileType(StrEnum):
    """What an entry is on disk."""

    FILE = "file"
    DIR = "directory"
    SYMLINK_LOOP = "symlink loop"
    DANGLING_SYMLINK = "dangling symlink"
    FIFO = "FIFO"
    SOCKET = "socket"
    DEVICE = "device"
    MISSING = "missing"
    UNREADABLE = "unreadable"


class Probe(NamedTuple):
    """An entry as `stat` sees it (symlinks followed, as the broker follows them). A named tuple:
    one is made per entry of every partition (a third of the cost of a frozen dataclass)."""

    path: Path
    type: FileType
    size: int = 0
    error: str | None = None
    # A regular file already opened for reading (by a held directory's listing: `HeldListing`).
    opened: bool = False


def probe(path: Path) -> Probe:
    """Look at an entry without opening it."""
    try:
        st = path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Probe(path, FileType.SYMLINK_LOOP, error=exc.strerror)
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            kind = FileType.DANGLING_SYMLINK if path.is_symlink() else FileType.MISSING
            return Probe(path, kind, error=exc.strerror)
        return Probe(path, FileType.UNREADABLE, error=exc.strerror or str(exc))
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return Probe(path, FileType.FILE, st.st_size)
    if stat.S_ISDIR(mode):
        return Probe(path, FileType.DIR)
    if stat.S_ISFIFO(mode):
        return Probe(path, FileType.FIFO)
    if stat.S_ISSOCK(mode):
        return Probe(path, FileType.SOCKET)
    return Probe(path, FileType.DEVICE)


def readable(p: Probe) -> str | None:
    """None when a regular file opens for reading, else why not (root reads anything; others may not)."""
    if p.opened or isinstance(p.path, StoredPath):
        return None  # opened for reading already; or listed by its store, and read by ranges from there
    if p.type is FileType.FILE and p.size > 0 and os.access(p.path, os.R_OK):
        # A regular file with bytes that its permissions let this process read: no open and close
        # per file (a broker's log dir has five per partition). An empty one is opened: a file of
        # /proc or /sys says empty but is no file on disk.
        return None
    from kdump.scan.source import open_regular

    try:
        fd = open_regular(p.path, probed=p.type is FileType.FILE)
    except OSError as exc:
        return str(exc) if isinstance(exc, PathError) else exc.strerror or str(exc)
    os.close(fd)
    return None


# pathlib's own child of a listed name (what `iterdir` uses: no parsing of the name, 0.5 us against
# 2.4 us for `path / name`; a log dir's partition costs six). Private: where a release drops it,
# `path / name` is used.
_CHILD = getattr(PosixPath, "_make_child_relpath", None)


def child(path: Path, name: str) -> Path:
    """`path / name` for an entry name a listing gave (no separator, not `.` or `..`)."""
    if _CHILD is not None and type(path) is PosixPath:
        made: Path = _CHILD(path, name)
        # Its text too (pathlib formats it from the parts at the first `str`, 1.5 us): the
        # directory's text and the name, as `str(path / name)` gives it (held by a test).
        base = str(path)
        try:  # noqa: SIM105  (not contextlib.suppress: 0.4 us more, six times a partition)
            made._str = name if base == "." else base + name if base.endswith("/") else f"{base}/{name}"  # type: ignore[attr-defined]
        except AttributeError:  # a release without the attribute formats it itself
            pass
        return made
    return path / name


def list_dir(path: Path) -> list[str] | str:
    """A directory's entry names, sorted; or why it cannot be listed."""
    try:
        return sorted(listdir(path))
    except OSError as exc:
        return exc.strerror or str(exc)


def list_dir_types(path: Path) -> tuple[list[str], frozenset[str]] | str:
    """A directory's entry names, sorted, and those of them the directory itself says are
    directories (no symlink: from the readdir, no look at each entry; none for a stored tree); or
    why it cannot be listed."""
    if isinstance(path, StoredPath):
        names = list_dir(path)
        return names if isinstance(names, str) else (names, frozenset())
    try:
        with os.scandir(path) as it:
            entries = list(it)
    except OSError as exc:
        return exc.strerror or str(exc)
    return sorted(e.name for e in entries), frozenset(
        e.name for e in entries if e.is_dir(follow_symlinks=False)
    )


class NameKind(StrEnum):
    """What Kafka takes a file for by its name."""

    LOG = "log"
    INDEX = "index"
    TIMEINDEX = "timeindex"
    TXNINDEX = "txnindex"
    SNAPSHOT = "snapshot"
    CHECKPOINT = "checkpoint"  # KRaft snapshot or bootstrap.checkpoint
    STATE = "state"  # text state files, the lock, the clean-shutdown marker
    LEFTOVER = "leftover"
    MISNAMED_LOG = "misnamed-log"  # ends in .log, but not `<20 digits>.log`
    MISNAMED_INDEX = "misnamed-index"
    UNKNOWN = "unknown"


# The state files kdump decodes, by name, with the decoder kind `dump` and `verify` use.
STATE_FILE_KINDS = {
    "leader-epoch-checkpoint": "leader-epoch-checkpoint",
    "partition.metadata": "partition-metadata",
    "meta.properties": "meta-properties",
    "recovery-point-offset-checkpoint": "offset-checkpoint",
    "replication-offset-checkpoint": "offset-checkpoint",
    "log-start-offset-checkpoint": "offset-checkpoint",
    "cleaner-offset-checkpoint": "offset-checkpoint",
    ".kafka_cleanshutdown": "clean-shutdown",
    "quorum-state": "quorum-state",
}
_INDEX_EXTENSIONS = (".index", ".timeindex", ".txnindex")
# Java's Long.parseLong: an optional sign and decimal digits (Kafka's LogFileUtils.offsetFromFile).
_JAVA_LONG_RE = re.compile(r"[+-]?[0-9]+")


@functools.lru_cache(maxsize=4096)  # a log dir's partitions hold files of the same few names
def classify_name(name: str, where: str) -> NameKind:
    """What Kafka takes a file named `name` for, in a "partition" or a "log-dir"."""
    info = parse_segment_file_name(name)
    if info is not None:
        if info.suffix in ("deleted", "cleaned", "swap", "part"):
            return NameKind.LEFTOVER
        return NameKind(info.kind)
    known = PARTITION_DIR_FILES if where == "partition" else LOG_DIR_FILES
    if name in known:
        return NameKind.STATE
    if where == "log-dir" and name == BOOTSTRAP_CHECKPOINT:
        return NameKind.CHECKPOINT
    if name.endswith(TMP_SUFFIX) and name[: -len(TMP_SUFFIX)] in (known | OFFSET_CHECKPOINT_FILES):
        return NameKind.LEFTOVER
    if where == "partition":
        if name.endswith(".log"):
            return NameKind.MISNAMED_LOG
        if name.endswith(_INDEX_EXTENSIONS):
            return NameKind.MISNAMED_INDEX
    return NameKind.UNKNOWN


def file_kind(path: Path) -> str | None:
    """What a file given on its own holds, by name: log, index, timeindex, txnindex, snapshot,
    checkpoint, a state file's decoder kind, or one of the broker's leftovers (`lock`,
    `temp-file`); None when the name says nothing."""
    info = parse_segment_file_name(path.name)
    if info is not None:
        return info.kind
    if path.name == BOOTSTRAP_CHECKPOINT:
        return "checkpoint"
    if path.name == LOCK_FILE:
        return "lock"
    if temp_file_base(path.name) is not None:
        return "temp-file"
    return STATE_FILE_KINDS.get(path.name)


# Files the broker leaves beside its data and starts with, whatever they hold: nothing to judge.
BROKER_LEFTOVER_KINDS = frozenset({"lock", "clean-shutdown", "temp-file"})


def temp_file_base(name: str) -> str | None:
    """The state file a `<name>.tmp` is the interrupted write of (the broker writes checkpoints,
    `partition.metadata`, `meta.properties` and `quorum-state` to `.tmp`, then renames), or None."""
    if not name.endswith(TMP_SUFFIX):
        return None
    base = name[: -len(TMP_SUFFIX)]
    known = base in STATE_FILE_KINDS or base == BOOTSTRAP_CHECKPOINT
    return base if known or base.endswith(("-checkpoint", ".checkpoint")) else None


def leftover_description(path: Path, kind: str | None, size: int) -> str | None:
    """What one of the broker's leftovers is, in words (None for any other file)."""
    if kind == "lock":
        return "the broker's lock file (.lock): a running broker holds a lock on it; nothing in it to check"
    if kind == "clean-shutdown" and size == 0:
        return (
            f"an empty clean-shutdown marker ({CLEAN_SHUTDOWN_FILE}, as Kafka 3.6 and older leave it): "
            "the broker stopped cleanly and skips log recovery at its next start"
        )
    if kind == "clean-shutdown":
        return f"a clean-shutdown marker ({CLEAN_SHUTDOWN_FILE}): the broker stopped cleanly"
    base = temp_file_base(path.name)
    if kind == "temp-file" and base is not None:
        return (
            f"a temporary file of {base}, left by an interrupted write: the broker ignores it and "
            "overwrites it at its next write"
        )
    return None


def leftover_finding(p: Path) -> Finding:
    """The finding for a leftover in a partition or log dir, as the broker treats it at start.

    Legal (info), as a healthy broker leaves them and deletes them at its next start with no data
    effect: a `.tmp` of an interrupted state write; a `.deleted` segment file, producer snapshot or
    KRaft snapshot awaiting `file.delete.delay.ms` (a running broker's, or a 4.x broker's snapshots
    after a clean stop); a `.cleaned` cleaner or split output (`LogLoader` deletes it, the segments it
    was built from stay); a `.checkpoint.part` KRaft snapshot being written. A `.swap` is no such
    trace: the broker completes it, replacing the segments in its offset range (a warning).
    """
    base = temp_file_base(p.name)
    if base is not None:
        return make_finding(
            "leftover-file",
            str(p),
            f"{p.name} was left by an interrupted write of {base}; the broker ignores it and "
            "overwrites it at its next write",
            severity=Severity.INFO,
        )
    info = parse_segment_file_name(p.name)
    suffix = info.suffix if info is not None else ""
    if suffix == "deleted":
        return make_finding(
            "leftover-file",
            str(p),
            f"{p.name} awaits the broker's asynchronous delete (file.delete.delay.ms); the broker deletes "
            "it at its next start",
            severity=Severity.INFO,
        )
    if suffix in ("cleaned", "part"):
        what = (
            "a KRaft snapshot being written" if suffix == "part" else "output of an unfinished clean or split"
        )
        return make_finding(
            "leftover-file",
            str(p),
            f"{p.name} is {what}; the broker deletes it at its next start and keeps the files it came from",
            severity=Severity.INFO,
        )
    return make_finding(
        "leftover-file",
        str(p),
        f"{p.name} was left by an unfinished clean or split: the broker completes the swap at its next "
        "start, replacing the segments whose base offsets lie in its range",
    )


def segment_base_offset(path: Path) -> int | None:
    """The base offset in a segment file's name."""
    info = parse_segment_file_name(path.name)
    return info.base_offset if info is not None else None


def broker_offset_from_name(name: str) -> int | None:
    """The base offset the broker reads from a `.log` name (the text before the first dot, parsed
    as a Java long), or None where the broker's parse throws and the partition fails to load."""
    prefix = name.split(".", 1)[0]
    if not _JAVA_LONG_RE.fullmatch(prefix):
        return None
    value = int(prefix)
    return value if -(2**63) <= value < 2**63 else None


def entry_findings(p: Probe, expected: str) -> list[Finding]:
    """Findings for an entry that cannot be read as `expected` (what its place or name calls for).

    None for a regular file or a directory: whether that is the right one is the caller's question.
    """
    label = str(p.path)
    if p.type == FileType.SYMLINK_LOOP:
        return [
            make_finding("symlink-loop", label, f"{p.path.name} is a symlink loop; {expected} cannot be read")
        ]
    if p.type == FileType.DANGLING_SYMLINK:
        target = _link_target(p.path)
        return [
            make_finding(
                "dangling-symlink", label, f"{p.path.name} is a symlink to {target}, which does not exist"
            )
        ]
    if p.type in (FileType.UNREADABLE, FileType.MISSING):
        return [make_finding("unreadable-file", label, f"cannot look at {p.path.name}: {p.error}")]
    if p.type in (FileType.FIFO, FileType.SOCKET, FileType.DEVICE):
        return [
            make_finding(
                "wrong-file-type",
                label,
                f"{p.path.name} is a {p.type.value}, not {expected}; it was not read",
            )
        ]
    return []


def unknown_finding(p: Probe, where: str, severity: Severity) -> Finding:
    """An entry kdump does not recognise in a partition, log dir or directory of log dirs."""
    what = "directory" if p.type == FileType.DIR else "file"
    return make_finding(
        "unknown-entry",
        str(p.path),
        f"{p.path.name} is a {what} that Kafka does not keep in a {where}; it was not checked",
        severity=severity,
    )


def _link_target(path: Path) -> str:
    try:
        return str(path.readlink())
    except OSError:
        return "?"
