"""Control records of any partition: transaction markers and the KRaft control records.

A record of a control batch has a key `int16` version (>= 0) and `int16` type; the value depends on the
type:

* 0 ABORT, 1 COMMIT (transaction markers): `int16` version, `int32` coordinatorEpoch;
* 2 LEADER_CHANGE: LeaderChangeMessage (version, leaderId, voters, grantingVoters);
* 3 SNAPSHOT_HEADER: SnapshotHeaderRecord (version, lastContainedLogTimestamp);
* 4 SNAPSHOT_FOOTER: SnapshotFooterRecord (version);
* 5 KRAFT_VERSION: KRaftVersionRecord (version, kRaftVersion);
* 6 KRAFT_VOTERS: VotersRecord (version, voters with directory id, endpoints and supported kraft versions).

The KRaft messages are flexible and always read at version 0 (their first field repeats a version), as
Kafka reads them. Decoded form: `key` `{"version": <int>, "type": <int>}`, `value` `{"type": "<TYPE>",
"version": 0, "data": {...}}` (for a marker `data` is `{"version": <int>, "coordinatorEpoch": <int>}`). The
oracle text is what DumpLogSegments prints instead of key and payload for a control record: ` endTxnMarker:
COMMIT coordinatorEpoch: 0`, ` SnapshotHeader {...}`, ` SnapshotFooter {...}`, ` KRaftVersion {...}`,
` KRaftVoters {...}`; a leader change is ` controlType: LEADER_CHANGE(2)` in Kafka 3.x's tool and
` LeaderChange: {...}` in 4.x's; a type no tool knows is ` controlType: UNKNOWN(<id>)` (status "unknown").
"""

from __future__ import annotations

import struct
from typing import Any, Final

from kdump.errors import CorruptFieldError, DecodeError, TruncatedError
from kdump.formats.internal.decoded import DecodedRecord, OracleText
from kdump.formats.internal.schema import (
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UUID,
    ZERO_UUID,
    ArrayOf,
    Buffer,
    MessageType,
    decode_message,
    fld,
    kafka_json,
    message,
    struct_of,
)

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

_VOTER = struct_of("Voter", fld("voterId", INT32), fld("voterDirectoryId", UUID, "1+"), common=True)

LEADER_CHANGE_MESSAGE: Final = message(
    "LeaderChangeMessage",
    "0-1",
    "0+",
    fld("version", INT16),
    fld("leaderId", INT32),
    fld("voters", ArrayOf(_VOTER)),
    fld("grantingVoters", ArrayOf(_VOTER)),
    since={1: "3.9"},
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

CONTROL_RECORD_KEY: Final = message("ControlRecordTypeSchema", "0", "none", fld("type", INT16))
"""A control record's key after its `int16` version (read by hand below, with the same layout)."""

END_TXN_MARKER: Final = message("EndTxnMarker", "0", "none", fld("coordinatorEpoch", INT32))
"""A transaction marker's value after its `int16` version (read by hand below, with the same layout)."""

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
    if label is None:
        control = f" controlType: {name}({type_id})"
        control4 = f" LeaderChange: {kafka_json(_leader_change_as_written(decoded.data))}"
    else:
        control = control4 = f" {label} {kafka_json(decoded.data)}"
    return DecodedRecord(
        status="ok",
        record=name,
        value={"type": name, "version": 0, "data": decoded.data},
        oracle=OracleText(control=control),
        oracle4=OracleText(control=control4),
        value_unknown_tagged_fields=decoded.unknown_tagged_fields,
        value_trailing_bytes=len(value_bytes) - decoded.end,
        **common,
    )


def _leader_change_as_written(data: dict[str, Any]) -> dict[str, Any]:
    """Kafka reads a LeaderChangeMessage at version 0 but writes its JSON at the version its first field
    holds: from version 1 each voter shows a `voterDirectoryId`, never read, so the zero uuid."""
    if data["version"] < 1:
        return data
    voters = {
        name: [{"voterId": v["voterId"], "voterDirectoryId": ZERO_UUID} for v in data[name]]
        for name in ("voters", "grantingVoters")
    }
    return {**data, **voters}
