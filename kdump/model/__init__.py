"""What is on disk: segments, partition directories and log directories, and how they relate."""

from __future__ import annotations

from kdump.model.log_dir import LogDir, Target, discover
from kdump.model.partition import PartitionDir
from kdump.model.segment import Segment

__all__ = ["LogDir", "PartitionDir", "Segment", "Target", "discover"]
