"""kdump's scanner against Kafka's own ``kafka-dump-log.sh`` output, segment by segment.

For every ``.log`` of the corpus (the full corpus when present, else the bundled real subset) and the
running copy's ``.log.deleted`` cleaner leftovers, ``scan_log`` over the mapped file must agree with the
golden oracles of ``expected/``:

* every batch field Kafka prints (shallow and deep oracles),
* every record field Kafka prints with ``--deep-iteration``,
* keys and payloads of ``--print-data-log``, decoded the way Java's ``new String(bytes, UTF_8)`` does,
* the ``Found N invalid bytes`` trailer (its absence means 0) against ``ScanSummary.invalid_bytes``,
* the ``Non-consecutive offsets`` stderr summary against the offsets kdump decodes,
* and ``kdump dump <file>``'s text batch lines against the shallow oracle, line for line.
"""

from __future__ import annotations

import functools
import gzip
import itertools
import re
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from corpus import (
    CORPUS_ROOT,
    SUBSET_ARCHIVE,
    CorpusSegment,
    full_corpus_available,
    iter_log_segments,
)
from hypothesis import given
from hypothesis import strategies as st
from oracle import LogDump, OracleBatch, OracleRecord, parse_log_dump

from kdump.findings import Finding, Severity
from kdump.formats.batch import BatchHeader
from kdump.formats.records import Record
from kdump.render import rows
from kdump.scan import ScanSummary, open_buffer, scan_log

# --- which segments -----------------------------------------------------------------------------------


def _subset_segment_ids() -> list[str]:
    """Segment ids of the bundled subset, read from the archive's member list (no extraction)."""
    with tarfile.open(SUBSET_ARCHIVE, "r:xz") as tar:
        names = {m.name for m in tar.getmembers() if m.isfile()}
    ids = []
    for name in sorted(names):
        parts = name.split("/")
        if len(parts) != 3 or parts[1] in ("expected", "_logdir-files"):
            continue
        corpus_dir, part, file = parts
        # The archive stores the oracles gunzipped; `iter_log_segments` keeps a `.log.deleted` only when it
        # has its own deep oracle.
        leftover = file.endswith(".log.deleted") and f"{corpus_dir}/expected/{part}/{file}.deep.txt" in names
        if file.endswith(".log") or leftover:
            ids.append(name)
    return ids


def _segment_ids() -> list[str]:
    if full_corpus_available():
        return [s.id for s in iter_log_segments(CORPUS_ROOT)]
    return _subset_segment_ids()


SEGMENT_IDS = _segment_ids()


@functools.cache
def _segments(root: Path) -> dict[str, CorpusSegment]:
    return {s.id: s for s in iter_log_segments(root)}


@pytest.fixture
def segment(corpus_root: Path, seg_id: str) -> CorpusSegment:
    segments = _segments(corpus_root)
    assert seg_id in segments, f"{seg_id} is not in the corpus at {corpus_root}"
    return segments[seg_id]


@functools.cache
def _oracle(path: Path) -> LogDump:
    return parse_log_dump(path)


def _scan(
    seg: CorpusSegment, *, deep: bool
) -> tuple[list[tuple[BatchHeader, list[Record]]], list[Finding], ScanSummary]:
    """Scan a segment; return its batches with their records, the findings and the summary."""
    batches: list[tuple[BatchHeader, list[Record]]] = []
    findings: list[Finding] = []
    summary: ScanSummary | None = None
    with open_buffer(seg.log_path) as buf:
        for ev in scan_log(buf, file=seg.id, base_offset=seg.base_offset, deep=deep):
            if isinstance(ev, BatchHeader):
                batches.append((ev, []))
            elif isinstance(ev, Record):
                batches[-1][1].append(ev)
            elif isinstance(ev, Finding):
                findings.append(ev)
            else:
                assert isinstance(ev, ScanSummary)
                assert summary is None, "more than one summary"
                summary = ev
    assert summary is not None
    return batches, findings, summary


# --- Java's UTF-8 decoding ----------------------------------------------------------------------------

REPL = "\ufffd"


def _cont(b: int) -> bool:
    return (b & 0xC0) == 0x80


def _malformed3_2(b1: int, b2: int) -> bool:
    return (b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2)


def _malformed4_2(b1: int, b2: int) -> bool:
    return (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF) or (b1 == 0xF4 and (b2 & 0xF0) != 0x80) or not _cont(b2)


def java_utf8(data: bytes) -> str:
    """``new String(bytes, UTF_8)`` of JDK 11+ (``String.decodeUTF8_UTF16`` with replacement).

    Kafka's ``StringDecoder`` (``--print-data-log``) and ``Utils.utf8`` (header keys) decode this way. It
    differs from Python's ``decode("utf-8", "replace")`` on encoded surrogates (``ED A0..BF xx`` is one
    U+FFFD in Java, three in Python; ``ED BD`` then a non-continuation byte is one, not two) and on some
    sequences cut short by the end of the input.
    """
    out: list[str] = []
    sp, sl = 0, len(data)
    while sp < sl:
        b1 = data[sp]
        sp += 1
        if b1 < 0x80:
            out.append(chr(b1))
        elif b1 >> 5 == 0b110 and b1 & 0x1E:  # C2..DF: two bytes
            if sp < sl:
                b2 = data[sp]
                sp += 1
                if not _cont(b2):
                    out.append(REPL)
                    sp -= 1
                else:
                    out.append(chr(((b1 & 0x1F) << 6) | (b2 & 0x3F)))
                continue
            out.append(REPL)
            break
        elif b1 >> 4 == 0b1110:  # E0..EF: three bytes
            if sp + 1 < sl:
                b2, b3 = data[sp], data[sp + 1]
                sp += 2
                if _malformed3_2(b1, b2) or not _cont(b3):
                    out.append(REPL)
                    sp -= 3
                    # malformed3(): how many bytes the replacement stands for
                    sp += 1 if _malformed3_2(data[sp], data[sp + 1]) else 2
                else:
                    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                    out.append(REPL if 0xD800 <= c <= 0xDFFF else chr(c))
                continue
            if sp < sl and _malformed3_2(b1, data[sp]):
                out.append(REPL)
                continue
            out.append(REPL)
            break
        elif b1 >> 3 == 0b11110:  # F0..F7: four bytes
            if sp + 2 < sl:
                b2, b3, b4 = data[sp], data[sp + 1], data[sp + 2]
                sp += 3
                uc = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if not (_cont(b2) and _cont(b3) and _cont(b4)) or not 0x10000 <= uc <= 0x10FFFF:
                    out.append(REPL)
                    sp -= 3
                    # malformed4()
                    if b1 > 0xF4 or _malformed4_2(b1, b2):
                        pass
                    elif not _cont(b3):
                        sp += 1
                    else:
                        sp += 2
                else:
                    out.append(chr(uc))
                continue
            if b1 > 0xF4 or (sp < sl and _malformed4_2(b1, data[sp])):
                out.append(REPL)
                continue
            sp += 1
            out.append(REPL)
            if sp < sl and not _cont(data[sp]):
                continue
            break
        else:
            out.append(REPL)
    return "".join(out)


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (b"plain", "plain"),
        ("h\u00e9\u20ac\U0001f600".encode(), "h\u00e9\u20ac\U0001f600"),
        (b"\xed\xa0\x80", REPL),  # an encoded surrogate: one replacement (Python gives three)
        (b"\xed\xbdA", REPL + "A"),  # a surrogate prefix: one replacement (Python gives two)
        (b"\xe0\x80\x80", REPL * 3),  # overlong
        (b"\xc0\xaf", REPL * 2),
        (b"\xe2\x82", REPL),  # cut short at the end
        (b"\xf0\x9f\x98", REPL),
        (b"\xf0\x9fA", REPL + "A"),
        (b"\xff\xfe", REPL * 2),
        (b"\xf4\x90\x80\x80", REPL * 4),  # above U+10FFFF
    ],
)
def test_java_utf8_decoder(raw: bytes, text: str) -> None:
    assert java_utf8(raw) == text


@given(st.text())
def test_java_utf8_agrees_on_valid_text(text: str) -> None:
    encoded = text.encode("utf-8", "surrogatepass")
    if any("\ud800" <= c <= "\udfff" for c in text):
        # Encoded surrogates are invalid UTF-8: one replacement each in Java.
        assert java_utf8(encoded) == "".join(REPL if "\ud800" <= c <= "\udfff" else c for c in text)
    else:
        assert java_utf8(encoded) == text


@given(st.binary(max_size=64))
def test_java_utf8_replacements_fit_sizes(data: bytes) -> None:
    """What the oracle parser relies on: each U+FFFD stands for 1..3 bytes, other text is exact."""
    text = java_utf8(data)
    encoded = len(text.encode("utf-8"))
    n = text.count(REPL)
    assert encoded - 2 * n <= len(data) <= encoded


# --- field comparison ---------------------------------------------------------------------------------


def _batch_fields(h: BatchHeader) -> dict[str, object]:
    """kdump's batch, in the oracle's vocabulary (v2-only fields None for legacy, as the oracle has them)."""
    v2 = h.magic >= 2
    return {
        "position": h.position,
        "base_offset": h.base_offset if v2 else None,
        "last_offset": h.last_offset,
        "count": h.count if v2 else None,
        "size": h.size,
        "magic": h.magic,
        "crc": h.crc,
        "crc_ok": h.crc_ok,
        "compression": rows.codec_label(h.compression),
        "timestamp_type": rows.timestamp_type_label(h.timestamp_type),
        "max_timestamp": h.max_timestamp,
        "producer_id": h.producer_id if v2 else None,
        "producer_epoch": h.producer_epoch if v2 else None,
        "base_sequence": h.base_sequence if v2 else None,
        "last_sequence": h.last_sequence if v2 else None,
        "partition_leader_epoch": h.partition_leader_epoch if v2 else None,
        "is_transactional": h.is_transactional,
        "is_control": h.is_control,
        "delete_horizon_ms": h.delete_horizon_ms,
    }


def _oracle_batch_fields(b: OracleBatch) -> dict[str, object]:
    return {
        "position": b.position,
        "base_offset": b.base_offset,
        "last_offset": b.last_offset,
        "count": b.count,
        "size": b.size,
        "magic": b.magic,
        "crc": b.crc,
        "crc_ok": b.crc_ok,
        "compression": b.compression,
        "timestamp_type": b.timestamp_type,
        "max_timestamp": b.max_timestamp,
        "producer_id": b.producer_id,
        "producer_epoch": b.producer_epoch,
        "base_sequence": b.base_sequence,
        "last_sequence": b.last_sequence,
        "partition_leader_epoch": b.partition_leader_epoch,
        "is_transactional": b.is_transactional,
        "is_control": b.is_control,
        "delete_horizon_ms": b.delete_horizon_ms,
    }


def _control_of(r: Record) -> object:
    """kdump's control marker in the oracle's shape: (type, coordinator epoch) or the control type name."""
    control = rows.control_fields(r)
    assert control is not None, f"control record at offset {r.offset} does not decode"
    if "coordinator_epoch" in control:
        return control["type"], control["coordinator_epoch"]
    return control["type"]


def _record_fields(r: Record, h: BatchHeader) -> dict[str, object]:
    v2 = h.magic >= 2
    return {
        "offset": r.offset,
        "timestamp_type": rows.timestamp_type_label(h.timestamp_type),
        "timestamp": r.timestamp,
        "key_size": -1 if r.key is None else len(r.key),
        "value_size": -1 if r.value is None else len(r.value),
        "sequence": r.sequence if v2 else None,
        "header_keys": [java_utf8(bytes(k)) for k, _ in r.headers] if v2 else None,
        "is_valid": None if v2 else r.crc_ok,
        "crc": None if v2 else r.crc,
        "control": _control_of(r) if h.is_control else None,
    }


def _oracle_control(rec: OracleRecord) -> object:
    if rec.control is None or isinstance(rec.control, tuple):
        return rec.control
    # `controlType: LEADER_CHANGE(2)` -> LEADER_CHANGE
    label = rec.control_type or ""
    return re.sub(r"\(-?\d+\)$", "", label)


def _oracle_record_fields(rec: OracleRecord) -> dict[str, object]:
    header_keys = rec.header_keys
    return {
        "offset": rec.offset,
        "timestamp_type": rec.timestamp_type,
        "timestamp": rec.timestamp,
        "key_size": rec.key_size,
        "value_size": rec.value_size,
        "sequence": rec.sequence,
        "header_keys": header_keys,
        "is_valid": rec.is_valid,
        "crc": rec.crc,
        "control": _oracle_control(rec),
    }


def _compare_batches(seg: CorpusSegment, ours: list[tuple[BatchHeader, list[Record]]], dump: LogDump) -> None:
    assert len(ours) == len(dump.batches), f"{seg.id}: {len(ours)} batches, Kafka {len(dump.batches)}"
    for (h, _), ob in zip(ours, dump.batches, strict=True):
        assert _batch_fields(h) == _oracle_batch_fields(ob), f"{seg.id}: batch at position {h.position}"


# --- the tests ----------------------------------------------------------------------------------------

per_segment = pytest.mark.parametrize("seg_id", SEGMENT_IDS)


@per_segment
def test_shallow_batches_match_kafka(segment: CorpusSegment) -> None:
    """Every batch line of ``kafka-dump-log --files`` (or of the deep dump for ``.log.deleted``)."""
    oracle_path = segment.oracle("shallow")
    if not oracle_path.exists():
        assert segment.is_deleted_leftover, f"{segment.id}: no shallow oracle"
        oracle_path = segment.oracle("deep")
    dump = _oracle(oracle_path)
    batches, findings, summary = _scan(segment, deep=False)
    _compare_batches(segment, batches, dump)
    assert dump.start_offset == segment.base_offset
    assert summary.invalid_bytes == (dump.invalid_trailing_bytes or 0)
    assert summary.batch_count == len(dump.batches)
    # A real broker's segments are sound: nothing worse than informational findings.
    assert [f for f in findings if f.severity > Severity.INFO] == []


@per_segment
def test_deep_batches_and_records_match_kafka(segment: CorpusSegment) -> None:
    """Batches and every record of ``kafka-dump-log --deep-iteration``, and the trailer."""
    dump = _oracle(segment.oracle("deep"))
    batches, findings, summary = _scan(segment, deep=True)
    _compare_batches(segment, batches, dump)
    for (h, recs), ob in zip(batches, dump.batches, strict=True):
        assert len(recs) == len(ob.records), f"{segment.id}: batch at {h.position}"
        for r, orec in zip(recs, ob.records, strict=True):
            assert _record_fields(r, h) == _oracle_record_fields(orec), f"{segment.id}: record {r.offset}"
    assert summary.invalid_bytes == (dump.invalid_trailing_bytes or 0)
    assert summary.record_count == dump.record_count
    assert [f for f in findings if f.severity > Severity.INFO] == []


@per_segment
def test_non_consecutive_offsets_match_kafka(segment: CorpusSegment) -> None:
    """The ``Non-consecutive offsets`` summary (Scala 3.8: seeded by the first record, newest first)."""
    dump = _oracle(segment.oracle("deep"))
    batches, _, _ = _scan(segment, deep=True)
    offsets = [r.offset for _, recs in batches for r in recs]
    pairs = [(a, b) for a, b in itertools.pairwise(offsets) if b != a + 1]
    kafka: list[tuple[int, int]] = []
    if dump.stderr is not None:
        for listed in dump.stderr.non_consecutive_offsets.values():
            kafka.extend(listed)
    assert list(reversed(kafka)) == pairs


@per_segment
def test_printed_keys_and_payloads_match_kafka(segment: CorpusSegment) -> None:
    """``--print-data-log`` text: kdump's key/value bytes decoded as Java decodes them, every record."""
    path = segment.oracle("deep-print-data-log")
    if not path.exists():
        # big-record-0 and the running copy's closed segment (size budget), the .log.deleted leftovers
        pytest.skip(f"{segment.id}: the corpus keeps no --print-data-log oracle for it")
    dump = _oracle(path)
    batches, _, _ = _scan(segment, deep=True)
    compared = 0
    for (h, recs), ob in zip(batches, dump.batches, strict=True):
        assert len(recs) == len(ob.records)
        for r, orec in zip(recs, ob.records, strict=True):
            assert r.offset == orec.offset
            if h.is_control:
                continue  # Kafka prints the marker, not the key and value
            expected_key = None if r.key is None else java_utf8(bytes(r.key))
            expected_value = None if r.value is None else java_utf8(bytes(r.value))
            assert (expected_key, expected_value) == (orec.key, orec.payload), (
                f"{segment.id}: record {r.offset}"
            )
            compared += 1
    assert compared == sum(1 for b in dump.batches if not b.is_control for _ in b.records)


_FINDING_LINE = re.compile(r"(INFO|WARNING|ERROR) [a-z-]+ at ")


@per_segment
def test_text_batch_lines_match_kafka(
    segment: CorpusSegment, corpus_root: Path, kdump: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``kdump dump <file>`` prints Kafka's shallow dump line for line (plus findings and a summary)."""
    oracle_path = segment.oracle("shallow")
    leftover = not oracle_path.exists()
    if leftover:
        oracle_path = segment.oracle("deep")
    kafka_lines = gzip.decompress(oracle_path.read_bytes()).decode("utf-8").split("\n")
    if kafka_lines[-1] == "":
        kafka_lines.pop()
    if leftover:
        # The deep dump of a leftover: keep its batch lines, drop records and the captured stderr summary.
        kafka_lines = [
            ln
            for ln in kafka_lines
            if ln.startswith(("Dumping ", "Log starting offset: ", "baseOffset: ", "offset: "))
        ]
    monkeypatch.chdir(corpus_root)
    rel = segment.log_path.relative_to(corpus_root).as_posix()
    result = kdump("dump", "--format", "text", rel)
    assert result.exit_code == 0, result.stderr
    ours = result.stdout.split("\n")
    assert ours[-1] == ""
    ours.pop()
    assert ours[-1].startswith("Summary: ")
    ours.pop()
    findings = [ln for ln in ours if _FINDING_LINE.match(ln)]
    assert all(ln.startswith("INFO ") for ln in findings), findings
    ours = [ln for ln in ours if not _FINDING_LINE.match(ln)]
    if leftover:
        # Kafka dumped a temporary copy named `<base>.log`.
        assert kafka_lines[0] == f"Dumping {segment.base_name}.log"
        assert ours[0] == f"Dumping {rel}"
        ours, kafka_lines = ours[1:], kafka_lines[1:]
    assert ours == kafka_lines
