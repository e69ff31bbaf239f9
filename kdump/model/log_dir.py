"""Log directories, and turning the paths a user gives into what to work on.

A path may name a single file, a partition directory, or a whole log dir (a directory holding
partition directories, `meta.properties` and the checkpoint files). Kafka holds an exclusive lock on
`<log dir>/.lock` while a broker uses the directory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kdump.errors import PathError
from kdump.formats.filenames import parse_partition_dir_name, parse_segment_file_name
from kdump.model.partition import PartitionDir
from kdump.store.locations import is_stored
from kdump.store.queries import as_path, can_list, exists, listdir

LOG_DIR_FILES = (
    "meta.properties",
    "recovery-point-offset-checkpoint",
    "replication-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
    "bootstrap.checkpoint",
    ".kafka_cleanshutdown",
)
LOCK_FILE = ".lock"


@dataclass(slots=True)
class LogDir:
    """A broker log directory: partition directories plus log-dir-level files."""

    path: Path
    partitions: list[PartitionDir] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> LogDir:
        """List a log dir's partition directories and files."""
        log_dir = cls(path)
        try:
            names = sorted(listdir(path))
        except OSError as exc:
            raise PathError(f"cannot list {path}: {exc.strerror or exc}") from exc
        for name in names:
            p = path / name
            if p.is_dir() and looks_like_partition_dir(p):
                log_dir.partitions.append(PartitionDir.load(p))
            elif p.is_file() and name in LOG_DIR_FILES:
                log_dir.files.append(p)
        return log_dir


def looks_like_partition_dir(path: Path) -> bool:
    """A directory named like `<topic>-<n>` or holding segment files."""
    if parse_partition_dir_name(path.name) is not None:
        return True
    try:
        return any(parse_segment_file_name(n) is not None for n in listdir(path))
    except OSError:
        return False


def looks_like_log_dir(path: Path) -> bool:
    """A directory holding partition directories or log-dir-level files."""
    try:
        names = listdir(path)
    except OSError:
        return False
    if any(n in LOG_DIR_FILES for n in names):
        return True
    return any((path / n).is_dir() and parse_partition_dir_name(n) is not None for n in names)


@dataclass(frozen=True, slots=True)
class Target:
    """One thing a command works on: a file, a partition directory, or a log dir."""

    given: str
    path: Path
    kind: str  # "file" | "partition" | "log-dir"
    log_dir_path: Path | None  # the log dir that holds it, if known (for checkpoints and the lock)

    def partitions(self) -> list[PartitionDir]:
        """The partition directories of this target (none for a single file)."""
        if self.kind == "partition":
            return [PartitionDir.load(self.path)]
        if self.kind == "log-dir":
            return LogDir.load(self.path).partitions
        return []


def discover(given: str) -> Target:
    """Classify a path the user gave.

    Raises:
        PathError: it does not exist or cannot be read.
    """
    # URLs and tarballs are listed once here; their paths answer from that listing (kdump.store).
    path = as_path(given) if is_stored(given) else Path(given)
    if not exists(path):
        raise PathError(f"{given}: no such file or directory")
    if path.is_file():
        parent = path.resolve().parent
        return Target(given, path, "file", _holding_log_dir(parent))
    if not can_list(path):
        raise PathError(f"{given}: permission denied")
    if looks_like_partition_dir(path) and not looks_like_log_dir(path):
        return Target(given, path, "partition", _holding_log_dir(path.resolve()))
    return Target(given, path, "log-dir", path)


def _holding_log_dir(partition_path: Path) -> Path | None:
    """The log dir holding a partition directory: its parent, when that looks like one."""
    parent = partition_path.parent
    if looks_like_log_dir(parent) and parse_partition_dir_name(partition_path.name) is not None:
        return parent
    return None
