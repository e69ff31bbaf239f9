"""Consumer impact: which groups an event (a start-up, a repair, an election) hurts, and how.

* `read_commits(paths)`: the committed offsets (`__consumer_offsets`) and share-group state
  (`__share_group_state`) the coordinators load from log dirs or those partition dirs;
* `PartitionBounds`: a partition's log after the event (from `kdump forecast`, a `trim-tail` plan, a
  replica lined up by `compare`); `partition_bounds` reads one from a partition directory;
* `impact(commits, bounds)`: per group and partition, out of range or not, where a consumer resumes with
  auto.offset.reset earliest and latest, the records it re-reads or skips, and commits whose leader epoch
  the event invalidates.

May use: formats, scan, model, store, findings, errors, and `ops.replicas` (an election's replicas as
`compare` lines them up).
"""

from __future__ import annotations

from kdump.ops.consumers.bounds import BatchSpan, PartitionBounds
from kdump.ops.consumers.commits import (
    Commit,
    CommitTable,
    ShareState,
    find_coordinator_partitions,
    read_commits,
)
from kdump.ops.consumers.impact import GroupPartitionImpact, count_records, impact
from kdump.ops.consumers.partition_bounds import partition_bounds, read_batches
from kdump.ops.replicas.epochs import end_offset_for

__all__ = [
    "BatchSpan",
    "Commit",
    "CommitTable",
    "GroupPartitionImpact",
    "PartitionBounds",
    "ShareState",
    "count_records",
    "end_offset_for",
    "find_coordinator_partitions",
    "impact",
    "partition_bounds",
    "read_batches",
    "read_commits",
]
