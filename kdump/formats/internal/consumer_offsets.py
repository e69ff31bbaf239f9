"""Records of `__consumer_offsets`, the group coordinator's log, as Kafka 3.0-4.4 write them and print them.

Every record has a key and, unless it is a tombstone, a value:

* key: `int16` record type, then the key message of that type (the same bytes whichever version Kafka reads
  it at: 3.x reads at the record type, 4.x at 0);
* value: `int16` value version, then the value message at that version; a null value is a tombstone
  (the key's group, offset or member was deleted).

Record types (key and value messages; tables in `offsets_tables` and `share_streams_tables`):

====  ======================================  ======================================================
type  record                                  what
====  ======================================  ======================================================
0, 1  LegacyOffsetCommit, OffsetCommit        a committed offset (1 is what brokers write; value 0-4)
2     GroupMetadata                           a classic group and its members (value 0-4)
3-8   ConsumerGroup*                          KIP-848 consumer groups: metadata, subscribed topics'
                                              metadata, members, target assignment, current assignment
9     ShareGroupPartitionMetadata             share groups, Kafka 3.9-4.0 only (early access)
10-15 ShareGroup*                             share groups: members, metadata, target assignment,
                                              current assignment, state partitions (KIP-932)
16    ConsumerGroupRegularExpression          a regex subscription's resolved topics (KIP-848)
17,   StreamsGroup*                           streams groups (KIP-1071): metadata, members, target
19-23                                         assignment, current assignment, topology
====  ======================================  ======================================================

Decoded form (`decode_offsets_record`, see `decoded.DecodedRecord` for the envelope):

* `key`: `{"type": "<type>", "data": {<key fields>}}` (the type as a string, as Kafka's tool prints it);
* `value`: `{"version": "<version>", "data": {<value fields>}}`, or null for a tombstone;
* the data dicts are the JSON view of `schema.decode_message` (Kafka's camelCase field names in schema
  order, bytes as base64, uuids as Kafka's 22-character strings, tagged fields when not at their default);
* for a `consumer` group, a member's `subscription` and `assignment` are replaced by the decoded embedded
  consumer protocol message (ConsumerProtocolSubscription / Assignment, versions 0-3, read leniently as
  Kafka does) and stay base64 strings when they do not decode.

The oracle texts are `kafka-dump-log.sh --offsets-decoder`'s: ` key: <key JSON> payload: <value JSON>` or
` payload: <DELETE>`; ` key: Unknown record type N at offset O, skipping.` for a type the tool does not
know (3.x: types above 8). For a value version beyond the table, Kafka 3.x reads the bytes as its nearest
version; Kafka 4.x prints ` key: Error at offset O, skipping. Found an unknown record version V for T type`.
A record without a key aborts Kafka's dump: here it raises `CorruptFieldError`.

An unknown record type or value version gives status "unknown" with the raw bytes. Bytes after a key or
value message are ignored by Kafka; they are counted in `trailingBytes`.
"""

from __future__ import annotations

import base64
import struct
from typing import Any, Final

import kdump.formats.internal.offsets_tables as t
import kdump.formats.internal.share_streams_tables as s
from kdump.errors import CorruptFieldError, DecodeError, TruncatedError
from kdump.formats.internal.decoded import DecodedRecord, OracleText, escape_template
from kdump.formats.internal.releases import KafkaRelease, parse_release
from kdump.formats.internal.schema import Buffer, DecodedMessage, MessageType, decode_message, kafka_json

_I16 = struct.Struct(">h")

# Names other modules and tests used before the tables moved.
CONSUMER_PROTOCOL_SUBSCRIPTION: Final = t.CONSUMER_PROTOCOL_SUBSCRIPTION
CONSUMER_PROTOCOL_ASSIGNMENT: Final = t.CONSUMER_PROTOCOL_ASSIGNMENT
OFFSET_COMMIT_KEY: Final = t.OFFSET_COMMIT_KEY
OFFSET_COMMIT_VALUE: Final = t.OFFSET_COMMIT_VALUE
GROUP_METADATA_KEY: Final = t.GROUP_METADATA_KEY
GROUP_METADATA_VALUE: Final = t.GROUP_METADATA_VALUE

CONSUMER_PROTOCOL_TYPE: Final = "consumer"

RECORD_TYPES: Final[dict[int, tuple[str, MessageType, MessageType]]] = {
    0: ("LegacyOffsetCommit", t.LEGACY_OFFSET_COMMIT_KEY, t.LEGACY_OFFSET_COMMIT_VALUE),
    1: ("OffsetCommit", t.OFFSET_COMMIT_KEY, t.OFFSET_COMMIT_VALUE),
    2: ("GroupMetadata", t.GROUP_METADATA_KEY, t.GROUP_METADATA_VALUE),
    3: ("ConsumerGroupMetadata", t.CONSUMER_GROUP_METADATA_KEY, t.CONSUMER_GROUP_METADATA_VALUE),
    4: (
        "ConsumerGroupPartitionMetadata",
        t.CONSUMER_GROUP_PARTITION_METADATA_KEY,
        t.CONSUMER_GROUP_PARTITION_METADATA_VALUE,
    ),
    5: (
        "ConsumerGroupMemberMetadata",
        t.CONSUMER_GROUP_MEMBER_METADATA_KEY,
        t.CONSUMER_GROUP_MEMBER_METADATA_VALUE,
    ),
    6: (
        "ConsumerGroupTargetAssignmentMetadata",
        t.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
        t.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    ),
    7: (
        "ConsumerGroupTargetAssignmentMember",
        t.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
        t.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    ),
    8: (
        "ConsumerGroupCurrentMemberAssignment",
        t.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
        t.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    ),
    9: (
        "ShareGroupPartitionMetadata",
        s.SHARE_GROUP_PARTITION_METADATA_KEY,
        s.SHARE_GROUP_PARTITION_METADATA_VALUE,
    ),
    10: ("ShareGroupMemberMetadata", s.SHARE_GROUP_MEMBER_METADATA_KEY, s.SHARE_GROUP_MEMBER_METADATA_VALUE),
    11: ("ShareGroupMetadata", s.SHARE_GROUP_METADATA_KEY, s.SHARE_GROUP_METADATA_VALUE),
    12: (
        "ShareGroupTargetAssignmentMetadata",
        s.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
        s.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    ),
    13: (
        "ShareGroupTargetAssignmentMember",
        s.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
        s.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    ),
    14: (
        "ShareGroupCurrentMemberAssignment",
        s.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
        s.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    ),
    15: (
        "ShareGroupStatePartitionMetadata",
        s.SHARE_GROUP_STATE_PARTITION_METADATA_KEY,
        s.SHARE_GROUP_STATE_PARTITION_METADATA_VALUE,
    ),
    16: (
        "ConsumerGroupRegularExpression",
        t.CONSUMER_GROUP_REGULAR_EXPRESSION_KEY,
        t.CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE,
    ),
    17: ("StreamsGroupMetadata", s.STREAMS_GROUP_METADATA_KEY, s.STREAMS_GROUP_METADATA_VALUE),
    19: (
        "StreamsGroupMemberMetadata",
        s.STREAMS_GROUP_MEMBER_METADATA_KEY,
        s.STREAMS_GROUP_MEMBER_METADATA_VALUE,
    ),
    20: (
        "StreamsGroupTargetAssignmentMetadata",
        s.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY,
        s.STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    ),
    21: (
        "StreamsGroupTargetAssignmentMember",
        s.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY,
        s.STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE,
    ),
    22: (
        "StreamsGroupCurrentMemberAssignment",
        s.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY,
        s.STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    ),
    23: ("StreamsGroupTopology", s.STREAMS_GROUP_TOPOLOGY_KEY, s.STREAMS_GROUP_TOPOLOGY_VALUE),
}
"""Record type -> (record name, key message, value message), as Kafka's CoordinatorRecordType maps them."""

KAFKA3_TYPES: Final = range(0, 9)
"""The record types Kafka 3.x's tool decodes; it prints "Unknown record type" for the others."""

KAFKA4_REMOVED_TYPES: Final = frozenset({9})
"""Types Kafka 4.4's tool no longer knows (early-access share groups)."""

KAFKA4_0_LAST_TYPE: Final = 16
"""Kafka 4.0's tool knows types up to 16; the Streams group's (17-23) came with 4.1."""


# ---------------------------------------------------------------------------------------------- decoding


def decode_consumer_protocol(data: bytes, *, assignment: bool) -> dict[str, Any] | None:
    """Decode an embedded consumer-protocol subscription or assignment (`int16` version + message).

    Returns the JSON view, or None where Kafka's tool fails and keeps the base64 (too short, or a
    message that does not decode at its version, read leniently).
    """
    if len(data) < 2:
        return None
    version: int = _I16.unpack_from(data, 0)[0]
    msg = t.CONSUMER_PROTOCOL_ASSIGNMENT if assignment else t.CONSUMER_PROTOCOL_SUBSCRIPTION
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


def read_version(buf: bytes, name: str) -> int:
    """The `int16` that starts a coordinator record's key (its type) or value (its version)."""
    if len(buf) < 2:
        raise TruncatedError(f"Could not read version from {name}'s buffer.")
    version: int = _I16.unpack_from(buf, 0)[0]
    return version


def kafka_error_detail(exc: DecodeError) -> str:
    """What Java's exception says where kdump's engine failed: a buffer underflow has no message."""
    if exc.java is not None:
        return exc.java
    return "null" if isinstance(exc, TruncatedError) else str(exc)


def decode_part(
    msg: MessageType, buf: bytes, version: int, name: str, *, lenient: bool = False
) -> DecodedMessage:
    """Decode a key or value message after its `int16`, with Kafka's wording on failure."""
    try:
        decoded = decode_message(msg, buf, version, pos=2, lenient=lenient)
    except DecodeError as exc:
        raise type(exc)(
            f"Could not read record with version {version} from {name}'s buffer due to: "
            f"{kafka_error_detail(exc)}."
        ) from exc
    if msg is t.GROUP_METADATA_VALUE:
        expand_consumer_protocol(decoded.data)
    return decoded


def decode_value_layouts(
    msg: MessageType, buf: bytes, version: int, early: tuple[tuple[str, MessageType], ...]
) -> tuple[DecodedMessage, str | None, DecodedMessage | DecodeError]:
    """Decode a value with the current layout, or the first early-access layout that reads it exactly.

    Returns (the decoding kdump keeps, the early layout's releases or None, what the current layout gave:
    its decoding or its error, which is what Kafka 4.x's tool prints).
    """
    current: DecodedMessage | DecodeError
    try:
        current = decode_part(msg, buf, version, "value")
    except DecodeError as exc:
        current = exc
    if isinstance(current, DecodedMessage) and current.end == len(buf):
        return current, None, current
    for releases, layout in early:
        try:
            alternative = decode_part(layout, buf, version, "value")
        except DecodeError:
            continue
        if alternative.end == len(buf):
            return alternative, releases, current
    if isinstance(current, DecodeError):
        raise current
    return current, None, current


def decode_offsets_record(key: Buffer | None, value: Buffer | None) -> DecodedRecord:
    """Decode one `__consumer_offsets` record from its key and value bytes (None: null).

    Unknown record types and value versions give a result with status "unknown" and the raw bytes;
    bytes that do not decode raise `DecodeError` (a missing key: `CorruptFieldError`).
    """
    if key is None:
        raise CorruptFieldError("a __consumer_offsets record without a key (message had a missing key)")
    key_bytes = bytes(key)
    value_bytes = None if value is None else bytes(value)
    record_type = read_version(key_bytes, "key")
    unknown_type = OracleText(
        key_template=f"Unknown record type {record_type} at offset {{offset}}, skipping."
    )
    entry = RECORD_TYPES.get(record_type)
    if entry is None:
        return DecodedRecord(
            decoder="consumer_offsets",
            status="unknown",
            record=None,
            key=None,
            value=None,
            oracle=unknown_type,
            reason=f"record type {record_type} is not one Kafka 3.0-4.4 defines",
            raw_key=key_bytes,
            raw_value=value_bytes,
        )
    name, key_msg, value_msg = entry
    decoded_key = decode_part(key_msg, key_bytes, 0, "key")
    key_dict: dict[str, Any] = {"type": str(record_type), "data": decoded_key.data}
    key_text = kafka_json(key_dict)
    common: dict[str, Any] = {
        "decoder": "consumer_offsets",
        "record": name,
        "key": key_dict,
        "key_unknown_tagged_fields": decoded_key.unknown_tagged_fields,
        "key_trailing_bytes": len(key_bytes) - decoded_key.end,
    }
    kafka3_knows = record_type in KAFKA3_TYPES
    kafka4_knows = record_type not in KAFKA4_REMOVED_TYPES
    older: tuple[tuple[KafkaRelease, KafkaRelease, OracleText], ...] = ()
    if record_type > KAFKA4_0_LAST_TYPE:
        older = (((4, 0), (4, 1), unknown_type),)
    if value_bytes is None:
        delete = OracleText(key=key_text, payload="<DELETE>")
        return DecodedRecord(
            status="tombstone",
            value=None,
            oracle=delete if kafka3_knows else unknown_type,
            oracle4=delete if kafka4_knows else unknown_type,
            older=older,
            **common,
        )
    version = read_version(value_bytes, "value")
    unknown_version = OracleText(
        key_template="Error at offset {offset}, skipping. "
        f"Found an unknown record version {version} for {record_type} type"
    )
    if record_type == 0 and version in t.OFFSET_COMMIT_VALUE.valid and version != 0:
        # Kafka 3.x read every offset commit value with OffsetCommitValue; 4.x knows only version 0 for type 0.
        value_msg = t.OFFSET_COMMIT_VALUE
        kafka4_knows = False
    if version not in value_msg.valid:
        return DecodedRecord(
            status="unknown",
            value=None,
            oracle=_lenient_oracle(
                key_text, t.OFFSET_COMMIT_VALUE if record_type == 0 else value_msg, value_bytes, version
            )
            if kafka3_knows
            else unknown_type,
            oracle4=unknown_version if kafka4_knows else unknown_type,
            older=older,
            reason=f"{value_msg.name} version {version} is not one Kafka 3.0-4.4 knows ({value_msg.valid})",
            raw_key=key_bytes,
            raw_value=value_bytes,
            **common,
        )
    early = s.EARLY_ACCESS_LAYOUTS.get(value_msg.name, ())
    decoded_value, layout, current = decode_value_layouts(value_msg, value_bytes, version, early)
    value_dict: dict[str, Any] = {"version": str(version), "data": decoded_value.data}
    text = OracleText(key=key_text, payload=kafka_json(value_dict))
    kafka4 = text if current is decoded_value else value_text(key_text, version, current)
    return DecodedRecord(
        status="ok",
        value=value_dict,
        oracle=text if kafka3_knows else unknown_type,
        oracle4=kafka4 if kafka4_knows else (unknown_version if record_type == 0 else unknown_type),
        layout=layout,
        value_unknown_tagged_fields=decoded_value.unknown_tagged_fields,
        value_trailing_bytes=len(value_bytes) - decoded_value.end,
        older=older + early_access_reads(key_text, value_bytes, version, early),
        value_type=value_msg if current is decoded_value else None,
        **common,
    )


def _lenient_oracle(key_text: str, msg: MessageType, value: bytes, version: int) -> OracleText:
    """What Kafka 3.x prints for a value version it does not know: it reads it as the nearest known one."""
    try:
        decoded: DecodedMessage | DecodeError = decode_part(msg, value, version, "value", lenient=True)
    except DecodeError as exc:
        decoded = exc
    return value_text(key_text, version, decoded)


def value_text(key_text: str, version: int, read: DecodedMessage | DecodeError) -> OracleText:
    """What Kafka's tool prints of a coordinator record's value as it read it: its JSON, or where its
    reader threw, the error in place of the key."""
    if isinstance(read, DecodeError):
        return OracleText(key_template="Error at offset {offset}, skipping. " + escape_template(str(read)))
    return OracleText(key=key_text, payload=kafka_json({"version": str(version), "data": read.data}))


def early_access_reads(
    key_text: str, value: bytes, version: int, early: tuple[tuple[str, MessageType], ...]
) -> tuple[tuple[KafkaRelease, KafkaRelease, OracleText], ...]:
    """What Kafka 4.0's tool prints of a value: it reads with its own early-access layout (share groups)."""
    for releases, layout in early:
        first, _, last = releases.partition("-")
        if not parse_release(first) <= (4, 0) <= parse_release(last or first):
            continue
        try:
            decoded: DecodedMessage | DecodeError = decode_part(layout, value, version, "value")
        except DecodeError as exc:
            decoded = exc
        return (((4, 0), (4, 1), value_text(key_text, version, decoded)),)
    return ()
