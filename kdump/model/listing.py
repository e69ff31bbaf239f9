"""A location resolved once: each directory under it listed once, each entry looked at once.

`discover` resolves a path the user gave (a local path, a tarball's member, an object-store prefix)
into one path object (`kdump.store.queries.as_path`: the stored tree is listed there, once) and
hands one `Listing` to every question classification asks: which names a directory holds (for
"does it hold segment files, partition state files, log-dir files?"), and what each entry is on disk.
The same directory is never listed twice, however many questions read it: contents first (what a
directory holds), then names.
"""

from __future__ import annotations

from pathlib import Path

from kdump.model.entries import FileType, Probe, list_dir_types, probe

__all__ = ["Listing"]


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

    def is_dir(self, path: Path) -> bool:
        """Whether a directory is there (symlinks followed, as `Path.is_dir`)."""
        return self.probe(path).type == FileType.DIR
