"""The `.txnindex` check: the aborted transactions each segment's index should hold, from the
transaction markers of the partition's batches (used by verify, reindex, trim-tail and tiered checks)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from kdump.findings import Finding, make_finding
from kdump.ops.checks.segment import TXN_ABORT, TXN_DATA, SegmentResult

if TYPE_CHECKING:  # loaded with the first abort marker or .txnindex
    from kdump.formats.txn_index import AbortedTxn


def expected_aborts(results: Sequence[SegmentResult]) -> list[list[AbortedTxn]]:
    """The aborted-transaction entries each segment's .txnindex should hold, from the markers.

    Mirrors `ProducerStateManager`: a transaction starts at its producer's first transactional
    batch; at its ABORT marker the entry is (producer id, first offset, marker offset, last stable
    offset), the last stable offset being the first offset of the earliest other open transaction,
    or the marker offset + 1 when none is open. Unknown values (a transaction begun before the
    oldest segment kept) are -1 and are not compared.
    """
    ongoing: dict[int, int] = {}
    unknown_open = False
    per_segment: list[list[AbortedTxn]] = []
    for r in results:
        mine: list[AbortedTxn] = []
        for kind, pid, offset in r.txn_events:
            if kind == TXN_DATA:
                ongoing.setdefault(pid, offset)
                continue
            first = ongoing.pop(pid, None)
            if first is None:
                unknown_open = True
            if kind == TXN_ABORT:
                from kdump.formats.txn_index import AbortedTxn

                others = list(ongoing.values())
                lso = -1 if unknown_open else (min(others) if others else offset + 1)
                mine.append(AbortedTxn(0, pid, -1 if first is None else first, offset, lso))
        per_segment.append(mine)
    return per_segment


def check_transactions(results: Sequence[SegmentResult]) -> Iterator[Finding]:
    """The partition's .txnindex files against the ABORT markers of its segments."""
    for r, expected in zip(results, expected_aborts(results), strict=True):
        if r.summary is None:
            continue
        if r.summary.partial:
            # Markers past a --max-bytes limit were not read: this segment and the ones after it
            # (whose open transactions depend on them) cannot be judged.
            return
        if r.txn_index is None:
            if expected:
                label = str(r.segment.log.with_suffix(".txnindex")) if r.segment.log else r.segment.name
                yield make_finding(
                    "txn-index-mismatch",
                    label,
                    f"{len(expected)} aborted transactions end in this segment but it has no .txnindex",
                    offset=expected[0].last_offset,
                )
            continue
        from kdump.formats.txn_index import TxnIndexContents
        from kdump.scan.index_checks import check_txn_index

        label = str(r.segment.txnindex)
        yield from check_txn_index(r.txn_index or TxnIndexContents((), 0), expected, label)
