"""Committed offsets and share-group state, replayed from the coordinators' logs as the broker loads them.

`__consumer_offsets` is replayed as the group coordinator does when it loads a partition
(`GroupMetadataManager.doLoadGroupsAndOffsets` in 3.x, `GroupCoordinatorShard.replay` ->
`OffsetMetadataManager.replay` / `replayEndTransactionMarker` in 4.x):

* an OffsetCommit record (type 0 or 1) outside a transaction replaces the group/topic/partition's offset;
  a tombstone deletes it, and the pending transactional offsets of that key too;
* inside a transaction it is pending under its producer id: a COMMIT marker of that producer moves each
  pending offset in, unless the offset already there was written later in the log (its record offset is
  higher); an ABORT marker drops them; a transaction with no marker yet stays pending and is not served;
* group records (GroupMetadata for classic groups, ConsumerGroupMetadata for consumer-protocol groups,
  ShareGroupMetadata, StreamsGroupMetadata) give the group's type; their tombstones do not delete offsets,
  which have their own.

`__share_group_state` is replayed as `ShareCoordinatorShard.replay`: a ShareSnapshot replaces the state
of a group/topic id/partition, a ShareUpdate merges into it (a start offset or epoch of -1 keeps the old
one; its state batches replace the offsets they cover, and batches below the start offset go).

The bytes are read with the one scanner in recovery mode (what the broker's recovery keeps) and the one
set of decoders; damage and records that do not decode are findings in `CommitTable.findings`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kdump.errors import DecodeError, PathError
from kdump.findings import Finding, make_finding
from kdump.formats.batch import BatchHeader
from kdump.formats.constants import ControlType
from kdump.formats.control import decode_control_key
from kdump.formats.filenames import parse_partition_dir_name
from kdump.formats.internal import DecodedRecord, decode_offsets_record, decode_share_group_state_record
from kdump.formats.records import Record
from kdump.model.partition import PartitionDir
from kdump.scan.events import ScanMode
from kdump.scan.log_scanner import scan_log
from kdump.scan.source import open_buffer

OFFSETS_TOPIC = "__consumer_offsets"
SHARE_STATE_TOPIC = "__share_group_state"
NO_PRODUCER_ID = -1

GROUP_TYPES = {
    "GroupMetadata": "classic",
    "ConsumerGroupMetadata": "consumer",
    "ShareGroupMetadata": "share",
    "StreamsGroupMetadata": "streams",
}
"""Group record -> the group's type, as `kafka-consumer-groups --describe` names it."""


@dataclass(frozen=True, slots=True)
class Commit:
    """One committed offset of a group for a topic partition, as the coordinator serves it."""

    group: str
    topic: str
    partition: int
    offset: int
    leader_epoch: int  # -1: the commit names no epoch
    metadata: str
    commit_timestamp: int
    record_offset: int  # where the commit lies in its __consumer_offsets partition
    source: str  # that partition's directory
    producer_id: int = NO_PRODUCER_ID  # the transaction's producer (-1: not transactional)

    def to_row(self) -> dict[str, Any]:
        return {
            "type": "commit",
            "group": self.group,
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "leader_epoch": self.leader_epoch,
            "metadata": self.metadata,
            "commit_timestamp": self.commit_timestamp,
            "record_offset": self.record_offset,
            "source": self.source,
            "transactional": self.producer_id != NO_PRODUCER_ID,
        }


@dataclass(frozen=True, slots=True)
class ShareState:
    """A share group's state of one topic partition (KIP-932): where it starts, what is in flight."""

    group: str
    topic_id: str
    partition: int
    start_offset: int
    leader_epoch: int
    state_epoch: int
    state_batches: tuple[tuple[int, int, int, int], ...]  # (firstOffset, lastOffset, deliveryState, count)
    record_offset: int
    source: str

    @property
    def next_offset(self) -> int:
        """The first offset at or after the start offset the group has not finished with: the start offset
        moved over the state batches from it on that are acknowledged (2) or archived (4). The share
        coordinator keeps the start offset where it was and records those batches; this is where delivery
        goes on. -1: not initialized."""
        offset = self.start_offset
        if offset < 0:
            return offset
        for first, last, state, _ in self.state_batches:
            if last < offset:
                continue
            if first > offset or state not in (2, 4):
                break
            offset = last + 1
        return offset

    def to_row(self) -> dict[str, Any]:
        return {
            "type": "share-state",
            "group": self.group,
            "topic_id": self.topic_id,
            "partition": self.partition,
            "start_offset": self.start_offset,
            "next_offset": self.next_offset,
            "leader_epoch": self.leader_epoch,
            "state_epoch": self.state_epoch,
            "state_batches": [list(b) for b in self.state_batches],
            "record_offset": self.record_offset,
            "source": self.source,
        }


@dataclass(slots=True)
class CommitTable:
    """Every group's committed offsets and share state found in the paths given."""

    commits: dict[tuple[str, str, int], Commit] = field(default_factory=dict)
    pending: list[Commit] = field(default_factory=list)
    """Transactional commits whose transaction has no marker yet: not served until it ends."""
    share: dict[tuple[str, str, int], ShareState] = field(default_factory=dict)
    group_types: dict[str, str] = field(default_factory=dict)
    sources: list[Path] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)
    """Other copies (replicas from other brokers) of a partition read from `sources`: not replayed."""
    findings: list[Finding] = field(default_factory=list)

    def of_partition(self, topic: str, partition: int) -> list[Commit]:
        """The groups' commits of one topic partition, by group."""
        return sorted(
            (c for c in self.commits.values() if c.topic == topic and c.partition == partition),
            key=lambda c: c.group,
        )

    def group_type(self, group: str) -> str:
        """The group's type from its group records ("unknown": none left, e.g. offsets of a standalone
        consumer using assign(), or a group whose metadata was deleted)."""
        return self.group_types.get(group, "unknown")


def find_coordinator_partitions(paths: Iterable[str | Path]) -> list[Path]:
    """The `__consumer_offsets-N` and `__share_group_state-N` directories among `paths`: each path is one,
    or a log dir holding them (found by name, as the broker finds partitions). The same partition found
    in several log dirs (its replicas, copied from several brokers) appears once per copy.

    Raises:
        PathError: a path does not exist or is not a directory.
    """
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if not path.is_dir():
            raise PathError(f"{given}: not a directory (give a log dir or a {OFFSETS_TOPIC}-N directory)")
        if _coordinator_topic(path.name) is not None:
            found.append(path)
            continue
        try:
            children = sorted(path.iterdir())
        except OSError as exc:
            raise PathError(f"cannot list {given}: {exc.strerror}") from exc
        found.extend(c for c in children if _coordinator_topic(c.name) is not None and c.is_dir())
    return found


def _log_bytes(path: Path) -> int:
    total = 0
    for p in path.glob("*.log"):
        try:
            total += p.stat().st_size
        except OSError:
            continue
    return total


def _coordinator_topic(name: str) -> str | None:
    parsed = parse_partition_dir_name(name)
    if parsed is None or parsed.status is not None or parsed.topic not in (OFFSETS_TOPIC, SHARE_STATE_TOPIC):
        return None
    return parsed.topic


def read_commits(paths: Iterable[str | Path]) -> CommitTable:
    """Replay the `__consumer_offsets` and `__share_group_state` partitions in `paths` (log dirs or the
    partition dirs themselves) into the committed offsets and share state the coordinators serve.

    Raises:
        PathError: a path cannot be read.
    """
    table = CommitTable()
    chosen: dict[str, Path] = {}
    for path in find_coordinator_partitions(paths):
        # Replicas of one partition: the longest log is read (the leader's, or the most caught up).
        best = chosen.get(path.name)
        if best is None or _log_bytes(path) > _log_bytes(best):
            chosen[path.name] = path
    for path in find_coordinator_partitions(paths):
        if chosen[path.name] != path:
            table.skipped.append(path)
            continue
        table.sources.append(path)
        part = PartitionDir.load(path)
        table.findings.extend(part.problems)
        if _coordinator_topic(path.name) == OFFSETS_TOPIC:
            _OffsetsReplay(table, str(path)).run(part)
        else:
            _replay_share_state(table, str(path), part)
    return table


def _records(part: PartitionDir, table: CommitTable) -> Iterable[tuple[BatchHeader, Record]]:
    """Every record of the partition's valid batches, in log order; damage goes to the findings."""
    for seg in part.segments:
        if seg.log is None:
            continue
        batch: BatchHeader | None = None
        with open_buffer(seg.log) as buf:
            for ev in scan_log(
                buf, file=str(seg.log), base_offset=seg.base_offset, deep=True, mode=ScanMode.RECOVERY
            ):
                if isinstance(ev, BatchHeader):
                    batch = ev if ev.crc_ok else None
                elif isinstance(ev, Record) and batch is not None:
                    yield batch, ev
                elif isinstance(ev, Finding):
                    table.findings.append(ev)


def _decode_failed(table: CommitTable, source: str, rec: Record, exc: DecodeError) -> None:
    table.findings.append(
        make_finding(
            "record-decode-failed",
            source,
            f"record at offset {rec.offset} does not decode: {exc}; the coordinator fails to load this partition",
            offset=rec.offset,
        )
    )


class _OffsetsReplay:
    """The group coordinator's load of one `__consumer_offsets` partition."""

    def __init__(self, table: CommitTable, source: str) -> None:
        self.table = table
        self.source = source
        self.pending: dict[int, dict[tuple[str, str, int], Commit]] = {}

    def run(self, part: PartitionDir) -> None:
        for batch, rec in _records(part, self.table):
            if batch.is_control:
                self._marker(batch, rec)
                continue
            try:
                decoded = decode_offsets_record(rec.key, rec.value)
            except DecodeError as exc:
                _decode_failed(self.table, self.source, rec, exc)
                continue
            pid = batch.producer_id if batch.is_transactional else NO_PRODUCER_ID
            self._replay(decoded, rec, pid)
        for txn in self.pending.values():
            self.table.pending.extend(txn.values())

    def _replay(self, decoded: DecodedRecord, rec: Record, pid: int) -> None:
        if decoded.status == "unknown" or decoded.key is None:
            return
        data = decoded.key["data"]
        if decoded.record in GROUP_TYPES:
            group = data.get("group", data.get("groupId"))
            if decoded.status == "tombstone":
                self.table.group_types.pop(group, None)
            else:
                self.table.group_types[group] = _group_type(decoded)
            return
        if decoded.record not in ("OffsetCommit", "LegacyOffsetCommit"):
            return
        key = (str(data["group"]), str(data["topic"]), int(data["partition"]))
        if decoded.status == "tombstone":
            self.table.commits.pop(key, None)
            for txn in self.pending.values():
                txn.pop(key, None)
            return
        assert decoded.value is not None
        value = decoded.value["data"]
        commit = Commit(
            *key,
            offset=int(value["offset"]),
            leader_epoch=int(value.get("leaderEpoch", -1)),
            metadata=str(value.get("metadata", "")),
            commit_timestamp=int(value.get("commitTimestamp", -1)),
            record_offset=rec.offset,
            source=self.source,
            producer_id=pid,
        )
        if pid == NO_PRODUCER_ID:
            self.table.commits[key] = commit
        else:
            self.pending.setdefault(pid, {})[key] = commit

    def _marker(self, batch: BatchHeader, rec: Record) -> None:
        try:
            marker = decode_control_key(rec.key).type
        except DecodeError:
            return
        if marker not in (ControlType.COMMIT, ControlType.ABORT):
            return
        txn = self.pending.pop(batch.producer_id, {})
        if marker != ControlType.COMMIT:
            return
        for key, commit in txn.items():
            current = self.table.commits.get(key)
            if current is None or current.record_offset < commit.record_offset:
                self.table.commits[key] = commit


def _group_type(decoded: DecodedRecord) -> str:
    if decoded.record == "GroupMetadata" and decoded.value is not None:
        # A classic group: "consumer" protocol type or another (connect, ...); its type stays classic.
        return "classic"
    return GROUP_TYPES[decoded.record or ""]


def _replay_share_state(table: CommitTable, source: str, part: PartitionDir) -> None:
    for batch, rec in _records(part, table):
        if batch.is_control:
            continue
        try:
            decoded = decode_share_group_state_record(rec.key, rec.value)
        except DecodeError as exc:
            _decode_failed(table, source, rec, exc)
            continue
        if decoded.status == "unknown" or decoded.key is None:
            continue
        k = decoded.key["data"]
        key = (str(k["groupId"]), str(k["topicId"]), int(k["partition"]))
        if decoded.status == "tombstone" or decoded.value is None:
            table.share.pop(key, None)
            continue
        v = decoded.value["data"]
        batches = tuple(
            (int(b["firstOffset"]), int(b["lastOffset"]), int(b["deliveryState"]), int(b["deliveryCount"]))
            for b in v.get("stateBatches", ())
        )
        old = table.share.get(key)
        if decoded.record == "ShareSnapshot" or old is None:
            start, leader, state = int(v["startOffset"]), int(v["leaderEpoch"]), int(v.get("stateEpoch", -1))
        else:
            start = old.start_offset if int(v["startOffset"]) == -1 else int(v["startOffset"])
            leader = old.leader_epoch if int(v["leaderEpoch"]) == -1 else int(v["leaderEpoch"])
            state = old.state_epoch
            batches = _merge_batches(old.state_batches, batches, start)
        table.share[key] = ShareState(*key, start, leader, state, batches, rec.offset, source)


def _merge_batches(
    old: tuple[tuple[int, int, int, int], ...], new: tuple[tuple[int, int, int, int], ...], start: int
) -> tuple[tuple[int, int, int, int], ...]:
    """Old state batches under the new ones (the new win where they overlap), none below `start`."""
    out: list[tuple[int, int, int, int]] = []
    for first, last, state, count in old:
        pieces = [(max(first, start), last)]
        for nf, nl, _, _ in new:
            pieces = [
                p for a, b in pieces for p in ((a, min(b, nf - 1)), (max(a, nl + 1), b)) if p[0] <= p[1]
            ]
        out.extend((a, b, state, count) for a, b in pieces if a <= b)
    out.extend((max(f, start), la, s, c) for f, la, s, c in new if la >= start)
    return tuple(sorted(out))
