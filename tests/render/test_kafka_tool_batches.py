"""The compiled batch lines of Kafka's tool (`_fastwalk.kafka_batch_lines`, through
`render.kafka_tool_fast.KafkaBatchLines`) against the reference, `render.text.batch_line`: byte-identical.

Two levels:

* the compiled call on a run's columns, whatever they hold (int64 extremes, every attribute bit,
  positions that do not follow each other, a limit anywhere): the lines of the batches it takes are
  `batch_line`'s of `headers()`, and it takes exactly the batches Kafka's file iterator would read
  whole from the position given;
* whole segments through `kafka_tool.log_lines` (what `kdump dump --files` prints) with the compiled
  walk on against both compiled modules off (the reference scanner and the reference lines): v2 batches
  of every codec, control and transactional batches, LogAppendTime, a delete horizon, legacy v0/v1
  entries among them, damaged batches, damaged and zero tails, `--max-bytes` anywhere, both tools' text;
  and every log of the 3.8 corpus. Kafka's real output for the corpus is
  tests/cli/test_kafka_flags*.py's.
"""

from __future__ import annotations

import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from corpus import CORPUS_DIRS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdump.formats import fast_records, fast_walk
from kdump.formats.batch import BatchHeader
from kdump.formats.checksums import crc32c
from kdump.formats.constants import Codec, ControlType
from kdump.formats.control import encode_control_key, encode_end_txn_marker
from kdump.formats.records import NewRecord, build_legacy_entry, build_v2_batch
from kdump.render import kafka_tool_fast
from kdump.render.kafka_tool import INT_MAX, ToolAbort, ToolOptions, ToolReport, log_lines
from kdump.render.kafka_tool_fast import KafkaBatchLines
from kdump.render.text import batch_line

needs_compiled = pytest.mark.skipif(
    not KafkaBatchLines.enabled(), reason="the compiled walk is not built here"
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
N = fast_walk.N_COLUMNS

_int64 = st.one_of(
    st.integers(INT64_MIN, INT64_MAX),
    st.integers(-2, 2**31 + 2),
    st.sampled_from([INT64_MIN, INT64_MIN + 1, -1, 0, 2**31 - 1, 2**31, INT64_MAX]),
)


def _columns(rows: list[list[int]]) -> bytes:
    """A run's columns (fast_walk's layout: column after column) from rows of 13 values."""
    n = len(rows)
    return struct.pack(f"<{n * N}q", *(rows[i][k] for k in range(N) for i in range(n)))


def _reference_lines(rows: list[list[int]], position: int, limit: int) -> tuple[bytes, int, int]:
    """What the reference prints for these batches: `batch_line` of each header, batch after batch,
    while each starts where the one before ended and ends by `limit` (as `log_lines` reads them)."""
    assert fast_walk.compiled is not None
    headers: list[BatchHeader] = fast_walk.compiled.headers(_columns(rows), len(rows), BatchHeader)
    out, at = [], position
    for h in headers:
        if h.position != at or h.size < 61 or h.position + h.size > limit:
            break
        out.append(batch_line(h) + "\n")
        at += h.size
    return "".join(out).encode(), len(out), at


@st.composite
def _rows(draw: st.DrawFn, *, contiguous: bool) -> list[list[int]]:
    n = draw(st.integers(0, 6))
    rows = [[draw(_int64) for _ in range(N)] for _ in range(n)]
    if contiguous and rows:
        at = draw(st.integers(0, 2**40))
        for row in rows:
            row[fast_walk.SIZE] = draw(st.one_of(st.integers(61, 5000), st.integers(61, 2**40)))
            row[fast_walk.POSITION] = at
            at += row[fast_walk.SIZE]
    return rows


@needs_compiled
@SETTINGS
@given(_rows(contiguous=True), st.data())
def test_a_runs_columns_print_as_batch_line(rows: list[list[int]], data: st.DataObject) -> None:
    """Batches of any header values: the reference's text, up to the limit."""
    assert fast_walk.compiled is not None
    position = rows[0][fast_walk.POSITION] if rows else data.draw(st.integers(0, 100))
    limit = data.draw(st.one_of(st.just(INT64_MAX), st.integers(position, position + 2**41)))
    got = fast_walk.compiled.kafka_batch_lines(_columns(rows), len(rows), 0, len(rows), position, limit)
    assert got == _reference_lines(rows, position, limit)


@needs_compiled
@SETTINGS
@given(_rows(contiguous=False), _int64, _int64)
def test_any_columns_stop_where_kafkas_iterator_would(
    rows: list[list[int]], position: int, limit: int
) -> None:
    """Positions and sizes of any value (overflowing ones too): the batches taken are those the
    reference would print, and no other."""
    assert fast_walk.compiled is not None
    got = fast_walk.compiled.kafka_batch_lines(_columns(rows), len(rows), 0, len(rows), position, limit)
    assert got == _reference_lines(rows, position, limit)


@needs_compiled
def test_a_range_of_the_run() -> None:
    """lo..hi: the batches of that range only."""
    assert fast_walk.compiled is not None
    rows = [[0] * N for _ in range(5)]
    for i, row in enumerate(rows):
        row[fast_walk.POSITION], row[fast_walk.SIZE], row[fast_walk.BASE_OFFSET] = 100 * i, 100, i
    got = fast_walk.compiled.kafka_batch_lines(_columns(rows), 5, 1, 3, 100, INT64_MAX)
    assert got == _reference_lines(rows[1:3], 100, INT64_MAX)
    assert got[1:] == (2, 300)


# ---- whole segments through log_lines -----------------------------------------------------------


def _patched(batch: bytes, set_bits: int) -> bytes:
    """The batch with these attribute bits set (a delete horizon, say) and its checksum made valid."""
    out = bytearray(batch)
    (attributes,) = struct.unpack_from(">h", out, 21)
    struct.pack_into(">h", out, 21, attributes | set_bits)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


@st.composite
def _entry(draw: st.DrawFn, base: int) -> tuple[bytes, int]:
    """One log entry starting at offset `base` and the next base offset."""
    kind = draw(st.sampled_from(["data", "data", "data", "control", "legacy"]))
    ts = draw(st.integers(-1, 2**42))
    if kind == "legacy":
        magic = draw(st.integers(0, 1))
        codec = draw(st.sampled_from([Codec.NONE, Codec.GZIP]))
        n = draw(st.integers(1, 3))
        recs = [NewRecord(b"k", b"v" * draw(st.integers(0, 5)), ts + i) for i in range(n)]
        lat = draw(st.one_of(st.none(), st.integers(0, 2**42))) if magic == 1 else None
        return build_legacy_entry(base, recs, magic=magic, codec=codec, log_append_time=lat), base + n
    if kind == "control":
        marker = encode_end_txn_marker(draw(st.integers(0, 9)))
        key = encode_control_key(draw(st.sampled_from([ControlType.ABORT, ControlType.COMMIT])))
        batch = build_v2_batch(
            base,
            [NewRecord(key, marker, ts)],
            control=True,
            transactional=True,
            producer_id=7,
            producer_epoch=1,
        )
        return batch, base + 1
    n = draw(st.integers(0, 4))
    recs = [NewRecord(draw(st.binary(max_size=6)), draw(st.binary(max_size=30)), ts + i) for i in range(n)]
    batch = build_v2_batch(
        base,
        recs,
        codec=draw(st.sampled_from(list(Codec))),
        log_append_time=draw(st.one_of(st.none(), st.integers(0, 2**42))),
        transactional=draw(st.booleans()),
        partition_leader_epoch=draw(st.integers(0, 3)),
        producer_id=draw(st.integers(-1, 5000)),
        producer_epoch=draw(st.integers(-1, 5)),
        base_sequence=draw(st.one_of(st.just(-1), st.integers(0, 2**31 - 1))),
    )
    if draw(st.integers(0, 5)) == 0:
        batch = _patched(batch, 0x40)  # a delete horizon (KIP-534) in baseTimestamp
    return batch, base + max(n, 1)


@st.composite
def segments(draw: st.DrawFn) -> tuple[bytes, int]:
    """A segment of entries (now and then damaged), a tail, and a `--max-bytes`."""
    base = draw(st.sampled_from([0, 0, 5]))
    parts = []
    for _ in range(draw(st.integers(0, 12))):
        entry, base = draw(_entry(base))
        parts.append(entry)
    data = bytearray(b"".join(parts))
    if data and draw(st.integers(0, 3)) == 0:
        at = draw(st.integers(0, len(data) - 1))
        data[at] ^= draw(st.integers(1, 255))  # a damaged checksum, length or magic somewhere
    tail = draw(
        st.sampled_from(
            [
                b"",
                b"",
                b"\0" * 5,
                b"\0" * 40,
                b"\x00\x00\x00\x00\x00\x00\x00\x09\x00\x00\x03\xe8\x00",
                b"\xff" * 30,
            ]
        )
    )
    data += tail
    max_bytes = draw(st.one_of(st.just(INT_MAX), st.integers(0, len(data) + 10)))
    return bytes(data), max_bytes


def _printed(path: Path, opts: ToolOptions) -> tuple[bytes, list[str], str]:
    """The lines log_lines prints (as the CLI writes them), what it says on stderr, and its abort."""
    said: list[str] = []
    report = ToolReport(say=said.append)
    out: list[bytes] = []
    abort = ""
    try:
        for line in log_lines(path, str(path), opts, report):
            out.append(line if isinstance(line, bytes) else (line + "\n").encode("utf-8", "surrogatepass"))
    except ToolAbort as exc:
        abort = f"{exc.java_class}: {exc.message} [{exc.partial}]"
    summaries = report.summary_lines(opts)
    return b"".join(out), said + summaries, abort


def _reference(path: Path, opts: ToolOptions) -> tuple[bytes, list[str], str]:
    saved = fast_records.compiled, fast_walk.compiled
    fast_records.compiled = fast_walk.compiled = None
    try:
        assert not KafkaBatchLines.enabled()
        return _printed(path, opts)
    finally:
        fast_records.compiled, fast_walk.compiled = saved


def _options(max_bytes: int) -> Iterator[ToolOptions]:
    for release in ("3.8.1", "4.4.0"):
        yield ToolOptions(max_bytes=max_bytes, release=release)


@needs_compiled
@SETTINGS
@given(segments())
def test_segments_print_as_the_reference(segment: tuple[bytes, int]) -> None:
    data, max_bytes = segment
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "00000000000000000000.log"
        path.write_bytes(data)
        for opts in _options(max_bytes):
            assert _printed(path, opts) == _reference(path, opts), opts


@needs_compiled
def test_a_clean_segment_takes_the_compiled_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs of a clean segment go to the compiled call whole (a test that could not tell the two
    paths apart would prove nothing); a --max-bytes inside a run cuts it where the reference does.
    (The walk takes a file's first batch too where it starts at the file name's offset.)"""
    batches = [
        build_v2_batch(i * 3, [NewRecord(b"k", b"v" * i, 1000 + i)] * 3, codec=Codec.NONE) for i in range(50)
    ]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(batches))
    calls: list[int] = []
    render = KafkaBatchLines.render

    def spy(run: fast_walk.BatchRun, position: int, limit: int) -> tuple[bytes, int, int]:
        out = render(run, position, limit)
        calls.append(out[1])
        return out

    monkeypatch.setattr(kafka_tool_fast.KafkaBatchLines, "render", staticmethod(spy))
    whole = ToolOptions()
    assert _printed(path, whole) == _reference(path, whole)
    assert sum(calls) == 50
    calls.clear()
    cut = ToolOptions(max_bytes=sum(len(b) for b in batches[:20]) + 30)
    assert _printed(path, cut) == _reference(path, cut)
    assert sum(calls) == 20


def test_switched_off_without_the_compiled_walk() -> None:
    saved = fast_walk.compiled
    fast_walk.compiled = None
    try:
        assert not KafkaBatchLines.enabled()
    finally:
        fast_walk.compiled = saved


def _corpus_logs() -> list[Path]:
    from corpus import CORPUS_ROOT, full_corpus_available

    if not full_corpus_available():
        return []
    # (and KRaft's bootstrap snapshot, which Kafka's tool prints as a log)
    return sorted(
        p for d in CORPUS_DIRS for g in ("*/*.log", "*/*.checkpoint") for p in (CORPUS_ROOT / d).glob(g)
    )


@needs_compiled
@pytest.mark.skipif(not _corpus_logs(), reason="the full corpus (../shared/corpus) is not here")
def test_every_corpus_log_prints_as_the_reference() -> None:
    """Every log of the 3.8 corpus (v2 of every codec, transactions, LogAppendTime, compacted logs,
    v0/v1 and mixed partitions, a running broker's active segment), whole and cut by --max-bytes."""
    for path in _corpus_logs():
        size = path.stat().st_size
        for max_bytes in (INT_MAX, size // 2 + 7):
            for opts in _options(max_bytes):
                assert _printed(path, opts) == _reference(path, opts), (path, opts)
