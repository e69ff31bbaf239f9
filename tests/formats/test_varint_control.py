"""Zig-zag varints (`kdump.formats.varint`) and control records (`kdump.formats.control`).

Varints are checked against known encodings (protobuf zig-zag, Kafka's `ByteUtils`) and against
kafka-python's independent implementation; control keys and end-transaction markers against the
layout of Kafka's `ControlRecordType` / `EndTransactionMarker`.
"""

from __future__ import annotations

import contextlib
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kdump.errors import CorruptFieldError, DecodeError, TruncatedError
from kdump.formats.constants import ControlType
from kdump.formats.control import (
    ControlKey,
    EndTxnMarker,
    decode_control_key,
    decode_end_txn_marker,
    encode_control_key,
    encode_end_txn_marker,
)
from kdump.formats.varint import (
    decode_uvarint,
    decode_varint,
    decode_varlong,
    encode_uvarint,
    encode_varint,
)

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)

# --- varints ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (-2, b"\x03"),
        (63, b"\x7e"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (-65, b"\x81\x01"),
        (150, b"\xac\x02"),
        (2**31 - 1, b"\xfe\xff\xff\xff\x0f"),
        (-(2**31), b"\xff\xff\xff\xff\x0f"),
        (2**63 - 1, b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
        (-(2**63), b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
    ],
)
def test_known_zigzag_encodings(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded
    if len(encoded) <= 5:
        assert decode_varint(encoded, 0) == (value, len(encoded))
    assert decode_varlong(encoded, 0) == (value, len(encoded))


@given(INT32, st.binary(max_size=8), st.binary(max_size=8))
def test_varint_round_trip_in_context(value: int, before: bytes, after: bytes) -> None:
    encoded = encode_varint(value)
    assert 1 <= len(encoded) <= 5
    buf = before + encoded + after
    assert decode_varint(buf, len(before)) == (value, len(before) + len(encoded))
    assert decode_varint(memoryview(bytearray(buf)), len(before))[0] == value


@given(INT64)
def test_varlong_round_trip(value: int) -> None:
    encoded = encode_varint(value)
    assert 1 <= len(encoded) <= 10
    assert decode_varlong(encoded, 0) == (value, len(encoded))


@given(INT64)
def test_varint_agrees_with_kafka_python(value: int) -> None:
    util = pytest.importorskip("kafka.record.util")
    out = bytearray()
    util.encode_varint(value, out.append)
    assert bytes(out) == encode_varint(value)
    assert util.decode_varint(bytes(out), 0) == decode_varlong(bytes(out), 0)


@given(st.integers(0, 2**64 - 1))
def test_uvarint_round_trip(value: int) -> None:
    encoded = encode_uvarint(value)
    assert decode_uvarint(encoded, 0, 10) == (value, len(encoded))
    if value < 2**35:
        assert decode_uvarint(encoded, 0) == (value, len(encoded))


def test_encoders_reject_out_of_range() -> None:
    with pytest.raises(ValueError, match="negative"):
        encode_uvarint(-1)
    with pytest.raises(ValueError, match="varlong"):
        encode_varint(2**63)
    with pytest.raises(ValueError, match="varlong"):
        encode_varint(-(2**63) - 1)


def test_varint_longer_than_five_bytes_is_corrupt() -> None:
    # Kafka's ByteUtils.readVarint throws when a 5th byte still has its high bit set.
    with pytest.raises(CorruptFieldError, match="longer than 5"):
        decode_varint(b"\x80\x80\x80\x80\x80\x00", 0)
    with pytest.raises(CorruptFieldError, match="longer than 10"):
        decode_varlong(b"\x80" * 10 + b"\x00", 0)
    with pytest.raises(CorruptFieldError):
        decode_uvarint(b"\xff" * 6, 0)
    # A 10-byte varlong is fine where a varint is not.
    ten = encode_varint(-(2**63))
    with pytest.raises(CorruptFieldError):
        decode_varint(ten, 0)


@pytest.mark.parametrize("data", [b"", b"\x80", b"\xff\xff", b"\x80\x80\x80\x80"])
def test_truncated_varint(data: bytes) -> None:
    with pytest.raises(TruncatedError):
        decode_varint(data, 0)
    with pytest.raises(TruncatedError):
        decode_uvarint(data, 0)


def test_truncated_varint_past_the_position() -> None:
    with pytest.raises(TruncatedError, match="position 3"):
        decode_varint(b"\x00\x00\x00\x81", 3)
    assert issubclass(TruncatedError, DecodeError)


@given(st.binary(max_size=12), st.integers(0, 12))
def test_decoders_only_raise_decode_errors(data: bytes, position: int) -> None:
    for fn in (decode_varint, decode_varlong, decode_uvarint):
        try:
            value, end = fn(data, position)
        except DecodeError:
            continue
        assert position < end <= len(data)
        assert isinstance(value, int)


# --- control records ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ctype", "name"),
    [
        (0, "ABORT"),
        (1, "COMMIT"),
        (2, "LEADER_CHANGE"),
        (3, "SNAPSHOT_HEADER"),
        (4, "SNAPSHOT_FOOTER"),
        (5, "KRAFT_VERSION"),
        (6, "KRAFT_VOTERS"),
        (7, "UNKNOWN"),
        (-1, "UNKNOWN"),
        (32767, "UNKNOWN"),
    ],
)
def test_control_key_types(ctype: int, name: str) -> None:
    key = encode_control_key(ctype)
    assert key == struct.pack(">hh", 0, ctype)
    decoded = decode_control_key(key)
    assert decoded == ControlKey(0, ctype)
    assert decoded.type_name == name


@given(st.integers(0, 2**15 - 1), st.integers(-(2**15), 2**15 - 1), st.binary(max_size=6))
def test_control_key_round_trip(version: int, ctype: int, extra: bytes) -> None:
    # A higher version is read as version 0 (its first 4 bytes); trailing bytes are ignored, as in Kafka.
    assert decode_control_key(encode_control_key(ctype, version) + extra) == (version, ctype)


@pytest.mark.parametrize("key", [None, b"", b"\x00", b"\x00\x00\x00"])
def test_control_key_too_short(key: bytes | None) -> None:
    with pytest.raises(CorruptFieldError, match="need 4"):
        decode_control_key(key)


def test_control_key_negative_version() -> None:
    with pytest.raises(CorruptFieldError, match="version"):
        decode_control_key(struct.pack(">hh", -1, ControlType.COMMIT))


@given(st.integers(-(2**31), 2**31 - 1), st.integers(0, 2**15 - 1))
def test_end_txn_marker_round_trip(epoch: int, version: int) -> None:
    value = encode_end_txn_marker(epoch, version)
    assert value == struct.pack(">hi", version, epoch)
    assert decode_end_txn_marker(value) == EndTxnMarker(version, epoch)
    assert decode_end_txn_marker(value + b"\x00\x01").coordinator_epoch == epoch


@pytest.mark.parametrize("value", [None, b"", b"\x00\x00\x00\x00\x00"])
def test_end_txn_marker_too_short(value: bytes | None) -> None:
    with pytest.raises(CorruptFieldError, match="fewer than 6"):
        decode_end_txn_marker(value)


def test_end_txn_marker_negative_version() -> None:
    with pytest.raises(CorruptFieldError, match="version"):
        decode_end_txn_marker(struct.pack(">hi", -3, 5))


@given(st.one_of(st.none(), st.binary(max_size=10)))
def test_control_decoders_raise_only_decode_errors(data: bytes | None) -> None:
    for fn in (decode_control_key, decode_end_txn_marker):
        with contextlib.suppress(DecodeError):
            fn(data)
