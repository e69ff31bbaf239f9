from __future__ import annotations

import base64
import json
import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from raw_records import OFFSETS_SEGMENTS, iter_raw_records, oracle_record_suffixes, require_segment
from wire import all_versions, encode_message, full_values, json_view

from kdump.errors import CorruptFieldError, DecodeError, TruncatedError
from kdump.formats.internal.consumer_offsets import (
    CONSUMER_PROTOCOL_ASSIGNMENT,
    CONSUMER_PROTOCOL_SUBSCRIPTION,
    GROUP_METADATA_VALUE,
    KAFKA3_TYPES,
    KAFKA4_REMOVED_TYPES,
    OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_VALUE,
    RECORD_TYPES,
    decode_consumer_protocol,
    decode_offsets_record,
)
from kdump.formats.internal.control_records import decode_control_record
from kdump.formats.internal.schema import kafka_json


def _i16(v: int) -> bytes:
    return struct.pack(">h", v)


def _key(record_type: int, data: dict[str, Any]) -> bytes:
    return _i16(record_type) + encode_message(RECORD_TYPES[record_type][1], data, 0)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


OFFSET_KEY = _key(1, {"group": "g", "topic": "t", "partition": 3})


# ------------------------------------------------------------------------------------------- the corpus


@pytest.mark.corpus
@pytest.mark.parametrize(("corpus_dir", "partition_dir", "variant"), OFFSETS_SEGMENTS, ids=lambda v: str(v))
def test_every_corpus_record_matches_the_oracle(corpus_dir: str, partition_dir: str, variant: str) -> None:
    log, oracle = require_segment(corpus_dir, partition_dir, variant)
    expected = oracle_record_suffixes(oracle)
    seen = set()
    for record in iter_raw_records(log):
        if record.is_control:
            decoded = decode_control_record(record.key, record.value)
        else:
            decoded = decode_offsets_record(record.key, record.value)
            assert decoded.status == "ok"
        assert decoded.oracle_suffix(record.offset) == expected[record.offset], record.offset
        json.dumps(decoded.to_dict())
        seen.add(record.offset)
    assert seen == set(expected)


@pytest.mark.corpus
def test_corpus_consumer_group_member_is_expanded() -> None:
    log, _ = require_segment(*OFFSETS_SEGMENTS[0])
    first = next(iter_raw_records(log))
    decoded = decode_offsets_record(first.key, first.value)
    assert decoded.record == "GroupMetadata"
    assert decoded.key == {"type": "2", "data": {"group": "kdump-txn-group"}}
    assert decoded.value is not None
    member = decoded.value["data"]["members"][0]
    assert member["subscription"] == {
        "topics": ["txn-input"],
        "userData": "",
        "ownedPartitions": [],
        "generationId": -1,
        "rackId": "",
    }
    assert member["assignment"] == {
        "assignedPartitions": [{"topic": "txn-input", "partitions": [0]}],
        "userData": "",
    }


# ------------------------------------------------------------------------------ every type and version


CASES = [
    (record_type, version)
    for record_type, (_, _, value_msg) in RECORD_TYPES.items()
    for version in all_versions(value_msg)
]


ADDED_IN_4X = {"topicId", "metadataHash", "assignmentTimestamp"}
"""Top-level tagged fields of the classic and consumer groups' values that Kafka 4.1 and 4.3 added (no
value of these types has a top-level topicId but OffsetCommitValue's); 4.3 also tagged each assignment's
partitions with `assignmentEpochs`."""


def _kafka3_view(value: dict[str, Any]) -> dict[str, Any]:
    data = {k: v for k, v in value["data"].items() if k not in ADDED_IN_4X}
    for k, v in data.items():
        if isinstance(v, list):
            data[k] = [
                {n: w for n, w in e.items() if n != "assignmentEpochs"} if isinstance(e, dict) else e
                for e in v
            ]
    return {**value, "data": data}


@pytest.mark.parametrize(("record_type", "version"), CASES)
@given(data=st.data())
def test_round_trip_every_type_and_version(record_type: int, version: int, data: st.DataObject) -> None:
    name, key_msg, value_msg = RECORD_TYPES[record_type]
    key_data = data.draw(full_values(key_msg, 0))
    value_data = data.draw(full_values(value_msg, version))
    if value_msg is GROUP_METADATA_VALUE:
        value_data["protocolType"] = "other"  # the consumer-protocol expansion is tested apart
    key = _i16(record_type) + encode_message(key_msg, key_data, 0)
    value = _i16(version) + encode_message(value_msg, value_data, version)
    decoded = decode_offsets_record(key, value)
    assert decoded.status == "ok"
    assert decoded.record == name
    assert decoded.key == {"type": str(record_type), "data": json_view(key_msg, key_data, 0)}
    assert decoded.value == {"version": str(version), "data": json_view(value_msg, value_data, version)}
    assert decoded.layout is None
    both = f" key: {kafka_json(decoded.key)} payload: {kafka_json(decoded.value)}"
    unknown = f" key: Unknown record type {record_type} at offset 7, skipping."
    # Kafka 3.x's tool knows none of the tagged fields 4.1 and 4.3 added: it prints none of them.
    assert decoded.value is not None
    kafka3 = f" key: {kafka_json(decoded.key)} payload: {kafka_json(_kafka3_view(decoded.value))}"
    assert decoded.oracle_suffix(7, (3, 8)) == (kafka3 if record_type in KAFKA3_TYPES else unknown)
    assert decoded.oracle_suffix(7, (4, 4)) == (unknown if record_type in KAFKA4_REMOVED_TYPES else both)
    json.dumps(decoded.to_dict())


def test_offset_commit_json_by_version() -> None:
    v1 = {"offset": 10, "leaderEpoch": -1, "metadata": "m", "commitTimestamp": 5, "expireTimestamp": 99}
    value = _i16(1) + encode_message(OFFSET_COMMIT_VALUE, v1, 1)
    decoded = decode_offsets_record(OFFSET_KEY, value)
    assert decoded.oracle_suffix() == (
        ' key: {"type":"1","data":{"group":"g","topic":"t","partition":3}} payload: {"version":"1","data":'
        '{"offset":10,"metadata":"m","commitTimestamp":5,"expireTimestamp":99}}'
    )
    v4 = dict(v1, leaderEpoch=2, expireTimestamp=-1)
    value = _i16(4) + encode_message(OFFSET_COMMIT_VALUE, v4, 4)
    assert decode_offsets_record(OFFSET_KEY, value).oracle_key_payload()[1] == (
        '{"version":"4","data":{"offset":10,"leaderEpoch":2,"metadata":"m","commitTimestamp":5}}'
    )


def test_kip848_member_metadata_with_classic_tag() -> None:
    _, key_msg, value_msg = RECORD_TYPES[5]
    key = _i16(5) + encode_message(key_msg, {"groupId": "g", "memberId": "m"}, 0)
    data = {
        "instanceId": None,
        "rackId": "r",
        "clientId": "c",
        "clientHost": "/h",
        "subscribedTopicNames": ["a"],
        "subscribedTopicRegex": None,
        "rebalanceTimeoutMs": 300,
        "serverAssignor": "uniform",
        "classicMemberMetadata": {
            "sessionTimeoutMs": 45,
            "supportedProtocols": [{"name": "range", "metadata": "AQ=="}],
        },
    }
    decoded = decode_offsets_record(key, _i16(0) + encode_message(value_msg, data, 0))
    assert decoded.record == "ConsumerGroupMemberMetadata"
    assert decoded.oracle_suffix() == (
        ' key: {"type":"5","data":{"groupId":"g","memberId":"m"}} payload: {"version":"0","data":{'
        '"instanceId":null,"rackId":"r","clientId":"c","clientHost":"/h","subscribedTopicNames":["a"],'
        '"subscribedTopicRegex":null,"rebalanceTimeoutMs":300,"serverAssignor":"uniform",'
        '"classicMemberMetadata":{"sessionTimeoutMs":45,"supportedProtocols":[{"name":"range","metadata":"AQ=="}]}}}'
    )
    # Without the tag the field holds its default (an empty struct) and is left out, as Kafka's JSON
    # converter does; a tag holding null is printed as null (what 4.4 brokers write for consumer members).
    del data["classicMemberMetadata"]
    decoded = decode_offsets_record(key, _i16(0) + encode_message(value_msg, data, 0))
    assert decoded.value is not None
    assert "classicMemberMetadata" not in decoded.value["data"]
    data["classicMemberMetadata"] = None
    decoded = decode_offsets_record(key, _i16(0) + encode_message(value_msg, data, 0))
    assert decoded.value is not None
    assert decoded.value["data"]["classicMemberMetadata"] is None


# ------------------------------------------------------------------------------------- consumer protocol


def _subscription(version: int, owned: list[dict[str, Any]] | None = None) -> bytes:
    data = {
        "topics": ["t1", "t2"],
        "userData": None,
        "ownedPartitions": owned or [],
        "generationId": 4,
        "rackId": "rack",
    }
    return _i16(version) + encode_message(CONSUMER_PROTOCOL_SUBSCRIPTION, data, min(version, 3))


def _group_value(subscription: bytes, assignment: bytes, protocol_type: str = "consumer") -> bytes:
    member = {
        "memberId": "m",
        "groupInstanceId": None,
        "clientId": "c",
        "clientHost": "/h",
        "rebalanceTimeout": 1,
        "sessionTimeout": 2,
        "subscription": _b64(subscription),
        "assignment": _b64(assignment),
    }
    data = {
        "protocolType": protocol_type,
        "generation": 1,
        "protocol": "range",
        "leader": "m",
        "currentStateTimestamp": 9,
        "members": [member],
    }
    return _i16(3) + encode_message(GROUP_METADATA_VALUE, data, 3)


GROUP_KEY = _key(2, {"group": "g"})
ASSIGNMENT = _i16(1) + encode_message(
    CONSUMER_PROTOCOL_ASSIGNMENT,
    {"assignedPartitions": [{"topic": "t1", "partitions": [0, 1]}], "userData": "AA=="},
    1,
)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_versions(version: int) -> None:
    member = _member(decode_offsets_record(GROUP_KEY, _group_value(_subscription(version), ASSIGNMENT)))
    expected: dict[str, Any] = {"topics": ["t1", "t2"], "userData": None}
    if version >= 1:
        expected["ownedPartitions"] = []
    if version >= 2:
        expected["generationId"] = 4
    if version >= 3:
        expected["rackId"] = "rack"
    assert member["subscription"] == expected
    assert member["assignment"] == {
        "assignedPartitions": [{"topic": "t1", "partitions": [0, 1]}],
        "userData": "AA==",
    }


def _member(decoded: Any) -> dict[str, Any]:
    assert decoded.value is not None
    member: dict[str, Any] = decoded.value["data"]["members"][0]
    return member


def test_newer_subscription_read_as_version_3_like_kafka() -> None:
    member = _member(decode_offsets_record(GROUP_KEY, _group_value(_subscription(9), ASSIGNMENT)))
    assert member["subscription"]["rackId"] == "rack"
    # ...but an inline struct (owned partitions) refuses a version it does not know: the bytes stay base64.
    sub = _subscription(9, owned=[{"topic": "t1", "partitions": [0]}])
    member = _member(decode_offsets_record(GROUP_KEY, _group_value(sub, ASSIGNMENT)))
    assert member["subscription"] == _b64(sub)


@pytest.mark.parametrize("bad", [b"", b"\x00", b"\x00\x00\x00\x00\x00\x05t", b"\x00\x00\xff\xff\xff\xfe"])
def test_undecodable_subscription_stays_base64(bad: bytes) -> None:
    member = _member(decode_offsets_record(GROUP_KEY, _group_value(bad, bad)))
    assert member["subscription"] == _b64(bad)
    assert member["assignment"] == _b64(bad)
    assert decode_consumer_protocol(bad, assignment=False) is None


def test_other_protocol_types_are_not_expanded() -> None:
    sub = _subscription(3)
    member = _member(decode_offsets_record(GROUP_KEY, _group_value(sub, ASSIGNMENT, "connect")))
    assert member["subscription"] == _b64(sub)


# -------------------------------------------------------------------------------- tombstones, unknowns


def test_tombstone() -> None:
    decoded = decode_offsets_record(OFFSET_KEY, None)
    assert decoded.status == "tombstone"
    assert decoded.value is None
    assert (
        decoded.oracle_suffix()
        == ' key: {"type":"1","data":{"group":"g","topic":"t","partition":3}} payload: <DELETE>'
    )
    assert decoded.to_dict()["status"] == "tombstone"


@given(st.integers(-(2**15), 2**15 - 1).filter(lambda t: t not in RECORD_TYPES), st.binary(max_size=20))
def test_unknown_record_type(record_type: int, rest: bytes) -> None:
    decoded = decode_offsets_record(_i16(record_type) + rest, b"\x00\x00")
    assert decoded.status == "unknown"
    assert decoded.oracle_suffix(42) == f" key: Unknown record type {record_type} at offset 42, skipping."
    out = decoded.to_dict()
    assert out["rawKey"] == _b64(_i16(record_type) + rest)
    assert out["rawValue"] == "AAA="
    assert out["reason"]


def test_unknown_value_version_prints_what_kafka_reads() -> None:
    data = {"offset": 1, "leaderEpoch": 0, "metadata": "", "commitTimestamp": 2, "expireTimestamp": -1}
    value = _i16(5) + encode_message(OFFSET_COMMIT_VALUE, data, 4)
    decoded = decode_offsets_record(OFFSET_KEY, value)
    assert decoded.status == "unknown"
    assert decoded.value is None
    assert decoded.raw_value == value
    assert decoded.oracle_key_payload()[1] == (
        '{"version":"5","data":{"offset":1,"leaderEpoch":0,"metadata":"","commitTimestamp":2}}'
    )
    decoded = decode_offsets_record(OFFSET_KEY, _i16(5) + b"\x01")
    assert decoded.oracle_suffix(3).startswith(" key: Error at offset 3, skipping. ")


def test_missing_key_and_short_buffers() -> None:
    with pytest.raises(CorruptFieldError, match="missing key"):
        decode_offsets_record(None, b"\x00\x01")
    with pytest.raises(TruncatedError, match="key's buffer"):
        decode_offsets_record(b"\x00", None)
    with pytest.raises(TruncatedError, match="value's buffer"):
        decode_offsets_record(OFFSET_KEY, b"\x03")
    with pytest.raises(TruncatedError, match="from key's buffer"):
        decode_offsets_record(OFFSET_KEY[:-1], None)


def test_trailing_bytes_are_reported_not_fatal() -> None:
    value = _i16(3) + encode_message(
        OFFSET_COMMIT_VALUE,
        {"offset": 1, "leaderEpoch": 0, "metadata": "", "commitTimestamp": 2, "expireTimestamp": -1},
        3,
    )
    decoded = decode_offsets_record(OFFSET_KEY + b"x", value + b"yz")
    assert decoded.to_dict()["trailingBytes"] == {"key": 1, "value": 2}


def test_offset_commit_key_is_read_at_the_type_version() -> None:
    assert OFFSET_COMMIT_KEY.valid.lo == 0
    decoded = decode_offsets_record(_key(0, {"group": "g", "topic": "t", "partition": 1}), None)
    assert decoded.key == {"type": "0", "data": {"group": "g", "topic": "t", "partition": 1}}


@given(st.one_of(st.none(), st.binary(max_size=64)), st.one_of(st.none(), st.binary(max_size=64)))
def test_arbitrary_bytes_raise_only_decode_errors(key: bytes | None, value: bytes | None) -> None:
    try:
        decoded = decode_offsets_record(key, value)
    except DecodeError:
        return
    json.dumps(decoded.to_dict())
    try:
        decoded.oracle_suffix(0)
    except CorruptFieldError:
        assert decoded.oracle.aborts is not None


@given(st.sampled_from(sorted(RECORD_TYPES)), st.binary(max_size=80), st.binary(max_size=80))
def test_arbitrary_message_bytes_of_known_types(record_type: int, key_rest: bytes, value: bytes) -> None:
    for version in (0, 3, 4):
        try:
            decoded = decode_offsets_record(_i16(record_type) + key_rest, _i16(version) + value)
        except DecodeError:
            continue
        json.dumps(decoded.to_dict())
        decoded.oracle_suffix(1)
