"""The cluster metadata a KRaft broker replays from `__cluster_metadata`, rebuilt offline.

Owns the metadata image (topics and ids, partitions with replicas, ISR, ELR, leaders and epochs,
configs, registered brokers and their log dirs, features) and the checks made against it (a
partition's topic id unknown to the metadata log beside it). Nothing here writes.

May use: formats, scan, model, store, findings, errors.
"""

from __future__ import annotations

from kdump.ops.metadata.image import METADATA_DIR, MetadataImage, PartitionState, TopicState, load_image

__all__ = ["METADATA_DIR", "MetadataImage", "PartitionState", "TopicState", "load_image"]
