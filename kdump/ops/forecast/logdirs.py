"""What a broker checks of its log dirs before it loads a partition (KafkaRaftServer, LogManager).

At start a KRaft broker (3.9 to 4.4) reads every log dir's `meta.properties` into one ensemble and
refuses to start when they disagree: another `cluster.id`, another `node.id`, two log dirs with the
same `directory.id`, or a `meta.properties` it cannot read. A log dir whose `meta.properties` is missing
is empty to it: it writes a new one with a fresh directory id. A log dir whose offset checkpoints
(`recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`) cannot be read goes offline; the
broker starts without it unless it holds the metadata log (then it stops). `.kafka_cleanshutdown`
decides whether the partitions are recovered from their recovery point.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kdump.errors import CorruptFieldError, DecodeError
from kdump.formats.checkpoints import decode_meta_properties, decode_offset_checkpoint
from kdump.formats.filenames import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    META_PROPERTIES,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
)
from kdump.ops.metadata import METADATA_DIR


@dataclass(slots=True)
class LogDirState:
    """One log dir as the broker finds it at start."""

    path: Path
    meta: dict[str, str] | None = None
    clean_shutdown: bool = False
    recovery_points: dict[tuple[str, int], int] = field(default_factory=dict)
    log_starts: dict[tuple[str, int], int] = field(default_factory=dict)
    offline: list[str] = field(default_factory=list)  # why the log dir goes offline
    refuses: list[str] = field(default_factory=list)  # why the broker does not start
    notes: list[str] = field(default_factory=list)

    @property
    def has_metadata(self) -> bool:
        return (self.path / METADATA_DIR).is_dir()

    @property
    def kraft(self) -> bool:
        """meta.properties version 1 is KRaft's; version 0 (or none and no metadata log) ZooKeeper's."""
        if self.meta is not None:
            return self.meta.get("version") == "1"
        return self.has_metadata

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "log_dir",
            "log_dir": str(self.path),
            "meta_properties": self.meta,
            "kraft": self.kraft,
            "clean_shutdown": self.clean_shutdown,
            "holds_metadata_log": self.has_metadata,
            "online": not self.offline,
            "offline_reasons": self.offline,
            "refuses_start": self.refuses,
            "notes": self.notes,
        }


def _read_offsets(path: Path, state: LogDirState) -> dict[tuple[str, int], int]:
    if not path.exists():
        return {}
    try:
        checkpoint = decode_offset_checkpoint(path.read_bytes())
    except (CorruptFieldError, DecodeError, OSError, UnicodeDecodeError) as exc:
        reason = f"{path.name} cannot be read ({exc}): the log dir goes offline (KafkaStorageException)"
        if state.has_metadata:
            state.refuses.append(reason + "; it holds the metadata log, so the broker stops")
        state.offline.append(reason)
        return {}
    return {(e.topic, e.partition): e.offset for e in checkpoint.entries}


def read_log_dir(path: Path) -> LogDirState:
    """meta.properties, the clean-shutdown marker and the offset checkpoints of one log dir."""
    state = LogDirState(path)
    meta = path / META_PROPERTIES
    if meta.exists():
        try:
            state.meta = decode_meta_properties(meta.read_bytes())
        except (CorruptFieldError, DecodeError, OSError, UnicodeDecodeError) as exc:
            state.refuses.append(f"{META_PROPERTIES} cannot be read: {exc}")
    else:
        state.notes.append(
            f"no {META_PROPERTIES}: the broker takes the log dir for empty and writes a new one"
        )
    state.clean_shutdown = (path / CLEAN_SHUTDOWN_FILE).exists()
    state.recovery_points = _read_offsets(path / RECOVERY_POINT_OFFSET_CHECKPOINT, state)
    state.log_starts = _read_offsets(path / LOG_START_OFFSET_CHECKPOINT, state)
    return state


def check_ensemble(dirs: list[LogDirState], node_id: int | None = None) -> list[str]:
    """Why the broker refuses these log dirs together (MetaPropertiesEnsemble.verify)."""
    reasons: list[str] = []
    metas = [(d, d.meta) for d in dirs if d.meta is not None]
    clusters = {m.get("cluster.id") for _, m in metas if m.get("cluster.id")}
    if len(clusters) > 1:
        reasons.append(f"the log dirs name different cluster.id values {sorted(c for c in clusters if c)}")
    nodes = {m.get("node.id") or m.get("broker.id") for _, m in metas}
    nodes.discard(None)
    if len(nodes) > 1:
        reasons.append(f"the log dirs name different node ids {sorted(n for n in nodes if n)}")
    if node_id is not None and nodes and str(node_id) not in nodes:
        reasons.append(f"the log dirs belong to node {sorted(n for n in nodes if n)}, not node.id={node_id}")
    seen: dict[str, Path] = {}
    for d, m in metas:
        did = m.get("directory.id")
        if did is None:
            continue
        if did in seen:
            reasons.append(f"{d.path} and {seen[did]} carry the same directory.id {did}")
        seen[did] = d.path
    return reasons


def node_of(dirs: list[LogDirState]) -> int | None:
    for d in dirs:
        if d.meta is not None:
            value = d.meta.get("node.id") or d.meta.get("broker.id")
            if value is not None and value.lstrip("-").isdigit():
                return int(value)
    return None
