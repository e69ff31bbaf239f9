"""Test-only writers: whole segments, partitions and log dirs built from records.

The byte-level writers live beside their readers in `kdump.formats`; these helpers lay them out
on disk the way a broker does (20-digit names, indexes built by the recovery rule).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kdump.formats.checkpoints import encode_leader_epoch_checkpoint
from kdump.formats.constants import Codec, ControlType
from kdump.formats.control import encode_control_key, encode_end_txn_marker
from kdump.formats.offset_index import encode_offset_index
from kdump.formats.records import NewRecord, build_legacy_entry, build_v2_batch
from kdump.formats.time_index import encode_time_index
from kdump.ops.repair.reindex import build_segment_indexes

BASE_TS = 1_700_000_000_000


def records(n: int, *, start_ts: int = BASE_TS, value_size: int = 100, key: bool = True) -> list[NewRecord]:
    """`n` simple records with keys `key-i`, values of `value_size` bytes and one header each."""
    return [
        NewRecord(
            f"key-{i}".encode() if key else None,
            (f"value-{i}-".encode() * (value_size // 8 + 1))[:value_size],
            start_ts + i,
            ((b"h", str(i).encode()),),
        )
        for i in range(n)
    ]


@dataclass
class SegmentBuilder:
    """Append batches to an in-memory segment; write it (with indexes) to a partition directory."""

    base_offset: int = 0
    next_offset: int = 0
    data: bytearray = field(default_factory=bytearray)
    # (position, size, last offset, max timestamp) of each batch, for the indexes
    spans: list[tuple[int, int, int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.next_offset = max(self.next_offset, self.base_offset)

    def add_v2(
        self,
        recs: Sequence[NewRecord],
        *,
        codec: int = Codec.NONE,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        transactional: bool = False,
        leader_epoch: int = 0,
        log_append_time: int | None = None,
    ) -> tuple[int, int]:
        """Append a v2 batch; returns its (position, base offset)."""
        batch = build_v2_batch(
            self.next_offset,
            recs,
            codec=codec,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            transactional=transactional,
            partition_leader_epoch=leader_epoch,
            log_append_time=log_append_time,
        )
        return self._append(
            batch,
            len(recs),
            max((r.timestamp for r in recs), default=-1) if log_append_time is None else log_append_time,
        )

    def add_marker(
        self, producer_id: int, *, commit: bool, producer_epoch: int = 0, leader_epoch: int = 0
    ) -> int:
        """Append a COMMIT or ABORT marker; returns its offset."""
        ctype = ControlType.COMMIT if commit else ControlType.ABORT
        rec = NewRecord(encode_control_key(ctype), encode_end_txn_marker(0), BASE_TS)
        batch = build_v2_batch(
            self.next_offset,
            [rec],
            control=True,
            transactional=True,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            partition_leader_epoch=leader_epoch,
        )
        offset = self.next_offset
        self._append(batch, 1, BASE_TS)
        return offset

    def add_legacy(
        self, recs: Sequence[NewRecord], *, magic: int, codec: int = Codec.NONE
    ) -> tuple[int, int]:
        """Append legacy message(s): one per record uncompressed, one wrapper compressed."""
        entry = build_legacy_entry(self.next_offset, recs, magic=magic, codec=codec)
        max_ts = max(r.timestamp for r in recs) if magic == 1 else -1
        if codec == Codec.NONE:
            position = len(self.data)
            base = self.next_offset
            # Each uncompressed legacy message is its own entry.
            pos = 0
            for r in recs:
                size = 12 + int.from_bytes(entry[pos + 8 : pos + 12], "big")
                self.spans.append((len(self.data), size, self.next_offset, r.timestamp if magic == 1 else -1))
                self.data += entry[pos : pos + size]
                self.next_offset += 1
                pos += size
            return position, base
        return self._append(entry, len(recs), max_ts)

    def _append(self, batch: bytes, count: int, max_ts: int) -> tuple[int, int]:
        position = len(self.data)
        base = self.next_offset
        self.spans.append((position, len(batch), base + max(count, 1) - 1, max_ts))
        self.data += batch
        self.next_offset += max(count, 1)
        return position, base

    @property
    def name(self) -> str:
        """The 20-digit base offset."""
        return f"{self.base_offset:020d}"

    def write(self, partition: Path, *, indexes: bool = True, interval_bytes: int = 4096) -> Path:
        """Write `<base>.log` (and `.index`/`.timeindex` by the recovery rule) into `partition`."""
        partition.mkdir(parents=True, exist_ok=True)
        log = partition / f"{self.name}.log"
        log.write_bytes(bytes(self.data))
        if indexes:
            offsets, times = build_segment_indexes(self.spans, interval_bytes)
            (partition / f"{self.name}.index").write_bytes(encode_offset_index(offsets, self.base_offset))
            (partition / f"{self.name}.timeindex").write_bytes(encode_time_index(times, self.base_offset))
        return log


def build_partition(
    path: Path,
    *,
    segments: int = 3,
    batches_per_segment: int = 4,
    records_per_batch: int = 10,
    codec: int = Codec.NONE,
    value_size: int = 200,
) -> list[Path]:
    """A healthy partition directory of v2 segments with indexes and a leader-epoch checkpoint."""
    logs = []
    offset = 0
    ts = BASE_TS
    for _ in range(segments):
        seg = SegmentBuilder(base_offset=offset)
        for _ in range(batches_per_segment):
            seg.add_v2(records(records_per_batch, start_ts=ts, value_size=value_size), codec=codec)
            ts += records_per_batch
        logs.append(seg.write(path))
        offset = seg.next_offset
    (path / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint([(0, 0)]))
    return logs


# ------------------------------------------------------------------------------ coordinator records


def _coordinator_record(
    record_type: int, key_msg: object, key: dict[str, object], value: object
) -> NewRecord:
    """A coordinator record (`int16` type + key; `int16` version + value, or None for a tombstone)."""
    import struct

    from formats.internal.wire import encode_message  # the tests' own encoder of Kafka's messages

    key_bytes = struct.pack(">h", record_type) + encode_message(key_msg, key, 0)  # type: ignore[arg-type]
    value_bytes = None
    if value is not None:
        msg, version, data = value  # type: ignore[misc]
        value_bytes = struct.pack(">h", version) + encode_message(msg, data, version)
    return NewRecord(key_bytes, value_bytes, BASE_TS)


def offset_commit(
    group: str,
    topic: str,
    partition: int,
    offset: int | None,
    *,
    leader_epoch: int = -1,
    timestamp: int = BASE_TS,
) -> NewRecord:
    """An `__consumer_offsets` OffsetCommit record (value version 3), or its tombstone (`offset` None)."""
    from kdump.formats.internal import offsets_tables as t

    key = {"group": group, "topic": topic, "partition": partition}
    value = None
    if offset is not None:
        data = {"offset": offset, "leaderEpoch": leader_epoch, "metadata": "", "commitTimestamp": timestamp}
        value = (t.OFFSET_COMMIT_VALUE, 3, data)
    return _coordinator_record(1, t.OFFSET_COMMIT_KEY, key, value)


def consumer_group_metadata(group: str, epoch: int = 1) -> NewRecord:
    """A KIP-848 ConsumerGroupMetadata record: the group uses the consumer protocol."""
    from kdump.formats.internal import offsets_tables as t

    value = (t.CONSUMER_GROUP_METADATA_VALUE, 0, {"epoch": epoch, "metadataHash": 0})
    return _coordinator_record(3, t.CONSUMER_GROUP_METADATA_KEY, {"groupId": group}, value)


def share_state(
    group: str,
    topic_id: str,
    partition: int,
    start_offset: int,
    batches: Sequence[tuple[int, int, int, int]] = (),
    *,
    update: bool = False,
    leader_epoch: int = 0,
) -> NewRecord:
    """A `__share_group_state` ShareSnapshot (or ShareUpdate) record."""
    from kdump.formats.internal import share_group_state as s

    data: dict[str, object] = {"snapshotEpoch": 0, "leaderEpoch": leader_epoch, "startOffset": start_offset}
    data["stateBatches"] = [
        {"firstOffset": f, "lastOffset": la, "deliveryState": d, "deliveryCount": c}
        for f, la, d, c in batches
    ]
    if not update:
        data.update(stateEpoch=0, createTimestamp=BASE_TS, writeTimestamp=BASE_TS)
        msg, key_msg, kind = s.SHARE_SNAPSHOT_VALUE, s.SHARE_SNAPSHOT_KEY, 0
    else:
        msg, key_msg, kind = s.SHARE_UPDATE_VALUE, s.SHARE_UPDATE_KEY, 1
    key = {"groupId": group, "topicId": topic_id, "partition": partition}
    return _coordinator_record(kind, key_msg, key, (msg, 0, data))


def c_none_partition(corpus_root: Path, dst: Path) -> Path:
    """The corpus's `kafka-3.8.0/c-none-0` copied to `dst` where it is whole (the full corpus), else one
    built like it (the bundled subset keeps only its last segment): offsets 0..2999 in leader epoch 0,
    in batches of 100 records over 3 segments. The corpus's groups committed 1008 on it in epoch 0."""
    import shutil

    src = corpus_root / "kafka-3.8.0" / "c-none-0"
    if (src / "00000000000000000000.log").exists():
        shutil.copytree(src, dst)
        return dst
    for base in (0, 1000, 2000):
        seg = SegmentBuilder(base_offset=base)
        for _ in range(10):
            seg.add_v2(records(100, start_ts=BASE_TS + seg.next_offset, value_size=20))
        seg.write(dst)
    (dst / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint([(0, 0)]))
    return dst
