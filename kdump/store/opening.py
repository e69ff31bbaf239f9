"""A reader of any location: a local file, a file at a URL (`kdump.store.readers`), or a tarball's
member (`kdump.store.archive`, which reads the tarball through the file readers)."""

from __future__ import annotations

from kdump.store.locations import archive_split
from kdump.store.readers import RangedReader, open_file_reader

__all__ = ["open_reader"]


def open_reader(location: str) -> RangedReader:
    """A reader of any location: a local file, a file at a URL, or a tarball's member.

    Raises:
        PathError: it cannot be opened.
    """
    split = archive_split(location)
    if split is not None and split[1]:
        from kdump.store.archive import open_member

        return open_member(split[0], split[1])
    return open_file_reader(location)
