"""Telling a stored location from a local path, by its spelling alone.

Three spellings reach kdump's readers:

- a local path, read as before (`/var/lib/kafka/data/orders-0`);
- a URL of a filesystem pyarrow knows (`s3://bucket/incident-42/`, `gs://…`, `abfs://…`,
  `hdfs://…`), read with ranged requests;
- a broker tarball (`.tar`, `.tar.gz`, `.tgz`, `.tar.zst`), local or at a URL, standing for the
  log dir it holds; a member is named by the archive's path followed by the member's path
  (`broker1.tar.gz/kafka-logs/orders-0/00000000000000000000.log`), and is read in place.

Findings and rows name these locations exactly as spelled here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.zstd")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(location: str) -> bool:
    """Whether the location is a URL (`scheme://…`)."""
    return _URL.match(location) is not None


def archive_split(location: str) -> tuple[str, str] | None:
    """(archive, member path inside it) when a component of the location is a tarball, else None.

    A local component counts only when it is a regular file (a directory may be named `x.tar`).
    The member path is "" for the archive itself.
    """
    if not location.lower().endswith(ARCHIVE_SUFFIXES) and ".tar" not in location.lower():
        return None
    url = is_url(location)
    parts = location.rstrip("/").split("/")
    for i, part in enumerate(parts):
        if not part.lower().endswith(ARCHIVE_SUFFIXES) or (url and i < 3):
            continue
        archive = "/".join(parts[: i + 1])
        if url or Path(archive).is_file():
            return archive, "/".join(parts[i + 1 :])
    return None


def is_stored(location: str | os.PathLike[str]) -> bool:
    """Whether kdump reads this location through the storage layer (a URL or inside a tarball)."""
    text = os.fspath(location)
    if "://" not in text:
        # No URL; a tarball's name holds ".tar" or ends in ".tgz" (`archive_split`'s own test):
        # a local path says so at once (this is asked for every file opened).
        lower = text.lower()
        if ".tar" not in lower and not lower.endswith(".tgz"):
            return False
    return is_url(text) or archive_split(text) is not None


def compression_of(archive: str) -> str:
    """The codec a tarball's name announces: "" (plain tar), "gz" or "zst"."""
    lower = archive.lower()
    if lower.endswith((".tar.gz", ".tgz")):
        return "gz"
    if lower.endswith((".tar.zst", ".tar.zstd")):
        return "zst"
    return ""
