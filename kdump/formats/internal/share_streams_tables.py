"""Field tables of `__consumer_offsets` share group (10-15) and streams group (17, 19-23) records.

Written from Kafka's group coordinator schemas up to 4.4 and checked against them by
`tests/formats/internal/test_schema_tables.py`.

Share groups were early access in Kafka 4.0 (and an internal preview in 3.9): the values of types 11 and
15, and type 9 (ShareGroupPartitionMetadata, gone since 4.1), had other layouts at the same version 0,
which Kafka 4.1+ cannot read. `EARLY_ACCESS_LAYOUTS` keeps them, so logs written by those brokers still
decode; each is tried only when the current layout does not read the bytes exactly.
"""

from __future__ import annotations

from typing import Final

from kdump.formats.internal.offsets_tables import (
    assignment_metadata_value,
    group_key,
    topic_metadata,
    topic_partitions_array,
)
from kdump.formats.internal.schema import (
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

# -------------------------------------------------------------------------------------- share groups

SHARE_GROUP_MEMBER_METADATA_KEY: Final = group_key("ShareGroupMemberMetadataKey", "groupId", "memberId")

SHARE_GROUP_MEMBER_METADATA_VALUE: Final = message(
    "ShareGroupMemberMetadataValue",
    "0",
    "0+",
    fld("rackId", STRING, nullable="0+"),
    fld("clientId", STRING),
    fld("clientHost", STRING),
    fld("subscribedTopicNames", ArrayOf(STRING)),
)

SHARE_GROUP_METADATA_KEY: Final = group_key("ShareGroupMetadataKey", "groupId")

SHARE_GROUP_METADATA_VALUE: Final = message(
    "ShareGroupMetadataValue", "0", "0+", fld("epoch", INT32), fld("metadataHash", INT64)
)

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY: Final = group_key(
    "ShareGroupTargetAssignmentMetadataKey", "groupId"
)

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE: Final = assignment_metadata_value(
    "ShareGroupTargetAssignmentMetadataValue"
)

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY: Final = group_key(
    "ShareGroupTargetAssignmentMemberKey", "groupId", "memberId"
)

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE: Final = message(
    "ShareGroupTargetAssignmentMemberValue", "0", "0+", fld("topicPartitions", topic_partitions_array())
)

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY: Final = group_key(
    "ShareGroupCurrentMemberAssignmentKey", "groupId", "memberId"
)

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE: Final = message(
    "ShareGroupCurrentMemberAssignmentValue",
    "0",
    "0+",
    fld("memberEpoch", INT32),
    fld("previousMemberEpoch", INT32),
    fld("state", INT8),
    fld(
        "assignedPartitions",
        ArrayOf(
            struct_of("TopicPartitions", fld("topicId", UUID), fld("partitions", ArrayOf(INT32)), common=True)
        ),
    ),
)

SHARE_GROUP_STATE_PARTITION_METADATA_KEY: Final = group_key("ShareGroupStatePartitionMetadataKey", "groupId")

_TOPIC_PARTITIONS_INFO = struct_of(
    "TopicPartitionsInfo",
    fld("topicId", UUID),
    fld("topicName", STRING),
    fld("partitions", ArrayOf(INT32)),
    common=True,
)
_TOPIC_INFO = struct_of("TopicInfo", fld("topicId", UUID), fld("topicName", STRING), common=True)

SHARE_GROUP_STATE_PARTITION_METADATA_VALUE: Final = message(
    "ShareGroupStatePartitionMetadataValue",
    "0",
    "0+",
    fld("initializingTopics", ArrayOf(_TOPIC_PARTITIONS_INFO)),
    fld("initializedTopics", ArrayOf(_TOPIC_PARTITIONS_INFO)),
    fld("deletingTopics", ArrayOf(_TOPIC_INFO)),
)

# --------------------------------------------------------------------- early-access share group layouts

SHARE_GROUP_PARTITION_METADATA_KEY: Final = group_key("ShareGroupPartitionMetadataKey", "groupId")

_INITIALIZED_AND_DELETING = (
    fld("initializedTopics", ArrayOf(_TOPIC_PARTITIONS_INFO)),
    fld("deletingTopics", ArrayOf(_TOPIC_INFO)),
)

SHARE_GROUP_PARTITION_METADATA_VALUE: Final = message(
    "ShareGroupPartitionMetadataValue", "0", "0+", fld("topics", ArrayOf(topic_metadata()))
)
"""Type 9 as Kafka 4.0 wrote it (subscribed topics' metadata)."""

SHARE_GROUP_PARTITION_METADATA_VALUE_3_9: Final = message(
    "ShareGroupPartitionMetadataValue", "0", "0+", *_INITIALIZED_AND_DELETING
)
"""Type 9 as Kafka 3.9 wrote it (initialized and deleting topics)."""

EARLY_ACCESS_LAYOUTS: Final[dict[str, tuple[tuple[str, MessageType], ...]]] = {
    "ShareGroupMetadataValue": (
        ("3.9-4.0", message("ShareGroupMetadataValue", "0", "0+", fld("epoch", INT32))),
    ),
    "ShareGroupPartitionMetadataValue": (("3.9", SHARE_GROUP_PARTITION_METADATA_VALUE_3_9),),
    "ShareGroupStatePartitionMetadataValue": (
        ("4.0", message("ShareGroupStatePartitionMetadataValue", "0", "0+", *_INITIALIZED_AND_DELETING)),
    ),
}
"""Value message name -> (Kafka releases, layout) that wrote other bytes at the same version."""

# ------------------------------------------------------------------------------------- streams groups

STREAMS_GROUP_METADATA_KEY: Final = group_key("StreamsGroupMetadataKey", "groupId")

_KEY_VALUE = struct_of("LastAssignmentConfig", fld("key", STRING), fld("value", STRING), common=True)

STREAMS_GROUP_METADATA_VALUE: Final = message(
    "StreamsGroupMetadataValue",
    "0",
    "0+",
    fld("epoch", INT32),
    fld("metadataHash", INT64),
    fld("validatedTopologyEpoch", INT32, tagged="0+", tag=0, default=-1, since="4.2"),
    fld("lastAssignmentConfigs", ArrayOf(_KEY_VALUE), nullable="0+", tagged="0+", tag=1, since="4.2"),
    fld("storedDescriptionTopologyEpoch", INT32, tagged="0+", tag=2, default=-1, since="4.4"),
    fld("failedDescriptionTopologyEpoch", INT32, tagged="0+", tag=3, default=-1, since="4.4"),
)

STREAMS_GROUP_MEMBER_METADATA_KEY: Final = group_key("StreamsGroupMemberMetadataKey", "groupId", "memberId")

STREAMS_GROUP_MEMBER_METADATA_VALUE: Final = message(
    "StreamsGroupMemberMetadataValue",
    "0",
    "0+",
    fld("instanceId", STRING, nullable="0+"),
    fld("rackId", STRING, nullable="0+"),
    fld("clientId", STRING),
    fld("clientHost", STRING),
    fld("rebalanceTimeoutMs", INT32, default=-1),
    fld("topologyEpoch", INT32),
    fld("processId", STRING),
    fld(
        "userEndpoint",
        struct_of("Endpoint", fld("host", STRING), fld("port", UINT16), common=True),
        nullable="0+",
        default=None,
    ),
    fld(
        "clientTags",
        ArrayOf(struct_of("KeyValue", fld("key", STRING), fld("value", STRING), common=True)),
    ),
)

STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY: Final = group_key(
    "StreamsGroupTargetAssignmentMetadataKey", "groupId"
)

STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE: Final = assignment_metadata_value(
    "StreamsGroupTargetAssignmentMetadataValue"
)

STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY: Final = group_key(
    "StreamsGroupTargetAssignmentMemberKey", "groupId", "memberId"
)


def _task_ids(*, epochs: bool) -> ArrayOf:
    fields = [fld("subtopologyId", STRING), fld("partitions", ArrayOf(INT32))]
    if epochs:
        fields.append(fld("assignmentEpochs", ArrayOf(INT32), nullable="0+", tagged="0+", tag=0, since="4.2"))
    return ArrayOf(struct_of("TaskIds", *fields, common=True))


_TASKS = _task_ids(epochs=False)

STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE: Final = message(
    "StreamsGroupTargetAssignmentMemberValue",
    "0",
    "0+",
    fld("activeTasks", _TASKS),
    fld("standbyTasks", _TASKS),
    fld("warmupTasks", _TASKS),
)

STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY: Final = group_key(
    "StreamsGroupCurrentMemberAssignmentKey", "groupId", "memberId"
)

_TASKS_WITH_EPOCHS = _task_ids(epochs=True)

STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE: Final = message(
    "StreamsGroupCurrentMemberAssignmentValue",
    "0",
    "0+",
    fld("memberEpoch", INT32),
    fld("previousMemberEpoch", INT32),
    fld("state", INT8),
    *(
        fld(name, _TASKS_WITH_EPOCHS)
        for name in (
            "activeTasks",
            "standbyTasks",
            "warmupTasks",
            "activeTasksPendingRevocation",
            "standbyTasksPendingRevocation",
            "warmupTasksPendingRevocation",
        )
    ),
)

STREAMS_GROUP_TOPOLOGY_KEY: Final = group_key("StreamsGroupTopologyKey", "groupId")

_TOPIC_CONFIG = struct_of("TopicConfig", fld("key", STRING), fld("value", STRING), common=True)


def _streams_topic_info() -> StructType:
    return struct_of(
        "TopicInfo",
        fld("name", STRING),
        fld("partitions", INT32),
        fld("replicationFactor", INT16),
        fld("topicConfigs", ArrayOf(_TOPIC_CONFIG)),
        common=True,
    )


STREAMS_GROUP_TOPOLOGY_VALUE: Final = message(
    "StreamsGroupTopologyValue",
    "0",
    "0+",
    fld("epoch", INT32),
    fld(
        "subtopologies",
        ArrayOf(
            struct_of(
                "Subtopology",
                fld("subtopologyId", STRING),
                fld("sourceTopics", ArrayOf(STRING)),
                fld("sourceTopicRegex", ArrayOf(STRING)),
                fld("stateChangelogTopics", ArrayOf(_streams_topic_info())),
                fld("repartitionSinkTopics", ArrayOf(STRING)),
                fld("repartitionSourceTopics", ArrayOf(_streams_topic_info())),
                fld(
                    "copartitionGroups",
                    ArrayOf(
                        struct_of(
                            "CopartitionGroup",
                            fld("sourceTopics", ArrayOf(INT16)),
                            fld("sourceTopicRegex", ArrayOf(INT16)),
                            fld("repartitionSourceTopics", ArrayOf(INT16)),
                        )
                    ),
                ),
            )
        ),
    ),
)
