"""Records of `__share_group_state`, the share coordinator's log (KIP-932), as Kafka 4.x writes and prints them.

The share coordinator keeps, per share group and topic partition, which records were delivered and
acknowledged. Its records are coordinator records like `__consumer_offsets`'s:

* key: `int16` record type, then the key message: `groupId` (string), `topicId` (uuid), `partition` (int32);
* value: `int16` value version, then the value message; a null value is a tombstone.

====  =============  ==========================================================================
type  record         value
====  =============  ==========================================================================
0     ShareSnapshot  the whole state: snapshot, state and leader epochs, start offset, create and
                     write timestamps, delivery-complete count (4.2+, tagged) and state batches
1     ShareUpdate    a change on top of the last snapshot: epochs, start offset, state batches
====  =============  ==========================================================================

A state batch is `{firstOffset, lastOffset, deliveryState, deliveryCount}`. Kafka 4.0 (share groups in
early access) wrote both values with another layout at the same version 0 (a `uint16` snapshot epoch, no
timestamps), which Kafka 4.1+ cannot read; kdump decodes it too and says so (`layout`).

Decoded form and oracle text: as `consumer_offsets` (`key` `{"type": "<type>", "data": {...}}`, `value`
`{"version": "<v>", "data": {...}}`), which is what `kafka-dump-log.sh --share-group-state-decoder` of
Kafka 4.x prints. Kafka 3.x has no such decoder; its oracle is the 4.x one.
"""

from __future__ import annotations

from typing import Any, Final

from kdump.errors import CorruptFieldError
from kdump.formats.internal.consumer_offsets import (
    decode_part,
    decode_value_layouts,
    early_access_reads,
    read_version,
    value_text,
)
from kdump.formats.internal.decoded import DecodedRecord, OracleText
from kdump.formats.internal.schema import (
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
    fld,
    kafka_json,
    message,
    struct_of,
)


def _key(name: str) -> MessageType:
    return message(
        name,
        "0",
        "none",
        fld("groupId", STRING, "0"),
        fld("topicId", UUID, "0"),
        fld("partition", INT32, "0"),
    )


def _state_batches(vers: str = "0+") -> Any:
    return fld(
        "stateBatches",
        ArrayOf(
            struct_of(
                "StateBatch",
                fld("firstOffset", INT64, vers),
                fld("lastOffset", INT64, vers),
                fld("deliveryState", INT8, vers),
                fld("deliveryCount", INT16, vers),
            )
        ),
        vers,
    )


_DELIVERY_COMPLETE_COUNT = fld("deliveryCompleteCount", INT32, tagged="0+", tag=0, default=-1, since="4.2")

SHARE_SNAPSHOT_KEY: Final = _key("ShareSnapshotKey")

SHARE_SNAPSHOT_VALUE: Final = message(
    "ShareSnapshotValue",
    "0",
    "0+",
    fld("snapshotEpoch", INT32),
    fld("stateEpoch", INT32),
    fld("leaderEpoch", INT32),
    fld("startOffset", INT64),
    _DELIVERY_COMPLETE_COUNT,
    fld("createTimestamp", INT64),
    fld("writeTimestamp", INT64),
    _state_batches(),
)

SHARE_UPDATE_KEY: Final = _key("ShareUpdateKey")

SHARE_UPDATE_VALUE: Final = message(
    "ShareUpdateValue",
    "0",
    "0+",
    fld("snapshotEpoch", INT32),
    fld("leaderEpoch", INT32),
    fld("startOffset", INT64),
    _DELIVERY_COMPLETE_COUNT,
    _state_batches(),
)

EARLY_ACCESS_LAYOUTS: Final[dict[str, tuple[tuple[str, MessageType], ...]]] = {
    "ShareSnapshotValue": (
        (
            "4.0",
            message(
                "ShareSnapshotValue",
                "0",
                "0+",
                fld("snapshotEpoch", UINT16, "0"),
                fld("stateEpoch", INT32),
                fld("leaderEpoch", INT32),
                fld("startOffset", INT64, "0"),
                _state_batches("0"),
            ),
        ),
    ),
    "ShareUpdateValue": (
        (
            "4.0",
            message(
                "ShareUpdateValue",
                "0",
                "0+",
                fld("snapshotEpoch", UINT16, "0"),
                fld("leaderEpoch", INT32),
                fld("startOffset", INT64, "0"),
                _state_batches("0"),
            ),
        ),
    ),
}
"""Value message name -> (Kafka releases, layout) of the early-access layouts."""

RECORD_TYPES: Final[dict[int, tuple[str, MessageType, MessageType]]] = {
    0: ("ShareSnapshot", SHARE_SNAPSHOT_KEY, SHARE_SNAPSHOT_VALUE),
    1: ("ShareUpdate", SHARE_UPDATE_KEY, SHARE_UPDATE_VALUE),
}
"""Record type -> (record name, key message, value message), as the share coordinator maps them."""


def decode_share_group_state_record(key: Buffer | None, value: Buffer | None) -> DecodedRecord:
    """Decode one `__share_group_state` record from its key and value bytes (None: null).

    An unknown record type or value version gives status "unknown" with the raw bytes; bytes that do not
    decode raise `DecodeError` (a missing key: `CorruptFieldError`).
    """
    if key is None:
        raise CorruptFieldError("a __share_group_state record without a key (message had a missing key)")
    key_bytes = bytes(key)
    value_bytes = None if value is None else bytes(value)
    record_type = read_version(key_bytes, "key")
    entry = RECORD_TYPES.get(record_type)
    if entry is None:
        return DecodedRecord(
            decoder="share_group_state",
            status="unknown",
            record=None,
            key=None,
            value=None,
            oracle=OracleText(
                key_template=f"Unknown record type {record_type} at offset {{offset}}, skipping."
            ),
            reason=f"share group state record type {record_type} is not one Kafka 4.0-4.4 defines",
            raw_key=key_bytes,
            raw_value=value_bytes,
        )
    name, key_msg, value_msg = entry
    decoded_key = decode_part(key_msg, key_bytes, 0, "key")
    key_dict: dict[str, Any] = {"type": str(record_type), "data": decoded_key.data}
    key_text = kafka_json(key_dict)
    common: dict[str, Any] = {
        "decoder": "share_group_state",
        "record": name,
        "key": key_dict,
        "key_unknown_tagged_fields": decoded_key.unknown_tagged_fields,
        "key_trailing_bytes": len(key_bytes) - decoded_key.end,
    }
    if value_bytes is None:
        return DecodedRecord(
            status="tombstone", value=None, oracle=OracleText(key=key_text, payload="<DELETE>"), **common
        )
    version = read_version(value_bytes, "value")
    if version not in value_msg.valid:
        return DecodedRecord(
            status="unknown",
            value=None,
            oracle=OracleText(
                key_template="Error at offset {offset}, skipping. "
                f"Found an unknown record version {version} for {record_type} type"
            ),
            reason=f"{value_msg.name} version {version} is not one Kafka 4.0-4.4 knows ({value_msg.valid})",
            raw_key=key_bytes,
            raw_value=value_bytes,
            **common,
        )
    early = EARLY_ACCESS_LAYOUTS.get(value_msg.name, ())
    decoded_value, layout, current = decode_value_layouts(value_msg, value_bytes, version, early)
    value_dict: dict[str, Any] = {"version": str(version), "data": decoded_value.data}
    return DecodedRecord(
        status="ok",
        value=value_dict,
        oracle=value_text(key_text, version, current),
        older=early_access_reads(key_text, value_bytes, version, early),
        value_type=value_msg if current is decoded_value else None,
        layout=layout,
        value_unknown_tagged_fields=decoded_value.unknown_tagged_fields,
        value_trailing_bytes=len(value_bytes) - decoded_value.end,
        **common,
    )
