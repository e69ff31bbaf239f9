"""The transactions of a partition, from its log: who committed or aborted what, and what hangs.

A transaction begins with its producer's first transactional batch and ends with the COMMIT or
ABORT marker (a control batch) the coordinator writes (`ProducerStateManager`). A transaction
begun and never ended is "hanging": the partition's last stable offset cannot pass its first
offset, so READ_COMMITTED consumers stop there until it is aborted (KIP-664).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kdump.errors import DecodeError
from kdump.formats.batch import BatchHeader
from kdump.formats.constants import ControlType
from kdump.formats.control import decode_control_key, decode_end_txn_marker
from kdump.model.partition import PartitionDir
from kdump.scan.batch_checks import decode_batch_records
from kdump.scan.log_scanner import scan_log
from kdump.scan.source import open_buffer


@dataclass(slots=True)
class Transaction:
    """One transaction of one producer in one partition."""

    producer_id: int
    producer_epoch: int
    first_offset: int | None
    last_offset: int | None = None
    state: str = "open"  # "committed" | "aborted" | "open"
    marker_offset: int | None = None
    marker_timestamp: int | None = None
    coordinator_epoch: int | None = None
    batches: int = 0
    records: int = 0
    segment: str | None = None

    def to_row(self, partition: str) -> dict[str, Any]:
        """The transaction as a JSON object."""
        return {
            "type": "transaction",
            "file": partition,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "state": self.state,
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "marker_offset": self.marker_offset,
            "marker_timestamp": self.marker_timestamp,
            "coordinator_epoch": self.coordinator_epoch,
            "batches": self.batches,
            "records": self.records,
            "pins_offset": self.first_offset if self.state == "open" else None,
        }


@dataclass(slots=True)
class TransactionsReport:
    """All transactions of a partition, in the order they ended (hanging ones last)."""

    partition: str
    transactions: list[Transaction] = field(default_factory=list)

    def count(self, state: str) -> int:
        """How many transactions ended in `state`."""
        return sum(1 for t in self.transactions if t.state == state)

    def summary_row(self) -> dict[str, Any]:
        """Counts per outcome as a JSON object."""
        hanging = [t for t in self.transactions if t.state == "open"]
        return {
            "type": "transactions-summary",
            "file": self.partition,
            "committed": self.count("committed"),
            "aborted": self.count("aborted"),
            "open": len(hanging),
            "last_stable_offset_pinned_at": min(
                (t.first_offset for t in hanging if t.first_offset is not None), default=None
            ),
        }


def _marker(buf: memoryview, h: BatchHeader, file: str) -> tuple[str, int | None] | None:
    records, _ = decode_batch_records(buf, h, file)
    for r in records:
        try:
            key = decode_control_key(r.key)
            if key.type not in (ControlType.ABORT, ControlType.COMMIT):
                return None
            epoch = decode_end_txn_marker(r.value).coordinator_epoch
        except DecodeError:
            return None
        return ("aborted" if key.type == ControlType.ABORT else "committed"), epoch
    return None


def partition_transactions(part: PartitionDir, label: str | None = None) -> TransactionsReport:
    """Walk a partition's segments in order and pair transactional batches with their markers."""
    report = TransactionsReport(label or str(part.path))
    open_txns: dict[int, Transaction] = {}
    for seg in part.segments:
        assert seg.log is not None
        with open_buffer(seg.log) as buf:
            for ev in scan_log(buf, file=str(seg.log), base_offset=seg.base_offset):
                if not isinstance(ev, BatchHeader) or not ev.is_transactional or not ev.crc_ok:
                    continue
                pid = ev.producer_id
                if ev.is_control:
                    marker = _marker(buf, ev, str(seg.log))
                    if marker is None:
                        continue
                    txn = open_txns.pop(pid, None) or Transaction(pid, ev.producer_epoch, None)
                    txn.state, txn.coordinator_epoch = marker
                    txn.marker_offset = ev.base_offset
                    txn.marker_timestamp = ev.max_timestamp
                    report.transactions.append(txn)
                    continue
                current = open_txns.get(pid)
                if current is None:
                    current = open_txns[pid] = Transaction(
                        pid, ev.producer_epoch, ev.base_offset, segment=str(seg.log)
                    )
                current.last_offset = ev.last_offset
                current.batches += 1
                current.records += ev.count or 0
    report.transactions.extend(sorted(open_txns.values(), key=lambda t: t.first_offset or 0))
    return report


def transactions_of(parts: list[PartitionDir]) -> Iterator[TransactionsReport]:
    """The transactions report of each partition."""
    for part in parts:
        yield partition_transactions(part)
