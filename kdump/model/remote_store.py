"""A remote store in the layout of Kafka's `LocalTieredStorage`, local or at a URL, listed once.

The store's root holds `kafka-tiered-storage/`, which holds one directory per partition,
`<topic>-<partition>-<topic id>/`, which holds each remote segment's files, named by its start offset
and segment id (`kdump.formats.remote_names`). A path given may be the root, `kafka-tiered-storage/`
itself, or one partition's directory. Every entry is sorted here: a segment's files, or a finding
(`unknown-entry` for a name that is no remote segment's file, and the classifier's findings for
entries that are not regular files). No file content is read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kdump.findings import Finding, make_finding
from kdump.formats.remote_names import (
    LOCAL_TIERED_STORAGE_ROOT,
    RemoteKind,
    parse_remote_file_name,
    parse_remote_partition_dir,
)
from kdump.model.entries import FileType, entry_findings, list_dir, probe
from kdump.model.segment import Segment


@dataclass(slots=True)
class RemoteSegmentFiles:
    """The files one remote segment has in the store."""

    start_offset: int
    segment_id: str
    files: dict[RemoteKind, Path] = field(default_factory=dict)
    sizes: dict[RemoteKind, int] = field(default_factory=dict)

    def segment(self) -> Segment:
        """The remote segment as kdump's segment model (for the scanner and the index checks)."""
        return Segment(
            self.start_offset,
            self.files.get("log"),
            self.files.get("index"),
            self.files.get("timeindex"),
            self.files.get("txnindex"),
        )


@dataclass(slots=True)
class RemotePartition:
    """One partition's directory in the store."""

    path: Path
    topic: str
    partition: int
    topic_id: str
    segments: dict[str, RemoteSegmentFiles] = field(default_factory=dict)
    problems: list[Finding] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(slots=True)
class RemoteStore:
    """The partitions found in a remote store, and findings about entries that are none."""

    path: Path
    partitions: list[RemotePartition] = field(default_factory=list)
    problems: list[Finding] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> RemoteStore:
        """List the store at `path` (its root, `kafka-tiered-storage/`, or one partition's directory)."""
        store = cls(path)
        if parse_remote_partition_dir(path.name) is not None:
            store.partitions.append(_load_partition(path))
            return store
        root = (
            path / LOCAL_TIERED_STORAGE_ROOT
            if probe(path / LOCAL_TIERED_STORAGE_ROOT).type == FileType.DIR
            else path
        )
        names = list_dir(root)
        if isinstance(names, str):
            store.problems.append(make_finding("unreadable-file", str(root), f"cannot list {root}: {names}"))
            return store
        for name in names:
            p = root / name
            pr = probe(p)
            if pr.type == FileType.DIR and parse_remote_partition_dir(name) is not None:
                store.partitions.append(_load_partition(p))
            elif pr.type in (FileType.DIR, FileType.FILE):
                store.problems.append(
                    make_finding(
                        "unknown-entry",
                        str(p),
                        f"{name} is not a remote partition directory (<topic>-<partition>-<topic id>); "
                        "it was not checked",
                    )
                )
            else:
                store.problems.extend(entry_findings(pr, "a remote partition directory"))
        return store

    def partition(self, topic_id: str, partition: int) -> RemotePartition | None:
        """The partition's directory in the store, if present."""
        return next((p for p in self.partitions if p.topic_id == topic_id and p.partition == partition), None)


def _load_partition(path: Path) -> RemotePartition:
    parsed = parse_remote_partition_dir(path.name)
    assert parsed is not None
    part = RemotePartition(path, parsed.topic, parsed.partition, parsed.topic_id)
    names = list_dir(path)
    if isinstance(names, str):
        part.problems.append(make_finding("unreadable-file", str(path), f"cannot list {path}: {names}"))
        return part
    for name in names:
        p = path / name
        pr = probe(p)
        info = parse_remote_file_name(name)
        if pr.type != FileType.FILE:
            if pr.type == FileType.DIR:
                part.problems.append(
                    make_finding(
                        "unknown-entry", str(p), f"{name} is a directory in a remote partition; not checked"
                    )
                )
            else:
                part.problems.extend(entry_findings(pr, "a remote segment file"))
            continue
        if info is None:
            part.problems.append(
                make_finding(
                    "unknown-entry", str(p), f"{name} is not a remote segment's file; it was not checked"
                )
            )
            continue
        files = part.segments.setdefault(
            info.segment_id, RemoteSegmentFiles(info.start_offset, info.segment_id)
        )
        files.files[info.kind] = p
        files.sizes[info.kind] = pr.size
    return part
