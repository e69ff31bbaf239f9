"""The broker's start-up checks of its remote index cache, on the cached files.

`RemoteIndexCache` opens the three files of every cached remote segment when the broker starts and
runs each index's `sanityCheck()`; any failure is fatal (the broker exits: tried on Kafka 3.9.1 and
4.4.0). The checks, with the segment's start offset as the files' base offset:

- `.index`: a length that is a multiple of 8; when it has entries, the last one's offset at or above the
  base offset;
- `.timeindex`: a length that is a multiple of 12; when it has entries, the last one's timestamp at or
  above the first one's and its offset at or above the base offset;
- `.txnindex`: every whole 34-byte entry of version 0 (Kafka 4.x reads the whole int16; 3.9 only its
  high byte) and ending at or above the base offset; a partial entry at the end is ignored.

The cache holds copies of the remote store's indexes: a damaged file is repaired by deleting the
segment's three cached files, which the broker fetches again when it next reads that segment.
"""

from __future__ import annotations

from pathlib import Path

from kdump.errors import KdumpError
from kdump.findings import Finding, make_finding
from kdump.formats.offset_index import decode_offset_index
from kdump.formats.time_index import decode_time_index
from kdump.formats.txn_index import ENTRY_SIZE as TXN_ENTRY_SIZE
from kdump.formats.txn_index import decode_txn_index
from kdump.model.remote_index_cache import CachedSegment, RemoteIndexCache
from kdump.scan.source import read_small_file

_CACHE_FILE_LIMIT = 256 << 20


def check_remote_index_cache(cache: RemoteIndexCache) -> list[Finding]:
    """Findings of the cache directory: its listing's, then each cached segment's sanity checks."""
    out = list(cache.problems)
    for seg in cache.segments:
        out.extend(check_cached_segment(seg))
    return out


def remote_index_cache_report(path: Path) -> tuple[list[Finding], str]:
    """The cache directory's findings, and what it is in words (for verify's report of it)."""
    cache = RemoteIndexCache.load(path)
    return check_remote_index_cache(
        cache
    ), f"a remote index cache of {len(cache.segments)} segments ({cache.files} files)"


def _corrupt(path: str, why: str, base: int) -> Finding:
    return make_finding(
        "remote-index-cache-corrupt",
        path,
        f"{why}: the broker refuses to start on it; delete this segment's three cached files and the "
        "broker fetches them again from remote storage",
        offset=base,
    )


def check_cached_segment(seg: CachedSegment) -> list[Finding]:
    """The broker's sanity checks of one cached segment's three index files."""
    out: list[Finding] = []
    base = seg.start_offset
    try:
        index = decode_offset_index(read_small_file(seg.index, _CACHE_FILE_LIMIT), base)
        times = decode_time_index(read_small_file(seg.timeindex, _CACHE_FILE_LIMIT), base)
        txn = decode_txn_index(read_small_file(seg.txnindex, _CACHE_FILE_LIMIT))
    except (KdumpError, OSError) as exc:
        return [make_finding("unreadable-file", str(seg.index.parent), f"cannot read cached indexes: {exc}")]
    if index.trailing_bytes:
        size = index.slot_count * 8 + index.trailing_bytes
        out.append(_corrupt(str(seg.index), f"{size} bytes is not a whole number of 8-byte entries", base))
    elif index.last_slot is not None and index.last_slot.offset < base:
        out.append(
            _corrupt(
                str(seg.index),
                f"the last entry's offset {index.last_slot.offset} is below the base offset {base}",
                base,
            )
        )
    if times.trailing_bytes:
        size = times.slot_count * 12 + times.trailing_bytes
        out.append(
            _corrupt(str(seg.timeindex), f"{size} bytes is not a whole number of 12-byte entries", base)
        )
    elif times.last_slot is not None:
        first = times.entries[0].timestamp if times.entries else times.last_slot.timestamp
        if times.last_slot.timestamp < first:
            out.append(
                _corrupt(
                    str(seg.timeindex),
                    f"the last entry's timestamp {times.last_slot.timestamp} is before the first one's {first}",
                    base,
                )
            )
        elif times.last_slot.offset < base:
            out.append(
                _corrupt(
                    str(seg.timeindex),
                    f"the last entry's offset {times.last_slot.offset} is below the base offset {base}",
                    base,
                )
            )
    for i, entry in enumerate(txn.entries):
        position = i * TXN_ENTRY_SIZE
        if entry.version != 0:
            out.append(
                make_finding(
                    "remote-index-cache-corrupt",
                    str(seg.txnindex),
                    f"aborted transaction entry {i} has version {entry.version}: Kafka 4.x refuses to start "
                    f"on it{' (Kafka 3.9 reads it as version 0)' if entry.kafka_version == 0 else ''}; delete "
                    "this segment's three cached files and the broker fetches them again from remote storage",
                    position=position,
                    offset=base,
                )
            )
        elif entry.last_offset < base:
            out.append(
                make_finding(
                    "remote-index-cache-corrupt",
                    str(seg.txnindex),
                    f"aborted transaction entry {i} ends at offset {entry.last_offset}, below the base offset "
                    f"{base}: the broker refuses to start on it; delete this segment's three cached files and "
                    "the broker fetches them again from remote storage",
                    position=position,
                    offset=base,
                )
            )
    return out
