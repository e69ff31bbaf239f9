"""A log dir's entries, listed without loading its partitions: what a streamed verify starts from.

`LogDir.load` lists a log dir and loads every partition directory in it: at 100,000 partitions that
is some 300 MB of path and segment objects, built in one process before anything is checked.
`LogDirEntries.list` sorts the log dir's own entries exactly as `LogDir.load` does, but keeps only
the names of its partition directories; each one is loaded when asked (`load_partition`), in any
process, and dropped once checked. A partition directory that cannot be listed is a finding of the
log dir, in the place its entry holds among the log dir's other findings (`problems_with`).

Reading the log dir costs its one listing (`Listing.plain_dirs`): an entry the directory itself says
is a directory (not a symlink) and is named `<topic>-<partition>` is taken as a partition directory
without a `stat` (`stat` follows links and would say the same); every other entry is probed as
`LogDir.load` probes it.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kdump.errors import PathError
from kdump.findings import Finding, Severity, make_finding
from kdump.formats.filenames import (
    CLUSTER_METADATA_PARTITION_DIR,
    REMOTE_LOG_INDEX_CACHE,
    parse_partition_dir_name,
    parse_segment_file_name,
)
from kdump.model.entries import FileType, NameKind, classify_name, entry_findings, readable, unknown_finding
from kdump.model.listing import Listing
from kdump.model.partition import LogDirFacts, PartitionDir

__all__ = ["LogDirEntries", "holds_segments"]


@dataclass(slots=True)
class LogDirEntries:
    """A log dir's entries: its partition directories by name (not loaded), its own files, leftovers
    and the findings about its entries."""

    path: Path
    unknown: Severity = Severity.ERROR
    # The partition directories' entry names, in entry (sorted) order.
    names: builtins.list[str] = field(default_factory=list)
    # For each name: how many of `problems` come before its entry (where a failure to list it goes).
    slots: builtins.list[int] = field(default_factory=list)
    problems: builtins.list[Finding] = field(default_factory=list)
    # The indexes (in `names`) of partition directories reached through a symlink or probed: the
    # others are plain directories of this log dir, so that no two of them are the same directory.
    probed: set[int] = field(default_factory=set)
    files: builtins.list[Path] = field(default_factory=list)
    leftovers: builtins.list[Path] = field(default_factory=list)
    remote_index_cache: Path | None = None
    # What each partition's checks ask of the log dir, answered by this listing (`LogDirFacts`).
    facts: LogDirFacts = field(default_factory=lambda: LogDirFacts({}, kraft=False))
    # The log dir's own entries (not its partition directories found by the readdir) as probed.
    probes: dict[str, FileType] = field(default_factory=dict)

    @classmethod
    def list(
        cls, path: Path, *, unknown: Severity = Severity.ERROR, listing: Listing | None = None
    ) -> LogDirEntries:
        """List and classify a log dir's entries (partition directories by name only).

        Raises:
            PathError: the log dir cannot be listed.
        """
        listing = listing or Listing()
        out = cls(path, unknown)
        names = listing.names(path)
        if isinstance(names, str):
            raise PathError(f"cannot list {path}: {names}")
        fast = listing.plain_dirs(path)
        for name in names:
            if name in fast and parse_partition_dir_name(name) is not None:
                out._partition(name)
                continue
            out._entry(name, listing)
        # `Path.is_dir`: a plain directory by the readdir, or a probe that found one (a symlink).
        name = CLUSTER_METADATA_PARTITION_DIR
        kraft = name in fast or out.probes.get(name) == FileType.DIR
        out.facts = LogDirFacts(out.probes, kraft=kraft)
        return out

    def _partition(self, name: str) -> None:
        self.names.append(name)
        self.slots.append(len(self.problems))

    def _entry(self, name: str, listing: Listing) -> None:
        p = self.path / name
        pr = listing.probe(p)
        self.probes[name] = pr.type
        if pr.type == FileType.DIR and name == REMOTE_LOG_INDEX_CACHE:
            self.remote_index_cache = p
            return
        if pr.type == FileType.DIR:
            if parse_partition_dir_name(name) is None:
                if not holds_segments(p, listing):
                    self.problems.append(unknown_finding(pr, "log dir", self.unknown))
                    return
                self.problems.append(
                    make_finding(
                        "partition-name-invalid",
                        str(p),
                        f"{name} holds segment files but is not named <topic>-<partition>: the broker "
                        "refuses to load the log dir; kdump checked it as a partition",
                    )
                )
            self.probed.add(len(self.names))
            self._partition(name)
            return
        kind = classify_name(name, "log-dir")
        if pr.type != FileType.FILE:
            self.problems.extend(entry_findings(pr, "a log dir file"))
            return
        if kind == NameKind.UNKNOWN:
            self.problems.append(unknown_finding(pr, "log dir", self.unknown))
            return
        why = readable(pr)
        if why is not None:
            self.problems.append(make_finding("unreadable-file", str(p), f"cannot read {name}: {why}"))
        elif kind == NameKind.LEFTOVER:
            self.leftovers.append(p)
        else:
            self.files.append(p)

    def load_partition(
        self, name: str, listing: Listing | None = None, path: Path | None = None
    ) -> PartitionDir | Finding:
        """The partition directory of that entry name (at `path`, `self.path / name`, where the
        caller made it), loaded; or the log dir's finding that it cannot be listed."""
        p = self.path / name if path is None else path
        try:
            return PartitionDir.load(p, unknown=self.unknown, listing=listing, log_dir_facts=self.facts)
        except PathError as exc:
            return make_finding("unreadable-file", str(p), str(exc))

    def resolved(self, i: int, real: Path) -> Path:
        """Where the partition directory of `names[i]` is, symlinks resolved (`real`: the log dir's
        own path resolved): no look at the disk for a plain directory."""
        name = self.names[i]
        return (self.path / name).resolve() if i in self.probed else real / name

    def log_bytes(self) -> int:
        """The bytes of the partitions' `.log` files, from one `readdir` and a `stat` of each, no
        partition loaded (a progress bar's total)."""
        total = 0
        for name in self.names:
            try:
                with os.scandir(self.path / name) as it:
                    total += sum(e.stat().st_size for e in it if e.name.endswith(".log") and e.is_file())
            except OSError:
                continue
        return total

    def problems_with(self, failures: Iterable[tuple[int, Finding]]) -> builtins.list[Finding]:
        """The log dir's findings with those of partitions that could not be listed (by index in
        `names`, in order) each in its entry's place: as `LogDir.load` reports them."""
        out: builtins.list[Finding] = []
        done = 0
        for i, finding in failures:
            slot = self.slots[i]
            out.extend(self.problems[done:slot])
            done = slot
            out.append(finding)
        out.extend(self.problems[done:])
        return out


def holds_segments(path: Path, listing: Listing) -> bool:
    """Whether a directory holds a file named as a segment's."""
    names = listing.names(path)
    return not isinstance(names, str) and any(parse_segment_file_name(n) is not None for n in names)
