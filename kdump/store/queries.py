"""The few filesystem questions the model asks, answered for local and stored paths alike."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from kdump.errors import NotFoundError
from kdump.findings import Finding
from kdump.formats.filenames import parse_partition_dir_name
from kdump.store.entries import parent_of
from kdump.store.locations import archive_split, is_stored
from kdump.store.paths import StoredPath, stored_path


def as_path(location: str) -> Path:
    """The path object for a location as given: a `StoredPath` (its tree listed) or a plain `Path`.

    Raises:
        PathError: a stored location whose tree cannot be listed.
    """
    if not is_stored(location):
        return Path(location)
    path = stored_path(location)
    split = archive_split(location)
    if split is not None and not split[1]:
        # `tar czf broker1.tar.gz kafka-logs` puts the log dir one level down: an archive given
        # alone stands for the directory it wraps (findings still name `broker1.tar.gz/kafka-logs/…`).
        while path.is_dir() and len(names := path.names()) == 1 and (path / names[0]).is_dir():
            if parse_partition_dir_name(names[0]) is not None:
                break
            path = path / names[0]
    return path


def exists(path: str | Path, *, follow_symlinks: bool = True) -> bool:
    """Whether something is there (with `follow_symlinks=False`, a dangling local link counts)."""
    if isinstance(path, StoredPath):
        return path.exists()
    if isinstance(path, str) and is_stored(path):
        # Only "nothing there" is False: a store that refuses (credentials, endpoint) says why.
        try:
            return as_path(path).exists()
        except NotFoundError:
            return False
    return os.path.exists(path) if follow_symlinks else os.path.lexists(path)


def listdir(path: Path) -> list[str]:
    """The names in a directory.

    Raises:
        OSError: it cannot be listed.
    """
    if isinstance(path, StoredPath):
        return path.names()
    return os.listdir(path)


def can_list(path: Path) -> bool:
    """Whether a directory may be listed and entered."""
    if isinstance(path, StoredPath):
        return path.is_dir()
    return os.access(path, os.R_OK | os.X_OK)


def listing_findings(path: Path, *, partitions: Iterable[Path] = ()) -> list[Finding]:
    """What listing the tree holding this path found wrong (a damaged or truncated archive),
    leaving out the findings of files directly in `partitions` (their reports carry them)."""
    if not isinstance(path, StoredPath):
        return []
    tree = path.tree()
    if tree is None or not tree.holds(str(path)):
        return []
    skip = {str(p) for p in partitions}
    return [f for f in tree.findings if parent_of(f.file) not in skip]


def partition_listing_findings(partition: Path) -> list[Finding]:
    """The listing's findings about files directly in this partition directory (a member of a
    tarball cut short), so its report is not "ok" when its files are not whole."""
    if not isinstance(partition, StoredPath):
        return []
    tree = partition.tree()
    return [f for f in tree.findings if parent_of(f.file) == str(partition)] if tree is not None else []
