"""The compiled modules on the inputs that once were undefined behaviour (issue 31).

Each test here is harmless-looking with an ordinary build; under .ci/sanitizers (AddressSanitizer and
UndefinedBehaviorSanitizer, -fno-sanitize-recover=all) the old code aborted the process on it:

* `columns_v2_many` / `decode_v2` with an empty, non-null key or value copied 0 bytes from/to a NULL
  buffer (`put`, memcpy(NULL, ..., 0));
* `build_indexes` with a base offset near -2**63 computed `last - base`, a signed overflow, before
  checking it;
* `index_agrees` with a kind other than 0 or 1 read the time index's prefix table, never built (NULL);
* `headers` and `nonempty_validity` computed `n * 104` and `(n + 1) * 4` for any n (signed overflow);
* int64 columns from a memoryview slice were read as misaligned int64_t;
* `render_v2`'s sequence `base_seq + delta` overflowed for a base sequence near 2**63.
"""

from __future__ import annotations

import array
import importlib
import mmap
import os

import pytest

from kdump.formats import fast_records, fast_walk
from kdump.formats.batch import BatchHeader, decode_v2_header
from kdump.formats.records import NewRecord, Record, build_v2_batch

walk = fast_walk.compiled
records_c = fast_records.compiled
needs_walk = pytest.mark.skipif(walk is None, reason="the compiled walk is not built here")
needs_records = pytest.mark.skipif(records_c is None, reason="the compiled record path is not built here")

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _cols(*values: list[int]) -> list[array.array[int]]:
    return [array.array("q", v) for v in values]


@needs_records
def test_empty_keys_and_values_as_columns_and_records() -> None:
    batch = build_v2_batch(0, [NewRecord(b"", b"", 1000), NewRecord(None, b"", 1001, ((b"", b""),))])
    h = decode_v2_header(batch, 0, len(batch))
    payload = batch[61:]
    got = fast_records.columns_v2_many([(payload, h)])
    assert got is not None
    done, cols = got
    assert (done, cols.rows) == (1, 2)
    decoded = fast_records.decode_v2(payload, h)
    assert decoded is not None
    assert [(r.key, r.value) for r in decoded[0]] == [(b"", b""), (None, b"")]
    assert all(type(r) is Record for r in decoded[0])


@needs_records
def test_a_base_sequence_near_int64_max_renders_as_the_reference_wraps_it() -> None:
    batch = build_v2_batch(0, [NewRecord(b"k", b"v", 1000)] * 3)
    h = decode_v2_header(batch, 0, len(batch))
    base_seq = INT64_MAX - 1
    out = records_c.decode_v2(
        batch[61:], Record, 0, h.last_offset, h.base_timestamp, h.max_timestamp, False, base_seq, 3, True
    )
    assert out is not None
    assert [r.sequence for r in out[0]] == [(base_seq + d) % 2**31 for d in range(3)]


@needs_walk
@pytest.mark.parametrize("base", [INT64_MIN, INT64_MIN + 1, -(2**62), -1])
def test_build_indexes_declines_a_base_offset_far_below_the_batches(base: int) -> None:
    positions, lasts, maxts = _cols([0, 5000, 10000], [9, 19, INT64_MAX], [1, 2, 3])
    assert walk.build_indexes(positions, lasts, maxts, 0, base) is None


@needs_walk
def test_build_indexes_still_builds_for_an_ordinary_base() -> None:
    positions, lasts, maxts = _cols([0, 5000], [9, 19], [1, 2])
    built = walk.build_indexes(positions, lasts, maxts, 0, 0)
    assert built is not None
    assert len(built[0]) == 8  # the first batch, at 0, is no more than 0 bytes past the start


@needs_walk
@pytest.mark.parametrize("kind", [2, -1, 7, 2**31 - 1])
def test_index_agrees_refuses_an_unknown_kind(kind: int) -> None:
    cols = _cols([0], [0], [0], [1])
    with pytest.raises(ValueError, match="kind"):
        walk.index_agrees(kind, bytes(24), 0, *cols, 100)


@needs_walk
def test_index_agrees_on_misaligned_columns() -> None:
    cols = _cols([0, 100], [0, 10], [9, 19], [5, 6])
    index = (
        (0).to_bytes(4, "big") + (0).to_bytes(4, "big") + (10).to_bytes(4, "big") + (100).to_bytes(4, "big")
    )
    aligned = walk.index_agrees(0, index, 0, *cols, 200)
    shifted = [memoryview(b"\0" + c.tobytes())[1:] for c in cols]
    assert walk.index_agrees(0, index, 0, *shifted, 200) == aligned
    assert aligned


@needs_walk
@pytest.mark.parametrize("n", [2**62, 2**63 - 1, (2**63 - 1) // 104 + 1])
def test_headers_refuses_a_count_the_columns_do_not_hold(n: int) -> None:
    with pytest.raises(ValueError, match="columns"):
        walk.headers(bytes(104), n, BatchHeader)


@needs_walk
def test_headers_from_misaligned_columns() -> None:
    columns = memoryview(b"\0" + bytes(104))[1:]
    (h,) = walk.headers(columns, 1, BatchHeader)
    assert h.position == 0


@needs_records
@pytest.mark.parametrize("n", [2**62, 2**63 - 1, 2**63 - 8])
def test_nonempty_validity_refuses_a_count_the_offsets_do_not_hold(n: int) -> None:
    with pytest.raises(ValueError, match="too few offsets"):
        records_c.nonempty_validity(bytes(8), n)


@needs_records
def test_nonempty_validity_still_answers() -> None:
    offsets = array.array("i", [0, 0, 2, 2]).tobytes()
    assert records_c.nonempty_validity(offsets, 3) == (bytes([0b010]), 2)


def test_the_avro_module_takes_an_empty_record() -> None:
    from kdump.formats.payloads.avro import avro_json

    if importlib.util.find_spec("kdump.formats._avrojson") is None or os.environ.get("KDUMP_PURE_PYTHON"):
        pytest.skip("the compiled Avro path is not built here, or KDUMP_PURE_PYTHON turns it off")
    to_json = avro_json('{"type": "record", "name": "E", "fields": []}')
    assert to_json is not None
    assert to_json(b"") == b"{}"


@needs_records
def test_render_kafka_v2_refuses_wrong_arguments() -> None:
    batch = build_v2_batch(0, [NewRecord(b"k", b"v", 1000)])
    h = decode_v2_header(batch, 0, len(batch))
    args = [batch[61:], 0, h.last_offset, h.base_timestamp, h.max_timestamp, False, -1, 1, True]
    with pytest.raises(TypeError):
        records_c.render_kafka_v2(*args, 0, b"CreateTime")  # one argument short
    with pytest.raises(ValueError, match="unknown flags"):
        records_c.render_kafka_v2(*args, 8, b"CreateTime", -1)  # flags beyond the three known
    with pytest.raises(TypeError):
        records_c.render_kafka_v2(*args, 0, "CreateTime", -1)  # the label is bytes
    # A count the payload cannot hold, a negative one, and a previous offset at the end of the range.
    for count in (10**6, -1):
        assert records_c.render_kafka_v2(*args[:7], count, True, 0, b"CreateTime", -1) is None
    out = records_c.render_kafka_v2(*args, 4, b"CreateTime", INT64_MAX)
    assert out is not None
    assert out[1:] == (0, [(INT64_MAX, 0)])


def _run_columns(n: int, **values: int) -> bytearray:
    """A run's 13 columns of n rows (fast_walk's column numbers), zero but for the named columns."""
    cols = bytearray(13 * 8 * n)
    names = {"position": fast_walk.POSITION, "size": fast_walk.SIZE, "attributes": fast_walk.ATTRIBUTES}
    for name, v in values.items():
        for k in range(n):
            cols[(names[name] * n + k) * 8 : (names[name] * n + k + 1) * 8] = v.to_bytes(
                8, "little", signed=True
            )
    return cols


@needs_records
@pytest.mark.parametrize(
    ("n", "lo", "hi"),
    [(2**62, 0, 0), (2**63 - 1, 0, 1), (-1, 0, 0), (3, 0, 4), (3, 2, 1), (3, -1, 2), (4, 0, 4)],
)
def test_the_run_check_refuses_a_range_the_columns_do_not_hold(n: int, lo: int, hi: int) -> None:
    cols = _run_columns(3)
    with pytest.raises(ValueError, match="columns"):
        records_c.zstd_frames(b"", cols, n, lo, hi, 1 << 20)
    with pytest.raises(ValueError, match="columns"):
        records_c.check_v2_run(b"", cols, n, lo, hi, b"", [])


@needs_records
@pytest.mark.parametrize("position", [-(2**63), -1, 0, 10, 2**62, 2**63 - 1])
@pytest.mark.parametrize("size", [-(2**63), 0, 60, 61, 62, 2**63 - 1])
def test_the_run_check_bounds_positions_and_sizes(position: int, size: int) -> None:
    """Positions and sizes from nowhere (never a walk's): a payload outside the buffer is never read.
    Uncompressed: not clean (the reference reads it); zstd: not listed (the caller's one-shot path)."""
    buf = bytes(100)
    inside = position >= 0 and size >= 61 and position + size <= len(buf)
    for codec in (0, 4):
        cols = _run_columns(2, position=position, size=size, attributes=codec)
        assert records_c.zstd_frames(buf, cols, 2, 0, 2, 1 << 20) == (b"", b"")
        flags = records_c.check_v2_run(buf, cols, 2, 0, 2, b"", [])
        # Inside, zeros: an empty payload is a clean batch of no records, any other is not one.
        expected = 2 if codec else int(inside and size == 61)
        assert flags == bytes([expected] * 2)


@needs_records
def test_the_run_check_on_misaligned_columns_and_a_bad_index() -> None:
    batch = build_v2_batch(0, [NewRecord(b"k", b"v", 1000)])
    h = decode_v2_header(batch, 0, len(batch))
    run = fast_walk.BatchRun(1, 0, len(batch), bytes(13 * 8), 1, 1000, 0, 0, 0)
    cols = _run_columns(1, position=0, size=len(batch))
    for k, v in (
        (fast_walk.COUNT, 1),
        (fast_walk.BASE_TIMESTAMP, h.base_timestamp),
        (fast_walk.MAX_TIMESTAMP, 1000),
    ):
        cols[k * 8 : k * 8 + 8] = v.to_bytes(8, "little", signed=True)
    assert run.n == 1
    shifted = memoryview(b"\0" + bytes(cols))[1:]
    assert records_c.check_v2_run(batch, cols, 1, 0, 1, b"", []) == b"\x01"
    assert records_c.check_v2_run(batch, shifted, 1, 0, 1, b"", []) == b"\x01"
    for index, datas in (
        ((0).to_bytes(8, "little"), []),  # a datum short
        (b"\0" * 7, []),  # not whole int64s
        ((1).to_bytes(8, "little"), [b""]),  # past hi
        ((-1).to_bytes(8, "little", signed=True), [b""]),  # before lo
        ((0).to_bytes(8, "little") * 2, [b"", b""]),  # not increasing
    ):
        with pytest.raises(ValueError, match="index"):
            records_c.check_v2_run(batch, cols, 1, 0, 1, index, datas)
    with pytest.raises(TypeError):
        records_c.check_v2_run(batch, cols, 1, 0, 1, (0).to_bytes(8, "little"), [object()])


@needs_walk
@pytest.mark.parametrize(
    ("n", "lo", "hi"),
    [(2**62, 0, 0), (2**63 - 1, 0, 1), (-1, 0, 0), (3, 0, 4), (3, 2, 1), (3, -1, 2), (4, 0, 4)],
)
def test_kafka_batch_lines_refuses_a_range_the_columns_do_not_hold(n: int, lo: int, hi: int) -> None:
    with pytest.raises(ValueError, match="columns"):
        walk.kafka_batch_lines(_run_columns(3), n, lo, hi, 0, INT64_MAX)


@needs_walk
@pytest.mark.parametrize("position", [INT64_MIN, -1, 0, 2**62, INT64_MAX])
@pytest.mark.parametrize("size", [INT64_MIN, -1, 0, 60, 61, INT64_MAX])
@pytest.mark.parametrize("limit", [INT64_MIN, 0, 200, INT64_MAX])
def test_kafka_batch_lines_bounds_positions_and_sizes(position: int, size: int, limit: int) -> None:
    """Positions and sizes from nowhere: `position + size` is never computed where it overflows, and a
    batch is taken only when it starts where asked, is a v2 header long at least and ends by `limit`."""
    cols = _run_columns(2, position=position, size=size, attributes=-1)
    lines, count, after = walk.kafka_batch_lines(cols, 2, 0, 2, position, limit)
    fits = size >= 61 and position + size <= min(limit, INT64_MAX)
    assert count == int(fits)  # the second batch does not start where the first ends (same position)
    assert after == (position + size if fits else position)
    assert lines.count(b"\n") == count
    if fits:  # every attribute bit set: a delete horizon, codec 7, LogAppendTime
        for part in (b"isControl: true", b"OptionalLong[0]", b"unknown(7)", b"LogAppendTime: 0"):
            assert part in lines


@needs_walk
def test_kafka_batch_lines_from_misaligned_columns_and_int64_extremes() -> None:
    cols = _run_columns(1, position=INT64_MIN, size=61)
    for k in range(fast_walk.N_COLUMNS):
        if k not in (fast_walk.POSITION, fast_walk.SIZE):
            cols[k * 8 : k * 8 + 8] = INT64_MIN.to_bytes(8, "little", signed=True)
    shifted = memoryview(b"\0" + bytes(cols))[1:]
    (h,) = walk.headers(cols, 1, BatchHeader)
    from kdump.render.text import batch_line

    expected = ((batch_line(h) + "\n").encode(), 1, INT64_MIN + 61)
    assert walk.kafka_batch_lines(cols, 1, 0, 1, INT64_MIN, 0) == expected
    assert walk.kafka_batch_lines(shifted, 1, 0, 1, INT64_MIN, 0) == expected


def _v2_run(n: int, value_size: int) -> bytes:
    out = b""
    for i in range(n):
        out += build_v2_batch(i, [NewRecord(b"k", b"v" * value_size, 1000, ())])
    return out


@needs_walk
@pytest.mark.parametrize("threads", [-(2**31), -1, 0, 1, 2, 17, 2**31 - 1])
@pytest.mark.parametrize("thread_bytes", [INT64_MIN, -1, 0, 1, 2**62, INT64_MAX])
def test_walk_v2_takes_any_thread_count_and_threshold(threads: int, thread_bytes: int) -> None:
    """Out-of-range thread counts are clamped (1 to 16), any threshold is a threshold; with a window
    that ends anywhere (past the buffer, before the start, at an odd place) the result is one
    thread's."""
    assert walk is not None
    data = _v2_run(20, 300)
    size = len(data)
    for pos, limit, soft_stop, most in [
        (0, size, size, 8192),
        (0, size + 10**9, INT64_MAX, 8192),
        (0, size // 3, size, 2),
        (0, -5, size, 8192),
        (size - 3, size, size, 8192),
        (0, size, 0, 8192),
        (0, size, size, -1),
        (-7, size, size, 8192),
    ]:
        args = (data, pos, size, limit, soft_stop, -1, -1, 0, most)
        assert walk.walk_v2(*args, threads, thread_bytes) == walk.walk_v2(*args)


@needs_walk
@pytest.mark.parametrize("threads", [2**31, -(2**31) - 1, 2**64])
def test_walk_v2_refuses_a_thread_count_no_c_int_holds(threads: int) -> None:
    assert walk is not None
    data = _v2_run(2, 10)
    with pytest.raises(OverflowError):
        walk.walk_v2(data, 0, len(data), len(data), len(data), -1, -1, 0, 8192, threads, 0)


@needs_walk
def test_walk_v2_on_a_misaligned_view_with_threads() -> None:
    """A memoryview slice starting at an odd address, walked with helper threads."""
    assert walk is not None
    data = b"\0" + _v2_run(30, 2000)
    view = memoryview(data)[1:]
    args = (view, 0, len(view), len(view), len(view), -1, -1, 0, 8192)
    assert walk.walk_v2(*args, 4, 0) == walk.walk_v2(*args)
    assert walk.walk_v2(*args)[0] == 30


def _mapped(tmp_path: os.PathLike[str], data: bytes, access: int = mmap.ACCESS_READ) -> mmap.mmap:
    path = os.path.join(tmp_path, "segment.log")
    with open(path, "wb") as f:
        f.write(data)
    with open(path, "r+b") as f:
        return mmap.mmap(f.fileno(), len(data), access=access)


@needs_walk
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("skew", [0, 1])
def test_walk_v2_releases_a_read_only_mapping_and_reads_it_again(
    tmp_path: os.PathLike[str], threads: int, skew: int
) -> None:
    """Pages handed back (from the buffer's start, from an odd place, all before the walk's start)
    are mapped again from the page cache: the walk's result and the bytes are those of no release;
    also on a view that starts at an odd address of the mapping (`skew`)."""
    assert walk is not None
    data = _v2_run(300, 1000)
    mm = _mapped(tmp_path, b"\0" * skew + data)
    view = memoryview(mm)[skew:] if skew else mm
    try:
        size = len(data)
        whole = walk.walk_v2(data, 0, size, size, size, -1, -1, 0, 8192)
        n = whole[0]
        assert n == 300
        cols = memoryview(whole[4]).cast("q")
        for pos, prev_last in [(0, -1), (cols[n // 2], cols[2 * n + n // 2 - 1])]:
            args = (view, pos, size, size, size, prev_last, -1, 0, 8192, threads, 0)
            expected = walk.walk_v2(data, *args[1:])
            for release_from in (-1, INT64_MIN, 0, min(3, pos), pos // 2, pos):
                assert walk.walk_v2(*args, release_from) == expected, (pos, release_from)
        assert mm[:] == b"\0" * skew + data
    finally:
        if isinstance(view, memoryview):
            view.release()
        mm.close()


@needs_walk
def test_walk_v2_refuses_to_release_what_is_not_a_read_only_mapping(tmp_path: os.PathLike[str]) -> None:
    """MADV_DONTNEED zeroes memory that is not a file's mapping, and loses a writable mapping's
    changes: only a read-only mmap's pages are handed back, only those before `pos`."""
    assert walk is not None
    data = _v2_run(20, 300)
    size = len(data)
    writable = _mapped(tmp_path, data, mmap.ACCESS_WRITE)
    private = _mapped(tmp_path, data, mmap.ACCESS_COPY)
    readonly = _mapped(tmp_path, data)
    try:
        for buf in (
            data,
            bytearray(data),
            memoryview(bytearray(data)).toreadonly(),
            writable,
            memoryview(private),
            array.array("b", data),
        ):
            with pytest.raises(ValueError, match="read-only mmap"):
                walk.walk_v2(buf, 0, size, size, size, -1, -1, 0, 8192, 1, 0, 0)
        for pos, release_from in [(0, 1), (10, 11), (size, size + 1), (size + 5, 0)]:
            with pytest.raises(ValueError, match="before pos"):
                walk.walk_v2(readonly, pos, size, size, size, -1, -1, 0, 8192, 2, 0, release_from)
        with pytest.raises(OverflowError):
            walk.walk_v2(readonly, 0, size, size, size, -1, -1, 0, 8192, 2, 0, 2**63)
        assert data == bytes(private) == bytes(writable) == readonly[:]
    finally:
        for m in (writable, private, readonly):
            m.close()
