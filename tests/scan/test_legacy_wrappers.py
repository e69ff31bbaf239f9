"""Two rules of the legacy (v0/v1) message format that no checksum enforces, and the offsets shown.

A compressed wrapper's offset is its last inner message's offset (v0: the inner offsets are
absolute; v1: they are relative and counted back from the wrapper's). The wrapper's offset sits in
the log overhead, outside its CRC32, so a damaged one passes every checksum. An inner message is at
least 14 bytes long (22 for v1), as Kafka's `DataLogInputStream` requires before it reads one.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from builders import BASE_TS, SegmentBuilder, records

from kdump.findings import CATALOG, Finding, Severity
from kdump.formats.batch import BatchHeader, encode_legacy_message
from kdump.formats.codecs import compress
from kdump.formats.constants import Codec
from kdump.formats.records import Record
from kdump.model.log_dir import discover
from kdump.ops.checks.verify import VerifyOptions, verify_targets
from kdump.scan import ScanMode, ScanSummary, scan_log

COVERED_CODES = {"wrapper-offset-mismatch", "inner-message-too-short"}
"""The finding codes this module proves the scanner emits (read by the catalog meta-test)."""


def _inner(offsets: list[int], *, magic: int) -> bytes:
    return b"".join(
        encode_legacy_message(
            offset=o, magic=magic, key=b"k%d" % o, value=b"value %d" % o, timestamp=BASE_TS + o
        )
        for o in offsets
    )


def _short(offset: int, length: int, *, magic: int) -> bytes:
    """An inner entry whose length is below the minimum: offset, length, then `length` bytes (CRC,
    magic and what else fits)."""
    body = (b"\x00\x00\x00\x00" + bytes([magic]) + b"\x00" * 32)[:length]
    return struct.pack(">qi", offset, length) + body


def _wrapper(inner: bytes, *, magic: int, offset: int, codec: int = Codec.GZIP) -> bytes:
    return encode_legacy_message(
        offset=offset,
        magic=magic,
        key=None,
        value=compress(codec, inner, magic=magic),
        attributes=codec,
        timestamp=BASE_TS,
    )


class Scan:
    def __init__(self, buf: bytes, *, deep: bool, mode: ScanMode = ScanMode.FORENSIC) -> None:
        events = list(scan_log(buf, file="seg.log", deep=deep, mode=mode))
        self.findings = [e for e in events if isinstance(e, Finding)]
        self.batches = [e for e in events if isinstance(e, BatchHeader)]
        self.records = [e for e in events if isinstance(e, Record)]
        summary = events[-1]
        assert isinstance(summary, ScanSummary)
        self.summary = summary

    @property
    def codes(self) -> list[str]:
        return [f.code for f in self.findings]


def _every_scan(buf: bytes) -> list[Scan]:
    return [Scan(buf, deep=deep, mode=mode) for mode in ScanMode for deep in (False, True)]


# --- wrapper-offset-mismatch ----------------------------------------------------------------------


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4])
@pytest.mark.parametrize(("wrapper_offset", "inner"), [(45, [40, 41, 42]), (41, [40, 41, 42])])
def test_v0_wrapper_whose_offset_is_not_its_last_inner_offset(
    codec: int, wrapper_offset: int, inner: list[int]
) -> None:
    entry = _wrapper(_inner(inner, magic=0), magic=0, offset=wrapper_offset, codec=codec)
    for s in _every_scan(entry):
        # Reported by every scan (the wrapper is always decoded), and only once: the records that
        # lie outside the wrapper's offset are this finding, not also record-offset-invalid.
        assert s.codes == ["wrapper-offset-mismatch"], s.findings
        f = s.findings[0]
        assert f.severity == CATALOG[f.code].severity
        assert (f.position, f.offset) == (0, wrapper_offset)
        assert f.details["last_inner_offset"] == inner[-1]
        assert s.summary.valid_bytes == len(entry)  # recovery does not look inside a wrapper
    deep = Scan(entry, deep=True)
    assert [r.offset for r in deep.records] == inner  # where the messages say they are


def test_v0_wrapper_at_its_last_inner_offset_is_clean() -> None:
    entry = _wrapper(_inner([40, 41, 42], magic=0), magic=0, offset=42)
    for s in _every_scan(entry):
        assert s.codes == []


def test_v0_wrapper_offset_damaged_in_a_segment() -> None:
    # A segment of three v0 wrappers; a bit flip in the second one's offset (outside the CRC).
    seg = SegmentBuilder(base_offset=0)
    for i in range(3):
        seg.add_legacy(records(4, start_ts=BASE_TS + 10 * i), magic=0, codec=Codec.GZIP)
    data = bytearray(seg.data)
    p1 = seg.spans[1][0]
    assert struct.unpack_from(">q", data, p1)[0] == 7
    struct.pack_into(">q", data, p1, 7 ^ (1 << 40))
    s = Scan(bytes(data), deep=False)
    mismatch = [f for f in s.findings if f.code == "wrapper-offset-mismatch"]
    assert [(f.position, f.offset) for f in mismatch] == [(p1, 7 ^ (1 << 40))]
    assert mismatch[0].details["last_inner_offset"] == 7


def test_v1_wrapper_below_its_last_inner_offset() -> None:
    entry = _wrapper(_inner([0, 1, 5], magic=1), magic=1, offset=3)
    for s in _every_scan(entry):
        assert s.codes == ["wrapper-offset-mismatch"], s.findings
        assert (s.findings[0].offset, s.findings[0].details["last_inner_offset"]) == (3, 5)
    assert Scan(entry, deep=True).records == []  # Kafka rejects the wrapper: no offset is known


def test_v1_wrapper_above_its_last_inner_offset_is_the_rule() -> None:
    # v1 inner offsets are relative: the wrapper's offset places them.
    entry = _wrapper(_inner([0, 1, 2], magic=1), magic=1, offset=102)
    for s in _every_scan(entry):
        assert s.codes == []
    assert [r.offset for r in Scan(entry, deep=True).records] == [100, 101, 102]


# --- inner-message-too-short ----------------------------------------------------------------------


@pytest.mark.parametrize("length", [0, 4, 13])
def test_v1_last_inner_message_too_short(length: int) -> None:
    # Relative offsets 0 (a good message) and 1 (too short); the wrapper is at 101, so the good
    # message is offset 100: before, it was shown at 101 and the finding said the header ran past
    # the end of the buffer.
    entry = _wrapper(_inner([0], magic=1) + _short(1, length, magic=1), magic=1, offset=101)
    for s in _every_scan(entry):
        assert s.codes == ["inner-message-too-short"], s.findings
        f = s.findings[0]
        assert (f.position, f.offset) == (0, 101)
        assert f"length {length}, below the minimum 14" in f.message
        assert "runs past" not in f.message
    deep = Scan(entry, deep=True)
    assert [(r.offset, r.value) for r in deep.records] == [(100, b"value 0")]
    assert deep.batches[0].base_offset == 100


def test_v1_inner_message_shorter_than_v1s_minimum() -> None:
    # 14 bytes are enough for v0, not for v1 (which adds an 8-byte timestamp): 22.
    entry = _wrapper(_inner([0], magic=1) + _short(1, 18, magic=1), magic=1, offset=101)
    s = Scan(entry, deep=True)
    assert s.codes == ["inner-message-too-short"]
    assert "length 18, below the minimum 22" in s.findings[0].message
    assert [r.offset for r in s.records] == [100]


def test_v0_last_inner_message_too_short() -> None:
    entry = _wrapper(_inner([100], magic=0) + _short(101, 4, magic=0), magic=0, offset=101)
    for s in _every_scan(entry):
        assert s.codes == ["inner-message-too-short"], s.findings
        assert s.findings[0].offset == 101
    assert [r.offset for r in Scan(entry, deep=True).records] == [100]


@pytest.mark.parametrize("magic", [0, 1])
def test_inner_message_too_short_between_good_ones(magic: int) -> None:
    # Its length still frames it: the messages after it are read, and keep their offsets.
    rel = [0, 1, 2] if magic == 1 else [200, 201, 202]
    inner = _inner([rel[0]], magic=magic) + _short(rel[1], 6, magic=magic) + _inner([rel[2]], magic=magic)
    entry = _wrapper(inner, magic=magic, offset=202)
    s = Scan(entry, deep=True)
    assert s.codes == ["inner-message-too-short"], s.findings
    assert s.findings[0].offset == 201
    assert [(r.offset, r.value) for r in s.records] == [
        (200, b"value %d" % rel[0]),
        (202, b"value %d" % rel[2]),
    ]


# --- the real legacy segments -----------------------------------------------------------------------


@pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
def test_real_legacy_segments_stay_clean(corpus_logdirs: Path, deep: bool) -> None:
    # The broker's own v0 and v1 segments (every codec, LogAppendTime, mixed formats, the legacy
    # __consumer_offsets) and the samples made from them: no error, none of these codes.
    legacy = corpus_logdirs / "kafka-3.8.0-zk-legacy"
    samples = Path(__file__).resolve().parents[2] / "samples" / "logdir"
    targets = [discover(str(p)) for p in (legacy, *sorted(samples.glob("legacy-v*")))]
    reports = list(verify_targets(targets, VerifyOptions(deep=deep, jobs=1)))
    findings = [f for r in reports for f in r.findings]
    assert not {f.code for f in findings} & COVERED_CODES
    assert [f for f in findings if f.severity == Severity.ERROR] == []
    assert sum(r.batches for r in reports if "legacy-v0" in r.label) > 0
    assert sum(r.batches for r in reports if "legacy-v1" in r.label) > 0


# --- a wrapper whose codec cannot be loaded ---------------------------------------------------------


@pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
def test_wrapper_without_its_codec_is_counted_unknown(monkeypatch: pytest.MonkeyPatch, deep: bool) -> None:
    from kdump.errors import CodecUnavailableError
    from kdump.formats import codecs

    plain = encode_legacy_message(offset=39, magic=1, key=None, value=b"v", timestamp=BASE_TS)
    wrapped = _wrapper(_inner([40, 41, 42], magic=1), magic=1, offset=42, codec=Codec.LZ4)
    first = _wrapper(_inner([30, 31], magic=1), magic=1, offset=31, codec=Codec.LZ4)

    def unavailable(name: str) -> object:
        raise CodecUnavailableError(codecs.unavailable_message(name, ImportError("simulated")))

    monkeypatch.setattr(codecs, "_load", unavailable)
    s = Scan(first + plain + wrapped, deep=deep)
    found = [f for f in s.findings if f.code == "codec-unavailable"]
    assert [f.offset for f in found] == [31, 42]  # once each, shallow or deep
    assert found[1].message == (
        "lz4 payloads cannot be decompressed here: the Python library lz4 (module lz4.block) cannot be loaded "
        "(ImportError: simulated); install it with `pip install lz4`; its inner messages were not read: the last "
        "offset is 42, the first is unknown"
    )
    # Only the plain message is counted; the wrappers' records are not 0 but unknown, and the first
    # offset is the first wrapper's last, an upper bound.
    assert (s.summary.record_count, s.summary.uncounted_batches) == (1, 2)
    assert (s.summary.first_offset, s.summary.first_offset_known, s.summary.last_offset) == (31, False, 42)
    assert [r.offset for r in s.records] == ([39] if deep else [])
