"""The compiled record path against the pure-Python reference: byte-identical, batch by batch.

Every generated batch (every codec, null and empty keys and values, invalid UTF-8, astral
characters, headers with null values, LogAppendTime, sequences that wrap, offset gaps, control
records) and every damaged-but-checksum-valid variant of it is decoded and rendered both ways. The
compiled path may decline (the caller then runs the reference); it must never answer differently.
Whole-file comparisons (corpus, legacy formats, damaged segments) are in tests/cli/test_dump_paths.py.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdump.formats import fast_records
from kdump.formats.batch import BatchHeader, decode_v2_header, encode_v2_batch
from kdump.formats.codecs import compress
from kdump.formats.constants import TIMESTAMP_TYPE_MASK, Codec, ControlType
from kdump.formats.control import encode_control_key, encode_end_txn_marker
from kdump.formats.records import NewRecord, Record, build_v2_batch, encode_v2_record
from kdump.ops.dump.files import FileStart
from kdump.render import fast_lines
from kdump.render.jsonl import write_jsonl
from kdump.render.text import write_text
from kdump.scan.batch_checks import decode_batch_records

COMPILED = fast_records.compiled
needs_compiled = pytest.mark.skipif(COMPILED is None, reason="the compiled record path is not built here")

FILE = "dir/00000000000000000000.log"
T = TypeVar("T")
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_ci_builds_the_compiled_path() -> None:
    """CI (.ci/run) sets KDUMP_REQUIRE_COMPILED=1: there, a failed build must fail the run."""
    if os.environ.get("KDUMP_REQUIRE_COMPILED") != "1":
        pytest.skip("KDUMP_REQUIRE_COMPILED is not set (a local install may lack a compiler)")
    assert COMPILED is not None, "kdump.formats._fastrecords was not built or does not import"


def test_environment_selects_the_reference_path() -> None:
    code = "from kdump.formats import fast_records; print(fast_records.compiled is None)"
    built = importlib.util.find_spec("kdump.formats._fastrecords") is not None
    for value, pure in (("1", "True"), ("0", str(not built))):
        env = {**os.environ, "KDUMP_PURE_PYTHON": value}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert done.stdout.strip() == pure


@pytest.fixture
def reference() -> Iterator[None]:
    """Within the fixture, the pure-Python path (what KDUMP_PURE_PYTHON=1 selects)."""
    saved = fast_records.compiled
    fast_records.compiled = None
    try:
        yield
    finally:
        fast_records.compiled = saved


def _both(fn: Callable[[], T]) -> tuple[T, T]:
    """`fn` run on the reference path, then on the compiled path."""
    saved = fast_records.compiled
    fast_records.compiled = None
    try:
        ref = fn()
    finally:
        fast_records.compiled = saved
    return ref, fn()


# Files whose directory is named as a partition (JSON record lines then carry its topic and
# partition, quoted and escaped) and one whose directory is not (both null).
PARTITION_FILES = (FILE, "logs/orders-3/00000000000000000000.log", 'logs/t\u00e9"st.x-2147483647/0.log')


def _render_reference(events: list[object], fmt: str, encoding: str, file: str = FILE) -> bytes:
    out = io.StringIO()
    writer = write_jsonl if fmt == "json" else write_text
    writer([FileStart(file, "log", 0, None), *events], out, encoding=encoding)
    text = out.getvalue()
    return text.split("\n", 1)[1].encode("utf-8")


# --- generated batches -----------------------------------------------------------------------

_invalid_utf8 = st.sampled_from(
    [
        b"\xff",
        b"\xc3",
        b"\xe2\x82",
        b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
        b"\xc0\xaf",
        b"\x80abc",
        b"\xf0\x9f\x98",
    ]
)
_blob = st.one_of(
    st.binary(max_size=40),
    st.text(max_size=20).map(lambda s: s.encode("utf-8")),
    st.lists(st.one_of(_invalid_utf8, st.text(max_size=4).map(str.encode)), max_size=6).map(b"".join),
    st.sampled_from([b"", b'"quoted" \\ back\nnew\ttab\x7f\x00', "snow \u2603 and \U0001f600".encode()]),
)
_maybe_blob = st.one_of(st.none(), _blob)
_headers = st.lists(st.tuples(_blob, _maybe_blob), max_size=3).map(tuple)


@st.composite
def v2_batches(draw: st.DrawFn) -> bytes:
    """A whole v2 batch as a producer and broker would write it (data or control)."""
    codec = draw(st.sampled_from(list(Codec)))
    base_ts = draw(st.integers(-1, 2**42))
    control = draw(st.booleans()) and draw(st.booleans())
    n = draw(st.integers(0 if not control else 1, 12))
    if control:
        recs = [
            NewRecord(
                encode_control_key(draw(st.sampled_from([ControlType.COMMIT, ControlType.ABORT]))),
                encode_end_txn_marker(draw(st.integers(0, 2**31 - 1))),
                base_ts,
            )
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
    deltas = [sum(gaps[: i + 1]) - gaps[0] for i in range(n)]
    return build_v2_batch(
        draw(st.integers(0, 2**40)),
        recs,
        codec=codec,
        log_append_time=draw(st.one_of(st.none(), st.integers(0, 2**42))),
        offset_deltas=deltas,
        control=control,
        transactional=control or draw(st.booleans()),
        producer_id=draw(st.integers(-1, 5000)),
        base_sequence=draw(st.one_of(st.just(-1), st.integers(0, 2**31 - 1))),
    )


def _header(batch: bytes) -> BatchHeader:
    return decode_v2_header(batch, 0, len(batch))


def _decode_both(batch: bytes) -> tuple[Any, Any]:
    h = _header(batch)
    return _both(lambda: decode_batch_records(batch, h, FILE))


def _check_rendering(batch: bytes, *, must_take_fast_path: bool) -> None:
    h = _header(batch)
    with_ref = _both(lambda: decode_batch_records(batch, h, FILE))[0]
    records, findings = with_ref
    for fmt in ("json", "text"):
        for encoding in ("utf8", "hex", "base64"):
            for file in PARTITION_FILES if fmt == "json" else (FILE,):
                fast = fast_lines.render_batch(batch, h, json.dumps(file), fmt, encoding)
                if fast is None:
                    assert not must_take_fast_path, (fmt, encoding)
                    continue
                expected = _render_reference([h, *findings, *records], fmt, encoding, file)
                assert fast == expected, (fmt, encoding, file)


@needs_compiled
@SETTINGS
@given(v2_batches())
def test_generated_batches_decode_the_same(batch: bytes) -> None:
    ref, fast = _decode_both(batch)
    assert fast == ref
    assert all(type(r) is Record for r in fast[0])


@needs_compiled
@SETTINGS
@given(v2_batches())
def test_generated_batches_render_the_same(batch: bytes) -> None:
    h = _header(batch)
    _check_rendering(batch, must_take_fast_path=not h.is_control)


# --- damaged, yet checksum-valid, batches -------------------------------------------------------


@st.composite
def damaged_batches(draw: st.DrawFn) -> bytes:
    """A batch whose records payload was damaged before the checksum was computed over it."""
    n = draw(st.integers(1, 6))
    recs = [
        NewRecord(draw(_maybe_blob), draw(_maybe_blob), 1_700_000_000_000 + i, draw(_headers))
        for i in range(n)
    ]
    payload = bytearray(
        b"".join(encode_v2_record(i, i, r.key, r.value, r.headers) for i, r in enumerate(recs))
    )
    count = n
    max_ts = 1_700_000_000_000 + n - 1
    last_delta = n - 1
    damage = draw(st.sampled_from(["byte", "truncate", "append", "count", "max_ts", "last_delta", "varint"]))
    if damage == "byte":
        at = draw(st.integers(0, len(payload) - 1))
        payload[at] = draw(st.integers(0, 255))
    elif damage == "truncate":
        del payload[draw(st.integers(0, len(payload) - 1)) :]
    elif damage == "append":
        payload += draw(st.binary(min_size=1, max_size=8))
    elif damage == "count":
        count = draw(st.sampled_from([0, n - 1, n + 1, n + 100, -1]))
    elif damage == "max_ts":
        max_ts += draw(st.sampled_from([-1, 1, 10**6]))
    elif damage == "last_delta":
        last_delta = draw(st.integers(0, n - 2)) if n > 1 else 0
        count = min(count, last_delta + 1) if draw(st.booleans()) else count
    else:
        # A first record whose length is a valid but over-long varint (the compiled path declines).
        first = encode_v2_record(0, 0, recs[0].key, recs[0].value, recs[0].headers)
        length = len(first) - 1 - (1 if len(first) - 1 >= 64 else 0)
        body = first[1:] if len(first) - 1 < 64 else first[2:]
        long_varint = bytes([((length << 1) & 0x7F) | 0x80, 0x80, 0x80, 0x80, (length << 1) >> 7])
        payload = bytearray(long_varint + body) + payload[len(first) :]
    codec = draw(st.sampled_from(list(Codec)))
    return encode_v2_batch(
        base_offset=100,
        records_payload=compress(codec, bytes(payload)),
        count=count,
        last_offset_delta=last_delta,
        base_timestamp=1_700_000_000_000,
        max_timestamp=max_ts,
        attributes=codec | (TIMESTAMP_TYPE_MASK if draw(st.booleans()) and damage != "max_ts" else 0),
        base_sequence=draw(st.one_of(st.just(-1), st.integers(0, 2**31 - 1))),
    )


@needs_compiled
@SETTINGS
@given(damaged_batches())
def test_damaged_batches_decode_the_same(batch: bytes) -> None:
    ref, fast = _decode_both(batch)
    assert fast == ref


@needs_compiled
@SETTINGS
@given(damaged_batches())
def test_damaged_batches_render_the_same_or_decline(batch: bytes) -> None:
    _check_rendering(batch, must_take_fast_path=False)


@needs_compiled
def test_damage_is_declined_not_rendered() -> None:
    recs = [NewRecord(b"k", b"v", 1_700_000_000_000 + i) for i in range(3)]
    payload = b"".join(encode_v2_record(i, i, r.key, r.value) for i, r in enumerate(recs))
    common = {"base_offset": 0, "last_offset_delta": 2, "base_timestamp": 1_700_000_000_000}
    too_many = encode_v2_batch(records_payload=payload, count=4, max_timestamp=1_700_000_000_002, **common)
    wrong_max = encode_v2_batch(records_payload=payload, count=3, max_timestamp=1_700_000_000_009, **common)
    clean = encode_v2_batch(records_payload=payload, count=3, max_timestamp=1_700_000_000_002, **common)
    crc_broken = clean[:-1] + bytes([clean[-1] ^ 1])
    for batch in (too_many, wrong_max, crc_broken):
        h = _header(batch)
        assert fast_lines.render_batch(batch, h, '"f"', "json", "utf8") is None
    assert decode_batch_records(wrong_max, _header(wrong_max), FILE)[1][0].code == "max-timestamp-mismatch"
    assert fast_lines.render_batch(clean, _header(clean), '"f"', "json", "utf8") is not None


def test_reference_path_when_switched_off(reference: None) -> None:
    batch = build_v2_batch(0, [NewRecord(b"k", b"v", 1)])
    h = _header(batch)
    assert not fast_lines.enabled()
    assert fast_records.decode_v2(batch[61:], h) is None
    assert fast_lines.render_batch(batch, h, '"f"', "json", "utf8") is None


# --- columns for Arrow ---------------------------------------------------------------------------


def _column_values(col: fast_records.BinaryColumn, n: int) -> list[bytes | None]:
    offsets = memoryview(col.offsets).cast("i")
    out: list[bytes | None] = []
    for i in range(n):
        valid = col.validity[i >> 3] >> (i & 7) & 1 if col.validity else 0
        out.append(col.data[offsets[i] : offsets[i + 1]] if valid else None)
    return out


@needs_compiled
@SETTINGS
@given(v2_batches())
def test_columns_hold_the_reference_records(batch: bytes) -> None:
    h = _header(batch)
    with_ref = _both(lambda: decode_batch_records(batch, h, FILE))[0]
    records = with_ref[0]
    data = fast_lines.payload_of(batch, h)
    if h.is_control:
        assert data is None  # control batches take the reference path
        return
    assert data is not None
    cols = fast_records.columns_v2(data, h)
    assert cols is not None
    assert cols.rows == len(records)
    assert list(memoryview(cols.offsets).cast("q")) == [r.offset for r in records]
    assert list(memoryview(cols.timestamps).cast("q")) == [r.timestamp for r in records]
    assert _column_values(cols.keys, cols.rows) == [r.key for r in records]
    assert _column_values(cols.values, cols.rows) == [r.value for r in records]
    assert cols.keys.null_count == sum(r.key is None for r in records)
    cuts = list(memoryview(cols.header_offsets).cast("i"))
    total = cuts[-1]
    keys = _column_values(cols.header_keys, total)
    values = _column_values(cols.header_values, total)
    assert [
        tuple(zip(keys[cuts[i] : cuts[i + 1]], values[cuts[i] : cuts[i + 1]], strict=True))
        for i in range(cols.rows)
    ] == [r.headers for r in records]


@needs_compiled
@SETTINGS
@given(st.lists(st.one_of(v2_batches(), damaged_batches()), min_size=1, max_size=5))
def test_columns_of_a_run_stop_at_the_first_declined_batch(batches: list[bytes]) -> None:
    """A run's columns hold exactly the batches before the first one that declines, whatever
    that batch had already added (its rows are taken back out)."""
    run = []
    for batch in batches:
        h = _header(batch)
        data = fast_lines.payload_of(batch, h)
        if data is None:
            break
        run.append((data, h))
    out = fast_records.columns_v2_many(run)
    assert out is not None
    done, cols = out
    alone = [fast_records.columns_v2(data, h) for data, h in run]
    expected_done = next((i for i, c in enumerate(alone) if c is None), len(run))
    assert done == expected_done
    records = [r for data, h in run[:done] for r in decode_batch_records(data_batch(h, batches), h, FILE)[0]]
    assert cols.rows == len(records)
    assert list(memoryview(cols.offsets).cast("q")) == [r.offset for r in records]
    assert _column_values(cols.keys, cols.rows) == [r.key for r in records]
    assert _column_values(cols.values, cols.rows) == [r.value for r in records]
    assert list(memoryview(cols.batch_index).cast("i")) == [
        i for i, (_, h) in enumerate(run[:done]) for _ in range(h.count or 0)
    ]
    cuts = list(memoryview(cols.header_offsets).cast("i"))
    assert len(cuts) == cols.rows + 1
    values = _column_values(cols.header_values, cuts[-1])
    assert values == [v for r in records for _, v in r.headers]


def data_batch(h: BatchHeader, batches: list[bytes]) -> bytes:
    """The batch (of `batches`) that `h` was read from."""
    return next(b for b in batches if _header(b) == h)


@needs_compiled
def test_json_record_lines_carry_topic_and_partition_both_ways() -> None:
    batch = build_v2_batch(0, [NewRecord(b"k", b"v", 1_700_000_000_000)])
    h = _header(batch)
    for file, expected in (
        ("logs/orders-3/00000000000000000000.log", ("orders", 3)),
        ('logs/t\u00e9"st.x-2147483647/0.log', ('t\u00e9"st.x', 2147483647)),
        (FILE, (None, None)),
    ):
        fast = fast_lines.render_batch(batch, h, json.dumps(file), "json", "utf8")
        assert fast is not None
        reference = _render_reference([h, *decode_batch_records(batch, h, file)[0]], "json", "utf8", file)
        assert fast == reference
        record = json.loads(fast.splitlines()[1])
        assert (record["topic"], record["partition"]) == expected
        assert list(record)[:5] == ["type", "file", "topic", "partition", "offset"]
