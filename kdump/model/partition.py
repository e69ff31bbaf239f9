"""A partition directory (`<topic>-<partition>/`): its segments, state files, leftovers and the rest.

Every entry is sorted by the one classifier (`kdump.model.entries`): nothing in the directory is
passed over in silence. What kdump cannot read, does not recognise, or what the broker would not
load as named, is a finding in `problems`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kdump.errors import PathError
from kdump.findings import Finding, Severity, make_finding
from kdump.formats.filenames import (
    CLUSTER_METADATA_PARTITION_DIR,
    LEADER_EPOCH_CHECKPOINT,
    PARTITION_METADATA,
    parse_partition_dir_name,
    parse_segment_file_name,
)
from kdump.model.entries import (
    FileType,
    NameKind,
    broker_offset_from_name,
    child,
    classify_name,
    entry_findings,
    probe,
    readable,
    unknown_finding,
)
from kdump.model.listing import Listing
from kdump.model.segment import Segment, base_offset_from_content

_INDEX_KINDS = ("index", "timeindex", "txnindex")

# What a `stat` succeeds on (`Path.exists`): every type but the ones a failed stat gives.
_THERE = frozenset({FileType.FILE, FileType.DIR, FileType.FIFO, FileType.SOCKET, FileType.DEVICE})


@dataclass(frozen=True, slots=True)
class LogDirFacts:
    """What the one listing of the log dir holding a partition found there (`LogDirEntries`): its
    own entries (not its partition directories) by name, each as its probe saw it, and whether it
    holds the KRaft metadata log. Each partition's checks ask about the log dir (its
    log-start-offset-checkpoint, its clean-shutdown marker, `__cluster_metadata-0`): asked of the
    disk, a log dir of 100,000 partitions cost 200,000 `stat`s of files it usually lacks."""

    entries: Mapping[str, FileType]
    kraft: bool

    def there(self, name: str) -> bool:
        """Whether the log dir has an entry of that name (`Path.exists`, as listed)."""
        return self.entries.get(name) in _THERE


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
    # Findings about the directory's entries themselves (unreadable, wrong type, unrecognised, misnamed).
    problems: list[Finding] = field(default_factory=list)
    # Sizes of the segment `.log` files when listed: the bytes there are to check.
    log_bytes: int = 0
    # Whether it holds a file Kafka writes (a segment file, even empty, a snapshot, a state file): a
    # partition the broker keeps, as opposed to a directory with nothing of Kafka's in it.
    recognised: bool = False
    # The state files (by name) `load` found to be files: its listing answers where they are, with
    # no look at the disk per question. None: not listed (the disk is asked).
    state_files: dict[str, Path] | None = field(default=None, compare=False, repr=False)
    # The listing of the log dir holding it, where one was made (a streamed verify); None: the
    # disk is asked about the log dir.
    log_dir_facts: LogDirFacts | None = field(default=None, compare=False, repr=False)

    @property
    def leader_epoch_checkpoint(self) -> Path | None:
        """The leader-epoch-checkpoint file, if present."""
        return self._state_file(LEADER_EPOCH_CHECKPOINT)

    @property
    def partition_metadata(self) -> Path | None:
        """The partition.metadata file, if present."""
        return self._state_file(PARTITION_METADATA)

    def _state_file(self, name: str) -> Path | None:
        if self.state_files is not None:
            return self.state_files.get(name)
        p = self.path / name
        return p if p.is_file() else None

    def beside(self, name: str) -> bool:
        """Whether the log dir holding this partition has an entry of that name (`Path.exists`):
        from its listing where there is one."""
        facts = self.log_dir_facts
        if facts is not None:
            return facts.there(name)
        return (self.path.parent / name).exists()

    def in_kraft_log_dir(self) -> bool:
        """Whether the log dir holding this partition holds `__cluster_metadata-0` (a directory)."""
        facts = self.log_dir_facts
        if facts is not None:
            return facts.kraft
        return (self.path.parent / CLUSTER_METADATA_PARTITION_DIR).is_dir()

    @property
    def name(self) -> str:
        """The directory's name (also when given as `.` or `..`, from inside it: salvage names its
        clean copy by it)."""
        name = self.path.name
        if name in ("", ".", ".."):
            name = Path(os.path.abspath(self.path)).name  # noqa: PTH100  (no link resolved: as given)
        return name

    @classmethod
    def load(
        cls,
        path: Path,
        *,
        unknown: Severity = Severity.ERROR,
        listing: Listing | None = None,
        log_dir_facts: LogDirFacts | None = None,
    ) -> PartitionDir:
        """List and classify a partition directory (no file contents are read, except the first
        batch of a segment whose name gives no base offset). `log_dir_facts`: what the listing of
        the log dir holding it found (see `LogDirFacts`).

        Raises:
            PathError: the directory cannot be listed.
        """
        parsed = parse_partition_dir_name(path.name)
        part = cls(path, parsed.topic if parsed else None, parsed.partition if parsed else None)
        part.state_files = {}
        part.log_dir_facts = log_dir_facts
        # Without a caller's listing nothing else asks about these entries: each is
        # looked at once, without a cache keyed by its path (a hash of a Path per file).
        names = (listing or Listing()).names(path)
        if isinstance(names, str):
            raise PathError(f"cannot list {path}: {names}")
        found: dict[int, dict[str, Path]] = {}
        misnamed: list[tuple[int, Path]] = []
        unreadable_logs: set[int] = set()
        for name in names:
            p = child(path, name)
            kind = classify_name(name, "partition")
            pr = probe(p) if listing is None else listing.probe_entry(path, name, p)
            if pr.type != FileType.FILE:
                if pr.type == FileType.DIR and kind == NameKind.UNKNOWN:
                    part.problems.append(unknown_finding(pr, "partition directory", unknown))
                elif pr.type == FileType.DIR:
                    part.problems.append(
                        make_finding(
                            "wrong-file-type", str(p), f"{name} is a directory, not a file; it was not read"
                        )
                    )
                else:
                    part.problems.extend(entry_findings(pr, f"a {kind.value} file"))
                continue
            if kind == NameKind.UNKNOWN:
                part.other_files.append(p)
                part.problems.append(unknown_finding(pr, "partition directory", unknown))
                continue
            part.recognised = True
            if kind == NameKind.STATE:
                part.state_files[name] = p
            why = readable(pr)
            if why is not None:
                part.problems.append(make_finding("unreadable-file", str(p), f"cannot read {name}: {why}"))
                if kind == NameKind.LOG and (info := parse_segment_file_name(name)) is not None:
                    unreadable_logs.add(info.base_offset)  # its indexes are no orphans
                continue
            if kind == NameKind.STATE:
                continue
            if kind == NameKind.LEFTOVER:
                part.leftovers.append(p)
            elif kind == NameKind.MISNAMED_LOG:
                base = _misnamed_log(part, p)
                misnamed.append((base, p))
                part.log_bytes += pr.size
            elif kind == NameKind.MISNAMED_INDEX:
                part.other_files.append(p)
                part.problems.append(
                    make_finding(
                        "segment-name-invalid",
                        str(p),
                        f"{name} is not named <20-digit offset>.<kind>; the broker takes it for an index "
                        "but no segment uses it, and kdump did not check it",
                    )
                )
            else:
                info = parse_segment_file_name(name)
                assert info is not None
                if kind == NameKind.SNAPSHOT:
                    part.snapshots[info.base_offset] = p
                elif kind == NameKind.CHECKPOINT:
                    part.kraft_checkpoints.append(p)
                else:
                    found.setdefault(info.base_offset, {})[kind] = p  # a StrEnum: the kind's name
                    if kind == NameKind.LOG:
                        part.log_bytes += pr.size
        for base in sorted(found):
            files = found[base]
            if "log" not in files:
                if base not in unreadable_logs:
                    part.orphan_indexes.extend(files[k] for k in _INDEX_KINDS if k in files)
                continue
            part.segments.append(
                Segment(
                    base,
                    files["log"],
                    files.get("index"),
                    files.get("timeindex"),
                    files.get("txnindex"),
                    probed=True,
                )
            )
        if misnamed:
            # A misnamed log is still checked, in offset order with the others: never dropped.
            part.segments.extend(Segment(base, p) for base, p in misnamed)
            part.segments.sort(key=lambda s: (s.base_offset, str(s.log)))
        return part

    def leftover_segments(self) -> list[Segment]:
        """The `.log.deleted`, `.log.cleaned` and `.log.swap` leftovers, as segments to scan."""
        out = []
        for p in self.leftovers:
            info = parse_segment_file_name(p.name)
            if info is not None and info.kind == "log":
                out.append(Segment(info.base_offset, p, suffix=info.suffix))
        return out


def _misnamed_log(part: PartitionDir, p: Path) -> int:
    """The base offset to check a misnamed `.log` with, and the finding that says what the broker does."""
    broker_base = broker_offset_from_name(p.name)
    if broker_base is not None and broker_base >= 0:
        canonical = f"{broker_base:020d}.log"
        message = (
            f"{p.name} is not named <20-digit offset>.log: the broker reads base offset {broker_base} from "
            f"it and opens {canonical} instead, so this file's data is never served; kdump checked it "
            f"as the segment at offset {broker_base}"
        )
        base = broker_base
    else:
        content_base = base_offset_from_content(p)
        base = content_base if content_base is not None else 0
        message = (
            f"{p.name} is not named <20-digit offset>.log: the broker cannot parse an offset from it and "
            f"fails to load this partition; kdump checked it with base offset {base} "
            + ("from its first batch" if content_base is not None else "(no batch decodes)")
        )
    part.problems.append(make_finding("segment-name-invalid", str(p), message, offset=base))
    return base
