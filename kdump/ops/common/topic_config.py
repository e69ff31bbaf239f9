"""Topic configuration as a KRaft cluster recorded it, read from the `__cluster_metadata` log.

`reindex` and `trim-tail` need a topic's `index.interval.bytes` to rebuild its indexes exactly
as the broker did; the tiered-storage rules need its `remote.storage.enable`. In KRaft mode the
controller writes every topic config change as a `ConfigRecord` (resource type 2 = topic; a null
value removes the setting), and a `RemoveTopicRecord` deletes a topic with its configs. Replaying
the newest KRaft snapshot (`<end offset>-<epoch>.checkpoint`, the whole state at its end offset),
then the log's records from that offset on, gives the configuration in force at the end of the log.
"""

from __future__ import annotations

from pathlib import Path

from kdump.errors import DecodeError
from kdump.formats.batch import BatchHeader
from kdump.formats.filenames import parse_partition_dir_name, parse_segment_file_name
from kdump.formats.records import Record
from kdump.model.partition import PartitionDir
from kdump.scan.log_scanner import scan_log
from kdump.scan.source import open_buffer

METADATA_PARTITION = "__cluster_metadata-0"
TOPIC_RESOURCE = 2


def find_metadata_log(log_dir: Path | None) -> Path | None:
    """The `__cluster_metadata-0` directory of a log dir, if it holds one."""
    if log_dir is None:
        return None
    candidate = log_dir / METADATA_PARTITION
    return candidate if candidate.is_dir() else None


def topic_configs(metadata_partition: Path) -> dict[str, dict[str, str]]:
    """Every topic's dynamic configuration at the end of a KRaft metadata log (and its newest snapshot)."""
    configs: dict[str, dict[str, str]] = {}
    names: dict[str, str] = {}  # topic id -> name
    part = PartitionDir.load(metadata_partition)
    snapshot_end = 0
    snapshots = [(parse_segment_file_name(p.name), p) for p in part.kraft_checkpoints]
    complete = [(info.base_offset, p) for info, p in snapshots if info is not None and info.suffix == ""]
    if complete:
        snapshot_end, newest = max(complete)
        _replay(newest, configs, names, 0)
    for seg in part.segments:
        assert seg.log is not None
        _replay(seg.log, configs, names, snapshot_end)
    return configs


def _replay(path: Path, configs: dict[str, dict[str, str]], names: dict[str, str], from_offset: int) -> None:
    with open_buffer(path) as buf:
        batch: BatchHeader | None = None
        for ev in scan_log(buf, file=str(path), deep=True):
            if isinstance(ev, BatchHeader):
                batch = ev
            elif (
                isinstance(ev, Record)
                and batch is not None
                and not batch.is_control
                and batch.crc_ok
                and ev.offset >= from_offset
            ):
                _apply(ev, configs, names)


def _apply(record: Record, configs: dict[str, dict[str, str]], names: dict[str, str]) -> None:
    # The decoders of the internal topics load only when a metadata log is replayed.
    from kdump.formats.internal import decode_metadata_record

    try:
        decoded = decode_metadata_record(record.value)
    except DecodeError:
        return
    value = decoded.value or {}
    data = value.get("data") or {}
    kind = value.get("type")
    if kind == "TOPIC_RECORD":
        names[str(data.get("topicId"))] = str(data.get("name"))
    elif kind == "REMOVE_TOPIC_RECORD":
        name = names.pop(str(data.get("topicId")), None)
        if name is not None:
            configs.pop(name, None)
    elif kind == "CONFIG_RECORD" and data.get("resourceType") == TOPIC_RESOURCE:
        topic = configs.setdefault(str(data.get("resourceName")), {})
        if data.get("value") is None:
            topic.pop(str(data.get("name")), None)
        else:
            topic[str(data.get("name"))] = str(data.get("value"))


class TopicConfigs:
    """Topic configs per metadata log, each log read once (or the `--metadata-log` given, for every log dir)."""

    def __init__(self, metadata_log: Path | None = None) -> None:
        self.metadata_log = metadata_log
        self._cache: dict[Path, dict[str, dict[str, str]]] = {}

    def source(self, log_dir: Path | None) -> Path | None:
        """The metadata log that speaks for a log dir's partitions, if there is one."""
        return self.metadata_log or find_metadata_log(log_dir)

    def for_topic(self, topic: str, log_dir: Path | None) -> dict[str, str] | None:
        """The topic's dynamic configs; None when no metadata log is at hand (unknown, not empty)."""
        meta = self.source(log_dir)
        if meta is None:
            return None
        if meta not in self._cache:
            self._cache[meta] = topic_configs(meta)
        return self._cache[meta].get(topic, {})


class IntervalResolver:
    """`index.interval.bytes` per partition: given explicitly, else the topic's, else the default.

    The metadata log is read once per log dir (or once for the `--metadata-log` given).
    """

    def __init__(self, explicit: int | None, metadata_log: Path | None = None, default: int = 4096) -> None:
        self.explicit = explicit
        self.metadata_log = metadata_log
        self.default = default
        self._cache: dict[Path, dict[str, dict[str, str]]] = {}

    def for_partition(self, partition: Path, log_dir: Path | None) -> tuple[int, str]:
        """The interval for a partition directory and a sentence saying where it came from."""
        if self.explicit is not None:
            return self.explicit, "--index-interval-bytes"
        meta = self.metadata_log or find_metadata_log(log_dir)
        parsed = parse_partition_dir_name(partition.name)
        if meta is None or parsed is None:
            return self.default, "the broker default"
        if meta not in self._cache:
            self._cache[meta] = topic_configs(meta)
        value = self._cache[meta].get(parsed.topic, {}).get("index.interval.bytes")
        if value is None or not value.isdigit():
            return self.default, "the broker default (the topic does not override it)"
        return int(value), f"topic {parsed.topic}'s config in {meta}"
