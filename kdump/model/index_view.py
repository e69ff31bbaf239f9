"""A segment's `.index` and `.timeindex`, read in place and checked before they are trusted.

Index files carry no checksum, so nothing in them is believed on sight:

- a file whose size is not a multiple of its slot size is refused (Kafka's sanity check rejects it
  and recovery rebuilds it);
- zero slots at the end are accepted only as an active segment's preallocation (both files sized
  from one `segment.index.bytes`), reported as info; zeros anywhere else are lost entries;
- a sample of slots must rise with the slot (`IndexFile.sample`), and every binary search checks
  the order of the slots it probed (`out_of_order`).

A file that fails is reported with the `index-*`/`time-index-*` finding verify uses, through a
`ReadLedger`, and not used: the caller scans the log instead. Entries that pass are still checked
against the log where they are used (`kdump.model.segment_view`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from kdump.errors import KdumpError
from kdump.findings import Finding, make_finding
from kdump.formats.offset_index import OffsetIndexEntry
from kdump.formats.time_index import TimeIndexEntry
from kdump.model.byte_source import ByteSource

__all__ = ["SAMPLES", "IndexFile", "ReadLedger", "load_index", "out_of_order", "probes_for_count"]

# Index slots sampled to check an index's order before it is used (see `IndexFile.sample`).
SAMPLES = 8

E = TypeVar("E", OffsetIndexEntry, TimeIndexEntry)


class ReadLedger:
    """What reading segments found and cost: findings (each once), index fallbacks, counters.

    `fallback` records an index that failed its checks (the caller reads the log instead);
    `fallback_findings` keeps just those, for callers (dump) that report nothing else of a lookup.
    """

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.fallback_findings: list[Finding] = []
        self._seen: set[tuple[str, str, int | None, int | None]] = set()
        self.fallbacks = 0
        self.segments_examined = 0
        self.index_entries_read = 0
        self.batches_read = 0

    def add(self, f: Finding) -> bool:
        """Record a finding unless the same one (code, file, position, offset) is already there."""
        key = (f.code, f.file, f.position, f.offset)
        if key in self._seen:
            return False
        self._seen.add(key)
        self.findings.append(f)
        return True

    def fallback(self, code: str, file: str, message: str, **kw: Any) -> None:
        """An index (or one of its entries) failed a check: report it; the log is read instead."""
        self.fallbacks += 1
        f = make_finding(code, file, message, **kw)
        if self.add(f):
            self.fallback_findings.append(f)


class IndexFile(Generic[E]):
    """An index file's buffer; slots are read one at a time, in place, and counted."""

    def __init__(
        self,
        buf: memoryview,
        count: int,
        read: Callable[[memoryview, int, int], E],
        base: int,
        ledger: ReadLedger,
    ) -> None:
        self.buf = buf
        self.count = count
        self._read: Callable[[memoryview, int, int], E] = read
        self._base = base
        self._ledger = ledger

    def entry(self, slot: int) -> E:
        self._ledger.index_entries_read += 1
        return self._read(self.buf, slot, self._base)

    def sample(self) -> list[tuple[int, E]]:
        """About ten slots spread over the entries, the first and the last two included.

        A sound index rises with the slot; a shuffled, reversed or overwritten one almost never
        passes this sample, and the entries a lookup then uses are checked against the log anyway.
        """
        n: int = self.count
        if n == 0:
            return []
        slots = {0, n - 1, max(0, n - 2), *(n * k // SAMPLES for k in range(1, SAMPLES))}
        return [(i, self.entry(i)) for i in sorted(slots)]

    def search(self, key: Callable[[E], int], target: int) -> tuple[int, list[tuple[int, E]]]:
        """Largest slot whose key is <= target (-1 for none), and the slots probed on the way.

        `AbstractIndex.indexSlotRangeFor` biases its binary search to a warm tail to spare page
        faults; on a sorted index both land on the same slot, and this one also returns its probes
        (which always include the slot found and the one after it) so their order can be checked.
        """
        low, high, found = 0, self.count - 1, -1
        probes: list[tuple[int, E]] = []
        while low <= high:
            mid = (low + high) // 2
            e = self.entry(mid)
            probes.append((mid, e))
            if key(e) <= target:
                found, low = mid, mid + 1
            else:
                high = mid - 1
        return found, probes


def probes_for_count(slots: int, count: int) -> int:
    """Slots `*_entry_count` read: the last one, plus a binary search when there is a tail."""
    if slots <= 1:
        return 0
    if count == slots:
        return 1
    return 1 + max(1, (slots - 1).bit_length())


def out_of_order(
    probes: list[tuple[int, E]],
    keys: Callable[[E], tuple[int, int]],
    *,
    strict_second: bool,
    floor: int,
) -> tuple[int, E] | None:
    """The first probed slot that breaks the index's order (keys rising with the slot), if any.

    The first key must rise strictly (offsets of `.index`, timestamps of `.timeindex`); the second
    rises strictly for `.index` positions and never falls for `.timeindex` offsets. Every entry's
    offset is at or above the base offset.
    """
    prev: tuple[int, int] | None = None
    for slot, e in sorted(probes, key=lambda p: p[0]):
        k = keys(e)
        if e.offset < floor:
            return slot, e
        if prev is not None and (k[0] <= prev[0] or (k[1] <= prev[1] if strict_second else k[1] < prev[1])):
            return slot, e
        prev = k
    return None


def preallocated_pair(index: ByteSource | None, tindex: ByteSource | None) -> bool:
    """Whether the two index files have the sizes one `segment.index.bytes` preallocation gives."""
    if index is None or tindex is None:
        return False
    try:
        index_size, tindex_size = index.size(), tindex.size()
    except KdumpError:
        return False
    # Some maxIndexSize M gives index_size = M - M % 8 and tindex_size = M - M % 12.
    return any(m - m % 12 == tindex_size for m in range(index_size, index_size + 8))


def load_index(
    source: ByteSource,
    *,
    ledger: ReadLedger,
    base: int,
    kind: str,
    entry_size: int,
    count_entries: Callable[[memoryview], int],
    entry_at: Callable[[memoryview, int, int], E],
    key: Callable[[E], tuple[int, int]],
    names: tuple[str, str],
    order_code: str,
    strict_second: bool,
    preallocation_allowed: Callable[[], bool],
) -> IndexFile[E] | None:
    """Open an offset or time index and check it enough to use it; None means scan instead.

    `kind` is the file's suffix, `order_code` the finding code of an out-of-order (or lost) entry,
    `names` the two fields of an entry in messages; `preallocation_allowed` says whether zero
    slots at the end may be an active segment's preallocation.
    """
    label = source.label
    try:
        buf = source.buffer()
    except KdumpError as exc:
        ledger.fallback("unreadable-file", label, f"{exc}; the log is scanned instead")
        return None
    if len(buf) % entry_size:
        ledger.fallback(
            "index-size-invalid",
            label,
            f"{len(buf)} bytes is not a multiple of {entry_size}; the log is scanned instead",
            position=len(buf) - len(buf) % entry_size,
        )
        return None
    slots = len(buf) // entry_size
    count = count_entries(buf)
    ledger.index_entries_read += probes_for_count(slots, count)
    if count != slots:
        # Only the active segment's index files are preallocated, both from one
        # `segment.index.bytes`, and the broker trims them when the segment rolls. Zeros anywhere
        # else are lost entries: reported, and the index not used.
        if not preallocation_allowed():
            ledger.fallback(
                order_code,
                label,
                f"entry {count} is zero after {count} entries, yet the file is not an active segment's "
                f"preallocated index: entries are lost; the log is scanned instead",
                position=count * entry_size,
            )
            return None
        ledger.add(
            make_finding(
                "index-preallocated-tail",
                label,
                f"{slots - count} preallocated slots after {count} entries (an active segment)",
                position=count * entry_size,
                slots=slots - count,
            )
        )
    idx = IndexFile(buf, count, entry_at, base, ledger)
    bad = out_of_order(idx.sample(), key, strict_second=strict_second, floor=base)
    if bad is not None:
        first, second = key(bad[1])
        ledger.fallback(
            order_code,
            label,
            f"entry {bad[0]} ({names[0]} {first}, {names[1]} {second}) is out of order with "
            f"the other entries; the log is scanned instead",
            position=bad[0] * entry_size,
            offset=bad[1].offset,
        )
        return None
    return idx
