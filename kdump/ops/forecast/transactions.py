"""Transactions a partition still has open after the broker's start, and its last stable offset.

The broker rebuilds its producer state from the newest producer snapshot at or below the log end
(`currentTxnFirstOffset` of each producer) and the batches after it; a transaction with data and no
COMMIT or ABORT marker keeps the partition's last stable offset (LSO) at its first offset, and
READ_COMMITTED consumers (ListOffsets latest, fetches) stop there. Only the transaction coordinator ends
it: if the coordinator's log (`__transaction_state`) has it ongoing, it aborts it when the producer's
`transaction.timeout.ms` passes; if that log says the transaction ended (`CompleteCommit`,
`CompleteAbort`, `Empty`) or holds nothing of the producer (every coordinator partition is on this
broker, so nothing else will write a marker), it hangs until an operator aborts it (KIP-664).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kdump.errors import CorruptFieldError, DecodeError, KdumpError
from kdump.formats.batch import BatchHeader
from kdump.formats.producer_snapshot import decode_producer_snapshot
from kdump.model.partition import PartitionDir
from kdump.ops.checks.open_txns import TRANSACTION_STATE_TOPIC, coordinator_states
from kdump.ops.metadata import MetadataImage
from kdump.scan import ScanMode

_DONE = frozenset({"CompleteCommit", "CompleteAbort", "Empty"})


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    producer_id: int
    first_offset: int
    coordinator_state: str | None  # the coordinator's newest state for the producer, None when unknown
    hangs: bool  # no coordinator will end it

    def to_dict(self) -> dict[str, object]:
        return {
            "producer_id": self.producer_id,
            "first_offset": self.first_offset,
            "coordinator_state": self.coordinator_state,
            "hangs": self.hangs,
        }


def _from_snapshot(part: PartitionDir, end: int) -> tuple[int, dict[int, int]]:
    """(the offset the newest usable snapshot is at, producer id -> open transaction's first offset)."""
    for offset in sorted((o for o in part.snapshots if o <= end), reverse=True):
        try:
            snap = decode_producer_snapshot(part.snapshots[offset].read_bytes())
        except (CorruptFieldError, DecodeError, OSError):
            continue  # the broker deletes a snapshot it cannot read and uses an older one
        return offset, {
            e.producer_id: e.current_txn_first_offset for e in snap.entries if e.current_txn_first_offset >= 0
        }
    return 0, {}


def open_transactions(part: PartitionDir, end: int) -> dict[int, int]:
    """Producer id -> first offset of each transaction open below offset `end` after the load."""
    start, ongoing = _from_snapshot(part, end)
    if start >= end:
        return ongoing  # a snapshot at the log end (a clean stop's): nothing after it to read
    for i, seg in enumerate(part.segments):
        nxt = part.segments[i + 1].base_offset if i + 1 < len(part.segments) else None
        if seg.log is None or (nxt is not None and nxt <= start) or seg.base_offset >= end:
            continue
        for ev in seg.scan(mode=ScanMode.RECOVERY):
            if not isinstance(ev, BatchHeader) or ev.base_offset is None:
                continue
            if ev.base_offset < start or ev.base_offset >= end:
                continue
            if ev.is_control:
                ongoing.pop(ev.producer_id, None)
            elif ev.is_transactional:
                ongoing.setdefault(ev.producer_id, ev.base_offset)
    return ongoing


def _coordinator_complete(image: MetadataImage | None, node: int | None) -> bool:
    """Whether every partition of the coordinator's log is on this broker (so its log dirs hold all a
    coordinator will ever know)."""
    if image is None or node is None:
        return False
    topic = image.topic_by_name(TRANSACTION_STATE_TOPIC)
    return topic is not None and all(node in p.replicas for p in topic.partitions.values())


def judge(
    ongoing: dict[int, int], log_dirs: list[Path], image: MetadataImage | None, node: int | None
) -> list[OpenTransaction]:
    """Each open transaction with the coordinator's view of it, earliest first."""
    if not ongoing:
        return []
    states: dict[int, str] = {}
    try:
        for d in log_dirs:
            states.update(coordinator_states(d) or {})
    except KdumpError:
        states = {}
    complete = _coordinator_complete(image, node)
    out = []
    for pid, first in sorted(ongoing.items(), key=lambda kv: kv[1]):
        state = states.get(pid)
        hangs = state in _DONE or (state is None and complete)
        out.append(OpenTransaction(pid, first, state, hangs))
    return out
