"""Records of `__consumer_offsets`, the group coordinator's log, as Kafka 3.8 writes and prints them.

Every record has a key and, unless it is a tombstone, a value:

* key: `int16` record type, then the key message of that type, read *at the version equal to the type*;
* value: `int16` value version, then the value message at that version; a null value is a tombstone
  (the key's group, offset or member was deleted).

Record types Kafka 3.8 defines (key message / value message, value versions):

====  ==========================================  ================================================  ========
type  key                                          value                                             versions
====  ==========================================  ================================================  ========
0, 1  OffsetCommitKey (group, topic, partition)    OffsetCommitValue (committed offset)              0-4
2     GroupMetadataKey (group)                     GroupMetadataValue (classic group and members)    0-4
3     ConsumerGroupMetadataKey                     ConsumerGroupMetadataValue (group epoch)          0
4     ConsumerGroupPartitionMetadataKey            ConsumerGroupPartitionMetadataValue               0
5     ConsumerGroupMemberMetadataKey               ConsumerGroupMemberMetadataValue                  0
6     ConsumerGroupTargetAssignmentMetadataKey     ConsumerGroupTargetAssignmentMetadataValue        0
7     ConsumerGroupTargetAssignmentMemberKey       ConsumerGroupTargetAssignmentMemberValue          0
8     ConsumerGroupCurrentMemberAssignmentKey      ConsumerGroupCurrentMemberAssignmentValue         0
====  ==========================================  ================================================  ========

Types 3-8 are the KIP-848 consumer groups. Types 0 and 1 are two versions of the same offset commit key
(identical layout; brokers write 1).
OffsetCommitValue and GroupMetadataValue become flexible (compact strings, tagged fields) at version 4; the
KIP-848 values are flexible from version 0.

In GroupMetadataValue of a group whose `protocolType` is `consumer`, each member's `subscription` and
`assignment` bytes hold the consumer protocol's embedded messages: `int16` version, then
ConsumerProtocolSubscription (topics, user data, owned partitions, generation, rack; versions 0-3) or
ConsumerProtocolAssignment (partitions, user data; versions 0-3). Both are read leniently, as Kafka does: a
newer version is read as version 3.

Decoded form (`decode_offsets_record`, see `decoded.DecodedRecord` for the envelope):

* `key`: `{"type": "<type>", "data": {<key fields>}}` (the type as a string, as the oracle prints it);
* `value`: `{"version": "<version>", "data": {<value fields>}}`, or null for a tombstone;
* the data dicts are the JSON view of `schema.decode_message` (camelCase field names in schema order,
  bytes as base64, uuids as Kafka's 22-character strings, absent fields left out);
* for a `consumer` group, a member's `subscription` and `assignment` are replaced by the decoded embedded
  message (`{"topics": [...], "userData": ..., "ownedPartitions": [...], "generationId": ..., "rackId": ...}`
  and `{"assignedPartitions": [{"topic": ..., "partitions": [...]}], "userData": ...}`) and stay base64
  strings when they do not decode.

The oracle text is `kafka-dump-log.sh --offsets-decoder` of Kafka 3.8 (KAFKA-16470): ` key: <key JSON>
payload: <value JSON>` or ` payload: <DELETE>`; for an unknown type ` key: Unknown record type N at offset O,
skipping.`. A record without a key aborts Kafka's dump: here it raises `CorruptFieldError`.

An unknown record type or value version gives status "unknown" with the raw bytes. For an unknown value
version Kafka 3.8 does not fail: it reads the bytes as its nearest known version, and the oracle text shows
that reading. Bytes after a key or value message are ignored by Kafka; they are counted in `trailingBytes`.
"""

from __future__ import annotations

import base64
import struct
from typing import Any, Final

from kdump.errors import CorruptFieldError, DecodeError, TruncatedError
from kdump.formats.internal.decoded import DecodedRecord, OracleText, escape_template
from kdump.formats.internal.schema import (
    BYTES,
    INT8,
    INT32,
    INT64,
    STRING,
    UUID,
    ArrayOf,
    Buffer,
    DecodedMessage,
    MessageType,
    decode_message,
    fld,
    kafka_json,
    message,
    struct_of,
)

_I16 = struct.Struct(">h")

# ------------------------------------------------------------------------------------ consumer protocol

_PROTOCOL_TOPIC_PARTITION_V1 = struct_of(
    "TopicPartition",
    fld("topic", STRING, "1+"),
    fld("partitions", ArrayOf(INT32), "1+"),
    vers="1+",
)

CONSUMER_PROTOCOL_SUBSCRIPTION: Final = message(
    "ConsumerProtocolSubscription",
    "0-3",
    "none",
    fld("topics", ArrayOf(STRING)),
    fld("userData", BYTES, nullable="0+", default=None),
    fld("ownedPartitions", ArrayOf(_PROTOCOL_TOPIC_PARTITION_V1), "1+"),
    fld("generationId", INT32, "2+", default=-1),
    fld("rackId", STRING, "3+", nullable="3+", default=None),
)

CONSUMER_PROTOCOL_ASSIGNMENT: Final = message(
    "ConsumerProtocolAssignment",
    "0-3",
    "none",
    fld(
        "assignedPartitions",
        ArrayOf(struct_of("TopicPartition", fld("topic", STRING), fld("partitions", ArrayOf(INT32)))),
    ),
    fld("userData", BYTES, nullable="0+", default=None),
)

CONSUMER_PROTOCOL_TYPE: Final = "consumer"

# ------------------------------------------------------------------------------------------ record types

OFFSET_COMMIT_KEY: Final = message(
    "OffsetCommitKey",
    "0-1",
    "none",
    fld("group", STRING, "0-1"),
    fld("topic", STRING, "0-1"),
    fld("partition", INT32, "0-1"),
)

OFFSET_COMMIT_VALUE: Final = message(
    "OffsetCommitValue",
    "0-4",
    "4+",
    fld("offset", INT64),
    fld("leaderEpoch", INT32, "3+", default=-1),
    fld("metadata", STRING),
    fld("commitTimestamp", INT64),
    fld("expireTimestamp", INT64, "1", default=-1),
)

GROUP_METADATA_KEY: Final = message("GroupMetadataKey", "2", "none", fld("group", STRING, "2"))

_MEMBER_METADATA = struct_of(
    "MemberMetadata",
    fld("memberId", STRING),
    fld("groupInstanceId", STRING, "3+", nullable="3+", default=None),
    fld("clientId", STRING),
    fld("clientHost", STRING),
    fld("rebalanceTimeout", INT32, "1+", default=-1),
    fld("sessionTimeout", INT32),
    fld("subscription", BYTES),
    fld("assignment", BYTES),
    common=True,
)

GROUP_METADATA_VALUE: Final = message(
    "GroupMetadataValue",
    "0-4",
    "4+",
    fld("protocolType", STRING),
    fld("generation", INT32),
    fld("protocol", STRING, nullable="0+"),
    fld("leader", STRING, nullable="0+"),
    fld("currentStateTimestamp", INT64, "2+", default=-1),
    fld("members", ArrayOf(_MEMBER_METADATA)),
)

CONSUMER_GROUP_METADATA_KEY: Final = message(
    "ConsumerGroupMetadataKey", "3", "none", fld("groupId", STRING, "3")
)

CONSUMER_GROUP_METADATA_VALUE: Final = message("ConsumerGroupMetadataValue", "0", "0+", fld("epoch", INT32))

CONSUMER_GROUP_PARTITION_METADATA_KEY: Final = message(
    "ConsumerGroupPartitionMetadataKey", "4", "none", fld("groupId", STRING, "4")
)

CONSUMER_GROUP_PARTITION_METADATA_VALUE: Final = message(
    "ConsumerGroupPartitionMetadataValue",
    "0",
    "0+",
    fld(
        "topics",
        ArrayOf(
            struct_of(
                "TopicMetadata",
                fld("topicId", UUID),
                fld("topicName", STRING),
                fld("numPartitions", INT32),
                fld(
                    "partitionMetadata",
                    ArrayOf(
                        struct_of("PartitionMetadata", fld("partition", INT32), fld("racks", ArrayOf(STRING)))
                    ),
                ),
            )
        ),
    ),
)

CONSUMER_GROUP_MEMBER_METADATA_KEY: Final = message(
    "ConsumerGroupMemberMetadataKey", "5", "none", fld("groupId", STRING, "5"), fld("memberId", STRING, "5")
)

CONSUMER_GROUP_MEMBER_METADATA_VALUE: Final = message(
    "ConsumerGroupMemberMetadataValue",
    "0",
    "0+",
    fld("instanceId", STRING, nullable="0+"),
    fld("rackId", STRING, nullable="0+"),
    fld("clientId", STRING),
    fld("clientHost", STRING),
    fld("subscribedTopicNames", ArrayOf(STRING)),
    fld("subscribedTopicRegex", STRING, nullable="0+"),
    fld("rebalanceTimeoutMs", INT32, default=-1),
    fld("serverAssignor", STRING, nullable="0+"),
    fld(
        "classicMemberMetadata",
        struct_of(
            "ClassicMemberMetadata",
            fld("sessionTimeoutMs", INT32),
            fld(
                "supportedProtocols",
                ArrayOf(struct_of("ClassicProtocol", fld("name", STRING), fld("metadata", BYTES))),
            ),
        ),
        nullable="0+",
        tagged="0+",
        tag=0,
        default=None,
    ),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY: Final = message(
    "ConsumerGroupTargetAssignmentMetadataKey", "6", "none", fld("groupId", STRING, "6")
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE: Final = message(
    "ConsumerGroupTargetAssignmentMetadataValue", "0", "0+", fld("assignmentEpoch", INT32)
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY: Final = message(
    "ConsumerGroupTargetAssignmentMemberKey",
    "7",
    "none",
    fld("groupId", STRING, "7"),
    fld("memberId", STRING, "7"),
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE: Final = message(
    "ConsumerGroupTargetAssignmentMemberValue",
    "0",
    "0+",
    fld(
        "topicPartitions",
        ArrayOf(struct_of("TopicPartition", fld("topicId", UUID), fld("partitions", ArrayOf(INT32)))),
    ),
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY: Final = message(
    "ConsumerGroupCurrentMemberAssignmentKey",
    "8",
    "none",
    fld("groupId", STRING, "8"),
    fld("memberId", STRING, "8"),
)

_TOPIC_PARTITIONS = struct_of(
    "TopicPartitions", fld("topicId", UUID), fld("partitions", ArrayOf(INT32)), common=True
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE: Final = message(
    "ConsumerGroupCurrentMemberAssignmentValue",
    "0",
    "0+",
    fld("memberEpoch", INT32),
    fld("previousMemberEpoch", INT32),
    fld("state", INT8),
    fld("assignedPartitions", ArrayOf(_TOPIC_PARTITIONS)),
    fld("partitionsPendingRevocation", ArrayOf(_TOPIC_PARTITIONS)),
)

RECORD_TYPES: Final[dict[int, tuple[str, MessageType, MessageType]]] = {
    0: ("OffsetCommit", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    1: ("OffsetCommit", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    2: ("GroupMetadata", GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    3: ("ConsumerGroupMetadata", CONSUMER_GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_VALUE),
    4: (
        "ConsumerGroupPartitionMetadata",
        CONSUMER_GROUP_PARTITION_METADATA_KEY,
        CONSUMER_GROUP_PARTITION_METADATA_VALUE,
    ),
    5: (
        "ConsumerGroupMemberMetadata",
        CONSUMER_GROUP_MEMBER_METADATA_KEY,
        CONSUMER_GROUP_MEMBER_METADATA_VALUE,
    ),
    6: (
        "ConsumerGroupTargetAssignmentMetadata",
        CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
        CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    ),
    7: (
        "ConsumerGroupTargetAssignmentMember",
        CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
        CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    ),
    8: (
        "ConsumerGroupCurrentMemberAssignment",
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
        CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    ),
}
"""Record type -> (name, key message, value message), as Kafka 3.8's CoordinatorRecordSerde maps them."""


# ---------------------------------------------------------------------------------------------- decoding


def decode_consumer_protocol(data: bytes, *, assignment: bool) -> dict[str, Any] | None:
    """Decode an embedded consumer-protocol subscription or assignment (`int16` version + message).

    Returns the JSON view, or None where Kafka's decoder fails and keeps the base64 (too short, or a
    message that does not decode at its version, read leniently).
    """
    if len(data) < 2:
        return None
    version: int = _I16.unpack_from(data, 0)[0]
    msg = CONSUMER_PROTOCOL_ASSIGNMENT if assignment else CONSUMER_PROTOCOL_SUBSCRIPTION
    try:
        return decode_message(msg, data, version, pos=2, lenient=True).data
    except DecodeError:
        return None


def expand_consumer_protocol(value_data: dict[str, Any]) -> None:
    """Replace, in place, the members' subscription and assignment of a `consumer` GroupMetadataValue."""
    if value_data.get("protocolType") != CONSUMER_PROTOCOL_TYPE:
        return
    for member in value_data.get("members", ()):
        for name, is_assignment in (("subscription", False), ("assignment", True)):
            encoded = member.get(name)
            if not isinstance(encoded, str):
                continue
            decoded = decode_consumer_protocol(base64.b64decode(encoded), assignment=is_assignment)
            if decoded is not None:
                member[name] = decoded


def _read_version(buf: bytes, name: str) -> int:
    if len(buf) < 2:
        raise TruncatedError(f"Could not read version from {name}'s buffer.")
    version: int = _I16.unpack_from(buf, 0)[0]
    return version


def _decode_part(
    msg: MessageType, buf: bytes, version: int, name: str, *, lenient: bool = False
) -> DecodedMessage:
    try:
        decoded = decode_message(msg, buf, version, pos=2, lenient=lenient)
    except DecodeError as exc:
        raise type(exc)(
            f"Could not read record with version {version} from {name}'s buffer due to: {exc}."
        ) from exc
    if msg is GROUP_METADATA_VALUE:
        expand_consumer_protocol(decoded.data)
    return decoded


def decode_offsets_record(key: Buffer | None, value: Buffer | None) -> DecodedRecord:
    """Decode one `__consumer_offsets` record from its key and value bytes (None: null).

    Unknown record types and value versions give a result with status "unknown" and the raw bytes;
    bytes that do not decode raise `DecodeError` (a missing key: `CorruptFieldError`).
    """
    if key is None:
        raise CorruptFieldError("a __consumer_offsets record without a key (message had a missing key)")
    key_bytes = bytes(key)
    value_bytes = None if value is None else bytes(value)
    record_type = _read_version(key_bytes, "key")
    entry = RECORD_TYPES.get(record_type)
    if entry is None:
        return DecodedRecord(
            decoder="consumer_offsets",
            status="unknown",
            record=None,
            key=None,
            value=None,
            oracle=OracleText(
                key_template=f"Unknown record type {record_type} at offset {{offset}}, skipping."
            ),
            reason=f"record type {record_type} is not one Kafka 3.8 defines",
            raw_key=key_bytes,
            raw_value=value_bytes,
        )
    name, key_msg, value_msg = entry
    decoded_key = _decode_part(key_msg, key_bytes, record_type, "key")
    key_dict: dict[str, Any] = {"type": str(record_type), "data": decoded_key.data}
    key_text = kafka_json(key_dict)
    common: dict[str, Any] = {
        "decoder": "consumer_offsets",
        "record": name,
        "key": key_dict,
        "key_unknown_tagged_fields": decoded_key.unknown_tagged_fields,
        "key_trailing_bytes": len(key_bytes) - decoded_key.end,
    }
    if value_bytes is None:
        return DecodedRecord(
            status="tombstone", value=None, oracle=OracleText(key=key_text, payload="<DELETE>"), **common
        )
    version = _read_version(value_bytes, "value")
    if version not in value_msg.valid:
        return DecodedRecord(
            status="unknown",
            value=None,
            oracle=_lenient_oracle(key_text, value_msg, value_bytes, version),
            reason=f"{value_msg.name} version {version} is not one Kafka 3.8 knows ({value_msg.valid})",
            raw_key=key_bytes,
            raw_value=value_bytes,
            **common,
        )
    decoded_value = _decode_part(value_msg, value_bytes, version, "value")
    value_dict: dict[str, Any] = {"version": str(version), "data": decoded_value.data}
    return DecodedRecord(
        status="ok",
        value=value_dict,
        oracle=OracleText(key=key_text, payload=kafka_json(value_dict)),
        value_unknown_tagged_fields=decoded_value.unknown_tagged_fields,
        value_trailing_bytes=len(value_bytes) - decoded_value.end,
        **common,
    )


def _lenient_oracle(key_text: str, msg: MessageType, value: bytes, version: int) -> OracleText:
    """What Kafka 3.8 prints for a value version it does not know: it reads it as the nearest known one."""
    try:
        decoded = _decode_part(msg, value, version, "value", lenient=True)
    except DecodeError as exc:
        return OracleText(key_template="Error at offset {offset}, skipping. " + escape_template(str(exc)))
    return OracleText(key=key_text, payload=kafka_json({"version": str(version), "data": decoded.data}))
