"""Field tables of `__consumer_offsets` records: offset commits, classic groups, KIP-848 consumer groups.

One table per Kafka message (`OffsetCommitKey.json`, `GroupMetadataValue.json`, ... in Kafka's
group coordinator), written from Kafka's schemas up to 4.4; `tests/formats/internal/test_schema_tables.py`
compares them with the JSON schemas in the fetched Kafka jars. Share and streams group records are in
`share_streams_tables`, the record types in `consumer_offsets`.

Keys are read at the version equal to their record type in Kafka 3.x and at version 0 in Kafka 4.x
(whose key schemas renumbered every key to version 0); the bytes are the same, so the tables follow 4.x.
"""

from __future__ import annotations

from typing import Final

from kdump.formats.internal.schema import (
    BYTES,
    INT8,
    INT32,
    INT64,
    STRING,
    UUID,
    ArrayOf,
    MessageType,
    StructType,
    fld,
    message,
    struct_of,
)


def group_key(name: str, *fields: str) -> MessageType:
    """A key message of string fields at version 0 (`GroupId`, `MemberId`, ...), as Kafka 4.x declares it."""
    return message(name, "0", "none", *(fld(f, STRING, "0") for f in fields))


# ------------------------------------------------------------------------------------ consumer protocol

CONSUMER_PROTOCOL_SUBSCRIPTION: Final = message(
    "ConsumerProtocolSubscription",
    "0-3",
    "none",
    fld("topics", ArrayOf(STRING)),
    fld("userData", BYTES, nullable="0+", default=None),
    fld(
        "ownedPartitions",
        ArrayOf(
            struct_of(
                "TopicPartition",
                fld("topic", STRING, "1+"),
                fld("partitions", ArrayOf(INT32), "1+"),
                vers="1+",
            )
        ),
        "1+",
    ),
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

# ------------------------------------------------------------------------------------ offset commits (0, 1)

_OFFSET_KEY_FIELDS = (fld("group", STRING, "0"), fld("topic", STRING, "0"), fld("partition", INT32, "0"))

LEGACY_OFFSET_COMMIT_KEY: Final = message("LegacyOffsetCommitKey", "0", "none", *_OFFSET_KEY_FIELDS)

LEGACY_OFFSET_COMMIT_VALUE: Final = message(
    "LegacyOffsetCommitValue",
    "0",
    "none",
    fld("offset", INT64, "0"),
    fld("metadata", STRING, "0"),
    fld("commitTimestamp", INT64, "0"),
)

OFFSET_COMMIT_KEY: Final = message("OffsetCommitKey", "0", "none", *_OFFSET_KEY_FIELDS)

OFFSET_COMMIT_VALUE: Final = message(
    "OffsetCommitValue",
    "0-4",
    "4+",
    fld("offset", INT64),
    fld("leaderEpoch", INT32, "3+", default=-1),
    fld("metadata", STRING),
    fld("commitTimestamp", INT64),
    fld("expireTimestamp", INT64, "1", default=-1),
    fld("topicId", UUID, "4+", tagged="4+", tag=0, since="4.1"),
)

# ------------------------------------------------------------------------------------- classic groups (2)

GROUP_METADATA_KEY: Final = message("GroupMetadataKey", "0", "none", fld("group", STRING, "0"))

GROUP_METADATA_VALUE: Final = message(
    "GroupMetadataValue",
    "0-4",
    "4+",
    fld("protocolType", STRING),
    fld("generation", INT32),
    fld("protocol", STRING, nullable="0+"),
    fld("leader", STRING, nullable="0+"),
    fld("currentStateTimestamp", INT64, "2+", default=-1),
    fld(
        "members",
        ArrayOf(
            struct_of(
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
        ),
    ),
)

# ----------------------------------------------------------------------- KIP-848 consumer groups (3-8, 16)

CONSUMER_GROUP_METADATA_KEY: Final = group_key("ConsumerGroupMetadataKey", "groupId")

CONSUMER_GROUP_METADATA_VALUE: Final = message(
    "ConsumerGroupMetadataValue",
    "0",
    "0+",
    fld("epoch", INT32),
    fld("metadataHash", INT64, tagged="0+", tag=0, default=0, since="4.1"),
)

CONSUMER_GROUP_PARTITION_METADATA_KEY: Final = group_key("ConsumerGroupPartitionMetadataKey", "groupId")


def topic_metadata(name: str = "TopicMetadata") -> StructType:
    """A subscribed topic's id, name and partitions' racks (consumer and early share group metadata)."""
    return struct_of(
        name,
        fld("topicId", UUID),
        fld("topicName", STRING),
        fld("numPartitions", INT32),
        fld(
            "partitionMetadata",
            ArrayOf(struct_of("PartitionMetadata", fld("partition", INT32), fld("racks", ArrayOf(STRING)))),
        ),
    )


CONSUMER_GROUP_PARTITION_METADATA_VALUE: Final = message(
    "ConsumerGroupPartitionMetadataValue", "0", "0+", fld("topics", ArrayOf(topic_metadata()))
)

CONSUMER_GROUP_MEMBER_METADATA_KEY: Final = group_key("ConsumerGroupMemberMetadataKey", "groupId", "memberId")

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
    ),
)


def assignment_metadata_value(name: str) -> MessageType:
    """The target assignment's epoch and (4.3+, tagged) timestamp: consumer, share and streams groups."""
    return message(
        name,
        "0",
        "0+",
        fld("assignmentEpoch", INT32),
        fld("assignmentTimestamp", INT64, tagged="0+", tag=0, default=0, since="4.3"),
    )


def topic_partitions_array(name: str = "TopicPartition", *, epochs: bool = False) -> ArrayOf:
    """`[{topicId, partitions}]`; with `epochs`, the common struct that 4.3+ tags with assignment epochs."""
    if not epochs:
        return ArrayOf(struct_of(name, fld("topicId", UUID), fld("partitions", ArrayOf(INT32))))
    return ArrayOf(
        struct_of(
            name,
            fld("topicId", UUID),
            fld("partitions", ArrayOf(INT32)),
            # Kafka's JSON `"default": null` means no default: absent, the epochs are empty.
            fld("assignmentEpochs", ArrayOf(INT32), nullable="0+", tagged="0+", tag=0, since="4.3"),
            common=True,
        )
    )


CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY: Final = group_key(
    "ConsumerGroupTargetAssignmentMetadataKey", "groupId"
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE: Final = assignment_metadata_value(
    "ConsumerGroupTargetAssignmentMetadataValue"
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY: Final = group_key(
    "ConsumerGroupTargetAssignmentMemberKey", "groupId", "memberId"
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE: Final = message(
    "ConsumerGroupTargetAssignmentMemberValue", "0", "0+", fld("topicPartitions", topic_partitions_array())
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY: Final = group_key(
    "ConsumerGroupCurrentMemberAssignmentKey", "groupId", "memberId"
)

_ASSIGNED = topic_partitions_array("TopicPartitions", epochs=True)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE: Final = message(
    "ConsumerGroupCurrentMemberAssignmentValue",
    "0",
    "0+",
    fld("memberEpoch", INT32),
    fld("previousMemberEpoch", INT32),
    fld("state", INT8),
    fld("assignedPartitions", _ASSIGNED),
    fld("partitionsPendingRevocation", _ASSIGNED),
)

CONSUMER_GROUP_REGULAR_EXPRESSION_KEY: Final = group_key(
    "ConsumerGroupRegularExpressionKey", "groupId", "regularExpression"
)

CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE: Final = message(
    "ConsumerGroupRegularExpressionValue",
    "0",
    "0+",
    fld("topics", ArrayOf(STRING)),
    fld("version", INT64),
    fld("timestamp", INT64),
)
