"""Records of `__cluster_metadata`, the KRaft metadata log, and the control records of any partition.

**Metadata records.** A data record has no key; its value is a frame:

* `uvarint` frame version (1; 0 was KRaft's 2.8 preview and is refused), `uvarint` api key (the record type),
  `uvarint` record version, then the record's message at that version. Every metadata record is flexible
  (compact strings and arrays, tagged fields) and nothing may follow the message.

Record types Kafka 3.8 defines (api key, name, versions):

==  ===================================  ====    ==  ===================================  ====
 0  REGISTER_BROKER_RECORD               0-3     15  PRODUCER_IDS_RECORD                  0
 1  UNREGISTER_BROKER_RECORD             0       17  BROKER_REGISTRATION_CHANGE_RECORD    0-2
 2  TOPIC_RECORD                         0       18  ACCESS_CONTROL_ENTRY_RECORD          0
 3  PARTITION_RECORD                     0-2     19  REMOVE_ACCESS_CONTROL_ENTRY_RECORD   0
 4  CONFIG_RECORD                        0       20  NO_OP_RECORD                         0
 5  PARTITION_CHANGE_RECORD              0-2     21  ZK_MIGRATION_STATE_RECORD            0
 7  FENCE_BROKER_RECORD                  0       22  REMOVE_USER_SCRAM_CREDENTIAL_RECORD  0
 8  UNFENCE_BROKER_RECORD                0       23  BEGIN_TRANSACTION_RECORD             0
 9  REMOVE_TOPIC_RECORD                  0       24  END_TRANSACTION_RECORD               0
10  DELEGATION_TOKEN_RECORD              0       25  ABORT_TRANSACTION_RECORD             0
11  USER_SCRAM_CREDENTIAL_RECORD         0       26  REMOVE_DELEGATION_TOKEN_RECORD       0
12  FEATURE_LEVEL_RECORD                 0       27  REGISTER_CONTROLLER_RECORD           0
14  CLIENT_QUOTA_RECORD                  0
==  ===================================  ====    ==  ===================================  ====

Decoded form (`decode_metadata_record`, see `decoded.DecodedRecord` for the envelope): `key` is null and
`value` is `{"type": "<NAME>", "version": <int>, "data": {<fields>}}`, the JSON view of
`schema.decode_message` (camelCase names in schema order, uuids as Kafka's 22-character strings, bytes as
base64, tagged fields only when they differ from their default). The oracle text is
`kafka-dump-log.sh --cluster-metadata-decoder` of Kafka 3.8: ` payload: <that JSON>`. A frame version,
record type or record version Kafka 3.8 does not know gives status "unknown" with the raw value (the oracle
then prints `Error at <offset>, skipping. <message>`, or for a newer record version what Kafka reads of it).

**Control records** (`decode_control_record`, batches with the control bit): key `int16` version (>= 0) and
`int16` type; the value depends on the type:

* 0 ABORT, 1 COMMIT (transaction markers): `int16` version, `int32` coordinatorEpoch;
* 2 LEADER_CHANGE: LeaderChangeMessage (version, leaderId, voters, grantingVoters);
* 3 SNAPSHOT_HEADER: SnapshotHeaderRecord (version, lastContainedLogTimestamp);
* 4 SNAPSHOT_FOOTER: SnapshotFooterRecord (version);
* 5 KRAFT_VERSION: KRaftVersionRecord (version, kRaftVersion);
* 6 KRAFT_VOTERS: VotersRecord (version, voters with directory id, endpoints and supported kraft versions).

The KRaft messages are flexible and always read at version 0 (their first field repeats a version).
Decoded form: `key` `{"version": <int>, "type": <int>}`, `value` `{"type": "<TYPE>", "version": 0,
"data": {...}}` (for a marker `data` is `{"version": <int>, "coordinatorEpoch": <int>}`). The oracle text
is what DumpLogSegments prints instead of key and payload for a control record: ` endTxnMarker: COMMIT
coordinatorEpoch: 0`, ` SnapshotHeader {...}`, ` SnapshotFooter {...}`, ` KRaftVersion {...}`,
` KRaftVoters {...}`, and ` controlType: LEADER_CHANGE(2)` (Kafka 3.8 does not print its content) or
` controlType: UNKNOWN(<id>)` for a type it does not know (status "unknown").
"""

from __future__ import annotations

import struct
from typing import Any, Final

from kdump.errors import CorruptFieldError, DecodeError, TruncatedError
from kdump.formats.internal.decoded import DecodedRecord, OracleText, escape_template
from kdump.formats.internal.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UUID,
    ArrayOf,
    Buffer,
    MessageType,
    Reader,
    StructType,
    decode_message,
    fld,
    kafka_json,
    message,
    struct_of,
)

FRAME_VERSION: Final = 1

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def _endpoint(name: str) -> StructType:
    return struct_of(
        name, fld("name", STRING), fld("host", STRING), fld("port", UINT16), fld("securityProtocol", INT16)
    )


def _feature(name: str) -> StructType:
    return struct_of(
        name, fld("name", STRING), fld("minSupportedVersion", INT16), fld("maxSupportedVersion", INT16)
    )


def _tagged_int32s(name: str, tag: int, vers: str = "0+") -> Any:
    """A nullable tagged `[]int32` whose default is null (the PartitionChangeRecord pattern)."""
    return fld(name, ArrayOf(INT32), vers, nullable=vers, tagged=vers, tag=tag, default=None)


REGISTER_BROKER_RECORD: Final = message(
    "RegisterBrokerRecord",
    "0-3",
    "0+",
    fld("brokerId", INT32),
    fld("isMigratingZkBroker", BOOL, "2+", default=False),
    fld("incarnationId", UUID),
    fld("brokerEpoch", INT64),
    fld("endPoints", ArrayOf(_endpoint("BrokerEndpoint"))),
    fld("features", ArrayOf(_feature("BrokerFeature"))),
    fld("rack", STRING, nullable="0+"),
    fld("fenced", BOOL, default=True),
    fld("inControlledShutdown", BOOL, "1+", default=False),
    fld("logDirs", ArrayOf(UUID), "3+", tagged="3+", tag=0),
    api_key=0,
)

UNREGISTER_BROKER_RECORD: Final = message(
    "UnregisterBrokerRecord", "0", "0+", fld("brokerId", INT32), fld("brokerEpoch", INT64), api_key=1
)

TOPIC_RECORD: Final = message("TopicRecord", "0", "0+", fld("name", STRING), fld("topicId", UUID), api_key=2)

PARTITION_RECORD: Final = message(
    "PartitionRecord",
    "0-2",
    "0+",
    fld("partitionId", INT32, default=-1),
    fld("topicId", UUID),
    fld("replicas", ArrayOf(INT32)),
    fld("isr", ArrayOf(INT32)),
    fld("removingReplicas", ArrayOf(INT32)),
    fld("addingReplicas", ArrayOf(INT32)),
    fld("leader", INT32, default=-1),
    fld("leaderRecoveryState", INT8, tagged="0+", tag=0, default=0),
    fld("leaderEpoch", INT32, default=-1),
    fld("partitionEpoch", INT32, default=-1),
    fld("directories", ArrayOf(UUID), "1+"),
    _tagged_int32s("eligibleLeaderReplicas", 1, "2+"),
    _tagged_int32s("lastKnownElr", 2, "2+"),
    api_key=3,
)

CONFIG_RECORD: Final = message(
    "ConfigRecord",
    "0",
    "0+",
    fld("resourceType", INT8),
    fld("resourceName", STRING),
    fld("name", STRING),
    fld("value", STRING, nullable="0+"),
    api_key=4,
)

PARTITION_CHANGE_RECORD: Final = message(
    "PartitionChangeRecord",
    "0-2",
    "0+",
    fld("partitionId", INT32, default=-1),
    fld("topicId", UUID),
    _tagged_int32s("isr", 0),
    fld("leader", INT32, tagged="0+", tag=1, default=-2),
    _tagged_int32s("replicas", 2),
    _tagged_int32s("removingReplicas", 3),
    _tagged_int32s("addingReplicas", 4),
    fld("leaderRecoveryState", INT8, tagged="0+", tag=5, default=-1),
    fld("directories", ArrayOf(UUID), "1+", nullable="1+", tagged="1+", tag=8, default=None),
    _tagged_int32s("eligibleLeaderReplicas", 6, "2+"),
    _tagged_int32s("lastKnownElr", 7, "2+"),
    api_key=5,
)

FENCE_BROKER_RECORD: Final = message(
    "FenceBrokerRecord", "0", "0+", fld("id", INT32), fld("epoch", INT64), api_key=7
)

UNFENCE_BROKER_RECORD: Final = message(
    "UnfenceBrokerRecord", "0", "0+", fld("id", INT32), fld("epoch", INT64), api_key=8
)

REMOVE_TOPIC_RECORD: Final = message("RemoveTopicRecord", "0", "0+", fld("topicId", UUID), api_key=9)

DELEGATION_TOKEN_RECORD: Final = message(
    "DelegationTokenRecord",
    "0",
    "0+",
    fld("owner", STRING),
    fld("requester", STRING),
    fld("renewers", ArrayOf(STRING)),
    fld("issueTimestamp", INT64),
    fld("maxTimestamp", INT64),
    fld("expirationTimestamp", INT64),
    fld("tokenId", STRING),
    api_key=10,
)

USER_SCRAM_CREDENTIAL_RECORD: Final = message(
    "UserScramCredentialRecord",
    "0",
    "0+",
    fld("name", STRING),
    fld("mechanism", INT8),
    fld("salt", BYTES),
    fld("storedKey", BYTES),
    fld("serverKey", BYTES),
    fld("iterations", INT32),
    api_key=11,
)

FEATURE_LEVEL_RECORD: Final = message(
    "FeatureLevelRecord", "0", "0+", fld("name", STRING), fld("featureLevel", INT16), api_key=12
)

CLIENT_QUOTA_RECORD: Final = message(
    "ClientQuotaRecord",
    "0",
    "0+",
    fld(
        "entity",
        ArrayOf(struct_of("EntityData", fld("entityType", STRING), fld("entityName", STRING, nullable="0+"))),
    ),
    fld("key", STRING),
    fld("value", FLOAT64),
    fld("remove", BOOL),
    api_key=14,
)

PRODUCER_IDS_RECORD: Final = message(
    "ProducerIdsRecord",
    "0",
    "0+",
    fld("brokerId", INT32),
    fld("brokerEpoch", INT64, default=-1),
    fld("nextProducerId", INT64),
    api_key=15,
)

BROKER_REGISTRATION_CHANGE_RECORD: Final = message(
    "BrokerRegistrationChangeRecord",
    "0-2",
    "0+",
    fld("brokerId", INT32),
    fld("brokerEpoch", INT64),
    fld("fenced", INT8, tagged="0+", tag=0),
    fld("inControlledShutdown", INT8, "1+", tagged="1+", tag=1),
    fld("logDirs", ArrayOf(UUID), "2+", tagged="2+", tag=2),
    api_key=17,
)

ACCESS_CONTROL_ENTRY_RECORD: Final = message(
    "AccessControlEntryRecord",
    "0",
    "0+",
    fld("id", UUID),
    fld("resourceType", INT8),
    fld("resourceName", STRING),
    fld("patternType", INT8),
    fld("principal", STRING),
    fld("host", STRING),
    fld("operation", INT8),
    fld("permissionType", INT8),
    api_key=18,
)

REMOVE_ACCESS_CONTROL_ENTRY_RECORD: Final = message(
    "RemoveAccessControlEntryRecord", "0", "0+", fld("id", UUID), api_key=19
)

NO_OP_RECORD: Final = message("NoOpRecord", "0", "0+", api_key=20)

ZK_MIGRATION_STATE_RECORD: Final = message(
    "ZkMigrationStateRecord", "0", "0+", fld("zkMigrationState", INT8), api_key=21
)

REMOVE_USER_SCRAM_CREDENTIAL_RECORD: Final = message(
    "RemoveUserScramCredentialRecord", "0", "0+", fld("name", STRING), fld("mechanism", INT8), api_key=22
)

BEGIN_TRANSACTION_RECORD: Final = message(
    "BeginTransactionRecord",
    "0",
    "0+",
    fld("name", STRING, nullable="0+", tagged="0+", tag=0, default=None),
    api_key=23,
)

END_TRANSACTION_RECORD: Final = message("EndTransactionRecord", "0", "0+", api_key=24)

ABORT_TRANSACTION_RECORD: Final = message(
    "AbortTransactionRecord",
    "0",
    "0+",
    fld("reason", STRING, nullable="0+", tagged="0+", tag=0, default=None),
    api_key=25,
)

REMOVE_DELEGATION_TOKEN_RECORD: Final = message(
    "RemoveDelegationTokenRecord", "0", "0+", fld("tokenId", STRING), api_key=26
)

REGISTER_CONTROLLER_RECORD: Final = message(
    "RegisterControllerRecord",
    "0",
    "0+",
    fld("controllerId", INT32),
    fld("incarnationId", UUID),
    fld("zkMigrationReady", BOOL),
    fld("endPoints", ArrayOf(_endpoint("ControllerEndpoint"))),
    fld("features", ArrayOf(_feature("ControllerFeature"))),
    api_key=27,
)

_ALL_METADATA_MESSAGES: Final = (
    REGISTER_BROKER_RECORD,
    UNREGISTER_BROKER_RECORD,
    TOPIC_RECORD,
    PARTITION_RECORD,
    CONFIG_RECORD,
    PARTITION_CHANGE_RECORD,
    FENCE_BROKER_RECORD,
    UNFENCE_BROKER_RECORD,
    REMOVE_TOPIC_RECORD,
    DELEGATION_TOKEN_RECORD,
    USER_SCRAM_CREDENTIAL_RECORD,
    FEATURE_LEVEL_RECORD,
    CLIENT_QUOTA_RECORD,
    PRODUCER_IDS_RECORD,
    BROKER_REGISTRATION_CHANGE_RECORD,
    ACCESS_CONTROL_ENTRY_RECORD,
    REMOVE_ACCESS_CONTROL_ENTRY_RECORD,
    NO_OP_RECORD,
    ZK_MIGRATION_STATE_RECORD,
    REMOVE_USER_SCRAM_CREDENTIAL_RECORD,
    BEGIN_TRANSACTION_RECORD,
    END_TRANSACTION_RECORD,
    ABORT_TRANSACTION_RECORD,
    REMOVE_DELEGATION_TOKEN_RECORD,
    REGISTER_CONTROLLER_RECORD,
)


def metadata_type_name(message_name: str) -> str:
    """Kafka's MetadataRecordType name: `ZkMigrationStateRecord` -> `ZK_MIGRATION_STATE_RECORD`."""
    out: list[str] = []
    prev_upper = True
    for ch in message_name:
        if ch.isupper():
            if not prev_upper:
                out.append("_")
            out.append(ch.lower())
            prev_upper = True
        else:
            out.append(ch)
            prev_upper = False
    return "".join(out).upper()


METADATA_RECORD_TYPES: Final[dict[int, tuple[str, MessageType]]] = {
    msg.api_key: (metadata_type_name(msg.name), msg)
    for msg in _ALL_METADATA_MESSAGES
    if msg.api_key is not None
}
"""api key -> (MetadataRecordType name, message) for every metadata record type of Kafka 3.8."""


# ------------------------------------------------------------------------------------------- metadata frame


def _unsigned_int_to_short(reader: Reader, entity: str) -> int:
    value = reader.uvarint(f"metadata record {entity}")
    if value > 0x7FFF:
        raise _TooLarge(f"Value for {entity} was too large.")
    return (value + 0x8000) % 0x10000 - 0x8000  # Java's (short) cast


class _TooLarge(CorruptFieldError):
    pass


def _unknown_metadata(value: bytes, reason: str, kafka_message: str) -> DecodedRecord:
    return DecodedRecord(
        decoder="cluster_metadata",
        status="unknown",
        record=None,
        key=None,
        value=None,
        oracle=OracleText(payload_template="Error at {offset}, skipping. " + escape_template(kafka_message)),
        reason=reason,
        raw_value=value,
    )


def decode_metadata_record(value: Buffer | None) -> DecodedRecord:
    """Decode the value of one `__cluster_metadata` data record (metadata records have no key).

    An unknown frame version, record type or record version gives status "unknown" with the raw value; bytes
    that do not decode, or bytes left after the message, raise `DecodeError`.
    """
    if value is None:
        raise CorruptFieldError("a __cluster_metadata record without a value")
    data = bytes(value)
    reader = Reader(data)
    try:
        frame_version = _unsigned_int_to_short(reader, "frame version")
    except _TooLarge as exc:
        return _unknown_metadata(data, f"frame version: {exc}", str(exc))
    if frame_version == 0:
        return _unknown_metadata(
            data,
            "frame version 0 (KRaft preview of Kafka 2.8)",
            "Could not deserialize metadata record with frame version 0. Note that upgrades from the preview "
            "release of KRaft in 2.8 to newer versions are not supported.",
        )
    if frame_version != FRAME_VERSION:
        return _unknown_metadata(
            data,
            f"frame version {frame_version} is not one Kafka 3.8 knows",
            f"Could not deserialize metadata record due to unknown frame version {frame_version}"
            f"(only frame version {FRAME_VERSION} is supported)",
        )
    try:
        api_key = _unsigned_int_to_short(reader, "type")
        version = _unsigned_int_to_short(reader, "version")
    except _TooLarge as exc:
        return _unknown_metadata(data, str(exc), str(exc))
    entry = METADATA_RECORD_TYPES.get(api_key)
    if entry is None:
        return _unknown_metadata(
            data,
            f"metadata record type {api_key} is not one Kafka 3.8 defines",
            f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id {api_key}",
        )
    name, msg = entry
    if version not in msg.valid:
        return DecodedRecord(
            decoder="cluster_metadata",
            status="unknown",
            record=name,
            key=None,
            value=None,
            oracle=_lenient_metadata_oracle(name, msg, data, reader.pos, api_key, version),
            reason=f"{name} version {version} is not one Kafka 3.8 knows ({msg.valid})",
            raw_value=data,
        )
    try:
        decoded = decode_message(msg, data, version, pos=reader.pos)
    except DecodeError as exc:
        raise type(exc)(
            f"Failed to deserialize record with type {api_key} ({name} v{version}): {exc}"
        ) from exc
    if decoded.end < len(data):
        raise CorruptFieldError(f"Found {len(data) - decoded.end} byte(s) of garbage after {api_key}")
    value_dict: dict[str, Any] = {"type": name, "version": version, "data": decoded.data}
    return DecodedRecord(
        decoder="cluster_metadata",
        status="ok",
        record=name,
        key=None,
        value=value_dict,
        oracle=OracleText(payload=kafka_json(value_dict)),
        value_unknown_tagged_fields=decoded.unknown_tagged_fields,
    )


def _lenient_metadata_oracle(
    name: str, msg: MessageType, data: bytes, pos: int, api_key: int, version: int
) -> OracleText:
    """Kafka 3.8 reads a newer record version as its nearest known one; this is what it then prints."""
    error = "Error at {offset}, skipping. "
    try:
        decoded = decode_message(msg, data, version, pos=pos, lenient=True)
    except DecodeError:
        return OracleText(payload_template=f"{error}Failed to deserialize record with type {api_key}")
    if decoded.end < len(data):
        garbage = len(data) - decoded.end
        return OracleText(payload_template=f"{error}Found {garbage} byte(s) of garbage after {api_key}")
    return OracleText(payload=kafka_json({"type": name, "version": version, "data": decoded.data}))


# ------------------------------------------------------------------------------------------ control records

_VOTER = struct_of("Voter", fld("voterId", INT32), common=True)

LEADER_CHANGE_MESSAGE: Final = message(
    "LeaderChangeMessage",
    "0",
    "0+",
    fld("version", INT16),
    fld("leaderId", INT32),
    fld("voters", ArrayOf(_VOTER)),
    fld("grantingVoters", ArrayOf(_VOTER)),
)

SNAPSHOT_HEADER_RECORD: Final = message(
    "SnapshotHeaderRecord", "0", "0+", fld("version", INT16), fld("lastContainedLogTimestamp", INT64)
)

SNAPSHOT_FOOTER_RECORD: Final = message("SnapshotFooterRecord", "0", "0+", fld("version", INT16))

KRAFT_VERSION_RECORD: Final = message(
    "KRaftVersionRecord", "0", "0+", fld("version", INT16), fld("kRaftVersion", INT16)
)

VOTERS_RECORD: Final = message(
    "VotersRecord",
    "0",
    "0+",
    fld("version", INT16),
    fld(
        "voters",
        ArrayOf(
            struct_of(
                "Voter",
                fld("voterId", INT32),
                fld("voterDirectoryId", UUID),
                fld(
                    "endpoints",
                    ArrayOf(
                        struct_of("Endpoint", fld("name", STRING), fld("host", STRING), fld("port", UINT16))
                    ),
                ),
                fld(
                    "kRaftVersionFeature",
                    struct_of(
                        "KRaftVersionFeature",
                        fld("minSupportedVersion", INT16),
                        fld("maxSupportedVersion", INT16),
                    ),
                ),
            )
        ),
    ),
)

CONTROL_TYPES: Final[dict[int, str]] = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
"""ControlRecordType ids and names."""

# control type -> (message, label DumpLogSegments prints before its JSON, or None when it prints controlType)
_KRAFT_CONTROL: Final[dict[int, tuple[MessageType, str | None]]] = {
    2: (LEADER_CHANGE_MESSAGE, None),
    3: (SNAPSHOT_HEADER_RECORD, "SnapshotHeader"),
    4: (SNAPSHOT_FOOTER_RECORD, "SnapshotFooter"),
    5: (KRAFT_VERSION_RECORD, "KRaftVersion"),
    6: (VOTERS_RECORD, "KRaftVoters"),
}

END_TXN_MARKER_VALUE_SIZE: Final = 6


def decode_control_record(key: Buffer | None, value: Buffer | None) -> DecodedRecord:
    """Decode one record of a control batch from its key and value bytes (None: null).

    An unknown control type gives status "unknown" with the raw bytes; a short or negative-version key, and
    a value that does not decode as its type, raise `DecodeError`.
    """
    if key is None:
        raise CorruptFieldError("a control record without a key")
    key_bytes = bytes(key)
    value_bytes = None if value is None else bytes(value)
    if len(key_bytes) < 4:
        raise TruncatedError(
            "Invalid value size found for end control record key. Must have at least 4 bytes, but found only "
            f"{len(key_bytes)}"
        )
    key_version: int = _I16.unpack_from(key_bytes, 0)[0]
    if key_version < 0:
        raise CorruptFieldError(
            f"Invalid version found for control record: {key_version}. May indicate data corruption"
        )
    type_id: int = _I16.unpack_from(key_bytes, 2)[0]
    key_dict = {"version": key_version, "type": type_id}
    name = CONTROL_TYPES.get(type_id)
    common: dict[str, Any] = {"decoder": "control", "key": key_dict, "key_trailing_bytes": len(key_bytes) - 4}
    if name is None:
        return DecodedRecord(
            status="unknown",
            record=None,
            value=None,
            oracle=OracleText(control=f" controlType: UNKNOWN({type_id})"),
            reason=f"control record type {type_id} is not one Kafka 3.8 defines",
            raw_key=key_bytes,
            raw_value=value_bytes,
            **common,
        )
    if value_bytes is None:
        raise CorruptFieldError(f"a {name} control record without a value")
    if type_id in (0, 1):
        if len(value_bytes) < END_TXN_MARKER_VALUE_SIZE:
            raise TruncatedError(
                "Invalid value size found for end transaction marker. Must have at least "
                f"{END_TXN_MARKER_VALUE_SIZE} bytes, but found only {len(value_bytes)}"
            )
        marker_version: int = _I16.unpack_from(value_bytes, 0)[0]
        if marker_version < 0:
            raise CorruptFieldError(
                f"Invalid version found for end transaction marker: {marker_version}. "
                "May indicate data corruption"
            )
        epoch: int = _I32.unpack_from(value_bytes, 2)[0]
        return DecodedRecord(
            status="ok",
            record=name,
            value={
                "type": name,
                "version": 0,
                "data": {"version": marker_version, "coordinatorEpoch": epoch},
            },
            oracle=OracleText(control=f" endTxnMarker: {name} coordinatorEpoch: {epoch}"),
            value_trailing_bytes=len(value_bytes) - END_TXN_MARKER_VALUE_SIZE,
            **common,
        )
    msg, label = _KRAFT_CONTROL[type_id]
    try:
        decoded = decode_message(msg, value_bytes, 0)
    except DecodeError as exc:
        raise type(exc)(f"{name} control record ({msg.name}): {exc}") from exc
    control = f" controlType: {name}({type_id})" if label is None else f" {label} {kafka_json(decoded.data)}"
    return DecodedRecord(
        status="ok",
        record=name,
        value={"type": name, "version": 0, "data": decoded.data},
        oracle=OracleText(control=control),
        value_unknown_tagged_fields=decoded.unknown_tagged_fields,
        value_trailing_bytes=len(value_bytes) - decoded.end,
        **common,
    )
