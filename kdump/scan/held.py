"""A directory's small files, read whole with its listing, then handed to the readers that ask.

A log dir of 100,000 partitions holds half a million files of a few bytes to a few hundred KB.
Opened one by one from Python, each cost a `stat` at listing, an `access`, an open, an `fstat`,
reads and a close (about 12 system calls and 60 Python calls): more than its bytes. `read_dir`
lists a partition directory and reads its small regular files in one compiled call
(`_dirfiles.c`: four system calls a file, no path walked twice); `holding` then answers
`open_buffer` and `read_small_file` (kdump/scan/source.py) from those bytes for the files of that
directory, and the listing answers what each entry is (kdump/model/listing.py `HeldListing`).

Only what the compiled call could read whole and unchanged is held: a regular file by the readdir's
type, opened non-blocking without following a link, a regular file on its descriptor, its size the
same before and at the end of its one read. Everything else (a symlink, a FIFO, a file that changed
size under the read, one too large, one past the directory's budget) is looked at and read as
before, with the same findings in the same words. A held file's bytes are what a read of it
returned: the checks and their findings are those of the same bytes read at check time.

Off for stored paths (a tarball's member, an object-store key: listed by their store) and on the
reference path (`KDUMP_PURE_PYTHON=1`), where every file is opened as before.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

from kdump.formats.fast_records import load_compiled
from kdump.store.locations import is_stored

__all__ = ["BUDGET", "FILE_LIMIT", "HeldDir", "held_bytes", "holding", "read_dir"]

# The largest file read whole: a small segment's log (what `open_buffer(read_small=True)` reads
# rather than maps), indexes, checkpoints, snapshots.
FILE_LIMIT = 512 << 10
# The most bytes held for one directory: a partition of many small segments is read up to this,
# the rest of its files opened as they are checked.
BUDGET = 8 << 20

# The entry kinds `_dirfiles.read_dir` gives.
OTHER, DIR, READ, FILE = 0, 1, 2, 3


# The compiled module, or None: not built (no compiler: every file is opened as it is checked) or
# the reference path. Tests set it to None to compare the two ways.
compiled: ModuleType | None = load_compiled("_dirfiles", "kdump.scan")


class HeldDir:
    """One directory's entries as `read_dir` found them: by name, (kind, size, bytes or None)."""

    __slots__ = ("_prefix", "entries", "files", "path")

    def __init__(self, path: str, entries: dict[str, tuple[int, int, bytes | None]]) -> None:
        self.path = path  # as `os.fspath` of the directory's Path gives it
        self.entries = entries
        # What `os.fspath(directory / name)` starts with.
        self._prefix = prefix = "" if path == "." else path if path.endswith("/") else path + "/"
        # The files read whole, by `os.fspath` of their paths: what the readers ask by.
        self.files = {prefix + name: data for name, (_, _, data) in entries.items() if data is not None}

    def names(self) -> list[str]:
        """The entry names, sorted (as `os.listdir`, sorted, gives them)."""
        return sorted(self.entries)

    def entry(self, path: str) -> tuple[int, int, bytes | None] | None:
        """The entry at `path` (a file of this directory, as `os.fspath` gives it), or None."""
        prefix = self._prefix
        if not path.startswith(prefix) or "/" in path[len(prefix) :]:
            return None
        return self.entries.get(path[len(prefix) :])


def read_dir(path: os.PathLike[str] | str) -> HeldDir | None:
    """A local directory's entries with its small files' bytes; None where nothing is held (not
    built, the reference path, or the directory cannot be read: its listing says why)."""
    if compiled is None or is_stored(path):
        return None
    where = os.fspath(path)
    listed = compiled.read_dir(where, FILE_LIMIT, BUDGET)
    if listed is None:
        return None
    return HeldDir(where, {name: (kind, size, data) for name, kind, size, data in listed})


# The directory whose files are held now (one at a time: a partition being checked).
_held: HeldDir | None = None


@contextmanager
def holding(held: HeldDir | None) -> Iterator[None]:
    """Answer reads of `held`'s files from its bytes while the block runs (None: hold nothing)."""
    global _held
    before = _held
    _held = held
    try:
        yield
    finally:
        _held = before


def held_bytes(path: os.PathLike[str] | str) -> bytes | None:
    """The bytes of `path` if its directory is held and it was read whole, else None."""
    held = _held
    return None if held is None else held.files.get(os.fspath(path))
