"""Listing a stored tree once per process, and finding the tree that holds a path.

The driver (or the CLI process) lists each tree it is given once. Paths of a listed tree carry it
when they are pickled (`kdump.store.paths`), so process pools and Spark executors answer from the
driver's listing instead of listing again; only a bare location string reaching a process that
never saw its tree makes that process list it (an archive's headers), once.
"""

from __future__ import annotations

from kdump.errors import PathError
from kdump.store.entries import Tree, parent_of
from kdump.store.held import adopt, held_tree, keep, kept
from kdump.store.locations import archive_split, is_url


def list_tree(location: str) -> Tree:
    """The tree at a stored location, listed once per process.

    For a location inside a tarball, the tree is the whole archive's.

    Raises:
        PathError: the location cannot be listed, or nothing is there.
    """
    split = archive_split(location)
    if split is not None:
        root = split[0]
        tree = kept(root)
        if tree is None:
            from kdump.store.archive import archive_index

            tree = keep(archive_index(root).tree(), root)
        return tree
    if not is_url(location):
        raise PathError(f"{location}: not a URL or an archive")
    held = held_tree(location)
    if held is not None and held.get(location) is not None:
        return held
    from kdump.store.remote import list_remote

    entries = list_remote(location)
    if len(entries) == 1 and entries[0].path == location.rstrip("/") and entries[0].kind == "file":
        # A single file given alone: its tree is its directory, holding just it.
        tree = Tree.build(parent_of(location.rstrip("/")), entries)
    else:
        tree = Tree.build(location, entries)
    return keep(tree)


def remember(tree: Tree) -> Tree:
    """Adopt a tree listed in another process (unpickled with a path); returns the one kept."""
    adopted = adopt(tree)
    if tree.archive is not None:
        from kdump.store.archive import ArchiveIndex, remember_index

        if isinstance(tree.archive, ArchiveIndex):
            remember_index(tree.archive)
    return adopted


def tree_holding(path: str, *, listing: bool = True) -> Tree | None:
    """The listed tree that holds this path (the deepest root), listing it when `listing` and none
    does yet; None when it cannot be listed."""
    best = held_tree(path)
    if best is not None or not listing:
        return best
    try:
        return list_tree(path)
    except PathError:
        return None
