"""Field tables of `__cluster_metadata` records (KRaft metadata records, api keys 0-29), up to Kafka 4.4.

One table per Kafka message (`common/metadata/*.json` in kafka-metadata), checked against the JSON
schemas of the fetched Kafka jars by `tests/formats/internal/test_schema_tables.py`. The frame and the
decoding are in `cluster_metadata`.
"""

from __future__ import annotations

from typing import Any, Final

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
    MessageType,
    StructType,
    fld,
    message,
    struct_of,
)

FRAME_VERSION: Final = 1
"""The only metadata record frame version (0 was KRaft's 2.8 preview)."""


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
    "0-4",
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
    fld("cordonedLogDirs", ArrayOf(UUID), "4+", nullable="4+", tagged="4+", tag=1, default=None, since="4.3"),
    api_key=0,
    since={4: "4.3"},
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
    "0-3",
    "0+",
    fld("brokerId", INT32),
    fld("brokerEpoch", INT64),
    fld("fenced", INT8, tagged="0+", tag=0),
    fld("inControlledShutdown", INT8, "1+", tagged="1+", tag=1),
    fld("logDirs", ArrayOf(UUID), "2+", tagged="2+", tag=2),
    fld("cordonedLogDirs", ArrayOf(UUID), "3+", nullable="3+", tagged="3+", tag=3, default=None, since="4.3"),
    api_key=17,
    since={3: "4.3"},
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

CLEAR_ELR_RECORD: Final = message(
    "ClearElrRecord", "0", "0+", fld("topicName", STRING), api_key=28, since={0: "4.0"}
)

UNREGISTER_CONTROLLER_RECORD: Final = message(
    "UnregisterControllerRecord", "0", "0+", fld("controllerId", INT32), api_key=29, since={0: "4.4"}
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
    CLEAR_ELR_RECORD,
    UNREGISTER_CONTROLLER_RECORD,
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
"""api key -> (MetadataRecordType name, message) for every metadata record type of Kafka 3.3-4.4."""
