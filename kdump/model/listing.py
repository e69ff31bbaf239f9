"""A location resolved once: each directory under it listed once, each entry looked at once.

`discover` resolves a path the user gave (a local path, a tarball's member, an object-store prefix)
into one path object (`kdump.store.queries.as_path`: the stored tree is listed there, once) and
hands one `Listing` to every question classification asks: which names a directory holds (for
"does it hold segment files, partition state files, log-dir files?"), and what each entry is on disk.
The same directory is never listed twice, however many questions read it: contents first (what a
directory holds), then names.
"""

from __future__ import annotations

import os
from pathlib import Path

from kdump.model.entries import FileType, Probe, list_dir_types, probe
from kdump.scan.held import DIR, FILE, READ, HeldDir

__all__ = ["HeldListing", "Listing"]


class Listing:
    """The names of each directory and the look at each entry, asked of the disk (or the stored
    tree) once each."""

    __slots__ = ("_names", "_plain_dirs", "_probes")

    def __init__(self) -> None:
        self._names: dict[Path, list[str] | str] = {}
        self._plain_dirs: dict[Path, frozenset[str]] = {}
        self._probes: dict[Path, Probe] = {}

    def names(self, path: Path) -> list[str] | str:
        """A directory's entry names, sorted; or why it cannot be listed."""
        names = self._names.get(path)
        if names is None:
            names = self._names[path] = self._list(path)
        return names

    def plain_dirs(self, path: Path) -> frozenset[str]:
        """The entries of a listed directory that the directory itself says are directories (no
        symlink): from the same readdir as `names`, no look at each entry. Empty for a stored tree
        or one that cannot be listed (its entries are then probed one by one)."""
        self.names(path)
        return self._plain_dirs.get(path, frozenset())

    def _list(self, path: Path) -> list[str] | str:
        listed = list_dir_types(path)
        if isinstance(listed, str):
            return listed
        names, self._plain_dirs[path] = listed
        return names

    def probe(self, path: Path) -> Probe:
        """What the entry is on disk (`kdump.model.entries.probe`)."""
        found = self._probes.get(path)
        if found is None:
            found = self._probes[path] = probe(path)
        return found

    def probe_entry(self, directory: Path, name: str, path: Path) -> Probe:
        """What the entry `name` of `directory` (at `path`, `directory / name`) is on disk."""
        return self.probe(path)

    def is_dir(self, path: Path) -> bool:
        """Whether a directory is there (symlinks followed, as `Path.is_dir`)."""
        return self.probe(path).type == FileType.DIR


class HeldListing(Listing):
    """The listing of one directory read by `kdump.scan.held.read_dir`: its names, and what each
    entry is, from that one read; entries it did not look at (a symlink, a FIFO, a file that would
    not open) are probed as `Listing` probes them."""

    __slots__ = ("_dir", "_held")

    def __init__(self, path: Path, held: HeldDir) -> None:
        super().__init__()
        self._dir = path
        self._held = held

    def names(self, path: Path) -> list[str] | str:
        """A directory's entry names, sorted: the held one's from its read."""
        if path is self._dir or path == self._dir:
            return self._held.names()
        return super().names(path)

    def plain_dirs(self, path: Path) -> frozenset[str]:
        """The entries the readdir says are directories: the held one's from its read."""
        if path is self._dir or path == self._dir:
            return frozenset(n for n, (kind, _, _) in self._held.entries.items() if kind == DIR)
        return super().plain_dirs(path)

    def probe(self, path: Path) -> Probe:
        """What the entry is: from the held read where it looked, else from the disk."""
        return self._answer(self._held.entry(os.fspath(path)), path)

    def probe_entry(self, directory: Path, name: str, path: Path) -> Probe:
        """`probe`, by name for an entry of the held directory (no path compared)."""
        if directory is self._dir:
            return self._answer(self._held.entries.get(name), path)
        return self.probe(path)

    def _answer(self, found: tuple[int, int, bytes | None] | None, path: Path) -> Probe:
        if found is not None:
            kind, size, _ = found
            if kind in (READ, FILE):
                return Probe(path, FileType.FILE, size, opened=True)
            if kind == DIR:
                return Probe(path, FileType.DIR)
        return super().probe(path)
