from __future__ import annotations

import json
import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from raw_records import TRANSACTION_SEGMENTS, iter_raw_records, oracle_record_suffixes, require_segment
from wire import encode_message, full_values, json_view

from kdump.errors import CorruptFieldError, DecodeError, TruncatedError
from kdump.formats.internal.transaction_log import (
    TRANSACTION_LOG_KEY,
    TRANSACTION_LOG_VALUE,
    TRANSACTION_STATES,
    decode_transaction_log_record,
    java_string_hash,
    scala_hash_set_order,
    topic_partition_hash,
)


def _i16(v: int) -> bytes:
    return struct.pack(">h", v)


KEY = _i16(0) + encode_message(TRANSACTION_LOG_KEY, {"transactionalId": "tx-1"}, 0)


def _value(version: int = 1, **changes: Any) -> bytes:
    data: dict[str, Any] = {
        "producerId": 3,
        "producerEpoch": 1,
        "transactionTimeoutMs": 60000,
        "transactionStatus": 1,
        "transactionPartitions": [
            {"topic": "txn", "partitionIds": [1]},
            {"topic": "__consumer_offsets", "partitionIds": [0]},
        ],
        "transactionLastUpdateTimestampMs": 20,
        "transactionStartTimestampMs": 10,
    }
    data.update(changes)
    return _i16(version) + encode_message(TRANSACTION_LOG_VALUE, data, version)


# ------------------------------------------------------------------------------------------- the corpus


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("corpus_dir", "partition_dir", "variant"), TRANSACTION_SEGMENTS, ids=lambda v: str(v)
)
def test_every_corpus_record_matches_the_oracle(corpus_dir: str, partition_dir: str, variant: str) -> None:
    log, oracle = require_segment(corpus_dir, partition_dir, variant)
    expected = oracle_record_suffixes(oracle)
    seen = set()
    for record in iter_raw_records(log):
        assert not record.is_control
        decoded = decode_transaction_log_record(record.key, record.value)
        assert decoded.status == "ok"
        assert decoded.oracle_suffix(record.offset) == expected[record.offset], record.offset
        json.dumps(decoded.to_dict())
        seen.add(record.offset)
    assert seen == set(expected)


# ----------------------------------------------------------------------------------------------- decoding


def test_decoded_forms() -> None:
    decoded = decode_transaction_log_record(KEY, _value())
    assert decoded.record == "TransactionLog"
    assert decoded.key == {"type": "0", "data": {"transactionalId": "tx-1"}}
    assert decoded.value == {
        "version": "1",
        "data": {
            "producerId": 3,
            "producerEpoch": 1,
            "transactionTimeoutMs": 60000,
            "transactionStatus": 1,
            "transactionPartitions": [
                {"topic": "txn", "partitionIds": [1]},
                {"topic": "__consumer_offsets", "partitionIds": [0]},
            ],
            "transactionLastUpdateTimestampMs": 20,
            "transactionStartTimestampMs": 10,
        },
        "state": "Ongoing",
    }
    # Kafka 3.8 prints the partitions in its HashSet's order, not in the record's.
    assert decoded.oracle_suffix() == (
        " key: transaction_metadata::transactionalId=tx-1 payload: producerId:3,producerEpoch:1,"
        "state=Ongoing,partitions=[__consumer_offsets-0,txn-1],txnLastUpdateTimestamp=20,txnTimeoutMs=60000"
    )


@pytest.mark.parametrize("version", [0, 1])
@given(data=st.data())
def test_round_trip(version: int, data: st.DataObject) -> None:
    value = data.draw(full_values(TRANSACTION_LOG_VALUE, version))
    value["transactionStatus"] = data.draw(st.sampled_from(sorted(TRANSACTION_STATES)))
    if value["transactionPartitions"] is None and value["transactionStatus"] != 0:
        value["transactionPartitions"] = []
    decoded = decode_transaction_log_record(
        KEY, _i16(version) + encode_message(TRANSACTION_LOG_VALUE, value, version)
    )
    assert decoded.status == "ok"
    assert decoded.value is not None
    assert decoded.value["data"] == json_view(TRANSACTION_LOG_VALUE, value, version)
    assert decoded.value["state"] == TRANSACTION_STATES[value["transactionStatus"]]
    assert f",state={decoded.value['state']},partitions=[" in decoded.oracle_suffix()


def test_empty_state_never_prints_partitions() -> None:
    decoded = decode_transaction_log_record(KEY, _value(transactionStatus=0))
    assert ",state=Empty,partitions=[]," in decoded.oracle_suffix()
    assert decoded.value is not None
    assert decoded.value["data"]["transactionPartitions"]  # still in the structured form


def test_tombstone() -> None:
    decoded = decode_transaction_log_record(KEY, None)
    assert decoded.status == "tombstone"
    assert decoded.oracle_suffix() == " key: transaction_metadata::transactionalId=tx-1 payload: <DELETE>"


def test_unknown_key_version() -> None:
    decoded = decode_transaction_log_record(_i16(3) + b"zz", _value())
    assert decoded.status == "unknown"
    assert decoded.oracle_suffix() == " key: unknown::version=3"
    assert decoded.to_dict()["rawKey"] == "AAN6eg=="


def test_unknown_value_version_aborts_kafka() -> None:
    decoded = decode_transaction_log_record(KEY, _i16(2) + b"\x00" * 40)
    assert decoded.status == "unknown"
    assert decoded.key == {"type": "0", "data": {"transactionalId": "tx-1"}}
    with pytest.raises(CorruptFieldError, match="Unknown version 2"):
        decoded.oracle_suffix()


def test_unknown_state_is_reported() -> None:
    decoded = decode_transaction_log_record(KEY, _value(transactionStatus=9))
    assert decoded.status == "unknown"
    assert decoded.value is not None
    assert decoded.value["state"] is None
    assert "state id 9" in (decoded.reason or "")
    with pytest.raises(CorruptFieldError, match="Unknown transaction state id 9"):
        decoded.oracle_suffix()


def test_null_partitions_of_an_ongoing_transaction() -> None:
    decoded = decode_transaction_log_record(KEY, _value(transactionPartitions=None))
    assert decoded.status == "ok"
    assert decoded.value is not None
    assert decoded.value["data"]["transactionPartitions"] is None
    with pytest.raises(CorruptFieldError, match="null transactionPartitions"):
        decoded.oracle_suffix()


def test_errors() -> None:
    with pytest.raises(CorruptFieldError):
        decode_transaction_log_record(None, _value())
    with pytest.raises(TruncatedError):
        decode_transaction_log_record(b"\x00", None)
    with pytest.raises(TruncatedError):
        decode_transaction_log_record(KEY, b"\x00")
    with pytest.raises(TruncatedError):
        decode_transaction_log_record(KEY, _value()[:-3])


@given(st.one_of(st.none(), st.binary(max_size=64)), st.one_of(st.none(), st.binary(max_size=80)))
def test_arbitrary_bytes_raise_only_decode_errors(key: bytes | None, value: bytes | None) -> None:
    for k in (key, KEY):
        try:
            decoded = decode_transaction_log_record(k, value)
        except DecodeError:
            continue
        json.dumps(decoded.to_dict())
        try:
            decoded.oracle_suffix()
        except CorruptFieldError:
            assert decoded.oracle.aborts is not None


# ------------------------------------------------------------------------------- Scala HashSet order

# Orders printed by a Scala 2.13 mutable.HashSet filled the way Kafka fills it (checked with scala-library).
HASH_SET_VECTORS = [
    ([[("txn", 1)], [("__consumer_offsets", 0)]], "__consumer_offsets-0,txn-1"),
    ([[("txn-1", 0)], [("txn-0", 0)]], "txn-0-0,txn-1-0"),
    (
        [[("orders", p) for p in range(20)]],
        ",".join(f"orders-{p}" for p in [*range(7, 20), *range(7)]),
    ),
    ([[("a", 3)], [("b", 2)], [("c", 1)], [("d", 0)], [("Aa", 0)], [("BB", 0)]], "b-2,Aa-0,BB-0,c-1,d-0,a-3"),
    ([[("t", p) for p in (5, 4, 3, 2, 1)], [("u", p) for p in (9, 8, 7)]], "t-5,t-4,t-3,t-2,t-1,u-9,u-8,u-7"),
    (
        [
            [("big", p) for p in (0, 1, 2, 3)],
            [("big", p) for p in (4, 5, 6, 7)],
            [("big", p) for p in (8, 9, 10, 11)],
            [("big", 12), ("big", 13)],
            [("other", 0)],
        ],
        "big-0,big-1,other-0,big-12,big-13,big-10,big-11,big-8,big-9,big-6,big-7,big-4,big-5,big-2,big-3",
    ),
]


@pytest.mark.parametrize(("groups", "expected"), HASH_SET_VECTORS)
def test_scala_hash_set_order(groups: list[list[tuple[str, int]]], expected: str) -> None:
    assert ",".join(f"{t}-{p}" for t, p in scala_hash_set_order(groups)) == expected


def test_java_hashes() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("😀") == (0xD83D * 31 + 0xDE00) & 0xFFFFFFFF
    assert topic_partition_hash("t", 0) == 31 * 31 + ord("t")
    assert topic_partition_hash("x", -31) == ord("x")
