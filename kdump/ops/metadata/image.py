"""The metadata image a KRaft broker builds from `__cluster_metadata`, rebuilt offline.

The broker loads the newest snapshot (`<end offset>-<epoch>.checkpoint` in `__cluster_metadata-0`)
and replays the log from the snapshot's end offset on (Kafka's MetadataLoader, MetadataDelta and its
TopicsDelta, ClusterDelta, ConfigurationsDelta and FeaturesDelta). The records it applies follow the
rules of those deltas:

* `PartitionChangeRecord` bumps the partition epoch always, and the leader epoch when it names a leader
  (`-2`, no change, is the default); null ISR, replicas or directories leave them as they were.
* `RemoveTopicRecord` drops the topic, its partitions and its configs.
* `BrokerRegistrationChangeRecord`'s `fenced` is 1 to fence, -1 to unfence, 0 for no change.
* records between `BeginTransactionRecord` and `EndTransactionRecord` apply together; an
  `AbortTransactionRecord` drops them; an open transaction at the end is not applied.

A record that breaks what the controller guarantees (a partition of an unknown topic, a change to an
unknown partition, a leader outside the replicas, an ISR member that is not a replica) is a finding
with its offset: the broker's loader fails on it and the image stops being updated. A log that does
not reach back to the snapshot's end offset leaves a gap the broker cannot replay over.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kdump.errors import DecodeError
from kdump.findings import Finding, make_finding
from kdump.formats.batch import BatchHeader
from kdump.formats.filenames import parse_segment_file_name
from kdump.formats.internal import decode_with
from kdump.formats.internal.cluster_metadata import metadata_record_fields
from kdump.formats.records import Record
from kdump.scan import open_buffer, scan_log

METADATA_DIR = "__cluster_metadata-0"
NO_LEADER = -1
NO_LEADER_CHANGE = -2
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4


@dataclass(slots=True)
class PartitionState:
    """One partition of the image (Kafka's PartitionRegistration)."""

    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int
    partition_epoch: int
    directories: list[str] = field(default_factory=list)
    elr: list[int] = field(default_factory=list)
    last_known_elr: list[int] = field(default_factory=list)
    removing_replicas: list[int] = field(default_factory=list)
    adding_replicas: list[int] = field(default_factory=list)
    leader_recovery_state: int = 0
    offset: int = -1  # the offset of the record that last changed it

    def directory_of(self, broker: int) -> str | None:
        """The directory id the image assigns `broker`'s replica to, if it records one."""
        if broker in self.replicas and len(self.directories) == len(self.replicas):
            return self.directories[self.replicas.index(broker)]
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "replicas": self.replicas,
            "isr": self.isr,
            "elr": self.elr,
            "last_known_elr": self.last_known_elr,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "partition_epoch": self.partition_epoch,
            "directories": self.directories,
            "removing_replicas": self.removing_replicas,
            "adding_replicas": self.adding_replicas,
            "leader_recovery_state": self.leader_recovery_state,
            "offset": self.offset,
        }


@dataclass(slots=True)
class TopicState:
    name: str
    topic_id: str
    partitions: dict[int, PartitionState] = field(default_factory=dict)


@dataclass(slots=True)
class BrokerState:
    broker_id: int
    epoch: int
    fenced: bool
    log_dirs: list[str]
    in_controlled_shutdown: bool = False
    rack: str | None = None


@dataclass(slots=True)
class MetadataImage:
    """What the broker knows of the cluster after replaying snapshot and log."""

    source: str
    snapshot: str | None = None
    snapshot_end_offset: int | None = None
    end_offset: int | None = None  # the offset after the last record applied
    topics: dict[str, TopicState] = field(default_factory=dict)  # by topic id
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    brokers: dict[int, BrokerState] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    records_applied: int = 0
    stopped_at: int | None = None  # offset of a record the loader fails on: later ones are not applied
    # The last ZkMigrationStateRecord's state (Kafka's ZkMigrationState: 0 NONE, 1 MIGRATION,
    # 2 PRE_MIGRATION, 3 POST_MIGRATION, 4 ZK) and its offset; None when the log holds none.
    zk_migration_state: int | None = None
    zk_migration_offset: int | None = None
    # The first topic of each name, kept by the replay: a forecast asks once per partition, and a scan
    # of every topic each time made 10,000 partitions in 10,000 topics cost 10^8 comparisons.
    names: dict[str, TopicState] = field(default_factory=dict, repr=False, compare=False)

    def topic_by_name(self, name: str) -> TopicState | None:
        """The first topic (in the order the metadata created them) named `name`."""
        known = self.names.get(name)
        if known is not None and self.topics.get(known.topic_id) is known:
            return known
        for t in self.topics.values():  # not indexed (an image built by hand, a name removed)
            if t.name == name:
                return t
        return None

    @property
    def metadata_version(self) -> int | None:
        return self.features.get("metadata.version")

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "metadata_image",
            "source": self.source,
            "snapshot": self.snapshot,
            "snapshot_end_offset": self.snapshot_end_offset,
            "end_offset": self.end_offset,
            "records_applied": self.records_applied,
            "stopped_at": self.stopped_at,
            "zk_migration_state": self.zk_migration_state,
            "features": dict(sorted(self.features.items())),
            "metadata_version": self.metadata_version,
            "brokers": [
                {
                    "id": b.broker_id,
                    "epoch": b.epoch,
                    "fenced": b.fenced,
                    "in_controlled_shutdown": b.in_controlled_shutdown,
                    "rack": b.rack,
                    "log_dirs": b.log_dirs,
                }
                for b in sorted(self.brokers.values(), key=lambda b: b.broker_id)
            ],
            "topics": [
                {
                    "name": t.name,
                    "topic_id": t.topic_id,
                    "configs": self.configs.get((TOPIC_RESOURCE, t.name), {}),
                    "partitions": [{"partition": p, **s.to_dict()} for p, s in sorted(t.partitions.items())],
                }
                for t in sorted(self.topics.values(), key=lambda t: t.name)
            ],
            "broker_configs": {
                name: values
                for (kind, name), values in sorted(self.configs.items())
                if kind == BROKER_RESOURCE
            },
        }


def _ints(value: Any) -> list[int]:
    return [int(v) for v in value] if isinstance(value, list) else []


# PartitionChangeRecord's list fields: (its field, the PartitionState attribute it replaces when not null).
_CHANGED_LISTS: tuple[tuple[str, str, Callable[[Any], list[Any]]], ...] = (
    ("isr", "isr", _ints),
    ("replicas", "replicas", _ints),
    ("removingReplicas", "removing_replicas", _ints),
    ("addingReplicas", "adding_replicas", _ints),
    ("directories", "directories", list),
    ("eligibleLeaderReplicas", "elr", _ints),
    ("lastKnownElr", "last_known_elr", _ints),
)


class _Replayer:
    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.pending: list[tuple[int, str, dict[str, Any], str]] | None = None

    def bad(self, code: str, file: str, offset: int, message: str) -> None:
        self.image.findings.append(make_finding(code, file, message, offset=offset))
        if self.image.stopped_at is None:
            self.image.stopped_at = offset

    def record(self, offset: int, kind: str, data: dict[str, Any], file: str) -> None:
        if kind == "BEGIN_TRANSACTION_RECORD":
            self.pending = []
            return
        if kind == "END_TRANSACTION_RECORD":
            for item in self.pending or []:
                self.apply(*item)
            self.pending = None
            return
        if kind == "ABORT_TRANSACTION_RECORD":
            self.pending = None
            return
        if self.pending is not None:
            self.pending.append((offset, kind, data, file))
        else:
            self.apply(offset, kind, data, file)

    def apply(self, offset: int, kind: str, data: dict[str, Any], file: str) -> None:
        img = self.image
        if img.stopped_at is not None:
            return  # the broker's loader stopped at the first record it failed on
        img.records_applied += 1
        img.end_offset = offset + 1
        if kind == "TOPIC_RECORD":
            created = img.topics[data["topicId"]] = TopicState(data["name"], data["topicId"])
            img.names.setdefault(created.name, created)
        elif kind == "REMOVE_TOPIC_RECORD":
            topic = img.topics.pop(data["topicId"], None)
            if topic is None:
                self.bad(
                    "metadata-record-invalid",
                    file,
                    offset,
                    f"RemoveTopicRecord names unknown topic id {data['topicId']}",
                )
                return
            img.configs.pop((TOPIC_RESOURCE, topic.name), None)
            if img.names.get(topic.name) is topic:
                del img.names[topic.name]
        elif kind == "PARTITION_RECORD":
            topic = img.topics.get(data["topicId"])
            if topic is None:
                self.bad(
                    "metadata-record-invalid",
                    file,
                    offset,
                    f"PartitionRecord of unknown topic id {data['topicId']}",
                )
                return
            state = PartitionState(
                replicas=_ints(data.get("replicas")),
                isr=_ints(data.get("isr")),
                leader=int(data.get("leader", NO_LEADER)),
                leader_epoch=int(data.get("leaderEpoch", 0)),
                partition_epoch=int(data.get("partitionEpoch", 0)),
                directories=list(data.get("directories") or []),
                elr=_ints(data.get("eligibleLeaderReplicas")),
                last_known_elr=_ints(data.get("lastKnownElr")),
                removing_replicas=_ints(data.get("removingReplicas")),
                adding_replicas=_ints(data.get("addingReplicas")),
                leader_recovery_state=int(data.get("leaderRecoveryState", 0)),
                offset=offset,
            )
            self.check_partition(state, topic.name, int(data["partitionId"]), file, offset)
            topic.partitions[int(data["partitionId"])] = state
        elif kind == "PARTITION_CHANGE_RECORD":
            topic = img.topics.get(data["topicId"])
            pid = int(data["partitionId"])
            current = None if topic is None else topic.partitions.get(pid)
            if topic is None or current is None:
                self.bad(
                    "metadata-record-invalid",
                    file,
                    offset,
                    f"PartitionChangeRecord of unknown partition {data['topicId']}:{pid}",
                )
                return
            self.change(current, data, offset)
            self.check_partition(current, topic.name, pid, file, offset)
        elif kind == "CONFIG_RECORD":
            key = (int(data["resourceType"]), str(data["resourceName"]))
            values = img.configs.setdefault(key, {})
            if data.get("value") is None:
                values.pop(data["name"], None)
            else:
                values[data["name"]] = data["value"]
        elif kind == "REGISTER_BROKER_RECORD":
            img.brokers[int(data["brokerId"])] = BrokerState(
                int(data["brokerId"]),
                int(data["brokerEpoch"]),
                bool(data.get("fenced", True)),
                list(data.get("logDirs") or []),
                bool(data.get("inControlledShutdown", False)),
                data.get("rack"),
            )
        elif kind == "UNREGISTER_BROKER_RECORD":
            img.brokers.pop(int(data["brokerId"]), None)
        elif kind in ("FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD"):
            broker = img.brokers.get(int(data["id"]))
            if broker is None:
                self.bad(
                    "metadata-record-invalid", file, offset, f"{kind} of unregistered broker {data['id']}"
                )
                return
            broker.fenced = kind == "FENCE_BROKER_RECORD"
        elif kind == "BROKER_REGISTRATION_CHANGE_RECORD":
            broker = img.brokers.get(int(data["brokerId"]))
            if broker is None:
                self.bad(
                    "metadata-record-invalid",
                    file,
                    offset,
                    f"BrokerRegistrationChangeRecord of unregistered broker {data['brokerId']}",
                )
                return
            fenced = int(data.get("fenced", 0))
            if fenced:
                broker.fenced = fenced == 1
            if int(data.get("inControlledShutdown", 0)):
                broker.in_controlled_shutdown = True
            if data.get("logDirs"):
                broker.log_dirs = list(data["logDirs"])
        elif kind == "FEATURE_LEVEL_RECORD":
            if int(data["featureLevel"]) == 0 and data["name"] != "metadata.version":
                img.features.pop(data["name"], None)
            else:
                img.features[data["name"]] = int(data["featureLevel"])
        elif kind == "ZK_MIGRATION_STATE_RECORD":
            img.zk_migration_state, img.zk_migration_offset = int(data["zkMigrationState"]), offset
        elif kind == "CLEAR_ELR_RECORD":
            for topic in img.topics.values():
                if not data.get("topicName") or topic.name == data["topicName"]:
                    for state in topic.partitions.values():
                        state.elr, state.last_known_elr = [], []

    @staticmethod
    def change(state: PartitionState, data: dict[str, Any], offset: int) -> None:
        for name, attribute, convert in _CHANGED_LISTS:
            value = data.get(name)
            if value is not None:  # null: no change
                setattr(state, attribute, convert(value))
        if int(data.get("leaderRecoveryState", -1)) != -1:
            state.leader_recovery_state = int(data["leaderRecoveryState"])
        leader = int(data.get("leader", NO_LEADER_CHANGE))
        if leader != NO_LEADER_CHANGE:
            state.leader = leader
            state.leader_epoch += 1
        state.partition_epoch += 1
        state.offset = offset

    def check_partition(self, state: PartitionState, topic: str, pid: int, file: str, offset: int) -> None:
        where = f"{topic}-{pid}"
        if state.leader >= 0 and state.leader not in state.replicas:
            self.bad(
                "metadata-record-invalid",
                file,
                offset,
                f"{where}: leader {state.leader} is not a replica {state.replicas}",
            )
        elif not set(state.isr) <= set(state.replicas):
            self.bad(
                "metadata-record-invalid",
                file,
                offset,
                f"{where}: ISR {state.isr} holds a broker that is not a replica {state.replicas}",
            )
        elif state.directories and len(state.directories) != len(state.replicas):
            self.bad(
                "metadata-record-invalid",
                file,
                offset,
                f"{where}: {len(state.directories)} directories for {len(state.replicas)} replicas",
            )


def _records(path: Path, start_offset: int = 0) -> Any:
    """(offset, batch, record) of every data record of a log or snapshot file, and its findings."""
    with open_buffer(path) as buf:
        batch: BatchHeader | None = None
        for ev in scan_log(buf, file=str(path), deep=True, resync=False):
            if isinstance(ev, BatchHeader):
                batch = ev
            elif isinstance(ev, Record) and batch is not None and not batch.is_control:
                if ev.offset >= start_offset:
                    yield ev.offset, batch, ev
            elif isinstance(ev, Finding):
                yield ev


def _feed(replayer: _Replayer, path: Path, start_offset: int) -> int | None:
    """Replay one file; the first offset seen (None when it holds no record at or past `start_offset`)."""
    first: int | None = None
    for item in _records(path, start_offset):
        if isinstance(item, Finding):
            replayer.image.findings.append(item)
            continue
        offset, _batch, rec = item
        if first is None:
            first = offset
        fields = metadata_record_fields(rec.value)
        if fields is not None:
            replayer.record(offset, fields[0], fields[1], str(path))
            continue
        try:  # the full decoder says why the record is not one the broker applies
            decoded = decode_with("metadata", rec.key, rec.value, is_control=False)
        except DecodeError as exc:
            replayer.bad("metadata-record-invalid", str(path), offset, f"record does not decode: {exc}")
            continue
        if not decoded.known or not isinstance(decoded.value, dict):
            replayer.bad("metadata-record-invalid", str(path), offset, f"record not known: {decoded.reason}")
            continue
        replayer.record(offset, str(decoded.value["type"]), dict(decoded.value["data"]), str(path))
    return first


def load_image(metadata_dir: Path) -> MetadataImage:
    """Replay `__cluster_metadata-0` (or a directory laid out like it) into the broker's image."""
    image = MetadataImage(str(metadata_dir))
    snapshots: list[tuple[int, Path]] = []
    segments: list[tuple[int, Path]] = []
    for p in sorted(metadata_dir.iterdir()):
        parsed = parse_segment_file_name(p.name)
        if parsed is None or parsed.suffix:
            continue
        if parsed.kind == "checkpoint":
            snapshots.append((parsed.base_offset, p))
        elif parsed.kind == "log":
            segments.append((parsed.base_offset, p))
    replayer = _Replayer(image)
    start = 0
    if snapshots:
        end, snap = max(snapshots)
        image.snapshot, image.snapshot_end_offset = str(snap), end
        _feed(replayer, snap, 0)
        image.end_offset = end
        start = end
    first_log: int | None = None
    for _, seg in sorted(segments):
        got = _feed(replayer, seg, start)
        if first_log is None:
            first_log = got
    if segments and segments[0][0] > start:
        image.findings.append(
            make_finding(
                "metadata-log-gap",
                str(segments[0][1]),
                f"the metadata log starts at offset {segments[0][0]} but "
                + (f"the newest snapshot ends at {start}" if snapshots else "there is no snapshot")
                + ": the records between are in neither, the broker cannot replay the metadata",
                offset=start,
            )
        )
    if replayer.pending is not None:
        image.findings.append(
            make_finding(
                "metadata-transaction-open",
                str(metadata_dir),
                "the metadata log ends inside a metadata transaction: its records are not applied",
                offset=image.end_offset,
            )
        )
    return image
