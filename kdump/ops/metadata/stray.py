"""A partition whose topic id the metadata log in its own log dir does not know (for `kdump verify`).

A KRaft broker, once it has replayed its metadata, sets aside every log whose partition.metadata names
a topic id the image lacks (or a partition number the topic lacks): the directory is renamed
`<topic>-<p>.<uuid>-stray` and never served; if the image assigns that partition here under its current
id, the broker creates it empty. That is what follows a topic deleted and re-created under the same
name while the broker was down.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TypeAlias

from kdump.errors import CorruptFieldError, DecodeError
from kdump.findings import Finding, make_finding
from kdump.formats.checkpoints import decode_partition_metadata
from kdump.model.partition import PartitionDir
from kdump.ops.metadata.image import METADATA_DIR, MetadataImage, load_image


@functools.lru_cache(maxsize=8)
def _image(metadata_dir: Path, stamp: tuple[tuple[str, int, int], ...]) -> MetadataImage | None:
    del stamp  # part of the cache key only: a metadata log that changed is read again
    image = load_image(metadata_dir)
    # An image the broker could not build itself (its loader failed, or a gap) says nothing reliable;
    # nor does one of no records (a metadata log whose segments are gone, `log-missing`): the node
    # then has no metadata to set a log aside by.
    if image.records_applied == 0 and image.snapshot is None:
        return None
    return None if image.findings and any(f.severity >= 30 for f in image.findings) else image


def _image_beside(part: PartitionDir) -> MetadataImage | None:
    metadata_dir = part.path.parent / METADATA_DIR
    if not metadata_dir.is_dir():
        return None
    try:
        stamp = tuple(
            sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in metadata_dir.iterdir())
        )
    except OSError:
        return None
    return _image(metadata_dir, stamp)


ImagesBeside: TypeAlias = dict[Path, MetadataImage | None]
"""The image of each log dir's metadata log, by log dir: one run's cache (`verify` makes one), so a
log dir's `__cluster_metadata-0` is listed and replayed once, not listed again per partition."""


def _image_of(part: PartitionDir, images: ImagesBeside | None) -> MetadataImage | None:
    if images is None:
        return _image_beside(part)
    log_dir = part.path.parent
    if log_dir not in images:
        images[log_dir] = _image_beside(part)
    return images[log_dir]


def topic_id_findings(part: PartitionDir, images: ImagesBeside | None = None) -> list[Finding]:
    """`topic-id-unknown` when partition.metadata names a topic id (or partition) that the metadata
    log of the same log dir does not hold. `images`: the run's images by log dir (filled as needed);
    without it each call checks the metadata log's files again (a process that outlives a change)."""
    if part.topic is None or part.partition is None or part.partition_metadata is None:
        return []
    if part.path.name == METADATA_DIR or part.path.name.endswith(("-delete", "-stray", "-future")):
        return []
    try:
        topic_id: str | None = decode_partition_metadata(part.partition_metadata.read_bytes()).topic_id
    except (CorruptFieldError, DecodeError, OSError, UnicodeDecodeError):
        topic_id = None  # verify's own partition.metadata check reports it
    image = _image_of(part, images) if topic_id is not None else None
    if image is None or topic_id is None:
        return []
    topic = image.topics.get(topic_id)
    if topic is not None and part.partition in topic.partitions:
        return []
    named = image.topic_by_name(part.topic)
    now = f"; the metadata's topic {part.topic} has id {named.topic_id}" if named else ""
    return [
        make_finding(
            "topic-id-unknown",
            str(part.partition_metadata),
            f"partition.metadata names topic id {topic_id}, which the metadata log in this log dir does not "
            f"hold for partition {part.partition}{now}: the broker renames the directory -stray and does "
            "not serve it",
        )
    ]
