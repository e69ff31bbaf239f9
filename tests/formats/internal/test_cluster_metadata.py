from __future__ import annotations

import json
import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from raw_records import METADATA_SEGMENTS, iter_raw_records, oracle_record_suffixes, require_segment
from wire import all_versions, encode_message, full_values, json_view, uvarint

from kdump.errors import CorruptFieldError, DecodeError, TruncatedError
from kdump.formats.internal.cluster_metadata import decode_metadata_record
from kdump.formats.internal.control_records import (
    CONTROL_TYPES,
    KRAFT_VERSION_RECORD,
    LEADER_CHANGE_MESSAGE,
    SNAPSHOT_FOOTER_RECORD,
    SNAPSHOT_HEADER_RECORD,
    VOTERS_RECORD,
    decode_control_record,
)
from kdump.formats.internal.metadata_tables import (
    BROKER_REGISTRATION_CHANGE_RECORD,
    CLIENT_QUOTA_RECORD,
    METADATA_RECORD_TYPES,
    PARTITION_CHANGE_RECORD,
    TOPIC_RECORD,
    USER_SCRAM_CREDENTIAL_RECORD,
    metadata_type_name,
)
from kdump.formats.internal.schema import MessageType, kafka_json, uuid_to_str

TOPIC_ID = uuid_to_str(bytes(range(16)))


def frame(msg: MessageType, data: dict[str, Any], version: int, *, api_key: int | None = None) -> bytes:
    key = msg.api_key if api_key is None else api_key
    assert key is not None
    return uvarint(1) + uvarint(key) + uvarint(version) + encode_message(msg, data, version)


def _control_key(type_id: int, version: int = 0) -> bytes:
    return struct.pack(">hh", version, type_id)


# ------------------------------------------------------------------------------------------- the corpus


@pytest.mark.corpus
@pytest.mark.parametrize(("corpus_dir", "partition_dir", "variant"), METADATA_SEGMENTS, ids=lambda v: str(v))
def test_every_corpus_record_matches_the_oracle(corpus_dir: str, partition_dir: str, variant: str) -> None:
    log, oracle = require_segment(corpus_dir, partition_dir, variant)
    expected = oracle_record_suffixes(oracle)
    seen = set()
    types = set()
    for record in iter_raw_records(log):
        if record.is_control:
            decoded = decode_control_record(record.key, record.value)
        else:
            assert record.key is None
            decoded = decode_metadata_record(record.value)
        assert decoded.status == "ok"
        assert decoded.oracle_suffix(record.offset) == expected[record.offset], record.offset
        json.dumps(decoded.to_dict())
        seen.add(record.offset)
        types.add(decoded.record)
    assert seen == set(expected)
    assert {"TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_CHANGE_RECORD", "LEADER_CHANGE"} <= types


# ------------------------------------------------------------------------------ every type and version


def test_type_names() -> None:
    names = {key: name for key, (name, _) in METADATA_RECORD_TYPES.items()}
    assert len(names) == 27
    assert names[28] == "CLEAR_ELR_RECORD"
    assert names[29] == "UNREGISTER_CONTROLLER_RECORD"
    assert names[21] == "ZK_MIGRATION_STATE_RECORD"
    assert names[27] == "REGISTER_CONTROLLER_RECORD"
    assert names[11] == "USER_SCRAM_CREDENTIAL_RECORD"
    assert metadata_type_name("KRaftVersionRecord") == "KRAFT_VERSION_RECORD"


CASES = [
    (key, version) for key, (_, msg) in sorted(METADATA_RECORD_TYPES.items()) for version in all_versions(msg)
]


@pytest.mark.parametrize(("api_key", "version"), CASES)
@given(data=st.data())
def test_round_trip_every_type_and_version(api_key: int, version: int, data: st.DataObject) -> None:
    name, msg = METADATA_RECORD_TYPES[api_key]
    value = data.draw(full_values(msg, version))
    decoded = decode_metadata_record(frame(msg, value, version))
    assert decoded.status == "ok"
    assert decoded.key is None
    assert decoded.value == {"type": name, "version": version, "data": json_view(msg, value, version)}
    assert decoded.oracle_suffix(1, (4, 4)) == " payload: " + kafka_json(decoded.value)
    json.dumps(decoded.to_dict())


def test_partition_change_record_tags() -> None:
    value = {
        "partitionId": 0,
        "topicId": TOPIC_ID,
        "isr": [1, 2],
        "leader": -2,
        "replicas": None,
        "removingReplicas": None,
        "addingReplicas": [],
        "leaderRecoveryState": 1,
        "directories": None,
        "eligibleLeaderReplicas": [3],
        "lastKnownElr": None,
    }
    decoded = decode_metadata_record(frame(PARTITION_CHANGE_RECORD, value, 2))
    assert decoded.oracle_key_payload() == (
        None,
        '{"type":"PARTITION_CHANGE_RECORD","version":2,"data":{"partitionId":0,"topicId":"AAECAwQFBgcICQoLDA0ODw",'
        '"isr":[1,2],"addingReplicas":[],"leaderRecoveryState":1,"eligibleLeaderReplicas":[3]}}',
    )
    # Tag 8 (directories) does not exist in version 0; tag 9 is nobody's and is kept raw.
    v0 = dict(value, eligibleLeaderReplicas=None)
    body = encode_message(PARTITION_CHANGE_RECORD, v0, 0, unknown_tags={"": [(8, b"\x01")]})
    with pytest.raises(CorruptFieldError, match="tag 8 is not valid for version 0"):
        decode_metadata_record(b"\x01\x05\x00" + body)
    body = encode_message(PARTITION_CHANGE_RECORD, v0, 0, unknown_tags={"": [(9, b"\x01\x02")]})
    decoded = decode_metadata_record(b"\x01\x05\x00" + body)
    assert decoded.to_dict()["unknownTaggedFields"] == [{"in": "value", "path": "", "tag": 9, "data": "AQI="}]


def test_float_bytes_and_flags_render_like_kafka() -> None:
    quota = {
        "entity": [{"entityType": "user", "entityName": None}],
        "key": "producer_byte_rate",
        "value": 1048576.0,
        "remove": False,
    }
    assert decode_metadata_record(frame(CLIENT_QUOTA_RECORD, quota, 0)).oracle_key_payload()[1] == (
        '{"type":"CLIENT_QUOTA_RECORD","version":0,"data":{"entity":[{"entityType":"user","entityName":null}],'
        '"key":"producer_byte_rate","value":1048576.0,"remove":false}}'
    )
    quota["value"] = 1e7
    assert '"value":1.0E7,' in decode_metadata_record(frame(CLIENT_QUOTA_RECORD, quota, 0)).oracle_suffix()
    quota["value"] = "NaN"
    assert '"value":"NaN",' in decode_metadata_record(frame(CLIENT_QUOTA_RECORD, quota, 0)).oracle_suffix()
    scram = {
        "name": "u",
        "mechanism": 1,
        "salt": "AAE=",
        "storedKey": "",
        "serverKey": "/w==",
        "iterations": 4096,
    }
    assert decode_metadata_record(frame(USER_SCRAM_CREDENTIAL_RECORD, scram, 0)).oracle_key_payload()[1] == (
        '{"type":"USER_SCRAM_CREDENTIAL_RECORD","version":0,"data":{"name":"u","mechanism":1,"salt":"AAE=",'
        '"storedKey":"","serverKey":"/w==","iterations":4096}}'
    )
    change = {"brokerId": 1, "brokerEpoch": 5, "fenced": 0, "inControlledShutdown": 1, "logDirs": []}
    assert decode_metadata_record(frame(BROKER_REGISTRATION_CHANGE_RECORD, change, 1)).oracle_key_payload()[
        1
    ] == (
        '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":1,"data":{"brokerId":1,"brokerEpoch":5,'
        '"inControlledShutdown":1}}'
    )


# ------------------------------------------------------------------------------------------- unknowns


@given(st.integers(0, 2**15 - 1).filter(lambda k: k not in METADATA_RECORD_TYPES), st.binary(max_size=20))
def test_unknown_api_key(api_key: int, rest: bytes) -> None:
    raw = uvarint(1) + uvarint(api_key) + uvarint(0) + rest
    decoded = decode_metadata_record(raw)
    assert decoded.status == "unknown"
    assert decoded.oracle_suffix(5) == (
        f" payload: Error at 5, skipping. org.apache.kafka.common.errors.UnsupportedVersionException: "
        f"Unknown metadata id {api_key}"
    )
    out = decoded.to_dict()
    assert out["rawValue"] is not None
    assert out["reason"]


def test_unknown_version_prints_what_kafka_reads() -> None:
    raw = frame(TOPIC_RECORD, {"name": "t", "topicId": TOPIC_ID}, 0)
    newer = uvarint(1) + uvarint(2) + uvarint(1) + raw[3:]
    decoded = decode_metadata_record(newer)
    assert decoded.status == "unknown"
    assert decoded.record == "TOPIC_RECORD"
    assert decoded.value is None
    assert decoded.raw_value == newer
    assert decoded.oracle_key_payload()[1] == (
        '{"type":"TOPIC_RECORD","version":1,"data":{"name":"t","topicId":"AAECAwQFBgcICQoLDA0ODw"}}'
    )
    assert decode_metadata_record(newer + b"x").oracle_suffix(9) == (
        " payload: Error at 9, skipping. Found 1 byte(s) of garbage after 2"
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            b"\x00\x02\x00",
            "Error at 4, skipping. Could not deserialize metadata record with frame version 0.",
        ),
        (b"\x02\x02\x00", "unknown frame version 2(only frame version 1 is supported)"),
        (uvarint(1) + uvarint(0x8000) + b"\x00", "Value for type was too large."),
    ],
)
def test_unknown_frames(raw: bytes, message: str) -> None:
    decoded = decode_metadata_record(raw)
    assert decoded.status == "unknown"
    assert message in decoded.oracle_suffix(4)


def test_malformed_metadata_raises() -> None:
    raw = frame(TOPIC_RECORD, {"name": "t", "topicId": TOPIC_ID}, 0)
    with pytest.raises(CorruptFieldError, match="Found 2 byte\\(s\\) of garbage after 2"):
        decode_metadata_record(raw + b"\x00\x00")
    with pytest.raises(TruncatedError, match="Failed to deserialize record with type 2"):
        decode_metadata_record(raw[:-2])
    with pytest.raises(TruncatedError):
        decode_metadata_record(b"")
    with pytest.raises(CorruptFieldError):
        decode_metadata_record(None)


@given(st.binary(max_size=100))
def test_arbitrary_bytes_raise_only_decode_errors(raw: bytes) -> None:
    for value in (raw, b"\x01" + raw):
        try:
            decoded = decode_metadata_record(value)
        except DecodeError:
            continue
        json.dumps(decoded.to_dict())
        decoded.oracle_suffix(0)


@given(st.sampled_from(sorted(METADATA_RECORD_TYPES)), st.integers(0, 3), st.binary(max_size=100))
def test_arbitrary_message_bytes_of_known_types(api_key: int, version: int, body: bytes) -> None:
    try:
        decoded = decode_metadata_record(uvarint(1) + uvarint(api_key) + uvarint(version) + body)
    except DecodeError:
        return
    json.dumps(decoded.to_dict())
    decoded.oracle_suffix(0)


# ---------------------------------------------------------------------------------------- control records


def test_end_transaction_markers() -> None:
    decoded = decode_control_record(_control_key(1), b"\x00\x00\x00\x00\x00\x07")
    assert decoded.record == "COMMIT"
    assert decoded.oracle_suffix() == " endTxnMarker: COMMIT coordinatorEpoch: 7"
    assert decoded.value == {"type": "COMMIT", "version": 0, "data": {"version": 0, "coordinatorEpoch": 7}}
    decoded = decode_control_record(_control_key(0), b"\x00\x01\xff\xff\xff\xff!")
    assert decoded.oracle_suffix() == " endTxnMarker: ABORT coordinatorEpoch: -1"
    assert decoded.to_dict()["trailingBytes"] == {"key": 0, "value": 1}
    with pytest.raises(TruncatedError, match="at least 6 bytes"):
        decode_control_record(_control_key(0), b"\x00\x00\x00")
    with pytest.raises(CorruptFieldError, match="end transaction marker: -1"):
        decode_control_record(_control_key(0), b"\xff\xff\x00\x00\x00\x00")


def test_kraft_control_records() -> None:
    leader = {"version": 0, "leaderId": 1, "voters": [{"voterId": 1}], "grantingVoters": [{"voterId": 1}]}
    decoded = decode_control_record(_control_key(2), encode_message(LEADER_CHANGE_MESSAGE, leader, 0))
    assert decoded.oracle_suffix() == " controlType: LEADER_CHANGE(2)"
    assert decoded.value == {"type": "LEADER_CHANGE", "version": 0, "data": leader}

    header = encode_message(SNAPSHOT_HEADER_RECORD, {"version": 0, "lastContainedLogTimestamp": 123}, 0)
    decoded = decode_control_record(_control_key(3), header)
    assert decoded.oracle_suffix() == ' SnapshotHeader {"version":0,"lastContainedLogTimestamp":123}'

    footer = encode_message(SNAPSHOT_FOOTER_RECORD, {"version": 0}, 0)
    assert decode_control_record(_control_key(4), footer).oracle_suffix() == ' SnapshotFooter {"version":0}'

    kraft = encode_message(KRAFT_VERSION_RECORD, {"version": 0, "kRaftVersion": 1}, 0)
    assert decode_control_record(_control_key(5), kraft).oracle_suffix() == (
        ' KRaftVersion {"version":0,"kRaftVersion":1}'
    )

    voters = {
        "version": 0,
        "voters": [
            {
                "voterId": 1,
                "voterDirectoryId": TOPIC_ID,
                "endpoints": [{"name": "CONTROLLER", "host": "127.0.0.1", "port": 19093}],
                "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1},
            }
        ],
    }
    decoded = decode_control_record(_control_key(6), encode_message(VOTERS_RECORD, voters, 0))
    assert decoded.oracle_suffix() == (
        ' KRaftVoters {"version":0,"voters":[{"voterId":1,"voterDirectoryId":"AAECAwQFBgcICQoLDA0ODw",'
        '"endpoints":[{"name":"CONTROLLER","host":"127.0.0.1","port":19093}],'
        '"kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}'
    )


def test_unknown_and_bad_control_records() -> None:
    decoded = decode_control_record(_control_key(7), b"")
    assert decoded.status == "unknown"
    assert decoded.oracle_suffix() == " controlType: UNKNOWN(7)"
    assert 7 not in CONTROL_TYPES
    with pytest.raises(TruncatedError, match="at least 4 bytes"):
        decode_control_record(b"\x00\x00\x01", b"")
    with pytest.raises(CorruptFieldError, match="Invalid version found for control record: -1"):
        decode_control_record(_control_key(1, version=-1), b"\x00" * 6)
    with pytest.raises(CorruptFieldError):
        decode_control_record(None, b"")
    with pytest.raises(CorruptFieldError):
        decode_control_record(_control_key(3), None)
    with pytest.raises(TruncatedError):
        decode_control_record(_control_key(3), b"\x00\x00\x00")


@given(st.one_of(st.none(), st.binary(max_size=8)), st.one_of(st.none(), st.binary(max_size=60)))
def test_arbitrary_control_bytes_raise_only_decode_errors(key: bytes | None, value: bytes | None) -> None:
    for k in (key, _control_key(2), _control_key(6)):
        try:
            decoded = decode_control_record(k, value)
        except DecodeError:
            continue
        json.dumps(decoded.to_dict())
        decoded.oracle_suffix(0)
