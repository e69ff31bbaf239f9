from __future__ import annotations

import base64
import json
import math
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from wire import encode_message, full_values, json_view, uvarint

from kdump.errors import CorruptFieldError, DecodeError, TruncatedError
from kdump.formats.internal.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UINT32,
    UUID,
    ZERO_UUID,
    ArrayOf,
    Reader,
    UnknownTaggedField,
    UnsupportedVersionError,
    Versions,
    decode_message,
    fld,
    java_double_to_string,
    java_utf8_decode,
    json_string,
    kafka_json,
    message,
    struct_of,
    uuid_to_str,
)

# A message exercising every feature: non-flexible v0, flexible from v1, fields added and removed by version,
# nullable fields, a tagged scalar, a tagged nullable array and a tagged nullable struct.
POINT = struct_of("Point", fld("x", INT32), fld("label", STRING, nullable="0+"))
SAMPLE = message(
    "Sample",
    "0-2",
    "1+",
    fld("flag", BOOL),
    fld("small", INT8),
    fld("short", INT16),
    fld("port", UINT16),
    fld("count", INT32, default=-1),
    fld("wide", UINT32, "1+"),
    fld("big", INT64),
    fld("ratio", FLOAT64),
    fld("id", UUID),
    fld("name", STRING),
    fld("note", STRING, nullable="0+", default=None),
    fld("blob", BYTES, nullable="0+"),
    fld("old", INT32, "0", default=7),
    fld("numbers", ArrayOf(INT32)),
    fld("words", ArrayOf(STRING), nullable="1+"),
    fld("points", ArrayOf(POINT)),
    fld("level", INT8, "1+", tagged="1+", tag=0, default=-1),
    fld("extra", ArrayOf(INT32), "2+", nullable="2+", tagged="2+", tag=1, default=None),
    fld("origin", POINT, "1+", nullable="1+", tagged="1+", tag=2, default=None),
)


def _i16(v: int) -> bytes:
    return struct.pack(">h", v)


def _i32(v: int) -> bytes:
    return struct.pack(">i", v)


# ------------------------------------------------------------------------------------------------- versions


@pytest.mark.parametrize(
    ("spec", "lo", "hi", "text"),
    [("0+", 0, 0x7FFF, "0+"), ("3", 3, 3, "3"), ("1-2", 1, 2, "1-2"), ("none", 1, 0, "none")],
)
def test_versions_parse(spec: str, lo: int, hi: int, text: str) -> None:
    v = Versions.parse(spec)
    assert (v.lo, v.hi) == (lo, hi)
    assert str(v) == text
    assert (lo in v) == (not v.empty)


# ----------------------------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("version", [0, 1, 2])
@given(data=st.data())
def test_sample_round_trip(version: int, data: st.DataObject) -> None:
    value = data.draw(full_values(SAMPLE, version))
    raw = encode_message(SAMPLE, value, version)
    assert decode_message(SAMPLE, raw, version, view="full").data == value
    decoded = decode_message(SAMPLE, raw + b"tail", version)
    assert decoded.data == json_view(SAMPLE, value, version)
    assert decoded.end == len(raw)
    assert decoded.unknown_tagged_fields == ()
    json.dumps(decoded.data)  # JSON-able


def test_versions_select_fields() -> None:
    v0 = decode_message(SAMPLE, encode_message(SAMPLE, _sample(), 0), 0).data
    v2 = decode_message(SAMPLE, encode_message(SAMPLE, _sample(), 2), 2).data
    assert "old" in v0
    assert "wide" not in v0
    assert "level" not in v0
    assert "old" not in v2
    assert v2["wide"] == 4_000_000_000
    # Tagged fields holding their default are left out of the JSON view; "full" fills in absent fields.
    assert "level" not in v2
    assert "extra" not in v2
    full = decode_message(SAMPLE, encode_message(SAMPLE, _sample(), 2), 2, view="full").data
    assert full["old"] == 7
    assert full["level"] == -1
    assert full["extra"] is None
    assert full["origin"] is None


def _sample(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {
        "flag": True,
        "small": -3,
        "short": 300,
        "port": 65535,
        "count": 5,
        "wide": 4_000_000_000,
        "big": -(2**63),
        "ratio": 0.5,
        "id": uuid_to_str(bytes(range(16))),
        "name": "héllo",
        "note": None,
        "blob": base64.b64encode(b"\x00\xff").decode(),
        "old": 7,
        "numbers": [1, -2],
        "words": ["a", ""],
        "points": [{"x": 1, "label": None}],
        "level": -1,
        "extra": None,
        "origin": None,
    }
    base.update(changes)
    return base


def test_tagged_fields_decoded_and_shown_when_not_default() -> None:
    value = _sample(level=3, extra=[9], origin={"x": 2, "label": "o"})
    data = decode_message(SAMPLE, encode_message(SAMPLE, value, 2), 2).data
    assert data["level"] == 3
    assert data["extra"] == [9]
    assert data["origin"] == {"x": 2, "label": "o"}
    assert list(data)[-3:] == ["level", "extra", "origin"]  # declaration order, not tag order


def test_unknown_tags_kept_raw_with_their_path() -> None:
    raw = encode_message(SAMPLE, _sample(), 1, unknown_tags={"": [(9, b"\x01\x02")], "/points/0": [(5, b"")]})
    decoded = decode_message(SAMPLE, raw, 1)
    assert decoded.unknown_tagged_fields == (
        UnknownTaggedField("/points/0", 5, b""),
        UnknownTaggedField("", 9, b"\x01\x02"),
    )
    assert decoded.unknown_tagged_fields[1].to_dict() == {"path": "", "tag": 9, "data": "AQI="}


def test_known_tag_outside_its_versions_is_corrupt() -> None:
    # tag 1 ("extra") only exists from version 2.
    raw = encode_message(SAMPLE, _sample(), 1, unknown_tags={"": [(1, b"\x01")]})
    with pytest.raises(CorruptFieldError, match="tag 1 is not valid for version 1"):
        decode_message(SAMPLE, raw, 1)


def test_negative_tagged_field_count_reads_as_none() -> None:
    simple = message("Simple", "0", "0+", fld("a", INT8))
    # 0xFFFFFFFF as an unsigned varint is -1 as a Java int: Kafka's loop reads no tags.
    decoded = decode_message(simple, b"\x05" + b"\xff\xff\xff\xff\x0f", 0)
    assert decoded.data == {"a": 5}
    assert decoded.end == 6


# ------------------------------------------------------------------------------------------ error handling


def test_unknown_version_refused_unless_lenient() -> None:
    raw = encode_message(SAMPLE, _sample(), 2)
    with pytest.raises(UnsupportedVersionError):
        decode_message(SAMPLE, raw, 3)
    # Leniently, Kafka's reader treats version 3 as the nearest valid one (2); the inline struct refuses.
    lenient = decode_message(SAMPLE, encode_message(SAMPLE, _sample(points=[]), 2), 3, lenient=True)
    assert lenient.data == decode_message(SAMPLE, encode_message(SAMPLE, _sample(points=[]), 2), 2).data
    with pytest.raises(UnsupportedVersionError, match="Can't read version 3 of Point"):
        decode_message(SAMPLE, raw, 3, lenient=True)


def test_non_nullable_null_is_corrupt() -> None:
    m = message("M", "0", "none", fld("s", STRING))
    with pytest.raises(CorruptFieldError, match="non-nullable field s was serialized as null"):
        decode_message(m, _i16(-1), 0)
    m = message("M", "0", "0+", fld("a", ArrayOf(INT32)))
    with pytest.raises(CorruptFieldError, match="non-nullable field a"):
        decode_message(m, b"\x00\x00", 0)


def test_nullable_compact_and_classic_nulls() -> None:
    m0 = message("M", "0-1", "1+", fld("s", STRING, nullable="0+"), fld("b", BYTES, nullable="0+"))
    assert decode_message(m0, _i16(-1) + _i32(-1), 0).data == {"s": None, "b": None}
    assert decode_message(m0, b"\x00\x00\x00", 1).data == {"s": None, "b": None}
    assert decode_message(m0, b"\x01\x01\x00", 1).data == {"s": "", "b": ""}


def test_string_longer_than_int16_is_corrupt() -> None:
    m = message("M", "0", "0+", fld("s", STRING))
    with pytest.raises(CorruptFieldError, match="invalid length 32768"):
        decode_message(m, uvarint(0x8001) + b"x" * 0x8000 + b"\x00", 0)


def test_array_count_beyond_remaining_bytes() -> None:
    m = message("M", "0", "none", fld("a", ArrayOf(INT8)))
    with pytest.raises(TruncatedError, match="collection of size 5"):
        decode_message(m, _i32(5) + b"\x01\x02", 0)


@pytest.mark.parametrize("cut", range(1, 20))
def test_truncation_raises_truncated(cut: int) -> None:
    raw = encode_message(SAMPLE, _sample(), 2)
    with pytest.raises(TruncatedError):
        decode_message(SAMPLE, raw[: len(raw) - cut], 2)


def test_reader_varints_follow_java() -> None:
    assert Reader(b"\x7f").uvarint() == 127
    assert Reader(b"\x80\x01").uvarint() == 128
    assert Reader(b"\xff\xff\xff\xff\x07").uvarint() == 2**31 - 1
    assert Reader(b"\xff\xff\xff\xff\x0f").uvarint() == -1  # wraps to a Java int
    assert Reader(b"\xff\xff\xff\xff\x7f").uvarint() == -1  # high bits of the fifth byte dropped
    with pytest.raises(CorruptFieldError, match="5th byte"):
        Reader(b"\xff\xff\xff\xff\xff\x01").uvarint()
    with pytest.raises(TruncatedError):
        Reader(b"\x80").uvarint()


@given(st.binary(max_size=200), st.integers(0, 2))
def test_arbitrary_bytes_raise_only_decode_errors(raw: bytes, version: int) -> None:
    try:
        decoded = decode_message(SAMPLE, raw, version)
    except DecodeError:
        return
    assert decoded.end <= len(raw)
    kafka_json(decoded.data)


# ----------------------------------------------------------------------------------------- JSON rendering


def test_kafka_json_shapes() -> None:
    assert (
        kafka_json({"a": [1, None, True, "x"], "b": {}, "c": []}) == '{"a":[1,null,true,"x"],"b":{},"c":[]}'
    )
    assert kafka_json("NaN") == '"NaN"'
    assert uuid_to_str(bytes(16)) == ZERO_UUID == "AAAAAAAAAAAAAAAAAAAAAA"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", '"plain"'),
        ('q"b\\', '"q\\"b\\\\"'),
        ("\b\t\n\f\r", '"\\b\\t\\n\\f\\r"'),
        ("\x00\x01\x1f\x7f", '"\\u0000\\u0001\\u001F\x7f"'),
        ("é😀\u2028/", '"é😀\u2028/"'),
    ],
)
def test_json_string_like_jackson(text: str, expected: str) -> None:
    assert json_string(text) == expected


# Checked against Java 25's Double.toString (JDK 17 differs for 1e23-like values: it is not shortest).
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (1.0, "1.0"),
        (100.0, "100.0"),
        (0.001, "0.001"),
        (0.0009999, "9.999E-4"),
        (1e7, "1.0E7"),
        (9999999.0, "9999999.0"),
        (123.456, "123.456"),
        (1e23, "1.0E23"),
        (2e23, "2.0E23"),
        (5e-324, "4.9E-324"),
        (1.7976931348623157e308, "1.7976931348623157E308"),
        (1 / 3, "0.3333333333333333"),
        (1.2345678901234568e-5, "1.2345678901234568E-5"),
        (-1234.5, "-1234.5"),
        (math.nan, "NaN"),
        (math.inf, "Infinity"),
        (-math.inf, "-Infinity"),
    ],
)
def test_java_double_to_string(value: float, expected: str) -> None:
    assert java_double_to_string(value) == expected


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_java_double_to_string_round_trips(value: float) -> None:
    assert float(java_double_to_string(value)) == value


# Checked against `new String(bytes, UTF_8)` of Java 17 and 25.
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"ok", "ok"),
        (b"\xed\xa0\x80", "\ufffd"),  # an encoded surrogate: one U+FFFD (Python's "replace" gives three)
        (b"\xed\xaf\x13", "\ufffd\x13"),
        (b"\xe2\x82", "\ufffd"),  # cut short at the end
        (b"\xe0\x80\xaf", "\ufffd\ufffd\ufffd"),
        (b"\xf0\x9f\x98", "\ufffd"),
        (b"\xf0\x9f\x98\x80", "\U0001f600"),
        (b"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd"),
        (b"\xc0\xaf", "\ufffd\ufffd"),
        (b"a\xffb", "a\ufffdb"),
    ],
)
def test_java_utf8_decode(raw: bytes, expected: str) -> None:
    assert java_utf8_decode(raw) == expected


@given(st.binary(max_size=40))
def test_java_utf8_decode_agrees_on_valid_input(raw: bytes) -> None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        assert "\ufffd" in java_utf8_decode(raw)
    else:
        assert java_utf8_decode(raw) == text
