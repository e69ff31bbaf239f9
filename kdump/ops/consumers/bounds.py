"""What a partition's log will hold after an event (a start-up, a repair, an election): the input of the join.

`PartitionBounds` is the fixed interface between whoever forecasts a partition (`kdump forecast`, a
`trim-tail` plan, a replica `compare` lines up) and `impact`: the log start and end the partition will
have, what the event removes, and the leader-epoch cache the partition will hold. `batches`, where the
caller has read the data, lets `impact` count records instead of offsets (compaction leaves offset gaps,
control batches hold records no consumer receives).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple


class BatchSpan(NamedTuple):
    """One batch of the log after the event: its offsets, how many records it holds, and whether it is a
    control batch (its records are never delivered to a consumer)."""

    base_offset: int
    last_offset: int
    records: int
    control: bool = False


@dataclass(frozen=True)
class PartitionBounds:
    """A partition's log after an event, as the broker will serve it."""

    log_start_offset: int
    log_end_offset: int
    removed: tuple[int, int] | None
    """First and last offset the event removes (None: nothing)."""
    epoch_start_offsets: Mapping[int, int]
    """Leader epoch -> start offset, as the partition's leader-epoch cache will hold after the event."""
    batches: Sequence[BatchSpan] | None = None
    """The batches between log start and log end, in offset order, where read (None: not read; counts
    are then offset spans)."""
    topic_id: str | None = None
    """The topic's id (Kafka's 22-character base64), to join share-group state, which names topic ids."""
    leader_epoch: int | None = None
    """The leader epoch the partition will be led in when consumers come back (None: an epoch above every
    cached and committed one, as the controller's next election gives; the new leader adds it to its
    cache at its log end offset)."""
    removed_records: int | None = None
    """Records (not offsets) the event removes, where counted."""
    notes: tuple[str, ...] = field(default=())
    """What the caller could not know (e.g. the shutdown was unclean and the cut is an estimate)."""
