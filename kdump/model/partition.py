"""A partition directory (`<topic>-<partition>/`): its segments, state files and leftovers."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kdump.errors import PathError
from kdump.formats.filenames import parse_partition_dir_name, parse_segment_file_name
from kdump.model.segment import Segment
from kdump.store.queries import listdir

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"


@dataclass(slots=True)
class PartitionDir:
    """The files of one partition directory, sorted into segments and the rest."""

    path: Path
    topic: str | None
    partition: int | None
    segments: list[Segment] = field(default_factory=list)
    snapshots: dict[int, Path] = field(default_factory=dict)
    leftovers: list[Path] = field(default_factory=list)
    orphan_indexes: list[Path] = field(default_factory=list)
    kraft_checkpoints: list[Path] = field(default_factory=list)
    other_files: list[Path] = field(default_factory=list)

    @property
    def leader_epoch_checkpoint(self) -> Path | None:
        """The leader-epoch-checkpoint file, if present."""
        p = self.path / LEADER_EPOCH_CHECKPOINT
        return p if p.is_file() else None

    @property
    def partition_metadata(self) -> Path | None:
        """The partition.metadata file, if present."""
        p = self.path / PARTITION_METADATA
        return p if p.is_file() else None

    @property
    def name(self) -> str:
        """The directory's name."""
        return self.path.name

    @classmethod
    def load(cls, path: Path) -> PartitionDir:
        """List a partition directory (no file contents are read)."""
        parsed = parse_partition_dir_name(path.name)
        part = cls(path, parsed.topic if parsed else None, parsed.partition if parsed else None)
        try:
            names = sorted(listdir(path))
        except OSError as exc:
            raise PathError(f"cannot list {path}: {exc.strerror or exc}") from exc
        found: dict[int, dict[str, Path]] = {}
        for name in names:
            p = path / name
            info = parse_segment_file_name(name)
            if info is None or not p.is_file():
                if p.is_file() and name not in (LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA):
                    part.other_files.append(p)
                continue
            if info.suffix in ("deleted", "cleaned", "swap"):
                part.leftovers.append(p)
                continue
            if info.kind == "snapshot":
                part.snapshots[info.base_offset] = p
            elif info.kind == "checkpoint":
                part.kraft_checkpoints.append(p)
            elif info.suffix == "":
                found.setdefault(info.base_offset, {})[info.kind] = p
            else:
                part.other_files.append(p)
        for base in sorted(found):
            files = found[base]
            if "log" not in files:
                part.orphan_indexes.extend(files[k] for k in ("index", "timeindex", "txnindex") if k in files)
                continue
            part.segments.append(
                Segment(base, files["log"], files.get("index"), files.get("timeindex"), files.get("txnindex"))
            )
        return part

    def leftover_segments(self) -> list[Segment]:
        """The `.log.deleted`, `.log.cleaned` and `.log.swap` leftovers, as segments to scan."""
        out = []
        for p in self.leftovers:
            info = parse_segment_file_name(p.name)
            if info is not None and info.kind == "log":
                out.append(Segment(info.base_offset, p, suffix=info.suffix))
        return out
