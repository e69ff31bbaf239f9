"""Records of `__remote_log_metadata`, where the topic-based RemoteLogMetadataManager of tiered storage keeps
which segment of which partition was copied to (and deleted from) the remote store.

A record has no key; its value is a frame like a KRaft metadata record's (`RemoteLogMetadataSerde`):
`uvarint` frame version (1), `uvarint` api key, `uvarint` record version, then the message, flexible
(compact strings and arrays, tagged fields), with nothing after it. The messages (all version 0):

==  ============================================  ================================================
 0  RemoteLogSegmentMetadataRecord                a segment copy started (state 0), with its id,
                                                  offsets, leader epochs, size and max timestamp
 1  RemoteLogSegmentMetadataUpdateRecord          a segment's state changed (copy finished, delete
                                                  started, delete finished)
 2  RemotePartitionDeleteMetadataRecord           a whole partition's remote data is being deleted
 3  RemoteLogSegmentMetadataSnapshotRecord        a segment's state in a metadata snapshot file
==  ============================================  ================================================

`remoteLogSegmentState` ids: 0 COPY_SEGMENT_STARTED, 1 COPY_SEGMENT_FINISHED, 2 DELETE_SEGMENT_STARTED,
3 DELETE_SEGMENT_FINISHED. `remotePartitionDeleteState` ids: 0 DELETE_PARTITION_MARKED,
1 DELETE_PARTITION_STARTED, 2 DELETE_PARTITION_FINISHED. `txnIndexEmpty` (tag 0) was added in Kafka 4.0.

Decoded form (`decode_remote_log_metadata_record`, see `decoded.DecodedRecord` for the envelope): `key` is
null and `value` is `{"type": "<NAME>", "version": 0, "data": {<fields>}, "state": "<state name>"}`, the
JSON view of `schema.decode_message` (Kafka's field names in camelCase, uuids as Kafka's 22-character
strings, `customMetadata` as base64 or null).

The text (`oracle_suffix`) is what `kafka-dump-log.sh --remote-log-metadata-decoder` prints: ` payload: `
and the `toString()` of the object Kafka builds from the record, e.g. `RemoteLogSegmentMetadata{
remoteLogSegmentId=RemoteLogSegmentId{topicIdPartition=<topic id>:<topic>-<partition>, id=<segment id>},
startOffset=0, ..., segmentLeaderEpochs={0=0, 2=190}, ..., customMetadata=Optional.empty,
state=COPY_SEGMENT_STARTED, txnIdxEmpty=true}` (Kafka 4.x; 3.9 prints no `txnIdxEmpty`:
`format_payload(..., txn_index_empty=False)`). Where Kafka cannot build the object (an unknown frame,
record type, version or state, a negative start offset, an end before the start, no leader epochs) it
prints `Error at offset <n>, skipping. <why>`; kdump gives status "unknown" and keeps the raw bytes.
"""

from __future__ import annotations

from typing import Any, Final

from kdump.errors import CorruptFieldError, DecodeError
from kdump.formats.internal.decoded import DecodedRecord, OracleText, escape_template
from kdump.formats.internal.schema import (
    BOOL,
    BYTES,
    INT8,
    INT32,
    INT64,
    STRING,
    UUID,
    ArrayOf,
    Buffer,
    MessageType,
    Reader,
    decode_message,
    fld,
    message,
    struct_of,
)

FRAME_VERSION: Final = 1

_TOPIC_ID_PARTITION = struct_of(
    "TopicIdPartitionEntry", fld("name", STRING), fld("id", UUID), fld("partition", INT32)
)
_SEGMENT_ID = struct_of(
    "RemoteLogSegmentIdEntry", fld("topicIdPartition", _TOPIC_ID_PARTITION), fld("id", UUID)
)
_LEADER_EPOCH = struct_of("SegmentLeaderEpochEntry", fld("leaderEpoch", INT32), fld("offset", INT64))
_CUSTOM_METADATA = fld("customMetadata", BYTES, nullable="0+", default=None)
_TXN_INDEX_EMPTY = fld("txnIndexEmpty", BOOL, tagged="0+", tag=0)

REMOTE_LOG_SEGMENT_METADATA_RECORD: Final = message(
    "RemoteLogSegmentMetadataRecord",
    "0",
    "0+",
    fld("remoteLogSegmentId", _SEGMENT_ID),
    fld("startOffset", INT64),
    fld("endOffset", INT64),
    fld("brokerId", INT32),
    fld("maxTimestampMs", INT64),
    fld("eventTimestampMs", INT64),
    fld("segmentLeaderEpochs", ArrayOf(_LEADER_EPOCH)),
    fld("segmentSizeInBytes", INT32),
    _CUSTOM_METADATA,
    fld("remoteLogSegmentState", INT8),
    _TXN_INDEX_EMPTY,
    api_key=0,
)

REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD: Final = message(
    "RemoteLogSegmentMetadataUpdateRecord",
    "0",
    "0+",
    fld("remoteLogSegmentId", _SEGMENT_ID),
    fld("brokerId", INT32),
    fld("eventTimestampMs", INT64),
    _CUSTOM_METADATA,
    fld("remoteLogSegmentState", INT8),
    api_key=1,
)

REMOTE_PARTITION_DELETE_METADATA_RECORD: Final = message(
    "RemotePartitionDeleteMetadataRecord",
    "0",
    "0+",
    fld("topicIdPartition", _TOPIC_ID_PARTITION),
    fld("brokerId", INT32),
    fld("eventTimestampMs", INT64),
    fld("remotePartitionDeleteState", INT8),
    api_key=2,
)

REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD: Final = message(
    "RemoteLogSegmentMetadataSnapshotRecord",
    "0",
    "0+",
    fld("segmentId", UUID),
    fld("startOffset", INT64),
    fld("endOffset", INT64),
    fld("brokerId", INT32),
    fld("maxTimestampMs", INT64),
    fld("eventTimestampMs", INT64),
    fld("segmentLeaderEpochs", ArrayOf(_LEADER_EPOCH)),
    fld("segmentSizeInBytes", INT32),
    _CUSTOM_METADATA,
    fld("remoteLogSegmentState", INT8),
    _TXN_INDEX_EMPTY,
    api_key=3,
)

MESSAGES: Final[dict[int, tuple[str, MessageType]]] = {
    0: ("REMOTE_LOG_SEGMENT_METADATA_RECORD", REMOTE_LOG_SEGMENT_METADATA_RECORD),
    1: ("REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD", REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD),
    2: ("REMOTE_PARTITION_DELETE_METADATA_RECORD", REMOTE_PARTITION_DELETE_METADATA_RECORD),
    3: ("REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD", REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD),
}
"""Api key -> (Kafka's MetadataRecordType name, table)."""

SEGMENT_STATES: Final[dict[int, str]] = {
    0: "COPY_SEGMENT_STARTED",
    1: "COPY_SEGMENT_FINISHED",
    2: "DELETE_SEGMENT_STARTED",
    3: "DELETE_SEGMENT_FINISHED",
}
PARTITION_DELETE_STATES: Final[dict[int, str]] = {
    0: "DELETE_PARTITION_MARKED",
    1: "DELETE_PARTITION_STARTED",
    2: "DELETE_PARTITION_FINISHED",
}


class _Refused(Exception):
    """Kafka's tool cannot build the object: the message it prints after `skipping.`."""


# ------------------------------------------------------------------------------------------------- the text


def _topic_id_partition(tip: dict[str, Any]) -> str:
    return f"{tip['id']}:{tip['name']}-{tip['partition']}"


def _segment_id(sid: dict[str, Any]) -> str:
    return f"RemoteLogSegmentId{{topicIdPartition={_topic_id_partition(sid['topicIdPartition'])}, id={sid['id']}}}"


def _epochs(entries: list[dict[str, Any]]) -> str:
    # A Java TreeMap built by put(): the last entry of an epoch wins, printed in epoch order.
    by_epoch = {e["leaderEpoch"]: e["offset"] for e in entries}
    return "{" + ", ".join(f"{k}={by_epoch[k]}" for k in sorted(by_epoch)) + "}"


def _custom(value: str | None) -> str:
    if value is None:
        return "Optional.empty"
    size = len(value) * 3 // 4 - value[-2:].count("=")
    return f"Optional[CustomMetadata{{{size} bytes}}]"


def _segment_state(data: dict[str, Any]) -> str:
    state = SEGMENT_STATES.get(data["remoteLogSegmentState"])
    if state is None:
        raise _Refused("state can not be null")
    return state


def _check_epochs(data: dict[str, Any]) -> None:
    if not data["segmentLeaderEpochs"]:
        raise _Refused("segmentLeaderEpochs can not be null or empty")


def _txn(data: dict[str, Any], txn_index_empty: bool) -> str:
    return f", txnIdxEmpty={str(data.get('txnIndexEmpty', False)).lower()}" if txn_index_empty else ""


def format_payload(api_key: int, data: dict[str, Any], *, txn_index_empty: bool = True) -> str:
    """The `toString()` Kafka's tool prints for a decoded record (`txn_index_empty=False`: Kafka 3.9's).

    Raises `_Refused` where Kafka cannot build the object.
    """
    if api_key == 0:
        start, end = data["startOffset"], data["endOffset"]
        if start < 0:
            raise _Refused(
                f"Unexpected start offset = {start}. StartOffset for a remote segment cannot be negative"
            )
        if end < start:
            raise _Refused(
                f"Unexpected end offset = {end}. EndOffset for a remote segment cannot be less than startOffset = {start}"
            )
        _check_epochs(data)
        state = _segment_state(data)
        return (
            f"RemoteLogSegmentMetadata{{remoteLogSegmentId={_segment_id(data['remoteLogSegmentId'])}, "
            f"startOffset={start}, endOffset={end}, brokerId={data['brokerId']}, "
            f"maxTimestampMs={data['maxTimestampMs']}, eventTimestampMs={data['eventTimestampMs']}, "
            f"segmentLeaderEpochs={_epochs(data['segmentLeaderEpochs'])}, "
            f"segmentSizeInBytes={data['segmentSizeInBytes']}, customMetadata={_custom(data['customMetadata'])}, "
            f"state={state}{_txn(data, txn_index_empty)}}}"
        )
    if api_key == 1:
        state = _segment_state(data)
        return (
            f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={_segment_id(data['remoteLogSegmentId'])}, "
            f"customMetadata={_custom(data['customMetadata'])}, state={state}, "
            f"eventTimestampMs={data['eventTimestampMs']}, brokerId={data['brokerId']}}}"
        )
    if api_key == 2:
        delete_state = PARTITION_DELETE_STATES.get(data["remotePartitionDeleteState"])
        if delete_state is None:
            raise _Refused("null")  # Objects.requireNonNull(state) has no message
        return (
            f"RemotePartitionDeleteMetadata{{topicPartition={_topic_id_partition(data['topicIdPartition'])}, "
            f"state={delete_state}, eventTimestampMs={data['eventTimestampMs']}, brokerId={data['brokerId']}}}"
        )
    state = _segment_state(data)
    _check_epochs(data)
    return (
        f"RemoteLogSegmentMetadataSnapshot{{segmentId={data['segmentId']}, startOffset={data['startOffset']}, "
        f"endOffset={data['endOffset']}, maxTimestampMs={data['maxTimestampMs']}, "
        f"segmentLeaderEpochs={_epochs(data['segmentLeaderEpochs'])}, "
        f"segmentSizeInBytes={data['segmentSizeInBytes']}, customMetadata={_custom(data['customMetadata'])}, "
        f"state={state}{_txn(data, txn_index_empty)}}}"
    )


# ------------------------------------------------------------------------------------------------ decoding


def _frame_short(reader: Reader, entity: str) -> int:
    value = reader.uvarint(f"remote log metadata {entity}")
    if value > 0x7FFF:
        raise _Refused(f"Value for {entity} was too large.")
    return value


def _unknown(
    data: bytes, reason: str, why: str, *, name: str | None = None, value: Any = None
) -> DecodedRecord:
    return DecodedRecord(
        decoder="remote_log_metadata",
        status="unknown",
        record=name,
        key=None,
        value=value,
        oracle=OracleText(payload_template="Error at offset {offset}, skipping. " + escape_template(why)),
        reason=reason,
        raw_value=data,
    )


def decode_remote_log_metadata_record(value: Buffer | None) -> DecodedRecord:
    """Decode the value of one `__remote_log_metadata` record.

    What Kafka's tool refuses (an unknown frame, type, version or state id, offsets or leader epochs a
    segment cannot have, bytes after the message) gives status "unknown", the raw value, and the text
    Kafka prints; bytes that do not decode at all raise `DecodeError`.
    """
    if value is None:
        raise CorruptFieldError("a __remote_log_metadata record without a value")
    data = bytes(value)
    reader = Reader(data)
    try:
        frame = _frame_short(reader, "frame version")
        if frame == 0:
            raise _Refused(
                "Could not deserialize metadata record with frame version 0. Note that upgrades from the "
                "preview release of KRaft in 2.8 to newer versions are not supported."
            )
        if frame != FRAME_VERSION:
            raise _Refused(
                f"Could not deserialize metadata record due to unknown frame version {frame}"
                f"(only frame version {FRAME_VERSION} is supported)"
            )
        api_key = _frame_short(reader, "type")
        version = _frame_short(reader, "version")
    except _Refused as exc:
        return _unknown(data, f"remote log metadata frame: {exc}", str(exc))
    entry = MESSAGES.get(api_key)
    if entry is None:
        return _unknown(
            data,
            f"remote log metadata record type {api_key} is not one Kafka defines",
            f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id {api_key}",
        )
    name, msg = entry
    if version not in msg.valid:
        return _unknown(
            data,
            f"{msg.name} version {version} is not one Kafka defines ({msg.valid})",
            f"Failed to deserialize record with type {api_key}",
            name=msg.name,
        )
    try:
        decoded = decode_message(msg, data, version, pos=reader.pos)
    except DecodeError as exc:
        raise type(exc)(
            f"Failed to deserialize record with type {api_key} ({msg.name} v{version}): {exc}"
        ) from exc
    state_ids = SEGMENT_STATES if api_key != 2 else PARTITION_DELETE_STATES
    state_field = "remoteLogSegmentState" if api_key != 2 else "remotePartitionDeleteState"
    value_dict: dict[str, Any] = {
        "type": name,
        "version": version,
        "data": decoded.data,
        "state": state_ids.get(decoded.data[state_field]),
    }
    if decoded.end < len(data):
        garbage = len(data) - decoded.end
        return _unknown(
            data,
            f"{garbage} byte(s) after the {msg.name}",
            f"Found {garbage} byte(s) of garbage after {api_key}",
            name=msg.name,
            value=value_dict,
        )
    try:
        text = format_payload(api_key, decoded.data)
        text3 = format_payload(api_key, decoded.data, txn_index_empty=False)
    except _Refused as exc:
        return _unknown(
            data, f"Kafka refuses this {msg.name}: {exc}", str(exc), name=msg.name, value=value_dict
        )
    return DecodedRecord(
        decoder="remote_log_metadata",
        status="ok",
        record=msg.name,
        key=None,
        value=value_dict,
        # Kafka 3.9's tool (3.x style) prints no txnIdxEmpty; 4.x's does.
        oracle=OracleText(payload=text3),
        oracle4=OracleText(payload=text),
        value_unknown_tagged_fields=decoded.unknown_tagged_fields,
    )
