"""Records of `__cluster_metadata`, the KRaft metadata log (its segments and its `.checkpoint` snapshots).

A data record has no key; its value is a frame:

* `uvarint` frame version (1; 0 was KRaft's 2.8 preview and is refused), `uvarint` api key (the record type),
  `uvarint` record version, then the record's message at that version. Every metadata record is flexible
  (compact strings and arrays, tagged fields) and nothing may follow the message.

Record types up to Kafka 4.4 (api key, name, versions; tables in `metadata_tables`):

==  ===================================  ====    ==  ===================================  ====
 0  REGISTER_BROKER_RECORD               0-4     17  BROKER_REGISTRATION_CHANGE_RECORD    0-3
 1  UNREGISTER_BROKER_RECORD             0       18  ACCESS_CONTROL_ENTRY_RECORD          0
 2  TOPIC_RECORD                         0       19  REMOVE_ACCESS_CONTROL_ENTRY_RECORD   0
 3  PARTITION_RECORD                     0-2     20  NO_OP_RECORD                         0
 4  CONFIG_RECORD                        0       21  ZK_MIGRATION_STATE_RECORD            0
 5  PARTITION_CHANGE_RECORD              0-2     22  REMOVE_USER_SCRAM_CREDENTIAL_RECORD  0
 7  FENCE_BROKER_RECORD                  0       23  BEGIN_TRANSACTION_RECORD             0
 8  UNFENCE_BROKER_RECORD                0       24  END_TRANSACTION_RECORD               0
 9  REMOVE_TOPIC_RECORD                  0       25  ABORT_TRANSACTION_RECORD             0
10  DELEGATION_TOKEN_RECORD              0       26  REMOVE_DELEGATION_TOKEN_RECORD       0
11  USER_SCRAM_CREDENTIAL_RECORD         0       27  REGISTER_CONTROLLER_RECORD           0
12  FEATURE_LEVEL_RECORD                 0       28  CLEAR_ELR_RECORD                     0
14  CLIENT_QUOTA_RECORD                  0       29  UNREGISTER_CONTROLLER_RECORD         0
15  PRODUCER_IDS_RECORD                  0
==  ===================================  ====    ==  ===================================  ====

Decoded form (`decode_metadata_record`, see `decoded.DecodedRecord` for the envelope): `key` is null and
`value` is `{"type": "<NAME>", "version": <int>, "data": {<fields>}}`, the JSON view of
`schema.decode_message` (camelCase names in schema order, uuids as Kafka's 22-character strings, bytes as
base64, tagged fields only when they differ from their default). The oracle text is
`kafka-dump-log.sh --cluster-metadata-decoder`'s (the same in Kafka 3.x and 4.x): ` payload: <that JSON>`.
A frame version, record type or record version kdump does not know gives status "unknown" with the raw
value (the oracle then prints `Error at <offset>, skipping. <message>`, or for a newer record version
what Kafka reads of it). Records of a metadata type Kafka 3.x's tool does not know (28, 29) print its
`Unknown metadata id` error in the 3.x oracle.

The control records of this and every other partition (leader change, snapshot header and footer, KRaft
version and voters, transaction markers) are in `control_records`.
"""

from __future__ import annotations

from typing import Any, Final

from kdump.errors import CorruptFieldError, DecodeError
from kdump.formats.internal.decoded import DecodedRecord, OracleText, escape_template
from kdump.formats.internal.metadata_tables import FRAME_VERSION, METADATA_RECORD_TYPES
from kdump.formats.internal.schema import Buffer, MessageType, Reader, decode_message, kafka_json

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
            f"frame version {frame_version} is not one Kafka 3.0-4.4 knows",
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
            f"metadata record type {api_key} is not one Kafka 3.0-4.4 defines",
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
            reason=f"{name} version {version} is not one Kafka 3.0-4.4 knows ({msg.valid})",
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
    text = OracleText(payload=kafka_json(value_dict))
    return DecodedRecord(
        decoder="cluster_metadata",
        status="ok",
        record=name,
        key=None,
        value=value_dict,
        oracle=_kafka3_oracle(api_key, version, value_dict, text),
        oracle4=text,
        value_unknown_tagged_fields=decoded.unknown_tagged_fields,
    )


KAFKA3_LAST_API_KEY: Final = 27
"""Kafka 3.x's tool knows metadata records up to RegisterControllerRecord."""

KAFKA3_NEWER_VERSIONS: Final[dict[int, tuple[int, str]]] = {
    0: (3, "cordonedLogDirs"),
    17: (2, "cordonedLogDirs"),
}
"""api key -> (last version Kafka 3.x knows, the tagged field 4.x added): 3.x reads the newer version
leniently and does not know the tag."""


def _kafka3_oracle(api_key: int, version: int, value_dict: dict[str, Any], text: OracleText) -> OracleText:
    """What Kafka 3.x's tool prints for a record it may not know (its oracle is otherwise the same)."""
    if api_key > KAFKA3_LAST_API_KEY:
        return OracleText(
            payload_template="Error at {offset}, skipping. "
            f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id {api_key}"
        )
    newer = KAFKA3_NEWER_VERSIONS.get(api_key)
    if newer is not None and version > newer[0] and newer[1] in value_dict["data"]:
        data = {k: v for k, v in value_dict["data"].items() if k != newer[1]}
        return OracleText(payload=kafka_json({**value_dict, "data": data}))
    return text


def _lenient_metadata_oracle(
    name: str, msg: MessageType, data: bytes, pos: int, api_key: int, version: int
) -> OracleText:
    """Kafka reads a newer record version as its nearest known one; this is what it then prints."""
    error = "Error at {offset}, skipping. "
    try:
        decoded = decode_message(msg, data, version, pos=pos, lenient=True)
    except DecodeError:
        return OracleText(payload_template=f"{error}Failed to deserialize record with type {api_key}")
    if decoded.end < len(data):
        garbage = len(data) - decoded.end
        return OracleText(payload_template=f"{error}Found {garbage} byte(s) of garbage after {api_key}")
    return OracleText(payload=kafka_json({"type": name, "version": version, "data": decoded.data}))
