"""The compiled record lines of Kafka's tool (`_fastrecords.render_kafka_v2`, through
`render.kafka_tool_fast`) against the reference, `render.kafka_tool.record_line`: byte-identical.

Every generated batch (every codec, null and empty keys and values, invalid UTF-8 of each kind Java
replaces differently from Python, astral characters, headers with null values, LogAppendTime,
sequences that wrap, offset gaps, control batches) in every flag set (`--print-data-log`,
`--skip-record-metadata`, the 3.x and the 4.x tool) and from any previous offset: the lines, the
last offset and the non-consecutive pairs are what the reference gives record by record, or the
compiled path declined (None). Clean data batches must not be declined. Damaged but checksum-valid
batches may be declined, never rendered differently. Whole files against Kafka's real output are
tests/cli/test_kafka_flags*.py and tests/scan/test_differential_kafka.py.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdump.formats import fast_records
from kdump.formats.batch import BatchHeader, decode_v2_header
from kdump.formats.checksums import crc32c
from kdump.formats.constants import Codec, ControlType
from kdump.formats.control import encode_control_key, encode_end_txn_marker
from kdump.formats.records import NewRecord, build_v2_batch
from kdump.render.kafka_tool import ToolOptions, record_line
from kdump.render.kafka_tool_fast import KafkaRecordLines
from kdump.scan.batch_checks import decode_batch_records

needs_compiled = pytest.mark.skipif(
    not KafkaRecordLines.enabled(), reason="the compiled record path is not built here"
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FILE = "dir/00000000000000000000.log"

# Java's decoder replaces these differently from Python's (one U+FFFD for a surrogate, for a cut-off
# sequence, for a lead byte and one good continuation byte before a bad one).
_invalid_utf8 = st.sampled_from(
    [
        b"\xff",
        b"\xc3",
        b"\xe2\x82",
        b"\xed\xa0\x80",
        b"\xed\xbdA",
        b"\xe0\x80\x80",
        b"\xf4\x90\x80\x80",
        b"\xf0\x9fA",
        b"\xf5\x80\x80\x80",
        b"\xc0\xaf",
        b"\x80abc",
        b"\xf0\x9f\x98",
        b"\xf0\x9f",
    ]
)
_blob = st.one_of(
    st.binary(max_size=40),
    st.text(max_size=20).map(lambda s: s.encode("utf-8")),
    st.lists(st.one_of(_invalid_utf8, st.text(max_size=4).map(str.encode)), max_size=6).map(b"".join),
    st.sampled_from([b"", b"new\nline\ttab\x00nul", "snow \u2603 and \U0001f600".encode()]),
)
_maybe_blob = st.one_of(st.none(), _blob)
_headers = st.lists(st.tuples(_blob, _maybe_blob), max_size=3).map(tuple)


@st.composite
def batches(draw: st.DrawFn) -> bytes:
    """A whole v2 batch as a producer and broker would write it (data or, now and then, control)."""
    codec = draw(st.sampled_from(list(Codec)))
    base_ts = draw(st.integers(-1, 2**42))
    control = draw(st.integers(0, 7)) == 0
    n = draw(st.integers(1 if control else 0, 10))
    if control:
        recs = [
            NewRecord(encode_control_key(ControlType.COMMIT), encode_end_txn_marker(3), base_ts)
            for _ in range(n)
        ]
    else:
        recs = [
            NewRecord(
                draw(_maybe_blob),
                draw(_maybe_blob),
                base_ts + draw(st.integers(-1000, 2**35)),
                draw(_headers),
            )
            for _ in range(n)
        ]
    gaps = draw(st.lists(st.integers(1, 3 if draw(st.booleans()) else 1), min_size=n, max_size=n))
    return build_v2_batch(
        draw(st.integers(0, 2**40)),
        recs,
        codec=codec,
        log_append_time=draw(st.one_of(st.none(), st.integers(0, 2**42))),
        offset_deltas=[sum(gaps[: i + 1]) - gaps[0] for i in range(n)],
        control=control,
        transactional=control or draw(st.booleans()),
        producer_id=draw(st.integers(-1, 5000)),
        base_sequence=draw(st.one_of(st.just(-1), st.integers(0, 2**31 - 1))),
    )


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    """An uncompressed batch with a byte of its records changed, its checksum computed after."""
    batch = bytearray(draw(batches().filter(lambda b: b[22] & 7 == 0 and len(b) > 61)))
    at = draw(st.integers(57, len(batch) - 1))
    batch[at] = draw(st.integers(0, 255))
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


FLAG_SETS = [
    (print_data, skip, release)
    for print_data in (False, True)
    for skip in (False, True)
    for release in ("3.8.1", "4.4.0")
]
_previous = st.sampled_from([-1, 0, 99, 2**40, 2**63 - 1])


def _reference(
    h: BatchHeader, records: list[object], opts: ToolOptions, previous: int
) -> tuple[bytes, int, list[tuple[int, int]]]:
    """What kafka_tool.log_lines prints and reports for these records, record by record."""
    lines, gaps = [], []
    for r in records:
        assert hasattr(r, "offset")
        if (opts.java or previous != -1) and r.offset != previous + 1:
            gaps.append((previous, r.offset))
        previous = r.offset
        lines.append(record_line(r, h, opts) + "\n")  # type: ignore[arg-type]
    return "".join(lines).encode("utf-8", "surrogatepass"), previous, gaps


def _compare(batch: bytes, previous: int, *, must_render: bool) -> Iterator[bool]:
    h = decode_v2_header(batch, 0, len(batch))
    saved = fast_records.compiled
    fast_records.compiled = None
    try:
        records, findings = decode_batch_records(batch, h, FILE)
    finally:
        fast_records.compiled = saved
    for print_data, skip, release in FLAG_SETS:
        opts = ToolOptions(deep=True, print_data=print_data, skip_metadata=skip, release=release)
        fast = KafkaRecordLines(print_data=print_data, skip_metadata=skip, java=opts.java).render(
            batch, h, previous
        )
        if fast is None:
            assert not (must_render and not h.is_control), (print_data, skip, release)
            yield False
            continue
        assert not findings, findings  # a batch the reference finds anything wrong with is declined
        assert fast == _reference(h, records, opts, previous), (print_data, skip, release)
        yield True


@needs_compiled
@SETTINGS
@given(batches(), _previous)
def test_generated_batches_print_the_same(batch: bytes, previous: int) -> None:
    list(_compare(batch, previous, must_render=True))


@needs_compiled
@SETTINGS
@given(damaged(), _previous)
def test_damaged_batches_print_the_same_or_decline(batch: bytes, previous: int) -> None:
    list(_compare(batch, previous, must_render=False))


@needs_compiled
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=24))
def test_any_bytes_read_as_javas_string_decoder(data: bytes) -> None:
    """Keys, payloads and header keys of arbitrary bytes: Java's replacements, as the reference makes them."""
    batch = build_v2_batch(0, [NewRecord(data, data, 1_700_000_000_000, ((data, None),))])
    assert all(_compare(batch, -1, must_render=True))


@needs_compiled
def test_control_and_legacy_batches_take_the_reference_path() -> None:
    control = build_v2_batch(
        5, [NewRecord(encode_control_key(ControlType.ABORT), encode_end_txn_marker(1), 1)], control=True
    )
    h = decode_v2_header(control, 0, len(control))
    assert KafkaRecordLines(print_data=True, skip_metadata=False, java=True).render(control, h, -1) is None


def test_switched_off_without_the_compiled_path() -> None:
    saved = fast_records.compiled
    fast_records.compiled = None
    try:
        assert not KafkaRecordLines.enabled()
        batch = build_v2_batch(0, [NewRecord(b"k", b"v", 1)])
        h = decode_v2_header(batch, 0, len(batch))
        assert KafkaRecordLines(print_data=True, skip_metadata=False, java=True).render(batch, h, -1) is None
    finally:
        fast_records.compiled = saved


@needs_compiled
@pytest.mark.parametrize(
    "data",
    [
        b"abcdefgh",
        b"abcdefgh\xff",
        b"abcdefghijklmnop\xe2\x82",
        b"a" * 17 + b"\xed\xa0\x80" + b"b" * 9,
        b"x\xc3\xa9" + b"y" * 15 + b"\xf0\x9f\x98\x80z",
    ],
)
def test_ascii_runs_then_other_bytes(data: bytes) -> None:
    """The compiled decoder copies ASCII eight bytes at a time: runs of every length around it."""
    for cut in range(len(data) + 1):
        batch = build_v2_batch(0, [NewRecord(data[:cut], data[cut:], 1_700_000_000_000, ((data, b"v"),))])
        assert all(_compare(batch, -1, must_render=True))
