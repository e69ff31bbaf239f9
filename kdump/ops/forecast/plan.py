"""`kdump forecast`: what one broker does at start with all its log dirs, from the files alone.

The verdict is the worst of: the broker does not start; it starts but loses or deletes data (a recovery
cut, stray or pending-delete data); it starts after recovery with nothing lost; it starts clean. The
start-up time is estimated as a fixed start (`STARTUP_SECONDS`), a cost per partition loaded
(`SECONDS_PER_PARTITION`) and the bytes recovery re-reads (`REREAD_BYTES_PER_SECOND`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from kdump.errors import PathError
from kdump.model.log_dir import LogDir
from kdump.ops.forecast.logdirs import LogDirState, check_ensemble, node_of, read_log_dir
from kdump.ops.forecast.partitions import PartitionForecast, created_empty, forecast_partition
from kdump.ops.forecast.transactions import judge
from kdump.ops.forecast.zk_migration import zk_migration_notes
from kdump.ops.metadata import METADATA_DIR, MetadataImage, load_image
from kdump.ops.metadata.versions import METADATA_VERSIONS, newest_level, release_of

# Measured on a real Kafka 4.4.0 broker by tests/bench/bench_forecast.py (one KRaft node, -Xmx512m, C1
# only, 2 cores shared with other jobs at a load average of 11-20, page cache warm; start-up is from the
# process's start until ListOffsets answers for every partition), medians of 3 paired rounds:
# - STARTUP_SECONDS: the JVM, the quorum and the registration before the logs: 7.1 s for a broker of 20
#   partitions of 0.2 MB (load 8);
# - SECONDS_PER_PARTITION: a clean load (clean-shutdown marker) of 1,000 partitions of 5.3 MB took 37.7 s
#   (30.6-46.2): (37.7 - 7.1) / 1,000, each partition's load and leadership;
# - REREAD_BYTES_PER_SECOND: the same copy after SIGKILL took 94.0 s (57.6-104.3), 56.3 s more than the
#   clean start of the same round for the 5.31 GB recovery re-read (LogSegment.recover: each batch's CRC,
#   the indexes and producer state rebuilt): 94 MB/s.
# A quiet or bigger machine is faster on every term: the estimate is this order of magnitude, not a promise
# (the broker's first start of 10,000 recovered partitions took 756 s against 335 s estimated).
STARTUP_SECONDS = 7.0
SECONDS_PER_PARTITION = 0.03
REREAD_BYTES_PER_SECOND = 94_000_000
UNASSIGNED_DIRECTORIES = {"AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg"}


class Verdict(StrEnum):
    CLEAN = "starts-clean"
    RECOVERS = "starts-after-recovery"
    LOSES = "starts-and-loses-data"
    NO_START = "does-not-start"


@dataclass(slots=True)
class Forecast:
    log_dirs: list[LogDirState]
    image: MetadataImage | None
    node_id: int | None
    kafka_version: str
    refuses: list[str] = field(default_factory=list)
    partitions: list[PartitionForecast] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # what cannot be known from these files

    @property
    def verdict(self) -> Verdict:
        if self.refuses or any(d.refuses for d in self.log_dirs):
            return Verdict.NO_START
        if any(p.loses for p in self.partitions) or any(d.offline for d in self.log_dirs):
            return Verdict.LOSES
        if any(p.action == "recover" or p.deleted_files for p in self.partitions):
            return Verdict.RECOVERS
        return Verdict.CLEAN

    @property
    def written_by(self) -> str | None:
        """The release the metadata's metadata.version came with: the files were written by it or a
        later one."""
        level = None if self.image is None else self.image.metadata_version
        return None if level is None else release_of(level)

    @property
    def reread_bytes(self) -> int:
        return sum(p.reread_bytes for p in self.partitions)

    @property
    def estimated_seconds(self) -> float:
        loaded = sum(1 for p in self.partitions if p.action != "create-empty")
        return STARTUP_SECONDS + self.reread_bytes / REREAD_BYTES_PER_SECOND + SECONDS_PER_PARTITION * loaded

    def bounds(self) -> dict[tuple[str, int], PartitionForecast]:
        """Each served partition's forecast, by (topic, partition): the log start and end, the offsets
        removed and the leader epochs' start offsets a consumer-impact join needs."""
        return {(p.topic, p.partition): p for p in self.partitions if p.served and p.action != "offline"}

    def summary(self) -> dict[str, Any]:
        return {
            "type": "forecast",
            "verdict": self.verdict.value,
            "node_id": self.node_id,
            "kafka_version": self.kafka_version,
            "refuses_start": self.refuses + [r for d in self.log_dirs for r in d.refuses],
            "offline_log_dirs": [str(d.path) for d in self.log_dirs if d.offline],
            "partitions": len(self.partitions),
            "recovered_partitions": sum(1 for p in self.partitions if p.action == "recover"),
            "reread_bytes": self.reread_bytes,
            "estimated_startup_seconds": round(self.estimated_seconds, 3),
            "lost_partitions": sum(1 for p in self.partitions if p.loses),
            "lso_pinned_partitions": sum(1 for p in self.partitions if p.served and p.open_transactions),
            "hanging_transactions": sum(1 for p in self.partitions for t in p.open_transactions if t.hangs),
            "metadata": None if self.image is None else self.image.source,
            "metadata_version": None if self.image is None else self.image.metadata_version,
            "metadata_version_release": self.written_by,
            "unknown": self.unknown,
        }


def _image_for(dirs: list[LogDirState], metadata: Path | None) -> MetadataImage | None:
    if metadata is not None:
        path = metadata / METADATA_DIR if (metadata / METADATA_DIR).is_dir() else metadata
        if not path.is_dir():
            raise PathError(f"{metadata} is not a __cluster_metadata-0 directory nor a log dir holding one")
        return load_image(path)
    for d in dirs:
        if d.has_metadata:
            return load_image(d.path / METADATA_DIR)
    return None


def forecast(
    paths: Iterable[Path],
    *,
    metadata: Path | None = None,
    node_id: int | None = None,
    kafka_version: str = "4.4",
) -> Forecast:
    """Forecast the start of the broker whose log dirs are `paths` (all of them, JBOD included)."""
    dirs = [read_log_dir(p) for p in paths]
    node = node_id if node_id is not None else node_of(dirs)
    image = _image_for(dirs, metadata)
    fc = Forecast(dirs, image, node, kafka_version)
    fc.refuses.extend(check_ensemble(dirs, node_id))
    if image is None:
        if any(d.kraft for d in dirs):
            fc.unknown.append("no __cluster_metadata found or given: stray and topic-id checks were not made")
        elif not any(d.meta for d in dirs):
            fc.unknown.append(
                "no meta.properties and no __cluster_metadata: the node, the assignment and the topic ids are "
                "unknown; stray, missing and topic-id-mismatched partitions were not checked (give --metadata)"
            )
        else:
            fc.unknown.append(
                "ZooKeeper-era log dirs: the assignment, topic ids and leader epochs live in ZooKeeper; stray, "
                "missing and topic-id-mismatched partitions cannot be known without it (give --metadata)"
            )
    else:
        fc.refuses.extend(
            f"{f.code} at offset {f.offset}: {f.message}" for f in image.findings if f.severity >= 30
        )
        if metadata is None:
            # A broker that was down missed what the quorum decided meanwhile (a reassignment away, a
            # topic deleted); it learns that from the controller at start, after this log ends.
            fc.unknown.append(
                "the metadata is this node's own copy"
                + ("" if image.end_offset is None else f", up to offset {image.end_offset}")
                + ": what the quorum "
                "decided after this node last fetched (a partition reassigned away, a topic deleted) is not "
                "in it; give --metadata with a running controller's __cluster_metadata-0 for those"
            )
        fc.unknown.extend(zk_migration_notes(image, kafka_version))
        level, newest = image.metadata_version, newest_level(kafka_version)
        if level is not None and newest is not None and level > newest:
            fc.refuses.append(
                f"metadata.version {level} ({METADATA_VERSIONS.get(level, '?')}) is newer than Kafka "
                f"{kafka_version} supports ({newest}): the broker cannot register"
            )
    present: set[tuple[str, int]] = set()
    for d in dirs:
        if d.offline:
            continue
        log_dir = LogDir.load(d.path)
        for part in log_dir.partitions:
            if part.topic is None or part.partition is None or part.path.name == METADATA_DIR:
                continue
            pf = forecast_partition(part, d, image, node)
            if pf.served or pf.action == "future":
                present.add((part.topic, part.partition))
            fc.partitions.append(pf)
    if image is not None and node is not None:
        _missing(fc, image, node, dirs, present)
    online = [d.path for d in dirs if not d.offline]
    for p in fc.partitions:
        if p.served and p.ongoing:
            p.open_transactions = judge(p.ongoing, online, image, node)
    return fc


def _missing(
    fc: Forecast, image: MetadataImage, node: int, dirs: list[LogDirState], present: set[tuple[str, int]]
) -> None:
    online = [d for d in dirs if not d.offline]
    # A partition assigned to an offline log dir is not created elsewhere: it is offline with its dir.
    offline_ids = {d.meta.get("directory.id") for d in dirs if d.meta and d.offline}
    by_dir_id = {d.meta.get("directory.id"): d for d in online if d.meta}
    for topic in image.topics.values():
        for pid, state in topic.partitions.items():
            if node not in state.replicas or (topic.name, pid) in present:
                continue
            did = state.directory_of(node)
            if did in offline_ids:
                continue
            target = by_dir_id.get(did) if did not in UNASSIGNED_DIRECTORIES else None
            if target is None and online:
                target = online[0]
            if target is None:
                continue
            pf = created_empty(str(target.path), topic.name, pid, topic.topic_id)
            # A log set aside (stray) under the same name: its offsets are gone for the partition's readers.
            aside = [p for p in fc.partitions if (p.topic, p.partition) == (topic.name, pid) and p.removed]
            if aside:
                pf.removed = aside[0].removed
            if state.replicas == [node]:
                pf.only_replica = True
                pf.reason += "; this broker is the only replica: whatever the partition held is gone"
            fc.partitions.append(pf)
