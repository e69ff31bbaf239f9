"""Log directories, directories of log dirs, and turning the paths a user gives into what to work on.

A path may name a single file, a partition directory, a whole log dir (partition directories,
`meta.properties` and the checkpoint files), or a directory holding log dirs (an incident team's
`copies/broker1/`, `copies/broker2/`). `discover` resolves the path once (`kdump.store.queries.as_path`)
and reads it through one `Listing` (`kdump.model.listing`): each directory is listed once and each
entry looked at once, whatever classification asks of them (content first, then names). Every entry
under it is classified by `kdump.model.entries`; what is not recognised or cannot be read becomes a
finding of the directory that holds it. Kafka holds an exclusive lock on `<log dir>/.lock` while a
broker uses the directory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from kdump.errors import PathError
from kdump.findings import Finding, Severity
from kdump.formats.filenames import (
    LOG_DIR_FILES,
    META_PROPERTIES,
    PARTITION_DIR_FILES,
    REMOTE_LOG_INDEX_CACHE,
    TMP_SUFFIX,
    parse_partition_dir_name,
    parse_segment_file_name,
)
from kdump.model.entries import (
    FileType,
    entry_findings,
    file_kind,
    leftover_description,
    leftover_finding,
    list_dir,
    probe,
    readable,
    unknown_finding,
)
from kdump.model.listing import Listing
from kdump.model.log_dir_entries import LogDirEntries
from kdump.model.partition import PartitionDir
from kdump.model.segment import Segment, base_offset_from_content
from kdump.store.paths import StoredPath
from kdump.store.queries import as_path, can_list

LOCK_FILE = ".lock"
# How deep below a given directory log dirs are looked for (copies/<dc>/<broker>/ is two levels).
MAX_LOG_DIR_DEPTH = 4


@dataclass(slots=True)
class LogDir:
    """A broker log directory: partition directories plus log-dir-level files."""

    path: Path
    partitions: list[PartitionDir] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    leftovers: list[Path] = field(default_factory=list)
    problems: list[Finding] = field(default_factory=list)
    # Tiered storage's `remote-log-index-cache/`, which the broker keeps beside the partitions.
    remote_index_cache: Path | None = None

    @classmethod
    def load(
        cls, path: Path, *, unknown: Severity = Severity.ERROR, listing: Listing | None = None
    ) -> LogDir:
        """List and classify a log dir's entries (no file contents are read)."""
        entries = LogDirEntries.list(path, unknown=unknown, listing=listing)
        log_dir = cls(path, files=entries.files, leftovers=entries.leftovers)
        log_dir.remote_index_cache = entries.remote_index_cache
        failures: list[tuple[int, Finding]] = []
        for i, name in enumerate(entries.names):
            part = entries.load_partition(name, listing)
            if isinstance(part, PartitionDir):
                log_dir.partitions.append(part)
            else:
                failures.append((i, part))
        log_dir.problems = entries.problems_with(failures)
        return log_dir


def _holds_partition_files(names: list[str]) -> bool:
    """Segment files, or the state files only a partition directory keeps (checkpoint `.tmp` too)."""
    return any(
        parse_segment_file_name(n) is not None
        or n in PARTITION_DIR_FILES
        or (n.endswith(TMP_SUFFIX) and n[: -len(TMP_SUFFIX)] in PARTITION_DIR_FILES)
        for n in names
    )


def _holds_log_dir_files(names: list[str]) -> bool:
    # `.lock` alone says nothing: other tools (pytest among them) leave files of that name.
    return any(n in LOG_DIR_FILES and n != LOCK_FILE for n in names)


def _is_log_dir_by_content(path: Path, listing: Listing) -> bool:
    """`meta.properties`, a log-dir checkpoint, or a directory holding partition files: what a broker
    keeps in a log dir, whatever the directory is called (`kafka-1` is a broker's as often as a
    partition's name)."""
    names = listing.names(path)
    if isinstance(names, str):
        return False
    if _holds_log_dir_files(names):
        return True
    for n in names:
        sub = listing.names(path / n) if listing.is_dir(path / n) else ""
        if not isinstance(sub, str) and _holds_partition_files(sub):
            return True
    return False


def looks_like_partition_dir(path: Path, listing: Listing | None = None) -> bool:
    """A directory holding segment files or partition state files; else one named like `<topic>-<n>`
    that holds nothing of a log dir (content first: `kafka-1` holding `meta.properties` is a log dir)."""
    listing = listing or Listing()
    names = listing.names(path)
    if isinstance(names, str):
        return parse_partition_dir_name(path.name) is not None
    if _holds_partition_files(names):
        return True
    return parse_partition_dir_name(path.name) is not None and not _is_log_dir_by_content(path, listing)


def looks_like_log_dir(path: Path, listing: Listing | None = None) -> bool:
    """A directory holding log-dir-level files or partition directories (by content, or by name when
    empty of anything else)."""
    listing = listing or Listing()
    names = listing.names(path)
    if isinstance(names, str):
        return False
    if _holds_log_dir_files(names):
        return True
    return any(listing.is_dir(path / n) and looks_like_partition_dir(path / n, listing) for n in names)


def looks_like_remote_store(path: Path) -> bool:
    """A directory in `LocalTieredStorage`'s layout: it holds `kafka-tiered-storage/`, is it, or is one
    of its partition directories. (Here, not with the remote store's reader, so that telling a path
    given apart does not load it.)"""
    from kdump.formats.remote_names import (
        LOCAL_TIERED_STORAGE_ROOT,
        parse_remote_file_name,
        parse_remote_partition_dir,
    )

    if path.name == LOCAL_TIERED_STORAGE_ROOT:
        return True
    if probe(path / LOCAL_TIERED_STORAGE_ROOT).type == FileType.DIR:
        return True
    if parse_remote_partition_dir(path.name) is None:
        return False
    names = list_dir(path)
    return not isinstance(names, str) and any(parse_remote_file_name(n) is not None for n in names)


@dataclass(frozen=True, slots=True)
class Target:
    """One thing a command works on, as the user gave it, and what kdump took it to be.

    `kind` is "file", "partition", "log-dir" or "log-dirs" (a directory holding log dirs, whose
    `children` are the log dirs found under it). `problems` are findings about the entries of the
    target itself (its unrecognised, unreadable or wrongly typed entries; a file's wrong type).
    """

    given: str
    path: Path
    kind: str
    log_dir_path: Path | None  # the log dir that holds it, if known (for checkpoints and the lock)
    problems: tuple[Finding, ...] = ()
    children: tuple[Target, ...] = ()
    # How a file given alone is read, when its name does not say (e.g. "a segment, by its content").
    note: str | None = None
    segments: tuple[Segment, ...] = ()  # kind "file": the segment(s) it belongs to
    parts: tuple[PartitionDir, ...] = ()
    log_dir_files: tuple[Path, ...] = ()
    remote_index_cache: Path | None = None
    # A log dir found in a directory of log dirs (beside other brokers' log dirs).
    among_log_dirs: bool = False
    # A log dir listed lazily (`discover(lazy=True)`): its partitions by name, loaded when asked.
    entries: LogDirEntries | None = None

    @property
    def idle_log_dir(self) -> bool:
        """A broker's log dir with no partition (`meta.properties`, its checkpoints): a freshly formatted
        broker, or one that holds no replica, which is healthy, not a path with nothing in it."""
        return self._idle(self._partition_count())

    def _partition_count(self) -> int:
        return len(self.entries.names) if self.entries is not None else len(self.parts)

    def _idle(self, partitions: int) -> bool:
        return (
            self.kind == "log-dir"
            and not partitions
            and self.remote_index_cache is None
            and any(p.name == META_PROPERTIES for p in self.log_dir_files)
        )

    def partitions(self) -> list[PartitionDir]:
        """The partition directories of this target (for log-dirs: of every log dir under it)."""
        if self.kind == "log-dirs":
            return [p for c in self.children for p in c.partitions()]
        if self.entries is not None:
            found = (self.entries.load_partition(n) for n in self.entries.names)
            return [p for p in found if isinstance(p, PartitionDir)]
        if not self.parts:
            # A target built by hand (not by `discover`) is listed when asked.
            if self.kind == "partition":
                return [PartitionDir.load(self.path)]
            if self.kind == "log-dir":
                return LogDir.load(self.path).partitions
        return list(self.parts)

    @property
    def log_bytes(self) -> int:
        """The bytes in the segment `.log` files of this target, when listed."""
        if self.kind == "file":
            return sum(_size(s.log) for s in self.segments)
        if self.kind == "log-dirs":
            return sum(c.log_bytes for c in self.children)
        if self.entries is not None:
            return self.entries.log_bytes()
        return sum(p.log_bytes for p in self.partitions())

    def taken_as(self, partitions: int | None = None) -> str:
        """What kdump took the given path to be, in words (`partitions`: how many of a lazily listed
        log dir's partition directories could be listed, once known)."""
        count = self._partition_count() if partitions is None else partitions
        if self.kind == "log-dirs":
            return f"a directory of {len(self.children)} log dirs"
        if self.kind == "log-dir" and self.remote_index_cache == self.path:
            return "a remote index cache"
        if self._idle(count):
            return "an idle broker's log dir, with no partition"
        if self.kind == "log-dir":
            return f"a log dir of {count} partitions"
        if self.kind == "partition":
            segs = len(self.parts[0].segments) if self.parts else 0
            return f"a partition directory of {segs} segments"
        return self.note or "a file"


def _size(path: Path | None) -> int:
    try:
        return os.path.getsize(path) if path is not None else 0
    except OSError:
        return 0


def discover(given: str, *, unknown: Severity = Severity.ERROR, lazy: bool = False) -> Target:
    """Classify a path the user gave, and every entry under it (with `lazy`, a local log dir's
    partition directories are only named: `Target.entries`, loaded as they are worked on).

    Raises:
        PathError: it does not exist or cannot be read.
    """
    # The location is resolved once: URLs and tarballs are listed here, and their paths answer from
    # that listing (kdump.store); every directory under it is then listed once (`Listing`).
    path = as_path(given)
    listing = Listing()
    pr = listing.probe(path)
    if pr.type == FileType.MISSING:
        raise PathError(f"{given}: no such file or directory")
    if pr.type == FileType.FILE:
        why = readable(pr)
        if why is not None:
            raise PathError(f"{given}: cannot read: {why}")
        return _file_target(given, path, listing)
    if pr.type != FileType.DIR:
        problems = entry_findings(pr, "a Kafka file or directory")
        return Target(given, path, "file", None, tuple(problems), note=f"a {pr.type.value}")
    if not can_list(path) or isinstance(listing.names(path), str):
        raise PathError(f"{given}: permission denied")
    if path.name == REMOTE_LOG_INDEX_CACHE:  # the broker's fixed name
        # Given on its own: checked as the log dir above it would check it, without its partitions.
        return Target(given, path, "log-dir", path.parent, remote_index_cache=path)
    return _dir_target(given, path, unknown, 0, listing, lazy)


def _dir_target(
    given: str, path: Path, unknown: Severity, depth: int, listing: Listing, lazy: bool = False
) -> Target:
    if looks_like_partition_dir(path, listing) and not looks_like_log_dir(path, listing):
        part = PartitionDir.load(path, unknown=unknown, listing=listing)
        return Target(given, path, "partition", _holding_log_dir(path.resolve(), listing), parts=(part,))
    if looks_like_log_dir(path, listing) or depth >= MAX_LOG_DIR_DEPTH:
        return _log_dir_target(given, path, unknown, listing, lazy)
    children = []
    problems: list[Finding] = []
    names = listing.names(path)
    for name in names if not isinstance(names, str) else []:
        p = path / name
        pr = listing.probe(p)
        if pr.type == FileType.DIR and _holds_log_dirs(p, depth + 1, listing):
            child = _dir_target(os.path.join(given, name), p, unknown, depth + 1, listing, lazy)
            children.append(replace(child, among_log_dirs=True) if child.kind == "log-dir" else child)
        elif pr.type in (FileType.DIR, FileType.FILE):
            problems.append(unknown_finding(pr, "directory of log dirs", unknown))
        else:
            problems.extend(entry_findings(pr, "a log dir"))
    if not children:
        # Nothing Kafka-shaped anywhere below: call it a log dir with no partitions, so its entries
        # are reported as unrecognised and the command says it found nothing to work on.
        return _log_dir_target(given, path, unknown, listing, lazy)
    return Target(given, path, "log-dirs", None, tuple(problems), tuple(children))


def _holds_log_dirs(path: Path, depth: int, listing: Listing) -> bool:
    if looks_like_log_dir(path, listing) or looks_like_partition_dir(path, listing):
        return True
    if depth >= MAX_LOG_DIR_DEPTH:
        return False
    names = listing.names(path)
    return not isinstance(names, str) and any(
        listing.is_dir(path / n) and _holds_log_dirs(path / n, depth + 1, listing) for n in names
    )


def _log_dir_target(
    given: str, path: Path, unknown: Severity, listing: Listing, lazy: bool = False
) -> Target:
    if lazy and not isinstance(path, StoredPath):
        entries = LogDirEntries.list(path, unknown=unknown, listing=listing)
        found = [*entries.problems, *(leftover_finding(p) for p in entries.leftovers)]
        return Target(
            given,
            path,
            "log-dir",
            path,
            tuple(found),
            log_dir_files=tuple(entries.files),
            remote_index_cache=entries.remote_index_cache,
            entries=entries,
        )
    log_dir = LogDir.load(path, unknown=unknown, listing=listing)
    problems = list(log_dir.problems)
    problems.extend(leftover_finding(p) for p in log_dir.leftovers)
    return Target(
        given,
        path,
        "log-dir",
        path,
        tuple(problems),
        parts=tuple(log_dir.partitions),
        log_dir_files=tuple(log_dir.files),
        remote_index_cache=log_dir.remote_index_cache,
    )


def _file_target(given: str, path: Path, listing: Listing | None = None) -> Target:
    parent = path.resolve().parent
    log_dir = _holding_log_dir(parent, listing or Listing())
    kind = file_kind(path)
    info = parse_segment_file_name(path.name)
    described = leftover_description(path, kind, _size(path))
    if described is not None:
        return Target(given, path, "file", log_dir, note=described)
    if kind is not None and kind != "log":
        if kind in ("index", "timeindex", "txnindex") and info is not None and info.suffix == "":
            # An index is judged against the batches it points into: check its segment.
            log = path.with_name(f"{info.base_offset:020d}.log")
            if log.is_file():
                return Target(given, path, "file", log_dir, segments=(_segment_at(log, info.base_offset),))
            return Target(given, path, "file", log_dir, note=f"a .{kind} file with no {log.name} beside it")
        return Target(given, path, "file", log_dir)
    if info is not None:
        if info.suffix:
            return Target(
                given, path, "file", log_dir, segments=(Segment(info.base_offset, path, suffix=info.suffix),)
            )
        return Target(given, path, "file", log_dir, segments=(_segment_at(path, info.base_offset),))
    # The name says nothing: read it as a segment, with the base offset of its first batch.
    base = base_offset_from_content(path)
    note = (
        f"a segment by its content, base offset {base} from its first batch"
        if base is not None
        else "a segment by its content, base offset 0 assumed: no batch decodes at its start"
    )
    return Target(given, path, "file", log_dir, note=note, segments=(Segment(base or 0, path),))


def _segment_at(log: Path, base: int) -> Segment:
    def sibling(ext: str) -> Path | None:
        p = log.with_suffix(ext)
        return p if p.is_file() else None

    return Segment(base, log, sibling(".index"), sibling(".timeindex"), sibling(".txnindex"))


def _holding_log_dir(partition_path: Path, listing: Listing) -> Path | None:
    """The log dir holding a partition directory: its parent, when that looks like one."""
    parent = partition_path.parent
    if looks_like_log_dir(parent, listing) and parse_partition_dir_name(partition_path.name) is not None:
        return parent
    return None


def expand(targets: list[Target]) -> list[Target]:
    """Targets with every directory of log dirs preceded by the log dirs under it, so that each is
    worked on and reported on its own (the directory itself then stands for its own entries)."""
    out: list[Target] = []
    for t in targets:
        if t.kind == "log-dirs":
            out.extend(expand(list(t.children)))
        out.append(t)
    return out


def segments_of_file(path: Path) -> list[Segment]:
    """The segment a file given alone belongs to (its .log, the .log beside an index, or the file
    itself read as a segment when its name says nothing)."""
    return list(_file_target(str(path), path).segments)
