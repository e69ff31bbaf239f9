"""The trees this process has listed, by root: a path's tree is found here without listing again.

Only `kdump.store.trees` lists and adds trees; readers look here for a file's listed size.
"""

from __future__ import annotations

from kdump.store.entries import Tree

__all__ = ["adopt", "held_tree", "keep", "kept"]

_TREES: dict[str, Tree] = {}


def kept(root: str) -> Tree | None:
    """The tree listed at this root, if any."""
    return _TREES.get(root)


def keep(tree: Tree, root: str | None = None) -> Tree:
    """Keep a tree just listed at `root` (its own root unless given), in place of any before it."""
    _TREES[tree.root if root is None else root] = tree
    return tree


def adopt(tree: Tree) -> Tree:
    """Keep a tree listed in another process, unless one is kept at its root; returns the one kept."""
    return _TREES.setdefault(tree.root, tree)


def held_tree(path: str) -> Tree | None:
    """The listed tree that holds this path (the deepest root), or None."""
    best: Tree | None = None
    for tree in _TREES.values():
        if tree.holds(path) and (best is None or len(tree.root) > len(best.root)):
            best = tree
    return best
