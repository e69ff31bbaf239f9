"""Names tiered storage gives its files: the broker's remote index cache and the remote store's layout.

**The remote index cache** (`<log dir>/remote-log-index-cache/`, Kafka's `RemoteIndexCache`): the offset,
time and transaction indexes of remote segments the broker has read, fetched from the remote store.
Each remote segment has three files, `<start offset>_<segment id>.index`, `.timeindex` and `.txnindex`
(the offset in decimal, not padded; the id is Kafka's 22-character base64url Uuid). A download is
written to `<name>.tmp` and renamed; an evicted entry is renamed to `<name>.deleted` before it is
deleted. On start-up the broker deletes `.tmp` and `.deleted` files and every entry that lacks one of
its three files, then opens the rest; any other name stops it (the segment id must parse as a Uuid
and the offset as a long).

**A remote store in `LocalTieredStorage`'s layout** (Kafka's file-backed RemoteStorageManager, also
what a bucket synced from it looks like): `kafka-tiered-storage/<topic>-<partition>-<topic id>/`
holding, per remote segment, `<20-digit start offset>-<segment id>.log`, `.index`, `.timeindex`,
`.snapshot` (the producer state), `.leader_epoch_checkpoint` and, when the segment has aborted
transactions, `.txnindex`.
"""

from __future__ import annotations

import re
from typing import Final, Literal, NamedTuple

LOCAL_TIERED_STORAGE_ROOT: Final = "kafka-tiered-storage"

CacheKind = Literal["index", "timeindex", "txnindex"]
CACHE_KINDS: Final[tuple[CacheKind, ...]] = ("index", "timeindex", "txnindex")

RemoteKind = Literal["log", "index", "timeindex", "txnindex", "snapshot", "leader_epoch_checkpoint"]
REMOTE_KINDS: Final[tuple[RemoteKind, ...]] = (
    "log",
    "index",
    "timeindex",
    "txnindex",
    "snapshot",
    "leader_epoch_checkpoint",
)
REQUIRED_REMOTE_KINDS: Final[tuple[RemoteKind, ...]] = (
    "log",
    "index",
    "timeindex",
    "snapshot",
    "leader_epoch_checkpoint",
)
"""What `LocalTieredStorage` always copies; `.txnindex` only when the segment has one."""

_UUID_CHARS = re.compile(r"[A-Za-z0-9_-]*")
_JAVA_LONG = re.compile(r"[+-]?[0-9]+")
_CACHE_RE = re.compile(r"([^_.]*)_([^.]*)\.(index|timeindex|txnindex)(?:\.(deleted|tmp))?")
_REMOTE_FILE_RE = re.compile(
    r"(\d+)-([a-zA-Z0-9_-]{22})\.(log|index|timeindex|txnindex|snapshot|leader_epoch_checkpoint)"
)
_REMOTE_DIR_RE = re.compile(r"([a-zA-Z0-9._-]+)-(\d+)-([a-zA-Z0-9_-]{22})")


def kafka_uuid_valid(text: str) -> bool:
    """Whether Kafka's `Uuid.fromString` takes `text`: base64url (padding optional) of exactly 16 bytes."""
    body = text.rstrip("=")
    if len(text) > 24 or not _UUID_CHARS.fullmatch(body) or len(body) % 4 == 1:
        return False
    import base64  # only once a name has the shape of a remote file's
    import binascii

    try:
        return len(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))) == 16
    except (binascii.Error, ValueError):
        return False


def java_long(text: str) -> int | None:
    """`Long.parseLong(text)`, or None where it throws."""
    if not _JAVA_LONG.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


class CacheFileName(NamedTuple):
    """A remote index cache file name: start offset, segment id, kind and leftover suffix ("", "deleted", "tmp")."""

    start_offset: int
    segment_id: str
    kind: CacheKind
    suffix: Literal["", "deleted", "tmp"]

    @property
    def stem(self) -> str:
        """`<offset>_<id>`: what the three files of one remote segment share."""
        return f"{self.start_offset}_{self.segment_id}"


def parse_cache_file_name(name: str) -> CacheFileName | None:
    """Parse a remote index cache file name as the broker would; None where its start-up fails on it."""
    match = _CACHE_RE.fullmatch(name)
    if match is None:
        return None
    offset = java_long(match[1])
    if offset is None or not kafka_uuid_valid(match[2]):
        return None
    suffix = match[4] or ""
    assert suffix in ("", "deleted", "tmp")
    return CacheFileName(offset, match[2], match[3], suffix)  # type: ignore[arg-type]


def cache_leftover(name: str) -> bool:
    """A `.deleted` or `.tmp` file, which the broker deletes on start-up whatever the rest of its name."""
    return name.endswith((".deleted", ".tmp"))


def broker_parses_cache_name(name: str) -> bool:
    """Whether the broker's start-up gets past this name (it reads the id between the first `_` and the
    first `.`; a name with no dot or a bad id stops it)."""
    dot = name.find(".")
    if dot < 0:
        return False
    return kafka_uuid_valid(name[name.find("_") + 1 : dot]) if name.find("_") < dot else False


class RemoteFileName(NamedTuple):
    """A file of a remote segment in the `LocalTieredStorage` layout."""

    start_offset: int
    segment_id: str
    kind: RemoteKind


def parse_remote_file_name(name: str) -> RemoteFileName | None:
    """`<20-digit offset>-<segment id>.<kind>`, or None."""
    match = _REMOTE_FILE_RE.fullmatch(name)
    if match is None:
        return None
    offset = java_long(match[1])
    if offset is None:
        return None
    return RemoteFileName(offset, match[2], match[3])  # type: ignore[arg-type]


def remote_file_name(start_offset: int, segment_id: str, kind: RemoteKind) -> str:
    """The name `LocalTieredStorage` gives that file."""
    return f"{start_offset:020d}-{segment_id}.{kind}"


class RemotePartitionDirName(NamedTuple):
    """`<topic>-<partition>-<topic id>`: one partition's directory in the remote store."""

    topic: str
    partition: int
    topic_id: str


def parse_remote_partition_dir(name: str) -> RemotePartitionDirName | None:
    """Parse a remote partition directory name, or None."""
    match = _REMOTE_DIR_RE.fullmatch(name)
    if match is None:
        return None
    return RemotePartitionDirName(match[1], int(match[2]), match[3])
