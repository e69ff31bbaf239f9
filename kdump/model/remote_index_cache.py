"""A broker's remote index cache (`<log dir>/remote-log-index-cache/`), sorted as the broker sorts it.

Every broker with `remote.log.storage.system.enable=true` keeps this directory (`RemoteIndexCache`):
the indexes of remote segments it has read, three files per segment (see `kdump.formats.remote_names`).
It is legal in a log dir, and its entries are judged by what the broker's start-up does with them,
tried on Kafka 3.9.1 and 4.4.0 brokers:

- `.tmp` and `.deleted` files, and the files of a segment missing one of its three: deleted at start-up
  (`remote-index-cache-leftover`, info);
- a name whose segment id does not parse, a name with no dot, a directory or a file of another type:
  the broker exits at start-up (`remote-index-cache-name-invalid`, error);
- a name the broker gets past without using it (a valid id with an unknown suffix): ignored
  (`unknown-entry` at info);
- the three files of a segment: opened and sanity-checked, and any failure stops the broker
  (`kdump.ops.checks.remote_cache` checks them).

Listing only: no file content is read here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kdump.findings import Finding, Severity, make_finding
from kdump.formats.remote_names import (
    CACHE_KINDS,
    CacheFileName,
    broker_parses_cache_name,
    cache_leftover,
    parse_cache_file_name,
)
from kdump.model.entries import FileType, entry_findings, list_dir, probe, readable

_FATAL = "the broker exits at start-up when it meets it in its remote index cache"


@dataclass(frozen=True, slots=True)
class CachedSegment:
    """The three cached index files of one remote segment."""

    start_offset: int
    segment_id: str
    index: Path
    timeindex: Path
    txnindex: Path


@dataclass(slots=True)
class RemoteIndexCache:
    """The cache directory: complete entries to check, and findings about the rest."""

    path: Path
    segments: list[CachedSegment] = field(default_factory=list)
    problems: list[Finding] = field(default_factory=list)
    files: int = 0

    @classmethod
    def load(cls, path: Path) -> RemoteIndexCache:
        """List and sort the cache's entries (no file content is read)."""
        cache = cls(path)
        names = list_dir(path)
        if isinstance(names, str):
            cache.problems.append(
                make_finding("unreadable-file", str(path), f"cannot list {path.name}: {names}")
            )
            return cache
        sets: dict[str, dict[str, tuple[CacheFileName, Path]]] = {}
        for name in names:
            p = path / name
            pr = probe(p)
            cache.files += 1
            if pr.type != FileType.FILE:
                if pr.type == FileType.DIR:
                    cache.problems.append(
                        make_finding(
                            "remote-index-cache-name-invalid",
                            str(p),
                            f"{name} is a directory; {_FATAL} (remove it)",
                        )
                    )
                else:
                    cache.problems.extend(entry_findings(pr, "a remote index file"))
                continue
            why = readable(pr)
            if why is not None:
                cache.problems.append(make_finding("unreadable-file", str(p), f"cannot read {name}: {why}"))
                continue
            if cache_leftover(name):
                cache.problems.append(
                    make_finding(
                        "remote-index-cache-leftover",
                        str(p),
                        f"{name} is an unfinished download or an evicted entry; the broker deletes it at start-up",
                    )
                )
                continue
            parsed = parse_cache_file_name(name)
            if parsed is not None:
                sets.setdefault(parsed.stem, {})[parsed.kind] = (parsed, p)
            elif broker_parses_cache_name(name):
                cache.problems.append(
                    make_finding(
                        "unknown-entry",
                        str(p),
                        f"{name} is not a remote index file; the broker ignores it and kdump did not check it",
                        severity=Severity.INFO,
                    )
                )
            else:
                cache.problems.append(
                    make_finding(
                        "remote-index-cache-name-invalid",
                        str(p),
                        f"{name} is not named <start offset>_<segment id>.<index|timeindex|txnindex>; {_FATAL} "
                        "(remove it)",
                    )
                )
        for stem in sorted(sets, key=lambda s: (sets[s][next(iter(sets[s]))][0].start_offset, s)):
            files = sets[stem]
            first = next(iter(files.values()))[0]
            if all(kind in files for kind in CACHE_KINDS):
                cache.segments.append(
                    CachedSegment(
                        first.start_offset,
                        first.segment_id,
                        files["index"][1],
                        files["timeindex"][1],
                        files["txnindex"][1],
                    )
                )
                continue
            missing = [k for k in CACHE_KINDS if k not in files]
            for _, p in files.values():
                cache.problems.append(
                    make_finding(
                        "remote-index-cache-leftover",
                        str(p),
                        f"the cached indexes of remote segment {first.segment_id} lack their "
                        f"{' and '.join('.' + k for k in missing)}; the broker deletes the rest at start-up "
                        "and fetches them again when needed",
                        offset=first.start_offset,
                    )
                )
        return cache
