"""What a listing of a tree gives: one entry per path, as the path classifier consumes it.

A listing is taken once (a local directory walk, one recursive object-store listing, or one pass
over an archive's headers) and every later question about the tree (does this file exist, how big
is it, what does this directory hold) is answered from it, so a remote tree is never listed twice.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from kdump.findings import Finding

EntryKind = Literal["file", "dir", "symlink", "other"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One path of a listed tree.

    `path` is the path as the user would give it (`s3://bucket/logs/orders-0/000…0.log`,
    `broker1.tar.gz/kafka-logs/orders-0/000…0.log`); `size` is the bytes present (for a truncated
    archive member, what the archive still holds); `readable` is False where the store says the
    entry cannot be read.
    """

    path: str
    kind: EntryKind
    size: int = 0
    readable: bool = True
    mtime_ns: int = 0


@dataclass(slots=True)
class Tree:
    """A listed tree: its entries by path, the children of each directory, and what was damaged.

    `findings` holds what the listing itself found wrong (a damaged or truncated archive), for
    verify to report; `archive` is the member index of an archive tree (see `kdump.store.archive`).
    """

    root: str
    entries: dict[str, Entry] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    archive: object | None = None

    @classmethod
    def build(cls, root: str, entries: Iterable[Entry]) -> Tree:
        """A tree of these entries; directories that are only implied (object stores, archives
        without directory members) are added."""
        tree = cls(root.rstrip("/") or root)
        tree.entries[tree.root] = Entry(tree.root, "dir")
        for e in entries:
            tree.add(e)
        for names in tree.children.values():
            names.sort()
        return tree

    def add(self, entry: Entry) -> None:
        """Add one entry (inside the root) and link it and every directory above it to the root."""
        path = entry.path.rstrip("/")
        if path == self.root or not self.holds(path):
            return
        if path in self.children and entry.kind != "dir":
            return  # an object store may hold both `a` and `a/b`: the directory wins, as on a disk
        self.entries[path] = Entry(path, entry.kind, entry.size, entry.readable, entry.mtime_ns)
        child = path
        while child != self.root:
            parent = parent_of(child)
            names = self.children.setdefault(parent, [])
            name = child[len(parent) + 1 :]
            if name in names:
                break  # linked before, and so is everything above it
            names.append(name)
            if parent not in self.entries or self.entries[parent].kind != "dir":
                self.entries[parent] = Entry(parent, "dir")
            child = parent

    def get(self, path: str) -> Entry | None:
        """The entry at this path, or None."""
        return self.entries.get(path.rstrip("/") or path)

    def names(self, path: str) -> list[str]:
        """The names in a directory (sorted), or [] for anything else."""
        return list(self.children.get(path.rstrip("/") or path, ()))

    def holds(self, path: str) -> bool:
        """Whether this path lies in this tree."""
        path = path.rstrip("/")
        return path == self.root or path.startswith(self.root + "/")

    def log_bytes(self) -> int:
        """Bytes of `.log` files present in the tree (the denominator of coverage figures)."""
        return sum(e.size for e in self.entries.values() if e.kind == "file" and e.path.endswith(".log"))


def parent_of(path: str) -> str:
    """The parent of a path as given, keeping a URL's `scheme://` intact."""
    scheme, sep, rest = path.partition("://")
    if not sep:
        return posixpath.dirname(path)
    head = posixpath.dirname(rest)
    return f"{scheme}://{head}"
