"""The cluster metadata a KRaft broker replays from `__cluster_metadata`, rebuilt offline."""

from __future__ import annotations

from kdump.ops.metadata.image import METADATA_DIR, MetadataImage, PartitionState, TopicState, load_image

__all__ = ["METADATA_DIR", "MetadataImage", "PartitionState", "TopicState", "load_image"]
