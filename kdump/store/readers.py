"""Ranged readers: `read(position, length)` over a local file, a URL, or a member of a tarball."""

from __future__ import annotations

import os
from typing import Protocol

from kdump.errors import PathError
from kdump.store.held import held_tree
from kdump.store.locations import is_url


class RangedReader(Protocol):
    """Bytes by position: what every stored file offers, whatever holds it."""

    location: str
    size: int

    def read(self, position: int, length: int) -> bytes:
        """Up to `length` bytes from `position` (fewer only at the end)."""
        ...

    def close(self) -> None:
        """Release what the reader holds."""
        ...


class LocalReader:
    """A local file read with `pread` (no shared file position, so readers never interfere)."""

    def __init__(self, path: str) -> None:
        self.location = path
        try:
            self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            self.size = os.fstat(self._fd).st_size
        except OSError as exc:
            raise PathError(f"cannot read {path}: {exc.strerror or exc}") from None

    def read(self, position: int, length: int) -> bytes:
        """Up to `length` bytes from `position`."""
        try:
            return os.pread(self._fd, max(0, length), position)
        except OSError as exc:
            raise PathError(f"cannot read {self.location}: {exc.strerror or exc}") from None

    def close(self) -> None:
        """Close the file."""
        os.close(self._fd)


class EmptyReader:
    """A stored file its listing says is empty: nothing to request (a store answers the open of
    each file with a metadata request; a log dir holds many empty files)."""

    def __init__(self, location: str) -> None:
        self.location = location
        self.size = 0

    def read(self, position: int, length: int) -> bytes:
        """Nothing: the file is empty."""
        return b""

    def close(self) -> None:
        """Nothing to release."""


def open_file_reader(location: str) -> RangedReader:
    """A reader of a whole file: local, or at a URL (not inside an archive)."""
    if is_url(location):
        from kdump.store.remote import RemoteReader

        tree = held_tree(location)
        entry = tree.get(location) if tree is not None else None
        if entry is not None and entry.kind == "file":
            # The listing gave its size: opened without a metadata request.
            return EmptyReader(location) if entry.size == 0 else RemoteReader(location, entry.size)
        return RemoteReader(location)
    return LocalReader(location)
