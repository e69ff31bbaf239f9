"""Which file kinds kdump knows, and the events that open and describe non-log files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kdump.formats.filenames import parse_segment_file_name

TEXT_STATE_FILES = {
    "leader-epoch-checkpoint": "leader-epoch-checkpoint",
    "partition.metadata": "partition-metadata",
    "meta.properties": "meta-properties",
    "recovery-point-offset-checkpoint": "offset-checkpoint",
    "replication-offset-checkpoint": "offset-checkpoint",
    "log-start-offset-checkpoint": "offset-checkpoint",
    "cleaner-offset-checkpoint": "offset-checkpoint",
    ".kafka_cleanshutdown": "clean-shutdown",
    "quorum-state": "quorum-state",
}


def file_kind(path: Path) -> str | None:
    """What a file holds: log, index, timeindex, txnindex, snapshot, checkpoint or a state file."""
    info = parse_segment_file_name(path.name)
    if info is not None:
        return info.kind
    if path.name == "bootstrap.checkpoint":
        return "checkpoint"
    return TEXT_STATE_FILES.get(path.name)


def segment_base_offset(path: Path) -> int | None:
    """The base offset in a segment file's name."""
    info = parse_segment_file_name(path.name)
    return info.base_offset if info is not None else None


@dataclass(frozen=True, slots=True)
class FileStart:
    """A file begins: every dump stream opens each file with one."""

    file: str
    kind: str
    size: int
    base_offset: int | None


@dataclass(frozen=True, slots=True)
class Entry:
    """One decoded entry of a non-log file (index entry, aborted txn, producer state, checkpoint line).

    `kind` names the row type in JSON (`index-entry`, `time-index-entry`, `aborted-txn`,
    `producer-state`, `epoch-entry`, `checkpoint-entry`, `property`, `state`).
    """

    file: str
    kind: str
    fields: dict[str, Any]
