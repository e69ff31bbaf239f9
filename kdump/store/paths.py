"""`StoredPath`: a path inside a listed stored tree, usable wherever kdump's model takes a `Path`.

The model layer names files with `pathlib.Path` (joins, `.name`, `.suffix`, `is_file()`,
`stat()`). A `StoredPath` keeps all of that for `s3://bucket/…` and `broker.tar.gz/…`: its string
is the location as given, and every question about the filesystem is answered from the tree
listed once (`kdump.store.trees`), never by another request. Contents are read through
`kdump.scan.source`, which hands stored locations to the storage layer.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat as stat_mode
from collections.abc import Generator, Iterator
from pathlib import PosixPath
from typing import Any

from kdump.store.entries import Entry, Tree
from kdump.store.trees import list_tree, remember, tree_holding

# pathlib folds `s3://bucket` into `s3:/bucket`: the string form puts the second slash back.
_FOLDED_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*:)/(?!/)")


class StoredPath(PosixPath):
    """A path in a stored tree (a URL, or inside a tarball); filesystem queries come from the listing."""

    __slots__ = ()

    def __str__(self) -> str:
        return _FOLDED_URL.sub(r"\1//", super().__str__(), count=1)

    def __fspath__(self) -> str:
        return str(self)

    def __repr__(self) -> str:
        return f"StoredPath({str(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # The listing travels with the path (pickle stores a shared tree once per payload), so
        # worker processes and Spark executors never list the tree again; unless the trees are
        # sent once on their own (`trees_sent_apart`): Spark pickles each small task apart, and a
        # fleet's tree in each of a thousand tasks filled the driver JVM's heap.
        tree = None if _TREES_APART else tree_holding(str(self), listing=False)
        return (_restore, (str(self), tree))

    def tree(self) -> Tree | None:
        """The listed tree holding this path (never a new listing: a path outside every listed tree,
        such as the parent of the path given, is simply not there)."""
        return tree_holding(str(self), listing=False)

    def entry(self) -> Entry | None:
        """This path's entry in its tree, or None when it is not there."""
        tree = self.tree()
        return tree.get(str(self)) if tree is not None else None

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        """A stat result made from the listing (size, type, modification time)."""
        e = self.entry()
        if e is None:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", str(self))
        mode = {"file": stat_mode.S_IFREG, "dir": stat_mode.S_IFDIR, "symlink": stat_mode.S_IFLNK}.get(
            e.kind, 0
        )
        mode |= 0o444 if e.readable else 0
        s, ns = e.mtime_ns / 1e9, e.mtime_ns
        fields = (mode, 0, 0, 1, 0, 0, e.size, int(s), int(s), int(s), s, s, s, ns, ns, ns)
        return os.stat_result(fields)

    def lstat(self) -> os.stat_result:
        """As `stat`: stored trees do not follow links."""
        return self.stat()

    def exists(self, *, follow_symlinks: bool = True) -> bool:
        """Whether the listing holds this path."""
        return self.entry() is not None

    def is_file(self) -> bool:
        """Whether the listing holds a regular file here."""
        e = self.entry()
        return e is not None and e.kind == "file"

    def is_dir(self) -> bool:
        """Whether the listing holds a directory (or a prefix of objects) here."""
        e = self.entry()
        return e is not None and e.kind == "dir"

    def is_symlink(self) -> bool:
        """Whether the listing holds a link here (archives only)."""
        e = self.entry()
        return e is not None and e.kind == "symlink"

    def resolve(self, strict: bool = False) -> StoredPath:
        """Itself: a stored location is already absolute and has no links to follow."""
        return self

    def absolute(self) -> StoredPath:
        """Itself."""
        return self

    def names(self) -> list[str]:
        """The names in this directory, from the listing.

        Raises:
            NotADirectoryError: it is not a directory of the tree.
        """
        tree = self.tree()
        e = tree.get(str(self)) if tree is not None else None
        if tree is None or e is None or e.kind != "dir":
            raise NotADirectoryError(errno.ENOTDIR, "Not a directory", str(self))
        return tree.names(str(self))

    def iterdir(self) -> Generator[StoredPath, None, None]:
        """The paths in this directory."""
        for name in self.names():
            yield self / name


_TREES_APART: list[bool] = []


@contextlib.contextmanager
def trees_sent_apart() -> Iterator[None]:
    """Within the block, pickled paths leave their tree out: the caller sends the trees itself
    (`remember` them on the other side before the paths are used)."""
    _TREES_APART.append(True)
    try:
        yield
    finally:
        _TREES_APART.pop()


def _restore(location: str, tree: Tree | None) -> StoredPath:
    if tree is not None:
        remember(tree)
    return StoredPath(location)


def stored_path(location: str) -> StoredPath:
    """The stored path for a location as given, its tree listed (once per process).

    Raises:
        PathError: the tree cannot be listed.
    """
    list_tree(location)
    return StoredPath(location.rstrip("/") if len(location) > 1 else location)
