"""kafka-python's record builders and readers as a second, independent oracle.

kafka-python 3.x carries its own pure-Python implementation of message formats v0, v1 and v2 and their
codecs (``kafka.record``). Both directions are checked:

* batches built by kafka-python (``MemoryRecordsBuilder``, ``DefaultRecordBatchBuilder``,
  ``LegacyRecordBatchBuilder``) are scanned by kdump, and every header field, CRC and record equals what
  kafka-python's own reader says and what was put in;
* batches built by kdump (``build_v2_batch``, ``build_legacy_entry``) are read by kafka-python, which
  must accept their CRCs and give back the same records.

kafka-python writes batches the way a producer sends them (base offset 0, leader epoch 0, a legacy
wrapper at offset 0 with timestamp 0); where a broker would rewrite fields before they reach the disk,
the test does the same rewrite (and recomputes the legacy CRC with zlib), so what kdump scans is what a
broker's segment holds.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

kafka_record = pytest.importorskip("kafka.record")

import kafka.codec as kp_codec  # noqa: E402
import kafka.errors as kafka_errors  # noqa: E402
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder  # noqa: E402
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder  # noqa: E402
from kafka.record.memory_records import MemoryRecords, MemoryRecordsBuilder  # noqa: E402

from kdump.findings import Finding  # noqa: E402
from kdump.formats.batch import BatchHeader  # noqa: E402
from kdump.formats.codecs import xxhash32  # noqa: E402
from kdump.formats.constants import Codec, ControlType  # noqa: E402
from kdump.formats.control import encode_control_key, encode_end_txn_marker  # noqa: E402
from kdump.formats.records import NewRecord, Record, build_legacy_entry, build_v2_batch  # noqa: E402
from kdump.scan import ScanMode, ScanSummary, scan_log  # noqa: E402

BASE_TS = 1_700_000_000_000
V2_CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]
LEGACY_CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4]


class _XXH32:
    """Stand-in for the ``xxhash`` package, which kafka-python needs only for magic-0 lz4 (Kafka's broken
    frame checksum, KAFKA-3160). kdump's xxhash32 is itself checked against the lz4 C library: every v1/v2
    lz4 frame kdump reads has its header checksum verified with it."""

    def __init__(self, data: bytes) -> None:
        self._h = xxhash32(bytes(data))

    def digest(self) -> bytes:
        return struct.pack(">I", self._h)


class _XXHashModule:
    xxh32 = _XXH32


@pytest.fixture(autouse=True)
def _xxhash_for_kafka_python(monkeypatch: pytest.MonkeyPatch) -> None:
    if kp_codec.xxhash is None:
        monkeypatch.setattr(kp_codec, "xxhash", _XXHashModule)


# --- helpers --------------------------------------------------------------------------------------------


def _scan(
    buf: bytes, *, base_offset: int | None = None
) -> tuple[list[tuple[BatchHeader, list[Record]]], list[Finding], ScanSummary]:
    batches: list[tuple[BatchHeader, list[Record]]] = []
    findings: list[Finding] = []
    summaries: list[ScanSummary] = []
    for ev in scan_log(buf, deep=True, base_offset=base_offset, mode=ScanMode.FORENSIC):
        if isinstance(ev, BatchHeader):
            batches.append((ev, []))
        elif isinstance(ev, Record):
            batches[-1][1].append(ev)
        elif isinstance(ev, Finding):
            findings.append(ev)
        else:
            summaries.append(ev)
    assert len(summaries) == 1
    return batches, findings, summaries[0]


def _kp_batches(buf: bytes) -> Iterator[Any]:
    records = MemoryRecords(bytes(buf))
    while records.has_next():
        yield records.next_batch()


RecordSpec = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]

keys = st.one_of(st.none(), st.binary(max_size=40), st.text(max_size=20).map(str.encode))
values = st.one_of(
    st.none(),
    st.binary(max_size=200),
    st.tuples(st.text(min_size=1, max_size=12), st.integers(1, 60)).map(lambda t: (t[0] * t[1]).encode()),
)
header_lists = st.lists(
    st.tuples(st.text(max_size=12), st.one_of(st.none(), st.binary(max_size=24))), max_size=4
)
record_specs = st.lists(
    st.tuples(st.integers(-10_000, 10_000), keys, values, header_lists), min_size=1, max_size=25
)


def _compressible(n: int) -> list[RecordSpec]:
    """Records that every codec shrinks (kafka-python sends a batch uncompressed when it does not)."""
    return [
        (
            i * 7,
            None if i % 5 == 0 else f"key-{i}".encode(),
            None if i % 11 == 3 else (f"value {i} " * 20).encode(),
            [("h-id", str(i).encode()), ("nullv", None)] if i % 2 else [],
        )
        for i in range(n)
    ]


# --- v2: kafka-python builds, kdump reads -----------------------------------------------------------------


def _kp_v2(
    specs: list[RecordSpec],
    codec: int,
    *,
    producer: tuple[int, int, int] | None = None,
    transactional: bool = False,
    base_offset: int = 0,
    leader_epoch: int = 0,
) -> bytes:
    pid, epoch, seq = producer or (-1, -1, -1)
    builder = MemoryRecordsBuilder(
        magic=2,
        compression_type=codec,
        batch_size=1 << 24,
        offset=0,
        transactional=transactional,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )
    for ts_delta, key, value, headers in specs:
        assert builder.append(BASE_TS + ts_delta, key, value, headers) is not None
    builder.close()
    buf = bytearray(builder.buffer())
    # What the broker assigns on append; neither field is covered by the CRC.
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">i", buf, 12, leader_epoch)
    return bytes(buf)


def _check_v2_against_kafka_python(
    buf: bytes, specs: list[RecordSpec], base_offset: int, *, log_append_time: int | None = None
) -> BatchHeader:
    (kp,) = list(_kp_batches(buf))
    assert isinstance(kp, DefaultRecordBatch)
    crc_ok = kp.validate_crc()
    kp_records = list(kp)
    batches, findings, summary = _scan(buf, base_offset=base_offset)
    assert findings == []
    assert summary.valid_bytes == len(buf)
    assert summary.invalid_bytes == 0
    ((h, recs),) = batches
    assert crc_ok
    assert h.crc_ok
    assert (h.position, h.size, h.magic, h.crc, h.computed_crc) == (0, kp.size_in_bytes, 2, kp.crc, kp.crc)
    assert h.attributes == kp.attributes
    assert (h.compression, h.timestamp_type) == (kp.compression_type, kp.timestamp_type)
    assert (h.is_transactional, h.is_control) == (kp.is_transactional, kp.is_control_batch)
    assert (h.base_offset, h.last_offset, h.count) == (kp.base_offset, kp.last_offset, kp.records_count)
    assert (h.base_timestamp, h.max_timestamp) == (kp.first_timestamp, kp.max_timestamp)
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (
        kp.producer_id,
        kp.producer_epoch,
        kp.base_sequence,
    )
    assert h.last_sequence == kp.last_sequence
    assert h.partition_leader_epoch == kp.leader_epoch
    assert len(recs) == len(kp_records) == len(specs)
    for i, (r, kr, (ts_delta, key, value, headers)) in enumerate(zip(recs, kp_records, specs, strict=True)):
        assert r.offset == kr.offset == base_offset + i
        assert (
            r.timestamp
            == kr.timestamp
            == (BASE_TS + ts_delta if log_append_time is None else log_append_time)
        )
        assert r.key == kr.key == key
        assert r.value == kr.value == value
        assert [(k.decode(), v) for k, v in r.headers] == list(kr.headers) == headers
        assert r.sequence == (-1 if h.base_sequence < 0 else (h.base_sequence + i) % 2**31)
    return h


@pytest.mark.parametrize("codec", V2_CODECS, ids=lambda c: Codec(c).label)
def test_v2_kafka_python_batches_every_codec(codec: int) -> None:
    specs = _compressible(40)
    buf = _kp_v2(specs, codec, base_offset=1234, leader_epoch=7)
    h = _check_v2_against_kafka_python(buf, specs, 1234)
    assert h.compression == codec  # kafka-python did compress (it falls back to none when that does not help)


@pytest.mark.parametrize("codec", V2_CODECS, ids=lambda c: Codec(c).label)
def test_v2_kafka_python_idempotent_and_transactional(codec: int) -> None:
    specs = _compressible(12)
    buf = _kp_v2(specs, codec, producer=(4242, 3, 2**31 - 5), transactional=True, base_offset=90)
    h = _check_v2_against_kafka_python(buf, specs, 90)
    assert h.is_transactional
    assert h.last_sequence == 6  # wraps past int32 max to 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs=record_specs, codec=st.sampled_from(V2_CODECS), base=st.integers(0, 2**40))
def test_v2_kafka_python_arbitrary_records(specs: list[RecordSpec], codec: int, base: int) -> None:
    _check_v2_against_kafka_python(_kp_v2(specs, codec, base_offset=base), specs, base)


def test_v2_kafka_python_several_batches_in_one_segment() -> None:
    buf = b""
    offset = 100
    expected: list[tuple[int, int]] = []
    for i, codec in enumerate(V2_CODECS):
        specs = _compressible(5 + i)
        expected.append((len(buf), offset))
        buf += _kp_v2(specs, codec, base_offset=offset)
        offset += len(specs)
    batches, findings, summary = _scan(buf, base_offset=100)
    assert findings == []
    assert [(h.position, h.base_offset) for h, _ in batches] == expected
    assert [h.compression for h, _ in batches] == V2_CODECS
    assert (summary.first_offset, summary.last_offset, summary.record_count) == (
        100,
        offset - 1,
        offset - 100,
    )


def test_v2_default_record_batch_builder_directly() -> None:
    """The lower-level builder with explicit offsets (kafka-python's ``skip`` for compacted batches)."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=Codec.GZIP,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for offset in (0, 3, 4, 9):
        builder.append(offset, BASE_TS + offset, b"k%d" % offset, b"v" * 300, [])
    buf = bytes(builder.build())
    batches, findings, _ = _scan(buf)
    assert findings == []
    ((h, recs),) = batches
    assert (h.base_offset, h.last_offset, h.count) == (0, 9, 4)
    assert [r.offset for r in recs] == [r.offset for r in DefaultRecordBatch(buf)] == [0, 3, 4, 9]


# --- v0/v1: kafka-python builds, kdump reads --------------------------------------------------------------


def _legacy_specs(n: int, *, compressible: bool = True) -> list[tuple[int, bytes | None, bytes | None]]:
    return [
        (
            i * 3,
            None if i % 4 == 1 else f"key-{i}".encode(),
            None
            if i % 9 == 5
            else ((f"legacy value {i} " * 15).encode() if compressible else bytes([i]) * 3),
        )
        for i in range(n)
    ]


def _relabel_wrapper(buf: bytearray, *, offset: int, timestamp: int | None, log_append_time: bool) -> None:
    """What the broker does to a compressed wrapper: assign its offset (the last inner offset) and, for v1,
    its timestamp (the max inner timestamp, or the append time); the CRC32 is recomputed (zlib)."""
    struct.pack_into(">q", buf, 0, offset)
    if buf[16] == 1:
        assert timestamp is not None
        if log_append_time:
            buf[17] |= 0x08
        struct.pack_into(">q", buf, 18, timestamp)
        struct.pack_into(">I", buf, 12, zlib.crc32(bytes(buf[16:])) & 0xFFFFFFFF)


def _kp_legacy(
    specs: list[tuple[int, bytes | None, bytes | None]],
    magic: int,
    codec: int,
    *,
    base_offset: int,
    log_append_time: int | None = None,
) -> bytes:
    # v0 inner offsets are absolute; v1 inner offsets are relative (0..n-1) inside a wrapper.
    first = 0 if (magic == 1 and codec != Codec.NONE) else base_offset
    builder = MemoryRecordsBuilder(magic=magic, compression_type=codec, batch_size=1 << 24, offset=first)
    for ts_delta, key, value in specs:
        assert builder.append(BASE_TS + ts_delta, key, value) is not None
    builder.close()
    buf = bytearray(builder.buffer())
    if codec != Codec.NONE:
        max_ts = max(BASE_TS + d for d, _, _ in specs)
        ts = log_append_time if log_append_time is not None else max_ts
        _relabel_wrapper(
            buf,
            offset=base_offset + len(specs) - 1,
            timestamp=ts,
            log_append_time=log_append_time is not None,
        )
    return bytes(buf)


def _check_legacy_against_kafka_python(
    buf: bytes, specs: list[tuple[int, bytes | None, bytes | None]], magic: int, codec: int, base_offset: int
) -> list[tuple[BatchHeader, list[Record]]]:
    kp_batches = list(_kp_batches(buf))
    batches, findings, summary = _scan(buf, base_offset=base_offset)
    assert findings == []
    assert summary.valid_bytes == len(buf)
    assert len(batches) == len(kp_batches) == (len(specs) if codec == Codec.NONE else 1)
    position = 0
    all_records: list[Record] = []
    for (h, recs), kp in zip(batches, kp_batches, strict=True):
        assert isinstance(kp, LegacyRecordBatch)
        assert kp.validate_crc()
        assert h.crc_ok
        raw_crc = struct.unpack_from(">I", buf, position + 12)[0]
        assert h.crc == h.computed_crc == raw_crc
        assert (h.position, h.size, h.magic, h.compression) == (
            position,
            kp.size_in_bytes,
            magic,
            kp.compression_type,
        )
        assert h.last_offset == kp.base_offset  # kafka-python's "base_offset" is the entry's offset field
        expected_ts_type = -1 if magic == 0 else kp.timestamp_type
        assert h.timestamp_type == expected_ts_type
        kp_records = list(kp)
        assert len(recs) == len(kp_records)
        for r, kr in zip(recs, kp_records, strict=True):
            assert (r.offset, r.key, r.value, r.crc) == (kr.offset, kr.key, kr.value, kr.checksum)
            assert r.timestamp == (-1 if kr.timestamp is None else kr.timestamp)
            assert r.crc_ok is True
            assert kr.validate_crc()
            assert r.headers == ()
            assert r.sequence == -1
        # A wrapper's first offset needs its inner messages; a plain legacy message has none (Kafka's
        # `baseOffset()` of an uncompressed legacy entry is not printed and kdump leaves it unset).
        assert h.base_offset == (recs[0].offset if h.compression else None)
        all_records += recs
        position += h.size
    assert [r.offset for r in all_records] == list(range(base_offset, base_offset + len(specs)))
    assert [(r.key, r.value) for r in all_records] == [(k, v) for _, k, v in specs]
    return batches


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: Codec(c).label)
def test_legacy_kafka_python_every_codec(magic: int, codec: int) -> None:
    specs = _legacy_specs(20)
    buf = _kp_legacy(specs, magic, codec, base_offset=500)
    batches = _check_legacy_against_kafka_python(buf, specs, magic, codec, 500)
    timestamps = [r.timestamp for _, recs in batches for r in recs]
    if magic == 1:
        assert timestamps == [BASE_TS + d for d, _, _ in specs]
        for h, recs in batches:
            assert h.max_timestamp == max(r.timestamp for r in recs)
    else:
        assert timestamps == [-1] * len(specs)
        assert {h.max_timestamp for h, _ in batches} == {-1}


def test_legacy_v0_lz4_uses_kafkas_broken_header_checksum() -> None:
    """kafka-python writes Kafka 0.8/0.9's wrong lz4 HC for magic 0; kdump reads it like Kafka does."""
    specs = _legacy_specs(10)
    buf = _kp_legacy(specs, 0, Codec.LZ4, base_offset=0)
    # The frame starts at the wrapper's value: 12 overhead, crc/magic/attributes (6), key and value lengths.
    frame = buf[26:]
    flg, bd, hc = frame[4], frame[5], frame[6]
    assert flg & 0x08 == 0  # no content size
    assert hc == (xxhash32(frame[:6]) >> 8) & 0xFF != (xxhash32(bytes([flg, bd])) >> 8) & 0xFF
    _check_legacy_against_kafka_python(buf, specs, 0, Codec.LZ4, 0)


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4], ids=lambda c: Codec(c).label)
def test_legacy_v1_log_append_time_wrapper(codec: int) -> None:
    specs = _legacy_specs(8)
    buf = _kp_legacy(specs, 1, codec, base_offset=10, log_append_time=BASE_TS + 99_999)
    ((h, recs),) = _check_legacy_against_kafka_python(buf, specs, 1, codec, 10)
    assert h.timestamp_type == 1
    assert h.max_timestamp == BASE_TS + 99_999
    assert {r.timestamp for r in recs} == {BASE_TS + 99_999}


@settings(max_examples=40, deadline=None)
@given(
    specs=st.lists(st.tuples(st.integers(0, 10_000), keys, values), min_size=1, max_size=15),
    magic=st.sampled_from([0, 1]),
    codec=st.sampled_from(LEGACY_CODECS),
    base=st.integers(0, 2**40),
)
def test_legacy_kafka_python_arbitrary_records(
    specs: list[tuple[int, bytes | None, bytes | None]], magic: int, codec: int, base: int
) -> None:
    buf = _kp_legacy(specs, magic, codec, base_offset=base)
    _check_legacy_against_kafka_python(buf, specs, magic, codec, base)


def test_zstd_is_v2_only() -> None:
    """kafka-python refuses zstd for v0/v1 as Kafka does; kdump flags such a wrapper and never inflates it."""
    builder = LegacyRecordBatchBuilder(magic=1, compression_type=Codec.ZSTD, batch_size=1 << 20)
    builder.append(0, BASE_TS, None, b"x" * 100)
    with pytest.raises(kafka_errors.UnsupportedCodecError):
        builder.build()
    import zstandard

    inner = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    inner.append(0, BASE_TS, None, b"x" * 100)
    wrapper = bytearray(inner.build())
    value = zstandard.ZstdCompressor().compress(bytes(wrapper))
    msg = (
        struct.pack(">bbq", 1, Codec.ZSTD, BASE_TS)
        + struct.pack(">i", -1)
        + struct.pack(">i", len(value))
        + value
    )
    entry = struct.pack(">qiI", 0, len(msg) + 4, zlib.crc32(msg)) + msg
    batches, findings, _ = _scan(entry)
    assert batches[0][0].crc_ok
    assert [f.code for f in findings] == ["unknown-codec"]


def test_legacy_producer_wrapper_at_offset_zero_reads_like_kafka_python() -> None:
    """A v1 wrapper as a producer sends it (offset 0): like Kafka's `AbstractLegacyRecordBatch`, both readers
    keep the relative inner offsets as they are."""
    builder = LegacyRecordBatchBuilder(magic=1, compression_type=Codec.GZIP, batch_size=1 << 20)
    for i in range(5):
        builder.append(i, BASE_TS + i, None, b"x" * 100)
    buf = bytes(builder.build())
    batches, findings, _ = _scan(buf)
    ((h, recs),) = batches
    assert h.crc_ok
    assert [r.offset for r in recs] == [r.offset for r in LegacyRecordBatch(buf, 1)] == [0, 1, 2, 3, 4]
    assert [r.timestamp for r in recs] == [r.timestamp for r in LegacyRecordBatch(buf, 1)]
    assert not [f for f in findings if f.code in ("record-decode-failed", "decompression-failed")]


# --- kdump builds, kafka-python reads ---------------------------------------------------------------------


def _new_records(specs: list[RecordSpec]) -> list[NewRecord]:
    return [NewRecord(k, v, BASE_TS + d, tuple((hk.encode(), hv) for hk, hv in hs)) for d, k, v, hs in specs]


def _kp_read_v2(buf: bytes) -> tuple[Any, list[Any]]:
    (kp,) = list(_kp_batches(buf))
    assert isinstance(kp, DefaultRecordBatch)
    assert kp.validate_crc()
    return kp, list(kp)


@settings(max_examples=60, deadline=None)
@given(
    specs=record_specs,
    codec=st.sampled_from(V2_CODECS),
    base=st.integers(0, 2**40),
    lat=st.one_of(st.none(), st.integers(0, 2**41)),
    producer=st.one_of(
        st.none(), st.tuples(st.integers(0, 2**40), st.integers(0, 2**15 - 1), st.integers(0, 2**31 - 1))
    ),
)
def test_kdump_v2_batches_read_by_kafka_python(
    specs: list[RecordSpec],
    codec: int,
    base: int,
    lat: int | None,
    producer: tuple[int, int, int] | None,
) -> None:
    pid, epoch, seq = producer or (-1, -1, -1)
    buf = build_v2_batch(
        base,
        _new_records(specs),
        codec=codec,
        log_append_time=lat,
        transactional=producer is not None,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        partition_leader_epoch=5,
    )
    kp, kp_records = _kp_read_v2(buf)
    assert (kp.base_offset, kp.last_offset, kp.records_count) == (base, base + len(specs) - 1, len(specs))
    assert kp.compression_type == codec
    assert kp.leader_epoch == 5
    assert kp.timestamp_type == (0 if lat is None else 1)
    assert (kp.producer_id, kp.producer_epoch, kp.base_sequence) == (pid, epoch, seq)
    assert kp.is_transactional == (producer is not None)
    assert not kp.is_control_batch
    expected_max = lat if lat is not None else max(BASE_TS + d for d, *_ in specs)
    assert kp.max_timestamp == expected_max
    for i, (kr, (d, key, value, headers)) in enumerate(zip(kp_records, specs, strict=True)):
        assert kr.offset == base + i
        assert kr.timestamp == (lat if lat is not None else BASE_TS + d)
        assert (kr.key, kr.value, list(kr.headers)) == (key, value, headers)
    # and kdump reads its own batch back exactly as kafka-python does
    _check_v2_against_kafka_python(buf, specs, base, log_append_time=lat)


def test_kdump_control_batch_read_by_kafka_python() -> None:
    for ctype in (ControlType.COMMIT, ControlType.ABORT):
        rec = NewRecord(encode_control_key(ctype), encode_end_txn_marker(17), BASE_TS)
        buf = build_v2_batch(
            77, [rec], control=True, transactional=True, producer_id=9, producer_epoch=2, base_sequence=-1
        )
        kp, (kr,) = _kp_read_v2(buf)
        assert kp.is_control_batch
        assert kp.is_transactional
        assert (kr.version, kr.type, kr.commit, kr.abort) == (0, ctype, ctype == 1, ctype == 0)
        assert kr.value == struct.pack(">hi", 0, 17)


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS, ids=lambda c: Codec(c).label)
@pytest.mark.parametrize("lat", [None, BASE_TS + 5_000])
def test_kdump_legacy_entries_read_by_kafka_python(magic: int, codec: int, lat: int | None) -> None:
    specs = _legacy_specs(12)
    recs = [NewRecord(k, v, BASE_TS + d) for d, k, v in specs]
    buf = build_legacy_entry(300, recs, magic=magic, codec=codec, log_append_time=lat)
    kp_batches = list(_kp_batches(buf))
    assert len(kp_batches) == (len(specs) if codec == Codec.NONE else 1)
    got = []
    for kp in kp_batches:
        assert isinstance(kp, LegacyRecordBatch)
        assert kp.validate_crc()
        assert kp.magic == magic
        assert kp.compression_type == codec
        for kr in kp:
            assert kr.validate_crc()
            got.append((kr.offset, kr.timestamp, kr.key, kr.value))
    if magic == 0:
        expected_ts: list[int | None] = [None] * len(specs)
    elif lat is not None:
        expected_ts = [lat] * len(specs)
    else:
        expected_ts = [BASE_TS + d for d, _, _ in specs]
    assert got == [(300 + i, expected_ts[i], k, v) for i, (_, k, v) in enumerate(specs)]
    if codec != Codec.NONE:
        assert kp_batches[0].base_offset == 300 + len(specs) - 1  # the wrapper carries the last inner offset
    # and kdump reads them back with the same offsets and timestamps
    batches, findings, _ = _scan(buf, base_offset=300)
    assert findings == []
    assert [
        (r.offset, None if r.timestamp == -1 else r.timestamp, r.key, r.value)
        for _, rs in batches
        for r in rs
    ] == got


def test_legacy_builder_directly_uncompressed_v0() -> None:
    builder = LegacyRecordBatchBuilder(magic=0, compression_type=0, batch_size=1 << 20)
    for i in range(3):
        builder.append(40 + i, None, b"k", b"value")
    buf = bytes(builder.build())
    batches, findings, summary = _scan(buf, base_offset=40)
    assert findings == []
    assert [(h.last_offset, h.magic, h.timestamp_type) for h, _ in batches] == [
        (40, 0, -1),
        (41, 0, -1),
        (42, 0, -1),
    ]
    assert summary.record_count == 3
