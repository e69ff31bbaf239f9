"""What `__remote_log_metadata` says about each tiered partition's remote segments, replayed as the broker does.

The topic-based RemoteLogMetadataManager of every broker consumes `__remote_log_metadata` and keeps,
per topic partition (`RemoteLogMetadataCache`):

- every remote segment by id, with the state of its last record: COPY_SEGMENT_STARTED (written before
  the copy), COPY_SEGMENT_FINISHED (the copy is complete: the broker serves from it), DELETE_SEGMENT_STARTED
  and DELETE_SEGMENT_FINISHED (gone; the broker forgets the segment);
- per leader epoch, the highest offset of a finished segment in that epoch (the end of the epoch within
  the segment: the next epoch's start offset - 1, or the segment's end offset);
- the partition's delete state (`RemotePartitionDeleteMetadataRecord`).

A partition's metadata goes to one partition of the topic (by hash), so replaying each given
`__remote_log_metadata-N` in offset order rebuilds the broker's view of the partitions it holds. A record
that does not decode, or an update of a segment never announced, is skipped as the broker skips it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kdump.errors import DecodeError, KdumpError
from kdump.findings import Finding, make_finding
from kdump.formats.batch import BatchHeader
from kdump.formats.filenames import parse_partition_dir_name
from kdump.formats.internal.remote_log_metadata import decode_remote_log_metadata_record
from kdump.formats.records import Record
from kdump.model.partition import PartitionDir
from kdump.scan.log_scanner import scan_log
from kdump.scan.source import open_buffer

METADATA_TOPIC = "__remote_log_metadata"
COPY_STARTED = "COPY_SEGMENT_STARTED"
COPY_FINISHED = "COPY_SEGMENT_FINISHED"
DELETE_STARTED = "DELETE_SEGMENT_STARTED"
DELETE_FINISHED = "DELETE_SEGMENT_FINISHED"


@dataclass(slots=True)
class RemoteSegment:
    """One remote segment as the metadata describes it, with the state of its latest record."""

    segment_id: str
    start_offset: int
    end_offset: int
    leader_epochs: dict[int, int]  # epoch -> its first offset in the segment
    size: int
    max_timestamp: int
    state: str
    txn_index_empty: bool
    # Where the metadata said so: the `__remote_log_metadata` partition and the offset of the latest record.
    source: str
    record_offset: int

    def epoch_end_offsets(self) -> dict[int, int]:
        """The last offset of each leader epoch within the segment."""
        epochs = sorted(self.leader_epochs.items())
        out: dict[int, int] = {}
        for i, (epoch, _) in enumerate(epochs):
            out[epoch] = epochs[i + 1][1] - 1 if i + 1 < len(epochs) else self.end_offset
        return out


@dataclass(slots=True)
class PartitionRemoteLog:
    """One topic partition's remote log, as the broker's metadata cache holds it."""

    topic_id: str
    topic: str
    partition: int
    segments: dict[str, RemoteSegment] = field(default_factory=dict)
    # Segments whose deletion finished: the broker forgets them; kept to name files left behind.
    deleted: dict[str, RemoteSegment] = field(default_factory=dict)
    highest_offset_by_epoch: dict[int, int] = field(default_factory=dict)
    delete_state: str | None = None

    def finished(self) -> list[RemoteSegment]:
        """The segments the broker serves from (copy finished, no deletion begun), by start offset."""
        return sorted(
            (s for s in self.segments.values() if s.state == COPY_FINISHED), key=lambda s: s.start_offset
        )

    def highest_offset_for_epoch(self, epoch: int) -> int | None:
        """`RemoteLogMetadataManager.highestOffsetForEpoch`."""
        return self.highest_offset_by_epoch.get(epoch)


@dataclass(slots=True)
class RemoteLogMetadata:
    """Every partition's remote log found in the given `__remote_log_metadata` partitions."""

    partitions: dict[tuple[str, int], PartitionRemoteLog] = field(default_factory=dict)
    sources: list[Path] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    records: int = 0

    def for_partition(
        self, topic: str, partition: int, topic_id: str | None = None
    ) -> PartitionRemoteLog | None:
        """The partition's remote log, by topic id when known, else by name."""
        if topic_id is not None:
            return self.partitions.get((topic_id, partition))
        found = [p for p in self.partitions.values() if p.topic == topic and p.partition == partition]
        return found[-1] if found else None

    def apply(self, value: dict[str, object], source: str, offset: int) -> None:
        """Apply one decoded record (`DecodedRecord.value`) as `RemoteLogMetadataCache` does."""
        data = value["data"]
        assert isinstance(data, dict)
        kind = value["type"]
        state = value.get("state")
        if not isinstance(state, str):
            return
        if kind == "REMOTE_PARTITION_DELETE_METADATA_RECORD":
            tip = data["topicIdPartition"]
            self._partition(tip).delete_state = state
            return
        if kind not in ("REMOTE_LOG_SEGMENT_METADATA_RECORD", "REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD"):
            return
        sid = data["remoteLogSegmentId"]
        part = self._partition(sid["topicIdPartition"])
        seg_id = str(sid["id"])
        if kind == "REMOTE_LOG_SEGMENT_METADATA_RECORD":
            if seg_id in part.segments:
                return  # the broker refuses a second announcement of the same id
            part.segments[seg_id] = RemoteSegment(
                seg_id,
                int(data["startOffset"]),
                int(data["endOffset"]),
                {int(e["leaderEpoch"]): int(e["offset"]) for e in data["segmentLeaderEpochs"]},
                int(data["segmentSizeInBytes"]),
                int(data["maxTimestampMs"]),
                state,
                bool(data.get("txnIndexEmpty", False)),
                source,
                offset,
            )
            return
        seg = part.segments.get(seg_id)
        if seg is None:
            return  # the broker logs RemoteResourceNotFoundException and goes on
        seg.state = state
        seg.source, seg.record_offset = source, offset
        if state == COPY_FINISHED:
            for epoch, end in seg.epoch_end_offsets().items():
                old = part.highest_offset_by_epoch.get(epoch)
                if old is None or end > old:
                    part.highest_offset_by_epoch[epoch] = end
        elif state == DELETE_FINISHED:
            part.deleted[seg_id] = part.segments.pop(seg_id)

    def _partition(self, tip: dict[str, object]) -> PartitionRemoteLog:
        key = (str(tip["id"]), int(str(tip["partition"])))
        part = self.partitions.get(key)
        if part is None:
            part = self.partitions[key] = PartitionRemoteLog(key[0], str(tip["name"]), key[1])
        return part


def metadata_partitions(paths: Iterable[Path]) -> list[Path]:
    """The `__remote_log_metadata-N` directories in or under the given paths (log dirs or partitions),
    one per partition number (the first given wins: replicas of one partition hold the same records)."""
    chosen: dict[int, Path] = {}
    for path in paths:
        candidates = [path] if _is_metadata_partition(path) else sorted(path.glob(f"{METADATA_TOPIC}-*"))
        for c in candidates:
            parsed = parse_partition_dir_name(c.name)
            if parsed is not None and parsed.status is None and c.is_dir():
                chosen.setdefault(parsed.partition, c)
    return [chosen[n] for n in sorted(chosen)]


def _is_metadata_partition(path: Path) -> bool:
    parsed = parse_partition_dir_name(path.name)
    return parsed is not None and parsed.topic == METADATA_TOPIC


def load_remote_log_metadata(paths: Iterable[Path]) -> RemoteLogMetadata:
    """Replay every `__remote_log_metadata` partition found in `paths`."""
    meta = RemoteLogMetadata()
    for part_path in metadata_partitions(paths):
        meta.sources.append(part_path)
        try:
            for offset, value in _records(part_path):
                meta.records += 1
                meta.apply(value, part_path.name, offset)
        except KdumpError as exc:
            meta.findings.append(make_finding("unreadable-file", str(part_path), str(exc)))
    return meta


def _records(part_path: Path) -> Iterator[tuple[int, dict[str, object]]]:
    for seg in PartitionDir.load(part_path).segments:
        assert seg.log is not None
        with open_buffer(seg.log) as buf:
            batch: BatchHeader | None = None
            for ev in scan_log(buf, file=str(seg.log), base_offset=seg.base_offset, deep=True):
                if isinstance(ev, BatchHeader):
                    batch = ev
                elif isinstance(ev, Record) and batch is not None and not batch.is_control and batch.crc_ok:
                    try:
                        decoded = decode_remote_log_metadata_record(ev.value)
                    except DecodeError:
                        continue
                    if decoded.value is not None and decoded.known:
                        yield ev.offset, decoded.value
