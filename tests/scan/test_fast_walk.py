"""The compiled batch walk against the pure-Python scanner: the same events, byte for byte.

`scan_log` hands runs of clean v2 batches to the compiled walk (`formats/_fastwalk.c`) and reads
everything else itself. Every stream here is scanned twice, once with the compiled paths (walk and
record checks) and once on the pure-Python reference (both off, as `KDUMP_PURE_PYTHON=1` has it), in
every mode: shallow and deep, forensic and recovery, from the start and from a later batch, with and
without a byte limit, and with `batch_runs` (runs expanded back into their batch headers; the
reference stream without its records). The events are compared by their `repr`, so a bool for an int
or a reordered finding is a difference. Inputs: every segment of the corpus (full or bundled subset),
every case of the corruption matrix (in its window and spliced back into the whole segment), and
hypothesis segments of every codec with random damage.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from builders import SegmentBuilder, records
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_path import reference_path

from kdump.formats import fast_walk
from kdump.formats.batch import BatchHeader, encode_v2_batch
from kdump.formats.constants import Codec
from kdump.formats.records import NewRecord, Record, encode_v2_record
from kdump.scan import ScanMode, scan_log

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "matrix"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import corruption_matrix as cm
from corpus import iter_log_segments

WALK = fast_walk.compiled
needs_walk = pytest.mark.skipif(WALK is None, reason="the compiled batch walk is not built here")
pytestmark = needs_walk

MODES = [
    {"deep": False},
    {"deep": True},
    {"mode": ScanMode.RECOVERY},
    {"deep": True, "mode": ScanMode.RECOVERY},
]


def _expanded(events: Iterator[object]) -> list[str]:
    out: list[str] = []
    for ev in events:
        if isinstance(ev, fast_walk.BatchRun):
            assert ev.n > 0
            out += [repr(h) for h in ev.headers()]
        else:
            out.append(repr(ev))
    return out


COMPARED = {"events": 0, "scans": 0}


def assert_same(data: bytes | memoryview, **kw: object) -> int:
    """Scan `data` both ways (plain and batch-runs); the streams must be identical. Returns how many
    events were compared."""
    buf = memoryview(data)
    with reference_path():
        ref = [repr(e) for e in scan_log(buf, **kw)]  # type: ignore[call-overload]
    got = [repr(e) for e in scan_log(buf, **kw)]  # type: ignore[call-overload]
    assert got == ref, _first_difference(got, ref)
    runs = _expanded(scan_log(buf, batch_runs=True, **kw))  # type: ignore[call-overload]
    ref_no_records = [r for r, e in zip(ref, _types(buf, kw), strict=True) if e is not Record]
    assert runs == ref_no_records, _first_difference(runs, ref_no_records)
    COMPARED["events"] += 2 * len(ref)
    COMPARED["scans"] += 1
    return len(ref)


def _types(buf: memoryview, kw: dict[str, object]) -> list[type]:
    with reference_path():
        return [type(e) for e in scan_log(buf, **kw)]  # type: ignore[call-overload]


def _first_difference(got: list[str], ref: list[str]) -> str:
    for i, (a, b) in enumerate(zip(got, ref, strict=False)):
        if a != b:
            return f"event {i}:\n compiled:  {a}\n reference: {b}"
    return f"lengths differ: compiled {len(got)}, reference {len(ref)}"


def _positions(data: bytes) -> list[int]:
    with reference_path():
        return [e.position for e in scan_log(data, resync=False) if isinstance(e, BatchHeader)]


def _every_way(data: bytes, base_offset: int | None) -> int:
    """Every mode, from the start and from the middle batch, whole and limited."""
    n = 0
    positions = _positions(data)
    starts = [0] + ([positions[len(positions) // 2]] if len(positions) > 2 else [])
    for mode in MODES:
        for start in starts:
            n += assert_same(data, file="f", base_offset=base_offset, start=start, **mode)
        n += assert_same(data, file="f", base_offset=base_offset, max_bytes=len(data) * 2 // 3, **mode)
    return n


def test_the_walk_runs_here() -> None:
    """Guard against comparing the reference with itself: the compiled scan does take runs."""
    seg = SegmentBuilder(base_offset=0)
    for _ in range(5):
        seg.add_v2(records(3), codec=Codec.ZSTD)
    runs = [e for e in scan_log(bytes(seg.data), batch_runs=True) if isinstance(e, fast_walk.BatchRun)]
    assert len(runs) == 1
    assert runs[0].n == 4  # no file name's offset to go by: the first batch is read by the reference


@pytest.mark.parametrize(
    ("built_at", "named", "walked"), [(0, 0, 5), (100, 100, 5), (100, 0, 4), (0, None, 4)]
)
def test_the_walk_takes_a_first_batch_at_the_file_names_offset(
    built_at: int, named: int | None, walked: int
) -> None:
    """A segment's first batch starts the walk where it starts at the file name's offset (every
    segment the broker writes); elsewhere (or with no name to go by) the scanner reads it first.
    The events are the reference's either way."""
    seg = SegmentBuilder(base_offset=built_at)
    for _ in range(5):
        seg.add_v2(records(3), codec=Codec.ZSTD)
    data = bytes(seg.data)
    runs = [
        e for e in scan_log(data, base_offset=named, batch_runs=True) if isinstance(e, fast_walk.BatchRun)
    ]
    assert [r.n for r in runs] == [walked]
    _every_way(data, named)


def test_ci_builds_the_walk() -> None:
    """CI sets KDUMP_REQUIRE_COMPILED=1: a failed build of the walk must fail the run there."""
    if os.environ.get("KDUMP_REQUIRE_COMPILED") != "1":
        pytest.skip("KDUMP_REQUIRE_COMPILED is not set (a local install may lack a compiler)")
    assert fast_walk.compiled is not None


# --- CRC-32C ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("table", [False, True])
def test_crc32c_equals_the_crc32c_package(table: bool) -> None:
    crc32c = pytest.importorskip("crc32c")
    assert WALK is not None
    WALK.crc32c_force_table(table)
    try:
        assert WALK.crc32c_impl() == "table" or not table
        rng = random.Random(7)
        for n in [0, 1, 7, 8, 9, 61, 255, 256, 767, 768, 769, 8191, 24575, 24576, 24577, 100_003, 1 << 20]:
            data = rng.randbytes(n)
            for skew in range(3):  # unaligned starts
                assert WALK.crc32c(data[skew:]) == crc32c.crc32c(data[skew:]), (n, skew)
            half = n // 2
            assert WALK.crc32c(data[half:], WALK.crc32c(data[:half])) == crc32c.crc32c(data)
    finally:
        WALK.crc32c_force_table(False)


def test_a_software_checksum_gives_the_same_events() -> None:
    assert WALK is not None
    seg = SegmentBuilder(base_offset=0)
    for i, codec in enumerate(Codec):
        seg.add_v2(records(3 + i, value_size=3000), codec=codec)
    data = bytearray(seg.data)
    data[-5] ^= 1
    WALK.crc32c_force_table(True)
    try:
        _every_way(bytes(data), 0)
    finally:
        WALK.crc32c_force_table(False)


# --- the corpus -------------------------------------------------------------------------------------


def test_every_corpus_segment(corpus_root: Path) -> None:
    segments = list(iter_log_segments(corpus_root))
    assert segments
    for seg in segments:
        data = seg.log_path.read_bytes()
        _every_way(data, int(seg.log_path.name.split(".")[0]))


# --- the corruption matrix --------------------------------------------------------------------------


def _matrix_cases(root: Path, kind: str, subjects: tuple[cm.Subject, ...]) -> Iterator[tuple[cm.Case, bytes]]:
    for subject in cm.available(subjects, root):
        whole = (root / subject.rel).read_bytes()
        base_offset = int(subject.rel.rsplit("/", 1)[-1].split(".")[0])
        if kind == "flip":
            cases = cm.flip_cases(subject, whole, base_offset)
        elif kind == "truncate":
            cases = cm.truncation_cases(subject, whole)
        else:
            cases = cm.tail_cases(subject, whole, base_offset)
        for case in cases:
            yield case, whole


@pytest.mark.parametrize("kind", ["flip", "truncate", "tail"])
def test_every_damage_class_of_the_matrix(kind: str, corpus_root: Path) -> None:
    subjects = {"flip": cm.FLIP_SUBJECTS, "truncate": cm.TRUNCATE_SUBJECTS, "tail": cm.TAIL_SUBJECTS}[kind]
    seen = 0
    for i, (case, whole) in enumerate(_matrix_cases(corpus_root, kind, subjects)):
        for mode in MODES[:3]:
            assert_same(case.data, file="f", base_offset=case.base_offset, start=case.start, **mode)
        if kind == "flip" and i % 5 == 0:
            # The damaged window back in its whole segment: runs before and after the damage.
            spliced = whole[: case.offset] + case.data + whole[case.offset + len(case.data) :]
            for mode in MODES:
                assert_same(spliced, file="f", base_offset=case.base_offset, **mode)
        seen += 1
    if seen == 0:
        pytest.skip("no matrix subject in this corpus")


# --- hypothesis -------------------------------------------------------------------------------------


def _segment(seed: int, n: int, transactional: bool) -> SegmentBuilder:
    rng = random.Random(seed)
    seg = SegmentBuilder(base_offset=rng.choice([0, 100]))
    codecs = list(Codec)
    for i in range(n):
        kind = rng.random()
        if transactional and kind < 0.1:
            seg.add_marker(7, commit=rng.random() < 0.5, leader_epoch=i // 4)
        elif kind < 0.15:
            seg.next_offset += rng.randint(1, 3)  # a gap
            seg.add_v2(records(rng.randint(1, 4)), codec=rng.choice(codecs), leader_epoch=i // 4)
        elif kind < 0.2:
            seg.add_v2(
                [NewRecord(b"k", None, 5, ())], log_append_time=1_700_000_000_000 + i, leader_epoch=i // 4
            )
        else:
            seg.add_v2(
                records(rng.randint(1, 6), value_size=rng.randint(1, 300)),
                codec=rng.choice(codecs),
                producer_id=7 if transactional else -1,
                producer_epoch=0 if transactional else -1,
                transactional=transactional,
                leader_epoch=rng.choice([i // 4, i // 4, -1, 0]),
            )
    return seg


DAMAGE = st.lists(
    st.tuples(
        st.sampled_from(["flip", "set", "cut", "zeros", "garbage", "dup"]),
        st.floats(0, 1),
        st.integers(0, 2**32 - 1),
    ),
    max_size=3,
)


def _damage(data: bytearray, damage: list[tuple[str, float, int]]) -> bytes:
    for kind, where, value in damage:
        if not data:
            break
        at = min(len(data) - 1, int(where * len(data)))
        if kind == "flip":
            data[at] ^= 1 << (value % 8)
        elif kind == "set":
            data[at : at + 4] = value.to_bytes(4, "big")
        elif kind == "cut":
            del data[at:]
        elif kind == "zeros":
            data[at : at + value % 200] = bytes(min(value % 200, len(data) - at))
        elif kind == "garbage":
            data[at:at] = random.Random(value).randbytes(value % 90)
        else:
            data[at:at] = data[at : at + value % 300]
    return bytes(data)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**16),
    n=st.integers(1, 14),
    transactional=st.booleans(),
    damage=DAMAGE,
)
def test_hypothesis_segments_with_damage(seed: int, n: int, transactional: bool, damage: list) -> None:
    seg = _segment(seed, n, transactional)
    data = _damage(bytearray(seg.data), damage)
    _every_way(data, seg.base_offset)


@pytest.fixture(autouse=True, scope="module")
def _say_how_much_was_compared() -> Iterator[None]:
    yield
    print(
        f"\ncompiled walk against the reference: {COMPARED['scans']} scans, {COMPARED['events']} events compared"
    )


@pytest.mark.parametrize("bad", [None, 1, 5, 20, 38, 39])
def test_a_large_run_ends_at_its_first_checksum_mismatch(bad: int | None) -> None:
    """A run of over 1 MiB with damaged batches (early, in the middle, last; one or two): the run ends
    right before the first one, whichever it is, and the scan's events are the reference's. (Kept from
    a trial that checksummed such runs over two threads after the framing pass.)"""
    seg = SegmentBuilder(base_offset=0)
    for _ in range(40):
        seg.add_v2(records(8, value_size=4000), codec=Codec.NONE)
    data = bytearray(seg.data)
    positions = [p for p, _size, _last, _ts in seg.spans]
    assert 1 << 20 <= len(data) < 4 << 20  # one run: the walk hands back every 4 MiB
    if bad is not None:
        data[positions[bad] + 100] ^= 0xFF  # a record byte: framing intact, checksum wrong
        if bad != 20:
            data[positions[20] + 100] ^= 0xFF  # and a later (or earlier) one: the first wins
    first_bad = min(b for b in (bad, 20 if bad is not None else None, 40) if b is not None)
    walked = fast_walk.walk(memoryview(data), positions[1], len(data), len(data), len(data), 7, -1, 0)
    if fast_walk.compiled is None:
        assert walked is None
    else:
        expected = first_bad - 1
        if expected == 0:
            assert walked is None
        else:
            assert walked is not None
            run, state = walked
            assert run.n == expected
            assert run.end == (positions[first_bad] if first_bad < 40 else len(data))
            assert state.prev_last == run.last_offset
    assert_same(bytes(data), file="f", base_offset=0)


def _zstd_batch(base: int, n: int, frame: Callable[[bytes], bytes], *, count: int | None = None) -> bytes:
    """A checksum-valid zstd v2 batch of n records whose payload is `frame(records' bytes)`."""
    recs = records(n, value_size=120)
    payload = b"".join(
        encode_v2_record(d, r.timestamp - recs[0].timestamp, r.key, r.value, r.headers)
        for d, r in enumerate(recs)
    )
    return encode_v2_batch(
        base_offset=base,
        records_payload=frame(payload),
        count=n if count is None else count,
        last_offset_delta=n - 1,
        base_timestamp=recs[0].timestamp,
        max_timestamp=max(r.timestamp for r in recs),
        attributes=Codec.ZSTD,
    )


def _frames() -> dict[str, Callable[[bytes], bytes]]:
    zstandard = pytest.importorskip("zstandard")
    plain = zstandard.ZstdCompressor(write_content_size=True)

    def corrupt(p: bytes) -> bytes:
        f = bytearray(plain.compress(p))
        f[len(f) // 2] ^= 0x55  # framing intact: the library finds it
        return bytes(f)

    def wrong_size(p: bytes) -> bytes:
        f = bytearray(zstandard.ZstdCompressor(write_content_size=True, write_checksum=False).compress(p))
        assert f[4] >> 6 == 1  # a 2-byte content size (+256) right after the window byte
        f[6] += 1
        return bytes(f)

    return {
        "sized": plain.compress,
        "checksum": zstandard.ZstdCompressor(write_checksum=True).compress,
        "unsized": lambda p: b"".join(zstandard.ZstdCompressor(write_content_size=False).read_to_iter(p)),
        "two frames": lambda p: plain.compress(p[:50]) + plain.compress(p[50:]),
        "trailing": lambda p: plain.compress(p) + b"\x00\x01",
        "skippable first": lambda p: b"\x50\x2a\x4d\x18\x02\x00\x00\x00ab" + plain.compress(p),
        "corrupt": corrupt,
        "wrong size": wrong_size,
        "cut": lambda p: plain.compress(p)[:-3],
        "empty frame": lambda p: plain.compress(b""),
        "raw bytes": lambda p: p,
    }


@pytest.mark.parametrize("kind", sorted(_frames()))
@pytest.mark.parametrize("many_max", [None, 1000])
def test_deep_runs_of_crafted_zstd_payloads(
    kind: str, many_max: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verify --deep's run check (zstd payloads listed by `zstd_frames`, decompressed in one loop,
    checked in one compiled call) against the reference: a payload it cannot take in one shot
    (no content size, several frames, trailing or skippable bytes, damaged or cut frames, records that
    are not what the header says) among clean zstd, uncompressed, lz4 and control batches, in a small
    run and in a run of more than a chunk of batches (chunks on threads); with a small cap of bytes
    per chunk too."""
    from kdump.scan import runs

    if many_max is not None:
        monkeypatch.setattr(runs, "MANY_MAX_BYTES", many_max)
    frames = _frames()
    for big in (False, True):
        seg = SegmentBuilder(base_offset=0)
        size = 300 if big else 8
        for i in range(size):
            if i % 37 == 5:
                seg._append(_zstd_batch(seg.next_offset, 6, frames[kind]), 6, 0)
            elif i % 37 == 9:
                seg._append(_zstd_batch(seg.next_offset, 4, frames["sized"], count=5), 5, 0)  # a record short
            elif i % 11 == 3:
                seg.add_v2(records(3), codec=Codec.LZ4)
            elif i % 13 == 4:
                seg.add_marker(7, commit=True)
            elif i % 7 == 2:
                seg.add_v2(records(4, value_size=200))
            else:
                seg._append(_zstd_batch(seg.next_offset, 8, frames["sized"]), 8, 0)
        assert (size > runs.CHUNK) == big  # more batches than a chunk: chunks on the pool's threads
        for mode in ({"deep": True}, {"deep": True, "mode": ScanMode.RECOVERY}):
            assert_same(bytes(seg.data), file="f", base_offset=0, **mode)


def test_a_runs_value_is_its_column_entry() -> None:
    """`BatchRun.value(k, i)` (verify reads a run's last leader epoch so) equals `column(k)[i]`."""
    seg = SegmentBuilder(base_offset=0)
    for i in range(6):
        seg.add_v2(records(2), leader_epoch=i // 2, producer_id=-1 if i % 2 else 2**40)
    walked = fast_walk.walk(memoryview(seg.data), 0, len(seg.data), len(seg.data), len(seg.data), -1, -1, 0)
    assert walked is not None
    run, _state = walked
    assert run.n == 6
    for k in range(fast_walk.N_COLUMNS):
        assert [run.value(k, i) for i in range(run.n)] == run.column(k)
    assert run.value(fast_walk.LEADER_EPOCH, run.n - 1) == 2
