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
what Kafka reads of it). The tool of a release older than a record's type or version does the same with
what it knows: `Unknown metadata id` for a type (28 before 4.0, 29 before 4.4), or the version read as
its newest known one (RegisterBrokerRecord 4 and BrokerRegistrationChangeRecord 3 before 4.3).

The control records of this and every other partition (leader change, snapshot header and footer, KRaft
version and voters, transaction markers) are in `control_records`.
"""

from __future__ import annotations

from typing import Any

from kdump.errors import CorruptFieldError, DecodeError
from kdump.formats.internal.decoded import DecodedRecord, OracleText, escape_template
from kdump.formats.internal.metadata_tables import FRAME_VERSION, METADATA_RECORD_TYPES
from kdump.formats.internal.release_view import message_known_to, version_since
from kdump.formats.internal.releases import KafkaRelease
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
        oracle=text,
        older=_older_reads(name, msg, data, reader.pos, api_key, version) if msg.since else (),
        value_type=msg,
        value_unknown_tagged_fields=decoded.unknown_tagged_fields,
    )


def _older_reads(
    name: str, msg: MessageType, data: bytes, pos: int, api_key: int, version: int
) -> tuple[tuple[KafkaRelease, KafkaRelease, OracleText], ...]:
    """What the tools of releases before this record type or version existed print of it: the type's
    `Unknown metadata id` error, or the version read as the newest they know (`_lenient_metadata_oracle`)."""
    bounds = sorted({release for v, release in msg.since if v <= version})
    out: list[tuple[KafkaRelease, KafkaRelease, OracleText]] = []
    low: KafkaRelease = (0, 0)
    for high in bounds:
        known = [
            v
            for v in range(msg.valid.lo, version + 1)
            if (since := version_since(msg, v)) is None or since <= low
        ]
        if msg.valid.lo not in known:
            unknown = (
                f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id {api_key}"
            )
            out.append((low, high, OracleText(payload_template="Error at {offset}, skipping. " + unknown)))
        elif version not in known:
            older = message_known_to(msg, low, max(known))
            out.append((low, high, _lenient_metadata_oracle(name, older, data, pos, api_key, version)))
        low = high
    return tuple(out)


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


def metadata_record_fields(value: Buffer | None) -> tuple[str, dict[str, Any]] | None:
    """The record type's name and the fields of a metadata record that `decode_metadata_record` decodes
    with status "ok", without the text Kafka's tools print of it (a replay of the metadata image needs
    the fields alone; that text was a third of its time). None for anything else: the caller asks
    `decode_metadata_record`, which says why (unknown) or raises `DecodeError`."""
    if value is None:
        return None
    data = bytes(value)
    if len(data) < 3 or (data[0] | data[1] | data[2]) & 0x80:
        return None  # a frame version, type or version past one varint byte: the full decoder judges
    reader = Reader(data)
    try:
        frame_version = reader.uvarint("frame version")
        api_key = reader.uvarint("type")
        version = reader.uvarint("version")
    except DecodeError:
        return None
    entry = METADATA_RECORD_TYPES.get(api_key)
    if frame_version != FRAME_VERSION or entry is None or version not in entry[1].valid:
        return None
    name, msg = entry
    try:
        decoded = decode_message(msg, data, version, pos=reader.pos)
    except DecodeError:
        return None
    if decoded.end < len(data):
        return None
    return name, decoded.data
