"""One focused test per scanner-level finding code: the code, where (position) and which offset.

Segments are built byte for byte (`builders.SegmentBuilder`, `kdump.formats.batch.encode_v2_batch`);
a batch edited after it was built gets its CRC recomputed (`v2_crc`) when the damage must pass the
checksum, so exactly one thing is wrong at a time.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest
from builders import BASE_TS, SegmentBuilder, records

from kdump.errors import CodecUnavailableError
from kdump.findings import CATALOG, Finding, Severity
from kdump.formats import codecs
from kdump.formats.batch import BatchHeader, encode_legacy_message, encode_v2_batch, v2_crc
from kdump.formats.codecs import compress
from kdump.formats.constants import Codec, ControlType
from kdump.formats.control import encode_control_key
from kdump.formats.records import NewRecord, Record, build_v2_batch, encode_v2_record
from kdump.scan import ScanMode, ScanSummary, StopReason, scan_log

COVERED_CODES = {
    "crc-mismatch",
    "partial-trailing-batch",
    "zero-filled-tail",
    "invalid-batch-length",
    "unsupported-magic",
    "skipped-bytes",
    "offset-regression",
    "offset-gap",
    "offset-below-base",
    "offset-overflow",
    "segment-base-mismatch",
    "unknown-codec",
    "record-count-mismatch",
    "leader-epoch-regression",
    "record-decode-failed",
    "record-offset-invalid",
    "decompression-failed",
    "codec-unavailable",
    "max-timestamp-mismatch",
}
"""The finding codes this module proves the scanner emits (read by the catalog meta-test)."""


class Scan:
    """The events of one scan, split by kind."""

    def __init__(self, buf: bytes, **kwargs: object) -> None:
        self.events = list(scan_log(buf, file="seg.log", **kwargs))  # type: ignore[arg-type]
        self.findings = [e for e in self.events if isinstance(e, Finding)]
        self.batches = [e for e in self.events if isinstance(e, BatchHeader)]
        self.records = [e for e in self.events if isinstance(e, Record)]
        summary = self.events[-1]
        assert isinstance(summary, ScanSummary)
        self.summary = summary

    @property
    def codes(self) -> list[str]:
        return [f.code for f in self.findings]

    def only(self, code: str) -> Finding:
        found = [f for f in self.findings if f.code == code]
        assert len(found) == 1, self.findings
        f = found[0]
        assert f.severity == CATALOG[code].severity
        assert f.file == "seg.log"
        return f


def _seg(
    n_batches: int = 3, per_batch: int = 5, *, base_offset: int = 0, codec: int = Codec.NONE
) -> SegmentBuilder:
    seg = SegmentBuilder(base_offset=base_offset)
    for i in range(n_batches):
        seg.add_v2(records(per_batch, start_ts=BASE_TS + 100 * i, value_size=30), codec=codec)
    return seg


def _batch(base: int, n: int = 5, **kwargs: object) -> bytes:
    return build_v2_batch(base, records(n, value_size=20), **kwargs)  # type: ignore[arg-type]


def _recrc(batch: bytearray | bytes) -> bytes:
    """Recompute a v2 batch's CRC after an edit."""
    out = bytearray(batch)
    struct.pack_into(">I", out, 17, v2_crc(out, 0, len(out)))
    return bytes(out)


def _raw_v2(payload: bytes, *, count: int, last_delta: int, base: int = 0, **kwargs: object) -> bytes:
    return encode_v2_batch(
        base_offset=base,
        records_payload=payload,
        count=count,
        last_offset_delta=last_delta,
        base_timestamp=BASE_TS,
        max_timestamp=BASE_TS,
        **kwargs,  # type: ignore[arg-type]
    )


def _positions(seg: SegmentBuilder) -> list[int]:
    return [p for p, *_ in seg.spans]


def _all_modes(buf: bytes, **kwargs: object) -> Iterator[Scan]:
    for mode in ScanMode:
        for deep in (False, True):
            yield Scan(buf, mode=mode, deep=deep, **kwargs)


# --- checksums ----------------------------------------------------------------------------------------


def test_crc_mismatch_v2() -> None:
    seg = _seg()
    data = bytearray(seg.data)
    p1 = _positions(seg)[1]
    data[p1 + 70] ^= 0x01  # inside the second batch's records
    s = Scan(bytes(data))
    f = s.only("crc-mismatch")
    assert (f.position, f.offset) == (p1, 5)
    stored = struct.unpack_from(">I", data, p1 + 17)[0]
    assert f.details["stored_crc"] == stored != f.details["computed_crc"]
    assert s.summary.valid_bytes == p1  # the broker's recovery truncates here
    assert [b.crc_ok for b in s.batches] == [True, False, True]  # forensic mode keeps going
    rec = Scan(bytes(data), mode=ScanMode.RECOVERY)
    assert rec.codes == ["crc-mismatch"]
    assert rec.summary.stop_reason == StopReason.CORRUPT_BATCH


def test_crc_mismatch_legacy_message() -> None:
    seg = SegmentBuilder(base_offset=10)
    seg.add_legacy(records(3, value_size=10, key=True), magic=1)
    data = bytearray(seg.data)
    p1 = _positions(seg)[1]
    data[p1 + 30] ^= 0x40
    f = Scan(bytes(data), base_offset=10).only("crc-mismatch")
    assert (f.position, f.offset) == (p1, 11)


def test_crc_mismatch_legacy_inner_message() -> None:
    inner = b"".join(encode_legacy_message(offset=i, magic=0, key=None, value=b"v%d" % i) for i in range(3))
    broken = bytearray(inner)
    broken[-1] ^= 0xFF  # the last inner message's value; its own CRC no longer matches
    wrapper = encode_legacy_message(
        offset=2, magic=0, key=None, value=compress(Codec.GZIP, bytes(broken)), attributes=1
    )
    s = Scan(wrapper, deep=True)
    f = s.only("crc-mismatch")
    assert (f.position, f.offset) == (0, 2)
    assert s.batches[0].crc_ok  # the wrapper itself is fine
    assert [r.crc_ok for r in s.records] == [True, True, False]


# --- framing ------------------------------------------------------------------------------------------


def test_partial_trailing_batch_inside_header() -> None:
    seg = _seg(2)
    for cut in (8, 12, 17):  # (a shorter cut of this batch is all zeros: a zero-filled tail)
        s = Scan(bytes(seg.data) + _batch(10)[:cut])
        f = s.only("partial-trailing-batch")
        assert (f.position, f.details["size"]) == (len(seg.data), cut)
        assert s.summary.stop_reason == StopReason.PARTIAL_TRAILING_BATCH
        assert s.summary.valid_bytes == len(seg.data)


def test_partial_trailing_batch_inside_body() -> None:
    seg = _seg(2)
    tail = _batch(10)
    s = Scan(bytes(seg.data) + tail[:40])
    f = s.only("partial-trailing-batch")
    assert (f.position, f.offset) == (len(seg.data), 10)
    assert f.details["declared_size"] == len(tail)
    assert s.summary.invalid_bytes == 40
    assert s.codes == ["partial-trailing-batch"]


@pytest.mark.parametrize("zeros", [5, 17, 18, 4096])
def test_zero_filled_tail(zeros: int) -> None:
    seg = _seg(2)
    for s in _all_modes(bytes(seg.data) + bytes(zeros)):
        f = s.only("zero-filled-tail")
        assert (f.position, f.offset, f.details["size"]) == (len(seg.data), None, zeros)
        assert s.summary.stop_reason == StopReason.ZERO_FILLED_TAIL
        assert s.summary.valid_bytes == len(seg.data)


def test_invalid_batch_length_below_14() -> None:
    seg = _seg(1)
    bad = struct.pack(">qi", 5, 13) + b"\x07" * 30
    s = Scan(bytes(seg.data) + bad + _batch(5))
    f = s.only("invalid-batch-length")
    assert f.position == len(seg.data)
    assert "below the minimum record overhead (14)" in f.message
    skipped = s.only("skipped-bytes")
    assert (skipped.position, skipped.details["end_position"]) == (len(seg.data), len(seg.data) + len(bad))
    assert [b.base_offset for b in s.batches] == [0, 5]


def test_invalid_batch_length_below_61_for_v2() -> None:
    seg = _seg(1)
    bad = struct.pack(">qiib", 5, 30, 0, 2) + b"\x01" * 40  # length 30: a v2 header needs 49
    s = Scan(bytes(seg.data) + bad)
    f = s.only("invalid-batch-length")
    assert f.position == len(seg.data)
    assert "below the minimum 49 for magic 2" in f.message
    assert s.summary.valid_bytes == len(seg.data)
    assert "skipped-bytes" in s.codes


def test_invalid_batch_length_past_eof_with_a_valid_batch_after_it() -> None:
    seg = _seg(1)
    first = bytearray(_batch(5))
    struct.pack_into(">i", first, 8, 1 << 30)  # a length that runs far past the end of the file
    good = _batch(10)
    s = Scan(bytes(seg.data) + bytes(first) + good)
    f = s.only("invalid-batch-length")
    assert f.position == len(seg.data)
    assert f"a valid batch starts at {len(seg.data) + len(first)}" in f.message
    skipped = s.only("skipped-bytes")
    assert (skipped.position, skipped.offset) == (len(seg.data), 5)
    assert skipped.details["end_position"] == len(seg.data) + len(first)
    assert [b.base_offset for b in s.batches] == [0, 10]
    # Without a valid batch after it, the same length is a partial trailing batch.
    assert Scan(bytes(seg.data) + bytes(first)).codes == ["partial-trailing-batch"]


def test_unsupported_magic() -> None:
    seg = _seg(1)
    bad = bytearray(_batch(5))
    bad[16] = 3
    s = Scan(bytes(seg.data) + bytes(bad) + _batch(10))
    f = s.only("unsupported-magic")
    assert f.position == len(seg.data)
    assert "magic byte 3" in f.message
    assert s.summary.valid_bytes == len(seg.data)
    rec = Scan(bytes(seg.data) + bytes(bad), mode=ScanMode.RECOVERY)
    assert rec.codes == ["unsupported-magic"]


def test_skipped_bytes_with_the_offsets_lost() -> None:
    seg = _seg(2)  # offsets 0..9
    garbage = bytes(range(1, 200))
    later = _batch(20)  # offsets 20..24
    s = Scan(bytes(seg.data) + garbage + later)
    f = s.only("skipped-bytes")
    assert (f.position, f.offset) == (len(seg.data), 10)
    assert f.details["end_position"] == len(seg.data) + len(garbage)
    assert f.details["size"] == len(garbage)
    assert "offsets 10..19 are lost" in f.message
    assert s.summary.salvageable_batches == 1
    assert s.summary.valid_bytes == len(seg.data)


def test_skipped_bytes_to_the_end_of_the_file() -> None:
    seg = _seg(1)
    garbage = struct.pack(">qi", 5, 13) + bytes([0x11]) * 300
    s = Scan(bytes(seg.data) + garbage)
    assert s.codes == ["invalid-batch-length", "skipped-bytes"]
    f = s.only("skipped-bytes")
    assert (f.position, f.offset) == (len(seg.data), 5)
    assert f.details["end_position"] == len(seg.data) + len(garbage)
    assert s.summary.stop_reason == StopReason.FRAMING_LOST


# --- offsets ------------------------------------------------------------------------------------------


def test_offset_regression() -> None:
    first, second = _batch(0, 10), _batch(5, 10)
    f = Scan(first + second).only("offset-regression")
    assert (f.position, f.offset, f.details["previous_last_offset"]) == (len(first), 5, 9)


def test_offset_gap() -> None:
    first, second = _batch(0, 10), _batch(15, 10)
    f = Scan(first + second).only("offset-gap")
    assert (f.position, f.offset, f.details["gap"]) == (len(first), 10, 5)
    assert f.severity == Severity.INFO


def test_offset_below_base() -> None:
    f = Scan(_batch(50), base_offset=100).only("offset-below-base")
    assert (f.position, f.offset) == (0, 50)


def test_offset_overflow() -> None:
    batch = _batch(2**31 - 3, 5)  # offsets up to base + 2^31 + 1: no longer a 32-bit relative offset
    f = Scan(batch, base_offset=0).only("offset-overflow")
    assert (f.position, f.offset) == (0, 2**31 + 1)
    assert Scan(_batch(2**31 - 6, 5), base_offset=0).codes == ["segment-base-mismatch"]


def test_segment_base_mismatch() -> None:
    first = _batch(7)
    s = Scan(first + _batch(12), base_offset=5)
    f = s.only("segment-base-mismatch")
    assert (f.position, f.offset) == (0, 7)
    assert f.severity == Severity.INFO


def test_leader_epoch_regression() -> None:
    a = _batch(0, partition_leader_epoch=4)
    b = _batch(5, partition_leader_epoch=2)
    f = Scan(a + b).only("leader-epoch-regression")
    assert (f.position, f.offset) == (len(a), 5)
    assert Scan(a + _batch(5, partition_leader_epoch=4) + _batch(10, partition_leader_epoch=5)).codes == []


# --- headers that contradict their records --------------------------------------------------------------


def test_unknown_codec() -> None:
    payload = b"".join(encode_v2_record(i, 0, None, b"x") for i in range(3))
    batch = _raw_v2(payload, count=3, last_delta=2, base=40, attributes=5)
    for s in (Scan(batch, deep=False), Scan(batch, deep=True)):
        f = s.only("unknown-codec")
        assert (f.position, f.offset) == (0, 40)
        assert s.batches[0].crc_ok
        assert s.records == []


@pytest.mark.parametrize("codec", [4, 5, 7])
def test_unknown_codec_legacy(codec: int) -> None:
    # zstd (4) is not defined for v0/v1; nothing is decompressed, the one finding says why.
    wrapper = encode_legacy_message(
        offset=3, magic=1, key=None, value=b"\x28\xb5\x2f\xfd junk", attributes=codec
    )
    for deep in (False, True):
        s = Scan(wrapper, deep=deep)
        assert s.codes == ["unknown-codec"]
        f = s.only("unknown-codec")
        assert (f.position, f.offset) == (0, 3)


def test_record_count_mismatch_shallow_count_above_offset_range() -> None:
    payload = b"".join(encode_v2_record(i, 0, None, b"x") for i in range(3))
    batch = _raw_v2(payload, count=20, last_delta=2, base=8)
    s = Scan(batch)
    f = s.only("record-count-mismatch")
    assert (f.position, f.offset) == (0, 8)
    assert Scan(batch, deep=True).codes == ["record-count-mismatch"]  # reported once, not twice


@pytest.mark.parametrize(("declared", "held"), [(2, 3), (5, 3), (0, 3)])
def test_record_count_mismatch_deep(declared: int, held: int) -> None:
    # The offset range is wide enough for either count, so only decoding tells them apart.
    payload = b"".join(encode_v2_record(i, 0, None, b"x") for i in range(held))
    batch = _raw_v2(payload, count=declared, last_delta=9, base=30)
    assert Scan(batch).codes == []
    s = Scan(batch, deep=True)
    f = s.only("record-count-mismatch")
    assert (f.position, f.offset) == (0, 30)
    assert f"{held} records" in f.message
    assert "record-decode-failed" not in s.codes


def test_record_decode_failed() -> None:
    good = [encode_v2_record(i, 0, b"k", b"v") for i in range(3)]
    payload = good[0] + good[1] + b"\x7f\x00\x00"  # the third record claims 63 bytes that are not there
    batch = _raw_v2(payload, count=3, last_delta=2, base=100)
    s = Scan(batch, deep=True)
    f = s.only("record-decode-failed")
    assert (f.position, f.offset) == (0, 102)  # the first record that does not decode
    assert [r.offset for r in s.records] == [100, 101]
    assert Scan(batch).codes == []  # shallow scans do not decode records


def test_record_decode_failed_for_an_invalid_control_record() -> None:
    rec = NewRecord(encode_control_key(ControlType.COMMIT), b"\x00", BASE_TS)  # marker value too short
    batch = build_v2_batch(60, [rec], control=True, transactional=True, producer_id=1, producer_epoch=0)
    f = Scan(batch, deep=True).only("record-decode-failed")
    assert (f.position, f.offset) == (0, 60)


def test_record_offset_invalid() -> None:
    batch = build_v2_batch(10, records(3), offset_deltas=[0, 4, 2], last_offset_delta=4)
    s = Scan(batch, deep=True)
    f = s.only("record-offset-invalid")
    assert (f.position, f.offset) == (0, 12)  # not above the record before it
    beyond = build_v2_batch(10, records(2), offset_deltas=[0, 9], last_offset_delta=3)
    f = Scan(beyond, deep=True).only("record-offset-invalid")
    assert (f.position, f.offset) == (0, 19)  # outside 10..13


@pytest.mark.parametrize(
    "codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD], ids=lambda c: Codec(c).label
)
def test_decompression_failed(codec: int) -> None:
    seg = _seg(1)
    garbage = _raw_v2(
        b"\x00\x01not compressed at all\xff" * 3, count=2, last_delta=1, base=5, attributes=codec
    )
    s = Scan(bytes(seg.data) + garbage, deep=True)
    f = s.only("decompression-failed")
    assert (f.position, f.offset) == (len(seg.data), 5)
    assert s.batches[1].crc_ok  # the checksum covers the compressed bytes, so it still matches
    assert s.summary.valid_bytes == len(seg.data) + len(garbage)


@pytest.mark.parametrize("codec", [Codec.SNAPPY, Codec.LZ4, Codec.ZSTD], ids=lambda c: Codec(c).label)
def test_codec_unavailable(monkeypatch: pytest.MonkeyPatch, codec: int) -> None:
    seg = _seg(2, codec=codec)

    def unavailable(name: str) -> object:
        raise CodecUnavailableError(f"the {name} library cannot be loaded: simulated")

    monkeypatch.setattr(codecs, "_load", unavailable)
    s = Scan(bytes(seg.data), deep=True)
    found = [f for f in s.findings if f.code == "codec-unavailable"]
    assert [(f.position, f.offset) for f in found] == [(0, 0), (_positions(seg)[1], 5)]
    assert all(f.severity == Severity.WARNING for f in found)
    assert s.records == []
    assert s.summary.valid_bytes == len(seg.data)  # nothing wrong with the data


def test_max_timestamp_mismatch() -> None:
    payload = b"".join(encode_v2_record(i, 10 * i, None, b"x") for i in range(3))  # largest: BASE_TS + 20
    batch = _raw_v2(payload, count=3, last_delta=2, base=70)
    s = Scan(batch, deep=True)
    f = s.only("max-timestamp-mismatch")
    assert (f.position, f.offset) == (0, 70)
    # Time lookups and time retention use the header's value: an answer the broker gets wrong.
    assert f.severity == Severity.ERROR
    # LogAppendTime batches carry the append time, not the records' maximum.
    lat = _raw_v2(payload, count=3, last_delta=2, base=70, attributes=0x08)
    assert Scan(lat, deep=True).codes == []


def test_every_covered_code_is_in_the_catalog() -> None:
    assert set(CATALOG) >= COVERED_CODES
    assert all(CATALOG[c].where.startswith("log") for c in COVERED_CODES)


def test_a_clean_segment_has_no_findings() -> None:
    seg = _seg(4, codec=Codec.LZ4)
    for s in _all_modes(bytes(seg.data), base_offset=0):
        assert s.codes == []
        assert s.summary.valid_bytes == len(seg.data)
