"""Names of the files and directories Kafka keeps in a log directory.

Mirrors `org.apache.kafka.storage.internals.log.LogFileUtils` and `LocalLog` (segment files, suffixes,
partition directories), `org.apache.kafka.snapshot.Snapshots` (KRaft snapshots) and the file-name
constants scattered over the broker.

Segment files: `<offset>.<kind>[.<suffix>]`, the offset written as 20 zero-padded decimal digits.

| kind        | offset in the name                          | suffixes Kafka adds                          |
|-------------|---------------------------------------------|----------------------------------------------|
| `log`       | segment base offset                         | `.cleaned` (cleaner or split output),        |
| `index`     | segment base offset                         | `.swap` (finished replacement, not yet       |
| `timeindex` | segment base offset                         | renamed), `.deleted` (awaiting async delete) |
| `txnindex`  | segment base offset                         |                                              |
| `snapshot`  | next offset the producer snapshot covers    | `.deleted`                                   |
| `checkpoint`| KRaft snapshot end offset, then `-<epoch>`  | `.part` (being written), `.deleted`          |

KRaft snapshots in `__cluster_metadata-0` are named `<20-digit end offset>-<10-digit epoch>.checkpoint`.
Kafka's tiered-storage test plugin names remote copies `<offset>-<22-char base64url id>.<kind>` (offset
not padded); those parse with `remote_segment_id` set. `bootstrap.checkpoint` is not a segment file.

Partition directories: `<topic>-<partition>`, or `<topic>-<partition>.<unique id>-<status>` where the
status is `delete` (awaiting deletion; the topic may be cut short to keep the name within 255 characters),
`future` (being moved to another log directory) or `stray` (not assigned to this broker). The topic is
everything before the last `-`, so topics that contain `-` parse correctly.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "BOOTSTRAP_CHECKPOINT",
    "CLEANER_OFFSET_CHECKPOINT",
    "CLEAN_SHUTDOWN_FILE",
    "CLUSTER_METADATA_PARTITION_DIR",
    "LEADER_EPOCH_CHECKPOINT",
    "LOCK_FILE",
    "LOG_DIR_FILES",
    "LOG_START_OFFSET_CHECKPOINT",
    "META_PROPERTIES",
    "OFFSET_CHECKPOINT_FILES",
    "PARTITION_DIR_FILES",
    "PARTITION_METADATA",
    "QUORUM_STATE",
    "RECOVERY_POINT_OFFSET_CHECKPOINT",
    "REMOTE_LOG_INDEX_CACHE",
    "REPLICATION_OFFSET_CHECKPOINT",
    "TMP_SUFFIX",
    "DirStatus",
    "FileSuffix",
    "PartitionDirName",
    "SegmentFileName",
    "SegmentKind",
    "parse_partition_dir_name",
    "parse_segment_file_name",
    "partition_dir_name",
    "segment_file_name",
]

# Log-directory level files.
META_PROPERTIES = "meta.properties"
RECOVERY_POINT_OFFSET_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
LOCK_FILE = ".lock"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"
# The broker's cache of remote segments' indexes (`RemoteIndexCache`), a directory in the log dir.
REMOTE_LOG_INDEX_CACHE = "remote-log-index-cache"
OFFSET_CHECKPOINT_FILES = frozenset(
    {
        RECOVERY_POINT_OFFSET_CHECKPOINT,
        REPLICATION_OFFSET_CHECKPOINT,
        LOG_START_OFFSET_CHECKPOINT,
        CLEANER_OFFSET_CHECKPOINT,
    }
)
LOG_DIR_FILES = OFFSET_CHECKPOINT_FILES | {
    META_PROPERTIES,
    LOCK_FILE,
    CLEAN_SHUTDOWN_FILE,
    BOOTSTRAP_CHECKPOINT,
}

# The KRaft metadata log's partition directory (in `metadata.log.dir`).
CLUSTER_METADATA_PARTITION_DIR = "__cluster_metadata-0"

# Partition-directory level files (quorum-state only in the KRaft metadata partition).
PARTITION_METADATA = "partition.metadata"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
QUORUM_STATE = "quorum-state"
PARTITION_DIR_FILES = frozenset({PARTITION_METADATA, LEADER_EPOCH_CHECKPOINT, QUORUM_STATE})

# Checkpoints, partition.metadata and meta.properties are written to `<name>.tmp`, then renamed; a
# leftover `.tmp` is the trace of an interrupted write.
TMP_SUFFIX = ".tmp"

SegmentKind = Literal["log", "index", "timeindex", "txnindex", "snapshot", "checkpoint"]
FileSuffix = Literal["", "deleted", "cleaned", "swap", "part"]
DirStatus = Literal["delete", "future", "stray"]

_KIND_BY_TEXT: dict[str, SegmentKind] = {
    "log": "log",
    "index": "index",
    "timeindex": "timeindex",
    "txnindex": "txnindex",
    "snapshot": "snapshot",
    "checkpoint": "checkpoint",
}
_SUFFIX_BY_TEXT: dict[str, FileSuffix] = {
    "": "",
    "deleted": "deleted",
    "cleaned": "cleaned",
    "swap": "swap",
    "part": "part",
}
_STATUS_BY_TEXT: dict[str, DirStatus] = {"delete": "delete", "future": "future", "stray": "stray"}
# What Kafka writes. Parsing is a little wider: any segment kind may carry .cleaned/.swap/.deleted, so
# an odd leftover such as `<offset>.snapshot.swap` still parses.
_WRITTEN_SUFFIXES: dict[str, frozenset[str]] = {
    "log": frozenset({"", "deleted", "cleaned", "swap"}),
    "index": frozenset({"", "deleted", "cleaned", "swap"}),
    "timeindex": frozenset({"", "deleted", "cleaned", "swap"}),
    "txnindex": frozenset({"", "deleted", "cleaned", "swap"}),
    "snapshot": frozenset({"", "deleted"}),
    "checkpoint": frozenset({"", "part", "deleted"}),
}

_OFFSET_WIDTH = 20
_EPOCH_WIDTH = 10
_MAX_INT64 = 2**63 - 1
_MAX_INT32 = 2**31 - 1

_SEGMENT_RE = re.compile(r"([0-9]{20})\.(log|index|timeindex|txnindex|snapshot)(?:\.(deleted|cleaned|swap))?")
_KRAFT_SNAPSHOT_RE = re.compile(r"([0-9]{20})-([0-9]{10})\.checkpoint(?:\.(part|deleted))?")
_REMOTE_SEGMENT_RE = re.compile(r"([0-9]+)-([A-Za-z0-9_-]{22})\.(log|index|timeindex|txnindex|snapshot)")
# Kafka's patterns for suffixed directories use \S, Java's non-whitespace class.
_NON_BLANK = r"[^ \t\n\x0b\f\r]+"
_SUFFIXED_DIR_RE = re.compile(rf"({_NON_BLANK})-({_NON_BLANK})\.({_NON_BLANK})-(delete|future|stray)")
# Kafka parses the partition with Integer.parseInt, which takes a "+" and any Unicode decimal digit; a "-"
# cannot reach it, as the name is split at its last "-".
_PARTITION_RE = re.compile(r"\+?\d+")


@dataclass(frozen=True, slots=True)
class SegmentFileName:
    # The offset in the name: a segment's base offset, except for `snapshot` (next offset covered) and
    # `checkpoint` (KRaft snapshot end offset).
    base_offset: int
    kind: SegmentKind
    suffix: FileSuffix
    # KRaft snapshot epoch, for kind "checkpoint" only.
    epoch: int | None = None
    # Tiered-storage remote segment id (base64url), for `<offset>-<id>.<kind>` names only.
    remote_segment_id: str | None = None


@dataclass(frozen=True, slots=True)
class PartitionDirName:
    topic: str
    partition: int
    status: DirStatus | None = None
    # The `<unique id>` between the partition and the status (a dash-less UUID when Kafka made it).
    unique_id: str | None = None


# Kept per name: a partition's listing, its checks and its report ask about each of its files'
# names some ten times, and a log dir's partitions share most of them (`00000000000000000000.log`).
@functools.lru_cache(maxsize=4096)
def parse_segment_file_name(name: str) -> SegmentFileName | None:
    """Parse a segment-family file name; None for anything Kafka would not have written."""
    match = _SEGMENT_RE.fullmatch(name)
    if match:
        offset = int(match[1])
        if offset > _MAX_INT64:
            return None
        return SegmentFileName(offset, _KIND_BY_TEXT[match[2]], _SUFFIX_BY_TEXT[match[3] or ""])
    match = _KRAFT_SNAPSHOT_RE.fullmatch(name)
    if match:
        offset, epoch = int(match[1]), int(match[2])
        if offset > _MAX_INT64 or epoch > _MAX_INT32:
            return None
        return SegmentFileName(offset, "checkpoint", _SUFFIX_BY_TEXT[match[3] or ""], epoch=epoch)
    match = _REMOTE_SEGMENT_RE.fullmatch(name)
    if match:
        offset = int(match[1])
        if offset > _MAX_INT64:
            return None
        return SegmentFileName(offset, _KIND_BY_TEXT[match[3]], "", remote_segment_id=match[2])
    return None


def segment_file_name(
    base_offset: int, kind: SegmentKind, suffix: FileSuffix = "", epoch: int | None = None
) -> str:
    """The name Kafka gives such a file; `epoch` is required for, and only for, kind "checkpoint"."""
    if kind not in _WRITTEN_SUFFIXES:
        raise ValueError(f"Unknown segment file kind {kind!r}")
    if suffix not in _WRITTEN_SUFFIXES[kind]:
        raise ValueError(f"Kafka does not write {kind} files with suffix {suffix!r}")
    if not 0 <= base_offset <= _MAX_INT64:
        raise ValueError(f"Offset {base_offset} is outside 0..{_MAX_INT64}")
    tail = f".{suffix}" if suffix else ""
    if kind == "checkpoint":
        if epoch is None or not 0 <= epoch <= _MAX_INT32:
            raise ValueError(f"A KRaft snapshot name needs an epoch in 0..{_MAX_INT32}, got {epoch}")
        return f"{base_offset:0{_OFFSET_WIDTH}d}-{epoch:0{_EPOCH_WIDTH}d}.checkpoint{tail}"
    if epoch is not None:
        raise ValueError(f"Only KRaft snapshots carry an epoch, not {kind} files")
    return f"{base_offset:0{_OFFSET_WIDTH}d}.{kind}{tail}"


def parse_partition_dir_name(name: str) -> PartitionDirName | None:
    """Parse a partition directory name; None when Kafka would refuse to load it as one."""
    status: DirStatus | None = None
    unique_id = None
    stem = name
    if name.endswith(("-delete", "-future", "-stray")):
        match = _SUFFIXED_DIR_RE.fullmatch(name)
        if not match:
            return None
        stem, _, rest = name.rpartition(".")
        unique_id, _, status_text = rest.rpartition("-")
        status = _STATUS_BY_TEXT[status_text]
    topic, dash, partition_text = stem.rpartition("-")
    if not dash or not topic or not _PARTITION_RE.fullmatch(partition_text):
        return None
    partition = int(partition_text)
    if partition > _MAX_INT32:
        return None
    return PartitionDirName(topic, partition, status, unique_id)


def partition_dir_name(
    topic: str, partition: int, status: DirStatus | None = None, unique_id: str | None = None
) -> str:
    """`<topic>-<partition>`, or with `.<unique_id>-<status>` when a status is given."""
    base = f"{topic}-{partition}"
    if status is None:
        if unique_id is not None:
            raise ValueError("A unique id only appears in a directory name together with a status")
        return base
    if not unique_id:
        raise ValueError(f"A -{status} directory name needs a unique id")
    return f"{base}.{unique_id}-{status}"
