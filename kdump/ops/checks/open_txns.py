"""verify's judgement of a transaction left open at the end of a partition's log.

The broker keeps the partition's last stable offset (LSO) at the first offset of the earliest open
transaction until a COMMIT or ABORT marker ends it; READ_COMMITTED consumers stop there. Only the
transaction coordinator writes markers. So:

- where the coordinator's log (`__transaction_state-*` in the same log dir) says the producer's
  transaction is complete (`CompleteCommit`, `CompleteAbort`) or that it has none (`Empty`), no marker
  will ever come: the transaction hangs and the LSO stays pinned until an operator aborts it
  (`kafka-transactions.sh abort`, KIP-664). An error: the broker serves READ_COMMITTED consumers
  nothing past it (a truncation that removed the marker, a copy cut short);
- elsewhere (the coordinator still has it ongoing, or its log is not at hand) the coordinator ends
  it, or aborts it when `transaction.timeout.ms` passes, as for any copy of a broker taken while a
  producer was in a transaction: legal as far as the bytes tell, an info line that says what to check
  (`kafka-transactions.sh find-hanging`) should the coordinator have ended it already.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path

from kdump.errors import KdumpError
from kdump.findings import Finding, Severity, make_finding
from kdump.model.partition import PartitionDir
from kdump.ops.checks.segment import TXN_DATA, SegmentResult

TRANSACTION_STATE_TOPIC = "__transaction_state"
_DONE = frozenset({"CompleteCommit", "CompleteAbort", "Empty"})


def open_transactions(results: Sequence[SegmentResult]) -> dict[int, int]:
    """Producer id -> first offset of each transaction still open at the log end (from the batches'
    transactional events, in offset order)."""
    ongoing: dict[int, int] = {}
    for r in results:
        if r.summary is None or r.summary.partial:
            return {}  # not read to the end: what is open cannot be told
        for kind, pid, offset in r.txn_events:
            if kind == TXN_DATA:
                ongoing.setdefault(pid, offset)
            else:
                ongoing.pop(pid, None)
    return ongoing


@lru_cache(maxsize=8)
def _coordinator_states(log_dir: Path, _stamp: float) -> dict[int, str] | None:
    """Producer id -> the newest state the coordinator's log in `log_dir` records for it (None when
    the log dir holds no `__transaction_state` partition)."""
    from kdump.formats.batch import BatchHeader
    from kdump.formats.internal.transaction_log import decode_transaction_log_record
    from kdump.model.partition import PartitionDir as Part
    from kdump.scan.batch_checks import decode_batch_records
    from kdump.scan.log_scanner import scan_log
    from kdump.scan.source import open_buffer

    dirs = sorted(log_dir.glob(f"{TRANSACTION_STATE_TOPIC}-*"))
    if not dirs:
        return None
    states: dict[int, str] = {}
    for d in dirs:
        for seg in Part.load(d).segments:
            if seg.log is None:
                continue
            with open_buffer(seg.log) as buf:
                for ev in scan_log(buf, file=str(seg.log), base_offset=seg.base_offset):
                    if not isinstance(ev, BatchHeader) or not ev.crc_ok or ev.is_control:
                        continue
                    records, _ = decode_batch_records(buf, ev, str(seg.log))
                    for rec in records:
                        try:
                            decoded = decode_transaction_log_record(rec.key, rec.value)
                        except (KdumpError, ValueError):
                            continue
                        value = decoded.value or {}
                        data = value.get("data") or {}
                        pid, state = data.get("producerId"), value.get("state")
                        if isinstance(pid, int) and isinstance(state, str):
                            states[pid] = state
    return states


def coordinator_states(log_dir: Path) -> dict[int, str] | None:
    """The coordinator's newest state per producer id in a log dir (see `_coordinator_states`)."""
    try:
        stamp = max(
            (p.stat().st_mtime for p in log_dir.glob(f"{TRANSACTION_STATE_TOPIC}-*/*.log")), default=0.0
        )
        return _coordinator_states(log_dir, stamp)
    except (OSError, KdumpError):
        return None


def check_open_transactions(part: PartitionDir, results: Sequence[SegmentResult]) -> Iterator[Finding]:
    """A finding per transaction open at the log end (see the module docstring)."""
    ongoing = open_transactions(results)
    if not ongoing or part.topic == TRANSACTION_STATE_TOPIC:
        return
    states = coordinator_states(part.path.parent)
    label = next((str(r.segment.log) for r in reversed(results) if r.segment.log is not None), str(part.path))
    for pid, first in sorted(ongoing.items(), key=lambda kv: kv[1]):
        state = None if states is None else states.get(pid)
        if state in _DONE:
            yield make_finding(
                "transaction-open",
                label,
                f"producer {pid}'s transaction from offset {first} has no COMMIT or ABORT marker, and the "
                f"coordinator's log in this log dir says {state}: no marker will come, so the broker's last "
                f"stable offset stays at {first} and READ_COMMITTED consumers stop there until it is aborted "
                f"(kafka-transactions.sh abort, KIP-664)",
                offset=first,
                producer_id=pid,
                coordinator_state=state,
            )
            continue
        known = (
            "the coordinator's log is not in this log dir"
            if states is None
            else f"the coordinator's log says {state or 'nothing of this producer'}"
        )
        yield make_finding(
            "transaction-open",
            label,
            f"producer {pid}'s transaction from offset {first} has no COMMIT or ABORT marker yet ({known}): the "
            f"last stable offset stays at {first} until the coordinator ends it or aborts it at its timeout; "
            "if it already ended it (a truncation that removed the marker), it hangs: "
            "kafka-transactions.sh find-hanging tells",
            offset=first,
            severity=Severity.INFO,
            producer_id=pid,
            coordinator_state=state,
        )
