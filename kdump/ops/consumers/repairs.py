"""The join for a repair kdump itself applies: a log cut at an offset (`trim-tail`'s plan)."""

from __future__ import annotations

from pathlib import Path

from kdump.model.partition import PartitionDir
from kdump.ops.consumers.commits import CommitTable
from kdump.ops.consumers.impact import GroupPartitionImpact, impact
from kdump.ops.consumers.partition_bounds import partition_bounds


def cut_impact(
    root: Path, log_dir: Path | None, cut_at: int | None, commits: CommitTable
) -> list[GroupPartitionImpact]:
    """What cutting the partition at `root` so that `cut_at` and later offsets go does to each group with
    a commit on it (nothing when no group has one, or the cut is unknown)."""
    part = PartitionDir.load(root)
    if part.topic is None or part.partition is None or cut_at is None:
        return []
    if not commits.of_partition(part.topic, part.partition) and not commits.share:
        return []
    bounds = partition_bounds(part, log_dir, cut_at=cut_at)
    return impact(commits, {(part.topic, part.partition): bounds})
