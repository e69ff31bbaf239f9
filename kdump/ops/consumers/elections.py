"""The join for an election: each replica `compare` lines up, as the leader, and the groups it hurts.

When a replica becomes leader it serves its own log: its log start and end, and its epoch cache with
the new leader epoch (above every epoch the replicas know, `compare.next_leader_epoch`) added at its log
end offset (`Partition.makeLeader`). The offsets another replica holds past its end are what the
election removes: the followers truncate them away.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kdump.formats.filenames import parse_partition_dir_name
from kdump.ops.consumers.bounds import BatchSpan, PartitionBounds
from kdump.ops.consumers.commits import CommitTable
from kdump.ops.consumers.impact import GroupPartitionImpact, impact
from kdump.ops.replicas.compare import PartitionComparison, broker_cache, next_leader_epoch
from kdump.ops.replicas.replica import Replica


@dataclass(frozen=True, slots=True)
class ElectionImpact:
    """What the groups see if `leader` leads the partition."""

    leader: str
    bounds: PartitionBounds
    impacts: tuple[GroupPartitionImpact, ...]


def leader_bounds(leader: Replica, replicas: Sequence[Replica], new_epoch: int) -> PartitionBounds:
    """The partition's bounds once `leader` leads under `new_epoch`."""
    end = leader.log_end_offset
    furthest = max((r.log_end_offset for r in replicas), default=end)
    spans = tuple(
        BatchSpan(leader.bases[i], leader.lasts[i], leader.counts[i], bool(leader.flags[i] & 2))
        for i in range(len(leader))
        if leader.lasts[i] >= leader.log_start_offset
    )
    return PartitionBounds(
        log_start_offset=leader.log_start_offset,
        log_end_offset=end,
        removed=(end, furthest - 1) if furthest > end else None,
        epoch_start_offsets=dict(broker_cache(leader)),
        batches=None if leader.records_unknown else spans,
        topic_id=leader.topic_id,
        leader_epoch=new_epoch,
    )


def election_impacts(result: PartitionComparison, commits: CommitTable) -> list[ElectionImpact]:
    """For each replica of the comparison in turn as leader, the groups' impact (none for a partition
    whose name is not a topic partition's, or replicas that were not compared)."""
    parsed = parse_partition_dir_name(result.name)
    if parsed is None or result.refused or not result.replicas:
        return []
    key = (parsed.topic, parsed.partition)
    new_epoch = next_leader_epoch(result.replicas)
    out = []
    for rep in result.replicas:
        bounds = leader_bounds(rep, result.replicas, new_epoch)
        out.append(ElectionImpact(rep.label, bounds, tuple(impact(commits, {key: bounds}))))
    return out
