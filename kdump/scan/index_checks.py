"""Checking `.index`, `.timeindex` and `.txnindex` contents against the batches of the log.

Kafka's own tool flags an offset index entry whenever its offset is not the last offset of the
batch at its position. That is only one of the styles brokers have legitimately written: brokers up
to 1.1 indexed a batch's base offset, followers before KAFKA-806 indexed (last offset of a chunk,
position of the chunk's first batch), and the log cleaner keeps entries for offsets it compacted
away. What every correct entry (O, P) shares is what lookups rely on (`OffsetIndex.lookup` then
`FileRecords.searchForOffsetWithSize`): P is the start of a batch, and the first batch whose last
offset is >= O starts at or after P. That is the rule checked here, so only entries that really
break lookups are reported.

A time index entry (T, O) says: T is the largest timestamp up to and including the batch holding
offset O, which holds T (`LogSegment` appends `(maxTimestampSoFar, offsetOfMaxTimestampSoFar)`;
the offset is the batch's last offset on current brokers and the record's own on older ones).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from kdump.findings import Finding, Severity, make_finding
from kdump.formats.offset_index import OffsetIndexContents
from kdump.formats.time_index import TimeIndexContents
from kdump.formats.txn_index import AbortedTxn, TxnIndexContents


def _entries(n: int) -> str:
    return "1 entry" if n == 1 else f"{n} entries"


class BatchSpan(NamedTuple):
    """What index checks need of one checksum-valid batch of the valid prefix.

    A named tuple: one is built per batch, and tuples are several times cheaper than frozen
    dataclasses to create.
    """

    position: int
    base_offset: int
    last_offset: int
    max_timestamp: int


class BatchTable:
    """Batches of a segment's valid prefix as columns, searchable by position and by offset."""

    def __init__(self, spans: Sequence[BatchSpan]) -> None:
        columns = list(zip(*spans, strict=True)) if spans else [(), (), (), ()]
        self._init(*(list(c) for c in columns))

    @classmethod
    def from_columns(
        cls, positions: list[int], base_offsets: list[int], last_offsets: list[int], max_timestamps: list[int]
    ) -> BatchTable:
        """Build from parallel lists (what a scan collects without a tuple per batch)."""
        table = cls.__new__(cls)
        table._init(positions, base_offsets, last_offsets, max_timestamps)
        return table

    def _init(
        self,
        positions: list[int],
        base_offsets: list[int],
        last_offsets: list[int],
        max_timestamps: list[int],
    ) -> None:
        self.positions = positions
        self.base_offsets = base_offsets
        self.last_offsets = last_offsets
        self.max_timestamps = max_timestamps
        self.position_set = set(positions)
        # The largest timestamp up to and including each batch.
        self.prefix_max: list[int] = list(itertools.accumulate(max_timestamps, max, initial=-1))[1:]

    def __len__(self) -> int:
        return len(self.positions)

    def span(self, i: int) -> BatchSpan:
        """The i-th batch."""
        return BatchSpan(
            self.positions[i], self.base_offsets[i], self.last_offsets[i], self.max_timestamps[i]
        )

    @property
    def spans(self) -> list[BatchSpan]:
        """Every batch, as spans."""
        return [self.span(i) for i in range(len(self))]

    def first_holding(self, offset: int) -> int | None:
        """Index of the first batch whose last offset is >= `offset` (what a fetch would read)."""
        i = bisect.bisect_left(self.last_offsets, offset)
        return i if i < len(self.positions) else None


def check_index_slots(
    contents: OffsetIndexContents | TimeIndexContents, entry_size: int, file: str, order_code: str
) -> Iterator[Finding]:
    """What the slots themselves say: a length that is not whole entries, a preallocated zero tail.

    A slot repeating the base offset after entry 0 ends the entries, as in Kafka; it is a benign
    preallocated tail when all that follows is zeros, and an ordering fault (`order_code`)
    otherwise.
    """
    if contents.trailing_bytes:
        yield make_finding(
            "index-size-invalid",
            file,
            f"{contents.trailing_bytes} bytes after the last whole {entry_size}-byte entry",
            position=contents.slot_count * entry_size,
        )
    real = len(contents.entries)
    if not contents.zero_tail_entries:
        return
    if contents.zero_tail_is_zero:
        slots = contents.slot_count - real
        yield make_finding(
            "index-preallocated-tail",
            file,
            f"{slots} zero-filled preallocated slots after {real} entries",
            position=real * entry_size,
            slots=slots,
        )
    else:
        yield make_finding(
            order_code,
            file,
            f"entry {real} repeats the base offset {contents.base_offset} but is not part of a zero-filled tail",
            position=real * entry_size,
            offset=contents.base_offset,
        )


def check_offset_index(
    contents: OffsetIndexContents, table: BatchTable, valid_bytes: int, file: str, log_size: int | None = None
) -> Iterator[Finding]:
    """Check an offset index against the batches; see the module docstring for the rule.

    `log_size`: the length of the `.log`. When it is above `valid_bytes`, the log is damaged there
    (a finding of its own, whose repair rebuilds the indexes): entries pointing into those bytes
    are what the index said before the damage, not a fault of the index, and are not reported.
    """
    base = contents.base_offset
    damaged_end = log_size if log_size is not None and log_size > valid_bytes else valid_bytes
    yield from check_index_slots(contents, 8, file, "index-not-monotonic")
    prev_offset = prev_position = -1
    reported_order = False
    order: tuple[int, int, int, int, int] | None = None
    misplaced = False  # an entry whose lookup would not land at or before its batch
    # Entries past the valid end (a stale index after a truncation, or damage mid-log) are one
    # finding per file: they share one cause and one repair.
    beyond: list[tuple[int, int, int]] = []
    for i, (offset, position) in enumerate(contents.entries):
        at = i * 8
        out_of_order = offset < base or (i > 0 and (offset <= prev_offset or position <= prev_position))
        if out_of_order and not reported_order:
            order = (i, offset, position, prev_offset, prev_position)
            reported_order = True
        prev_offset, prev_position = offset, position
        if valid_bytes <= position < damaged_end:
            continue
        if position >= valid_bytes:
            beyond.append((at, offset, position))
            continue
        holder = table.first_holding(offset)
        if holder is None:
            beyond.append((at, offset, position))
            continue
        if position not in table.position_set:
            misplaced = True
            yield make_finding(
                "index-offset-mismatch",
                file,
                f"entry for offset {offset} points at position {position}, which is not the start of a batch",
                position=at,
                offset=offset,
                log_position=position,
            )
        elif table.span(holder).position < position:
            misplaced = True
            span = table.span(holder)
            yield make_finding(
                "index-offset-mismatch",
                file,
                f"entry for offset {offset} points at position {position}, after the batch "
                f"{span.base_offset}..{span.last_offset} at {span.position} that holds it",
                position=at,
                offset=offset,
                log_position=position,
            )
    if order is not None:
        yield _order_finding(file, order, misplaced or bool(beyond))
    if beyond:
        at, offset, position = beyond[0]
        last_valid = table.last_offsets[-1] if table.last_offsets else None
        yield make_finding(
            "index-entry-beyond-log",
            file,
            f"{_entries(len(beyond))} from offset {offset} (position {position}) point past the valid log "
            f"(it ends at position {valid_bytes}, last offset {last_valid})",
            position=at,
            offset=offset,
            log_position=position,
            entries=len(beyond),
        )


def _order_finding(file: str, order: tuple[int, int, int, int, int], misplaced: bool) -> Finding:
    """Entries out of order. The broker's lookup (`AbstractIndex.largestLowerBoundSlotFor`) binary-searches
    for an entry at or below the target and reads the log forward from its position: whatever the
    order, it lands at or below the target. Where every entry's position is the start of the batch
    holding its offset (or one before it), every fetch and seek is still answered right, reading more
    bytes: a warning, which reindex rebuilds. Only with misplaced entries does the order mis-serve."""
    i, offset, position, prev_offset, prev_position = order
    text = f"entry {i} (offset {offset}, position {position}) does not follow (offset {prev_offset}, position {prev_position})"
    if not misplaced:
        text += (
            "; every entry points at or before the batch holding its offset, so the broker's lookup still "
            "lands at or below each target and reads forward: fetches are served right, reading more"
        )
    return make_finding(
        "index-not-monotonic",
        file,
        text,
        position=i * 8,
        offset=offset,
        severity=None if misplaced else Severity.WARNING,
    )


def check_time_index(
    contents: TimeIndexContents, table: BatchTable, file: str, damaged: bool = False
) -> Iterator[Finding]:
    """Check a time index against the batches (see the module docstring).

    `damaged`: the log is damaged after its valid prefix (a finding of its own, whose repair rebuilds
    the indexes), so entries naming offsets past that prefix are not reported.
    """
    base = contents.base_offset
    yield from check_index_slots(contents, 12, file, "time-index-out-of-order")
    prev_ts = prev_offset = -1
    reported_order = False
    missing: list[tuple[int, int, int]] = []  # entries past the valid log's last offset
    for i, (timestamp, offset) in enumerate(contents.entries):
        at = i * 12
        out_of_order = offset < base or (i > 0 and (timestamp <= prev_ts or offset < prev_offset))
        if out_of_order and not reported_order:
            yield make_finding(
                "time-index-out-of-order",
                file,
                f"entry {i} (timestamp {timestamp}, offset {offset}) does not follow "
                f"(timestamp {prev_ts}, offset {prev_offset})",
                position=at,
                offset=offset,
            )
            reported_order = True
        prev_ts, prev_offset = timestamp, offset
        holder = table.first_holding(offset)
        if holder is None:
            missing.append((at, timestamp, offset))
            continue
        if table.span(holder).base_offset > offset:
            yield make_finding(
                "time-index-offset-not-found",
                file,
                f"entry (timestamp {timestamp}, offset {offset}) names an offset no valid batch holds",
                position=at,
                offset=offset,
            )
            continue
        span = table.span(holder)
        if span.max_timestamp != timestamp or table.prefix_max[holder] != timestamp:
            yield make_finding(
                "time-index-mismatch",
                file,
                f"entry (timestamp {timestamp}, offset {offset}): the batch {span.base_offset}..{span.last_offset} "
                f"has max timestamp {span.max_timestamp} and the largest so far is {table.prefix_max[holder]}",
                position=at,
                offset=offset,
                log_timestamp=span.max_timestamp,
            )
    if missing and not damaged:
        at, timestamp, offset = missing[0]
        last_valid = table.last_offsets[-1] if table.last_offsets else None
        yield make_finding(
            "time-index-offset-not-found",
            file,
            f"{_entries(len(missing))} from (timestamp {timestamp}, offset {offset}) name offsets past the valid "
            f"log's last offset {last_valid}",
            position=at,
            offset=offset,
            entries=len(missing),
        )


def check_txn_index(
    contents: TxnIndexContents, expected: Sequence[AbortedTxn], file: str
) -> Iterator[Finding]:
    """Compare a `.txnindex` with the aborted transactions the log's ABORT markers imply.

    Entries are matched on producer id and last offset (the ABORT marker's offset). The first
    offset and last stable offset are compared only where the transaction's start was seen in the
    log (it may begin before the oldest segment kept); those unknowns are -1 in `expected`.
    """
    if contents.trailing_bytes:
        yield make_finding(
            "index-size-invalid",
            file,
            f"{contents.trailing_bytes} bytes after the last whole 34-byte entry",
            position=len(contents.entries) * 34,
        )
    have = {(e.producer_id, e.last_offset): (i, e) for i, e in enumerate(contents.entries)}
    want = {(e.producer_id, e.last_offset): e for e in expected}
    for key, e in want.items():
        if key not in have:
            yield make_finding(
                "txn-index-mismatch",
                file,
                f"no entry for the transaction of producer {e.producer_id} aborted at offset {e.last_offset}",
                offset=e.last_offset,
            )
            continue
        i, got = have[key]
        if (e.first_offset >= 0 and got.first_offset != e.first_offset) or (
            e.last_stable_offset >= 0 and got.last_stable_offset != e.last_stable_offset
        ):
            yield make_finding(
                "txn-index-mismatch",
                file,
                f"entry for producer {e.producer_id} aborted at {e.last_offset} says first offset "
                f"{got.first_offset}, last stable offset {got.last_stable_offset}; the log says "
                f"{e.first_offset}, {e.last_stable_offset}",
                position=i * 34,
                offset=e.last_offset,
            )
    for key, (i, got) in have.items():
        if key not in want:
            yield make_finding(
                "txn-index-mismatch",
                file,
                f"entry for producer {got.producer_id} aborted at offset {got.last_offset} has no ABORT marker "
                "in the segment",
                position=i * 34,
                offset=got.last_offset,
            )
