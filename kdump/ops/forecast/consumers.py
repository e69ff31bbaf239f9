"""The forecast joined with the consumer groups' commits: whom the start-up hurts.

Each partition the broker will serve after start-up becomes a `PartitionBounds` (its log start and end,
the offsets the start-up removes, the leader-epoch cache it keeps); `kdump.ops.consumers.impact` joins
them with the committed offsets and share-group state the coordinators will load.
"""

from __future__ import annotations

from kdump.ops.consumers import CommitTable, GroupPartitionImpact, PartitionBounds, impact
from kdump.ops.forecast.plan import Forecast


def forecast_bounds(fc: Forecast) -> dict[tuple[str, int], PartitionBounds]:
    """The bounds of every partition the broker serves after start-up, by (topic, partition)."""
    out: dict[tuple[str, int], PartitionBounds] = {}
    for key, p in fc.bounds().items():
        notes = () if p.action != "recover" or p.removed is None else (p.reason,)
        out[key] = PartitionBounds(
            log_start_offset=p.log_start_offset or 0,
            log_end_offset=p.log_end_offset or 0,
            removed=p.removed,
            epoch_start_offsets=dict(p.epoch_start_offsets),
            topic_id=p.image_topic_id or p.topic_id,
            notes=notes,
        )
    return out


def groups_hurt(fc: Forecast, commits: CommitTable) -> list[GroupPartitionImpact]:
    """Per group and partition, what the forecast start-up does to its commit (all, hurt or not)."""
    return impact(commits, forecast_bounds(fc))
