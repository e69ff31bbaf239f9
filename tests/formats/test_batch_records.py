"""Batch headers, checksums and records (`kdump.formats.batch`, `kdump.formats.records`).

Round trips through kdump's writers and readers (hypothesis), checksums against the `crc32c` and `zlib`
libraries directly, and every error the record decoders report (the layouts are Kafka's
`DefaultRecordBatch`, `DefaultRecord`, `LegacyRecord` and `AbstractLegacyRecordBatch`).
"""

from __future__ import annotations

import struct
import zlib

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdump.errors import CorruptFieldError, DecodeError, TruncatedError
from kdump.formats.batch import (
    BatchHeader,
    decode_legacy_header,
    decode_v2_header,
    encode_legacy_message,
    encode_v2_batch,
    legacy_crc,
    v2_crc,
)
from kdump.formats.codecs import compress, decompress
from kdump.formats.constants import V2_HEADER_SIZE, Codec, TimestampType
from kdump.formats.records import (
    NewRecord,
    Record,
    build_legacy_entry,
    build_v2_batch,
    decode_legacy_message,
    decode_legacy_records,
    decode_v2_records,
    encode_v2_record,
)
from kdump.formats.varint import encode_varint

INT16 = st.integers(-(2**15), 2**15 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
BASE_TS = 1_700_000_000_000

maybe_bytes = st.one_of(st.none(), st.binary(max_size=60))
headers = st.lists(st.tuples(st.binary(max_size=12), maybe_bytes), max_size=5).map(tuple)
new_records = st.lists(
    st.builds(NewRecord, maybe_bytes, maybe_bytes, st.integers(0, 2**42), headers), min_size=1, max_size=20
)


def _v2(buf: bytes, position: int = 0) -> BatchHeader:
    (length,) = struct.unpack_from(">i", buf, position + 8)
    return decode_v2_header(buf, position, length + 12)


def _records(buf: bytes) -> tuple[BatchHeader, list[Record], DecodeError | None]:
    h = _v2(buf)
    payload = decompress(h.compression, buf[V2_HEADER_SIZE : h.size])
    recs, err = decode_v2_records(payload, h)
    return h, recs, err


def _body(
    records_payload: bytes, count: int, *, base_offset: int = 0, last_delta: int | None = None
) -> bytes:
    return encode_v2_batch(
        base_offset=base_offset,
        records_payload=records_payload,
        count=count,
        last_offset_delta=count - 1 if last_delta is None else last_delta,
        base_timestamp=BASE_TS,
        max_timestamp=BASE_TS,
    )


# --- v2 header and CRC ---------------------------------------------------------------------------------


@settings(max_examples=150)
@given(
    base=INT64,
    payload=st.binary(max_size=200),
    count=INT32,
    delta=INT32,
    base_ts=INT64,
    max_ts=INT64,
    attributes=INT16,
    epoch=INT32,
    pid=INT64,
    producer_epoch=INT16,
    seq=INT32,
)
def test_v2_header_round_trip(
    base: int,
    payload: bytes,
    count: int,
    delta: int,
    base_ts: int,
    max_ts: int,
    attributes: int,
    epoch: int,
    pid: int,
    producer_epoch: int,
    seq: int,
) -> None:
    if not -(2**63) <= base + delta < 2**63:
        delta = 0
    buf = encode_v2_batch(
        base_offset=base,
        records_payload=payload,
        count=count,
        last_offset_delta=delta,
        base_timestamp=base_ts,
        max_timestamp=max_ts,
        attributes=attributes,
        partition_leader_epoch=epoch,
        producer_id=pid,
        producer_epoch=producer_epoch,
        base_sequence=seq,
    )
    assert len(buf) == V2_HEADER_SIZE + len(payload)
    h = _v2(buf)
    assert (h.position, h.size, h.magic) == (0, len(buf), 2)
    assert (h.base_offset, h.last_offset, h.count) == (base, base + delta, count)
    assert (h.base_timestamp, h.max_timestamp) == (base_ts, max_ts)
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (pid, producer_epoch, seq)
    assert h.partition_leader_epoch == epoch
    assert h.attributes == attributes
    low = attributes & 0xFF  # Kafka reads only the attributes' low byte
    assert h.compression == low & 0x07
    assert h.timestamp_type == (low >> 3) & 1
    assert (h.is_transactional, h.is_control, h.has_delete_horizon) == (
        bool(low & 0x10),
        bool(low & 0x20),
        bool(low & 0x40),
    )
    assert h.delete_horizon_ms == (base_ts if low & 0x40 else None)
    # CRC-32C (Castagnoli) over attributes .. end, stored unsigned at 17
    expected_crc = crc32c.crc32c(buf[21:])
    assert h.crc == h.computed_crc == expected_crc == struct.unpack_from(">I", buf, 17)[0]
    assert h.crc_ok
    assert v2_crc(buf, 0, len(buf)) == expected_crc


def test_v2_crc_does_not_cover_offset_length_or_leader_epoch() -> None:
    buf = bytearray(build_v2_batch(10, [NewRecord(b"k", b"v", BASE_TS)], partition_leader_epoch=3))
    struct.pack_into(">q", buf, 0, 99)
    struct.pack_into(">i", buf, 12, 12345)
    h = _v2(bytes(buf))
    assert h.crc_ok
    assert (h.base_offset, h.partition_leader_epoch) == (99, 12345)


@given(st.data())
def test_v2_crc_covers_attributes_to_the_end(data: st.DataObject) -> None:
    buf = bytearray(build_v2_batch(0, [NewRecord(b"key", b"value" * 10, BASE_TS, ((b"h", b"v"),))]))
    i = data.draw(st.integers(17, len(buf) - 1))
    bit = data.draw(st.integers(0, 7))
    buf[i] ^= 1 << bit
    h = _v2(bytes(buf))
    assert not h.crc_ok
    assert h.computed_crc == crc32c.crc32c(bytes(buf[21:]))


def test_v2_crc_computed_in_place_on_a_larger_buffer() -> None:
    batch = build_v2_batch(5, [NewRecord(None, b"x", BASE_TS)])
    buf = memoryview(b"\xff" * 37 + batch + b"\x00" * 50)
    h = decode_v2_header(buf, 37, len(batch))
    assert h.crc_ok
    assert h.position == 37
    assert v2_crc(buf, 37, len(batch)) == h.crc


@pytest.mark.parametrize(
    ("base_seq", "base", "last", "expected"),
    [
        (-1, 0, 9, -1),
        (0, 0, 9, 9),
        (2**31 - 1, 100, 100, 2**31 - 1),
        (2**31 - 1, 100, 101, 0),
        (2**31 - 5, 0, 9, 4),
    ],
)
def test_last_sequence_wraps(base_seq: int, base: int, last: int, expected: int) -> None:
    buf = encode_v2_batch(
        base_offset=base,
        records_payload=b"",
        count=0,
        last_offset_delta=last - base,
        base_timestamp=-1,
        max_timestamp=-1,
        producer_id=1 if base_seq >= 0 else -1,
        producer_epoch=0,
        base_sequence=base_seq,
    )
    assert _v2(buf).last_sequence == expected


def test_delete_horizon_is_the_base_timestamp_when_flagged() -> None:
    buf = encode_v2_batch(
        base_offset=0,
        records_payload=b"",
        count=0,
        last_offset_delta=0,
        base_timestamp=1_795_383_781_575,
        max_timestamp=5,
        attributes=0x40,
    )
    assert _v2(buf).delete_horizon_ms == 1_795_383_781_575
    assert _v2(_body(b"", 0)).delete_horizon_ms is None


# --- v2 records ----------------------------------------------------------------------------------------


@settings(max_examples=120, deadline=None)
@given(
    recs=new_records,
    codec=st.sampled_from(list(Codec)),
    base=st.integers(0, 2**62),
    gaps=st.lists(st.integers(0, 1000), min_size=20, max_size=20),
    producer=st.one_of(st.none(), st.tuples(st.integers(0, 2**40), st.integers(0, 2**31 - 1))),
)
def test_v2_records_round_trip(
    recs: list[NewRecord], codec: int, base: int, gaps: list[int], producer: tuple[int, int] | None
) -> None:
    deltas = []
    d = 0
    for g in gaps[: len(recs)]:
        deltas.append(d)
        d += 1 + g  # compaction leaves gaps between offset deltas
    pid, seq = producer or (-1, -1)
    buf = build_v2_batch(
        base, recs, codec=codec, offset_deltas=deltas, producer_id=pid, producer_epoch=0, base_sequence=seq
    )
    h, decoded, err = _records(buf)
    assert err is None
    assert h.crc_ok
    assert (h.count, h.last_offset, h.compression) == (len(recs), base + deltas[-1], codec)
    assert h.base_timestamp == recs[0].timestamp
    assert h.max_timestamp == max(r.timestamp for r in recs)
    assert [r.offset for r in decoded] == [base + x for x in deltas]
    assert [(r.key, r.value, r.timestamp, r.headers) for r in decoded] == [
        (r.key, r.value, r.timestamp, r.headers) for r in recs
    ]
    assert [r.sequence for r in decoded] == [(-1 if seq < 0 else (seq + x) % 2**31) for x in deltas]
    assert all(r.crc is None and r.crc_ok is None for r in decoded)


@given(recs=new_records, lat=st.integers(0, 2**42))
def test_v2_log_append_time_overrides_record_timestamps(recs: list[NewRecord], lat: int) -> None:
    h, decoded, err = _records(build_v2_batch(0, recs, log_append_time=lat))
    assert err is None
    assert h.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert h.max_timestamp == lat
    assert {r.timestamp for r in decoded} == {lat}


@given(
    offset_delta=INT32,
    ts_delta=INT64,
    key=maybe_bytes,
    value=maybe_bytes,
    hdrs=headers,
)
def test_encode_v2_record_layout(
    offset_delta: int,
    ts_delta: int,
    key: bytes | None,
    value: bytes | None,
    hdrs: tuple[tuple[bytes, bytes | None], ...],
) -> None:
    rec = encode_v2_record(offset_delta, ts_delta, key, value, hdrs)
    header = BatchHeader(
        0, 1000, 1000, 1, 0, 2, 0, True, 0, 0, 0, 0, 5000, 5000, -1, -1, -1, 0, False, False, False
    )
    decoded, err = decode_v2_records(rec, header)
    assert err is None
    (r,) = decoded
    assert (r.offset, r.timestamp, r.key, r.value, r.headers) == (
        1000 + offset_delta,
        5000 + ts_delta,
        key,
        value,
        hdrs,
    )
    # The length prefix counts exactly the bytes after it; attributes (unused) are written as 0.
    length_prefix = encode_varint(len(rec) - len(encode_varint(len(rec) - 1)))
    assert rec.startswith(length_prefix)
    assert rec[len(length_prefix)] == 0


def test_v2_empty_and_null_fields_differ() -> None:
    recs = [NewRecord(b"", b"", BASE_TS, ((b"", b""), (b"n", None))), NewRecord(None, None, BASE_TS)]
    _, decoded, err = _records(build_v2_batch(0, recs))
    assert err is None
    assert [(r.key, r.value, r.headers) for r in decoded] == [
        (b"", b"", ((b"", b""), (b"n", None))),
        (None, None, ()),
    ]


def test_v2_any_negative_length_is_null() -> None:
    # Kafka reads keyLength/valueLength < 0 as null, not only -1.
    body = (
        b"\x00"
        + encode_varint(0)
        + encode_varint(0)
        + encode_varint(-7)
        + encode_varint(-2)
        + encode_varint(0)
    )
    rec = encode_varint(len(body)) + body
    _, decoded, err = _records(_body(rec, 1))
    assert err is None
    assert (decoded[0].key, decoded[0].value) == (None, None)


def _two_records() -> bytes:
    return encode_v2_record(0, 0, b"a", b"b") + encode_v2_record(1, 0, b"c", b"d")


def test_v2_premature_end() -> None:
    recs, err = _decode_raw(_two_records(), count=3)
    assert len(recs) == 2
    assert isinstance(err, TruncatedError)
    assert "premature EOF" in str(err)


def test_v2_records_still_remaining() -> None:
    recs, err = _decode_raw(_two_records(), count=1)
    assert [r.key for r in recs] == [b"a"]
    assert isinstance(err, CorruptFieldError)
    assert "records still remaining" in str(err)


def test_v2_record_longer_than_what_remains() -> None:
    rec = encode_v2_record(0, 0, b"key", b"value")
    recs, err = _decode_raw(rec[:-2], count=1)
    assert recs == []
    assert isinstance(err, CorruptFieldError)
    assert "Invalid record size: expected" in str(err)


def test_v2_record_fields_shorter_than_its_length() -> None:
    rec = bytearray(encode_v2_record(0, 0, b"key", b"value"))
    rec[0] += 2  # claims 1 more byte (zig-zag) than its fields use
    recs, err = _decode_raw(bytes(rec) + b"\x00", count=1)
    assert recs == []
    assert isinstance(err, CorruptFieldError)
    assert "expected to read" in str(err)


def test_v2_record_fields_longer_than_its_length() -> None:
    body = (
        b"\x00"
        + encode_varint(0)
        + encode_varint(0)
        + encode_varint(50)
        + b"k" * 50
        + encode_varint(-1)
        + b"\x00"
    )
    rec = encode_varint(10) + body  # length says 10, the key alone is 50
    recs, err = _decode_raw(rec, count=1)
    assert recs == []
    assert isinstance(err, DecodeError)


def test_v2_bad_varint() -> None:
    body = b"\x00" + b"\xff" * 11 + b"\x00" * 8
    recs, err = _decode_raw(encode_varint(len(body)) + body, count=1)
    assert recs == []
    assert isinstance(err, CorruptFieldError)
    assert "longer than 10" in str(err)


@pytest.mark.parametrize(
    ("header_part", "message"),
    [
        (encode_varint(-1), "invalid number of record headers"),
        (encode_varint(100), "invalid number of record headers"),
        (encode_varint(1) + encode_varint(-3) + encode_varint(0), "negative header key size"),
        (encode_varint(1) + encode_varint(1) + b"k" + encode_varint(40), "header runs past"),
    ],
)
def test_v2_bad_headers(header_part: bytes, message: str) -> None:
    body = b"\x00" + encode_varint(0) + encode_varint(0) + encode_varint(-1) + encode_varint(-1) + header_part
    recs, err = _decode_raw(encode_varint(len(body)) + body, count=1)
    assert recs == []
    assert isinstance(err, CorruptFieldError)
    assert message in str(err)


def test_v2_buffer_underflow_is_an_error_not_an_exception() -> None:
    body = b"\x00" + encode_varint(0) + encode_varint(0) + encode_varint(3)
    recs, err = _decode_raw(encode_varint(len(body)) + body, count=1)
    assert recs == []
    assert isinstance(err, DecodeError)


@given(st.binary(max_size=200), st.integers(0, 50))
def test_v2_decoder_never_raises(data: bytes, count: int) -> None:
    recs, err = _decode_raw(data, count=count)
    assert err is not None or len(recs) == count
    assert all(isinstance(r, Record) for r in recs)


def _decode_raw(data: bytes, *, count: int) -> tuple[list[Record], DecodeError | None]:
    header = BatchHeader(
        0, 0, max(count - 1, 0), count, 0, 2, 0, True, 0, 0, 0, 0, 0, 0, -1, -1, -1, 0, False, False, False
    )
    return decode_v2_records(data, header)


# --- legacy messages -----------------------------------------------------------------------------------


@settings(max_examples=100)
@given(
    offset=INT64,
    magic=st.sampled_from([0, 1]),
    key=maybe_bytes,
    value=maybe_bytes,
    attributes=st.integers(0, 255),
    timestamp=INT64,
)
def test_legacy_message_round_trip(
    offset: int, magic: int, key: bytes | None, value: bytes | None, attributes: int, timestamp: int
) -> None:
    msg = encode_legacy_message(
        offset=offset, magic=magic, key=key, value=value, attributes=attributes, timestamp=timestamp
    )
    overhead = 14 if magic == 0 else 22
    assert len(msg) == 12 + overhead + len(key or b"") + len(value or b"")
    h = decode_legacy_header(msg, 0, len(msg))
    assert (h.base_offset, h.last_offset, h.count, h.size, h.magic) == (None, offset, None, len(msg), magic)
    assert (h.attributes, h.compression) == (attributes, attributes & 7)
    if magic == 1:
        assert (h.base_timestamp, h.max_timestamp, h.timestamp_type) == (
            timestamp,
            timestamp,
            (attributes >> 3) & 1,
        )
    else:
        assert (h.base_timestamp, h.max_timestamp, h.timestamp_type) == (
            -1,
            -1,
            TimestampType.NO_TIMESTAMP_TYPE,
        )
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.partition_leader_epoch) == (-1, -1, -1, -1)
    assert (h.is_transactional, h.is_control, h.has_delete_horizon) == (False, False, False)
    expected_crc = zlib.crc32(msg[16:]) & 0xFFFFFFFF  # CRC32 (IEEE) over magic .. end
    assert h.crc == h.computed_crc == expected_crc == legacy_crc(msg, 0, len(msg))
    assert h.crc_ok
    got = decode_legacy_message(msg, 0)
    assert got == (
        offset,
        expected_crc,
        magic,
        attributes,
        timestamp if magic == 1 else -1,
        key,
        value,
        len(msg),
    )


def test_legacy_crc_does_not_cover_offset_and_length() -> None:
    msg = bytearray(encode_legacy_message(offset=5, magic=1, key=b"k", value=b"v", timestamp=BASE_TS))
    struct.pack_into(">q", msg, 0, 777)
    assert decode_legacy_header(bytes(msg), 0, len(msg)).crc_ok
    msg[16 + 3] ^= 0x01  # inside the timestamp: covered
    assert not decode_legacy_header(bytes(msg), 0, len(msg)).crc_ok


@pytest.mark.parametrize(
    ("mutate", "error"),
    [
        (lambda m: m[:17], TruncatedError),
        (lambda m: m[:8] + struct.pack(">i", 10) + m[12:], CorruptFieldError),
        (lambda m: m[:8] + struct.pack(">i", 400) + m[12:], CorruptFieldError),
        (lambda m: m[:16] + b"\x05" + m[17:], CorruptFieldError),
        # value length 9 with 2 bytes left (the entry length adjusted to match)
        (
            lambda m: m[:8] + struct.pack(">i", 19) + m[12:-10] + struct.pack(">i", 9) + b"ab",
            CorruptFieldError,
        ),
    ],
    ids=["short-header", "length-below-14", "length-past-end", "magic-5", "value-past-end"],
)
def test_legacy_message_errors(mutate: object, error: type[DecodeError]) -> None:
    msg = encode_legacy_message(offset=0, magic=0, key=b"key", value=b"value!")
    with pytest.raises(error):
        decode_legacy_message(mutate(msg), 0)  # type: ignore[operator]


def test_legacy_message_bytes_after_value() -> None:
    msg = bytearray(encode_legacy_message(offset=0, magic=0, key=None, value=b"abc"))
    struct.pack_into(">i", msg, 8, struct.unpack_from(">i", msg, 8)[0] + 2)
    with pytest.raises(CorruptFieldError, match="after its value"):
        decode_legacy_message(bytes(msg) + b"zz", 0)


# --- legacy wrappers -----------------------------------------------------------------------------------


def _legacy_records(entry: bytes) -> tuple[BatchHeader, list[Record], DecodeError | None]:
    h = decode_legacy_header(entry, 0, len(entry))
    inner = None
    if h.compression:
        value = decode_legacy_message(entry, 0)[6]
        assert value is not None
        inner = decompress(h.compression, value, magic=h.magic)
    recs, err = decode_legacy_records(entry, h, inner)
    return h, recs, err


def _wrapper(
    inner: bytes, *, magic: int, offset: int, codec: int = Codec.GZIP, lat: int | None = None
) -> bytes:
    attributes = codec | (0x08 if lat is not None else 0)
    return encode_legacy_message(
        offset=offset,
        magic=magic,
        key=None,
        value=compress(codec, inner, magic=magic),
        attributes=attributes,
        timestamp=lat if lat is not None else BASE_TS,
    )


@settings(max_examples=60, deadline=None)
@given(
    recs=st.lists(
        st.builds(NewRecord, maybe_bytes, maybe_bytes, st.integers(0, 2**42)), min_size=1, max_size=12
    ),
    magic=st.sampled_from([0, 1]),
    codec=st.sampled_from([Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4]),
    base=st.integers(0, 2**50),
)
def test_legacy_entries_round_trip(recs: list[NewRecord], magic: int, codec: int, base: int) -> None:
    data = build_legacy_entry(base, recs, magic=magic, codec=codec)
    decoded: list[Record] = []
    pos = 0
    while pos < len(data):
        size = 12 + struct.unpack_from(">i", data, pos + 8)[0]
        h, got, err = _legacy_records(data[pos : pos + size])
        assert err is None
        assert h.crc_ok
        assert h.last_offset == got[-1].offset
        decoded += got
        pos += size
    assert pos == len(data)
    assert [r.offset for r in decoded] == list(range(base, base + len(recs)))
    assert [(r.key, r.value) for r in decoded] == [(r.key, r.value) for r in recs]
    expected_ts = [r.timestamp if magic == 1 else -1 for r in recs]
    assert [r.timestamp for r in decoded] == expected_ts
    assert all(r.crc_ok for r in decoded)


def _inner(offsets: list[int], *, magic: int, attributes: int = 0) -> bytes:
    return b"".join(
        encode_legacy_message(
            offset=o, magic=magic, key=None, value=b"v%d" % o, timestamp=BASE_TS + o, attributes=attributes
        )
        for o in offsets
    )


def test_v0_wrapper_inner_offsets_are_absolute() -> None:
    _, recs, err = _legacy_records(_wrapper(_inner([40, 41, 42], magic=0), magic=0, offset=42))
    assert err is None
    assert [r.offset for r in recs] == [40, 41, 42]


def test_v1_wrapper_inner_offsets_are_relative() -> None:
    _, recs, err = _legacy_records(_wrapper(_inner([0, 1, 2], magic=1), magic=1, offset=102))
    assert err is None
    assert [r.offset for r in recs] == [100, 101, 102]
    assert [r.timestamp for r in recs] == [BASE_TS, BASE_TS + 1, BASE_TS + 2]


def test_v1_wrapper_at_offset_zero_keeps_relative_offsets() -> None:
    _, recs, err = _legacy_records(_wrapper(_inner([0, 1, 2], magic=1), magic=1, offset=0))
    assert err is None
    assert [r.offset for r in recs] == [0, 1, 2]


def test_v1_wrapper_below_its_last_inner_offset() -> None:
    _, recs, err = _legacy_records(_wrapper(_inner([0, 1, 5], magic=1), magic=1, offset=3))
    assert recs == []
    assert isinstance(err, CorruptFieldError)
    assert "below its last inner offset" in str(err)


def test_v1_log_append_time_wrapper_stamps_every_inner_message() -> None:
    h, recs, err = _legacy_records(_wrapper(_inner([0, 1], magic=1), magic=1, offset=9, lat=BASE_TS + 999))
    assert err is None
    assert h.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in recs] == [BASE_TS + 999] * 2


def test_inner_messages_must_not_be_compressed() -> None:
    inner = _inner([0], magic=0) + _inner([1], magic=0, attributes=Codec.GZIP)
    _, recs, err = _legacy_records(_wrapper(inner, magic=0, offset=1))
    assert [r.offset for r in recs] == [0]
    assert isinstance(err, CorruptFieldError)
    assert "must not be compressed" in str(err)


def test_inner_magic_must_match_the_wrapper() -> None:
    inner = _inner([0], magic=1) + _inner([1], magic=0)
    _, recs, err = _legacy_records(_wrapper(inner, magic=1, offset=1))
    assert len(recs) == 1
    assert isinstance(err, CorruptFieldError)
    assert "magic" in str(err)


def test_empty_wrapper() -> None:
    _, recs, err = _legacy_records(_wrapper(b"", magic=0, offset=0))
    assert recs == []
    assert isinstance(err, CorruptFieldError)
    assert "no inner messages" in str(err)


def test_inner_message_with_a_bad_crc_is_flagged() -> None:
    inner = bytearray(_inner([0, 1, 2], magic=0))
    inner[-1] ^= 0xFF  # the last message's value
    _, recs, err = _legacy_records(_wrapper(bytes(inner), magic=0, offset=2))
    assert err is None
    assert [r.crc_ok for r in recs] == [True, True, False]


def test_garbage_after_inner_messages_keeps_what_decoded() -> None:
    inner = _inner([0, 1], magic=0) + b"\x00\x00\x00"
    _, recs, err = _legacy_records(_wrapper(inner, magic=0, offset=1))
    assert [r.offset for r in recs] == [0, 1]
    assert isinstance(err, TruncatedError)


def test_uncompressed_legacy_message_is_its_own_record() -> None:
    msg = encode_legacy_message(offset=7, magic=1, key=b"k", value=None, timestamp=BASE_TS)
    h, recs, err = _legacy_records(msg)
    assert err is None
    assert recs == [Record(7, BASE_TS, b"k", None, (), -1, h.crc, True)]
