"""The compiled walk with a helper thread equals the walk on one thread.

With `threads` > 1 and a window of at least `thread_bytes`, `walk_v2` starts a helper (created and
joined inside the call) that walks the second half of the window, where the machine has a core
for it (each window timed both ways; `thread_bytes` 0 gives every window a helper). Its result must be
exactly the one-thread walk's: the same count, end, state, columns and sums, wherever damaged batches
are. Here on runs of random batches with checksums broken at random places (and now and then the
framing too), for 1 to 4 threads, the threshold forced to 0, at the default threshold (both ways of
the timed choice), and the scanner's events against the pure-Python reference with the helper on.
"""

from __future__ import annotations

import mmap
import os
import random
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import SegmentBuilder, records
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_path import reference_path

from kdump.formats import fast_walk
from kdump.formats.constants import Codec
from kdump.scan import ScanMode, scan_log
from kdump.scan.pages import EVICT_EVERY, READ_WINDOW, MapEvicter, page_evicter
from kdump.scan.source import mapped_fd, open_buffer

WALK = fast_walk.compiled
pytestmark = pytest.mark.skipif(WALK is None, reason="the compiled batch walk is not built here")


def _run(seed: int, n: int) -> tuple[bytes, list[int], int]:
    """n batches of random sizes (60 bytes of records to 40 KB) and codecs; their positions."""
    rng = random.Random(seed)
    seg = SegmentBuilder(base_offset=rng.choice([0, 1000]))
    for i in range(n):
        big = rng.random() < 0.2
        seg.add_v2(
            records(rng.randint(1, 8), value_size=rng.randint(1, 5000 if big else 200)),
            codec=rng.choice([Codec.NONE, Codec.NONE, Codec.GZIP, Codec.LZ4]),
            leader_epoch=i // 5,
        )
    return seg.data, [p for p, _size, _last, _ts in seg.spans], seg.base_offset


def _break(data: bytes, positions: list[int], picks: list[tuple[int, int, bool]]) -> bytes:
    """Each pick (batch, byte, framing): a record byte flipped (checksum wrong, framing intact) or,
    with `framing`, the batch's base offset changed (the walk's offset check stops there)."""
    out = bytearray(data)
    for batch, byte, framing in picks:
        at = positions[batch % len(positions)]
        if framing:
            out[at + 7] ^= 0x10
        else:
            nxt = (
                positions[batch % len(positions) + 1]
                if batch % len(positions) + 1 < len(positions)
                else len(out)
            )
            out[at + 61 + byte % max(1, nxt - at - 61)] ^= 0x5A
    return bytes(out)


def _picks(most: int) -> st.SearchStrategy[list[tuple[int, int, bool]]]:
    """Up to `most` breaks for `_break`."""
    return st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6), st.booleans()), max_size=most)


# A run of `_run` (its seed and length) walked on 1 to 4 threads.
_RUNS = {"seed": st.integers(0, 2**16), "n": st.integers(1, 120), "threads": st.integers(1, 4)}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    **_RUNS,
    picks=_picks(4),
    start=st.integers(0, 10**6),
    cuts=st.tuples(st.floats(0, 1.2), st.floats(0, 1.2), st.integers(0, 200)),
)
def test_threaded_walk_equals_the_one_thread_walk(
    seed: int,
    n: int,
    picks: list[tuple[int, int, bool]],
    threads: int,
    start: int,
    cuts: tuple[float, float, int],
) -> None:
    assert WALK is not None
    data, positions, base = _run(seed, n)
    data = _break(data, positions, picks)
    buf = memoryview(data)
    first = start % len(positions)
    pos = positions[first]
    prev_last = base - 1
    if first:  # the last offset of the batch before (its base offset and last offset delta)
        before = positions[first - 1]
        prev_last = int.from_bytes(data[before : before + 8], "big", signed=True)
        prev_last += int.from_bytes(data[before + 23 : before + 27], "big")
    limit = min(len(data), pos + int(cuts[0] * (len(data) - pos)))
    soft_stop = pos + int(cuts[1] * (len(data) - pos))
    max_batches = cuts[2] if cuts[2] else 8192
    args = (buf, pos, len(data), limit, soft_stop, prev_last, -1, base, max_batches)
    one = WALK.walk_v2(*args)
    assert WALK.walk_v2(*args, 1, 0) == one
    assert WALK.walk_v2(*args, threads, 0) == one, (threads, one[:2])
    # And above the threshold (no helper), the one-thread walk again.
    assert WALK.walk_v2(*args, threads, len(data) + 1) == one


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    **_RUNS,
    picks=_picks(3),
    cut=st.floats(0, 1.2),
    soft=st.floats(0, 1.2),
)
def test_a_walk_reading_the_file_equals_the_walk_of_its_bytes(
    seed: int, n: int, picks: list[tuple[int, int, bool]], threads: int, cut: float, soft: float
) -> None:
    """With the descriptor of the mapped file (`fd`) the walk reads it in chunks of its own, on a helper
    too: the result is the walk of the bytes. And a file cut short after it was mapped reads short:
    the walk ends where the walk of its bytes up to the cut (`limit`) ends, and nothing faults."""
    assert WALK is not None
    data, positions, base = _run(seed, n)
    data = _break(data, positions, picks)
    size = len(data)
    soft_stop = int(soft * size)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "00000000000000000000.log"
        path.write_bytes(data)
        with (
            open(path, "r+b") as f,
            mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm,
            memoryview(mm) as view,
        ):
            args = (0, size, size, soft_stop, base - 1, -1, base, 8192)
            expected = WALK.walk_v2(data, *args)
            assert WALK.walk_v2(view, *args, threads, 0, -1, f.fileno()) == expected
            assert WALK.walk_v2(view, *args, threads, 1 << 40, -1, f.fileno()) == expected
            at = min(size, int(cut * size))
            f.truncate(at)
            short = WALK.walk_v2(data, 0, size, at, soft_stop, base - 1, -1, base, 8192)
            assert WALK.walk_v2(view, *args, threads, 0, -1, f.fileno()) == short


def test_bytes_made_to_look_like_batches_everywhere_cost_the_helper_a_bounded_search() -> None:
    """The helper looks for a batch boundary from the middle of the window, computing the checksum of
    each position that frames as a batch. A window filled with fake headers (every 64 bytes, each
    claiming 2 MiB, checksum wrong) would cost it a checksum of 2 MiB every 64 bytes; its search
    ends once the calling thread is done, and has a budget of half the window: the walk ends at
    once, with the one-thread result."""
    assert WALK is not None
    seg = SegmentBuilder(base_offset=0)
    for _ in range(40):  # more than the helper follows from the start before it searches
        seg.add_v2(records(2, value_size=100), codec=Codec.NONE)
    fake = bytearray(64)
    fake[0:8] = (1000).to_bytes(8, "big")  # a base offset above any before it
    fake[8:12] = (2 << 20).to_bytes(4, "big")  # 2 MiB long
    fake[16] = 2  # magic
    fake[17:21] = b"\xde\xad\xbe\xef"  # a checksum that does not match
    data = seg.data + bytes(fake) * ((8 << 20) // 64)
    args = (data, 0, len(data), len(data), len(data), -1, -1, 0, 8192)
    one = WALK.walk_v2(*args)
    assert one[0] == 40
    started = time.process_time()
    assert WALK.walk_v2(*args, 2, 0) == one
    # Unbounded: gigabytes of checksums (2.6 s here). Bounded: a few MiB.
    assert time.process_time() - started < 2.0


def test_a_descriptor_is_taken_only_with_the_whole_mapping(tmp_path: Path) -> None:
    """`fd` names the file the buffer maps from its first byte: with bytes, or a slice of the
    mapping, the walk refuses it (it would read other bytes than the buffer's)."""
    assert WALK is not None
    data, _positions, base = _run(3, 10)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    args = (0, len(data), len(data), len(data), base - 1, -1, base, 8192, 2, 0, -1)
    with (
        open(path, "rb") as f,
        mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm,
        memoryview(mm) as view,
    ):
        assert WALK.walk_v2(view, *args, f.fileno())[0] == 10
        with view[1:] as part, pytest.raises(ValueError, match="fd"):
            WALK.walk_v2(part, *args, f.fileno())
        with pytest.raises(ValueError, match="fd"):
            WALK.walk_v2(data, *args, f.fileno())


def test_the_scanner_reads_large_batches_through_the_descriptor_and_small_ones_through_the_mapping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A segment `open_buffer` maps is walked through its descriptor (`mapped_fd`, the file it opened)
    while its batches are large (`LARGE_BATCH` on average in the last run); from a run of small
    ones on, through the mapping. A slice of the mapping, bytes, or a small file read into memory
    have no descriptor."""
    assert WALK is not None
    rng = random.Random(5)
    large = SegmentBuilder(base_offset=0)
    while len(large.data) < (2 * READ_WINDOW):
        large.add_v2(records(4, value_size=rng.randint(20_000, 60_000)), codec=Codec.NONE)
    small = SegmentBuilder(base_offset=0)
    while len(small.data) < READ_WINDOW + 3 * EVICT_EVERY:
        small.add_v2(records(2, value_size=rng.randint(4000, 20000)), codec=Codec.NONE)
    given: list[int] = []

    class Spy:
        def __getattr__(self, name: str) -> object:
            return getattr(WALK, name)

        def walk_v2(self, *args: object, **kw: object) -> object:
            given.append(kw["fd"])  # type: ignore[arg-type]
            return WALK.walk_v2(*args, **kw)

    monkeypatch.setattr(fast_walk, "compiled", Spy())
    for seg, name in ((large, "large"), (small, "small")):
        path = tmp_path / name / "00000000000000000000.log"
        path.parent.mkdir()
        path.write_bytes(seg.data)
        given.clear()
        with open_buffer(path) as buf:
            fd = mapped_fd(buf)
            assert fd >= 0
            assert os.fstat(fd).st_ino == path.stat().st_ino
            with buf[1:] as part:
                assert mapped_fd(part) == -1
            with reference_path():
                ref = [repr(e) for e in scan_log(seg.data, file="f", base_offset=0)]
            assert [repr(e) for e in scan_log(buf, file="f", base_offset=0)] == ref
        assert len(given) > 1
        assert given == ([fd] * len(given) if name == "large" else [fd] + [-1] * (len(given) - 1))
    assert mapped_fd(small.data) == -1
    tiny = tmp_path / "tiny.log"
    tiny.write_bytes(small.data[:4096])
    with open_buffer(tiny, read_small=True) as buf:
        assert mapped_fd(buf) == -1


@pytest.fixture
def threaded() -> Iterator[None]:
    saved = (fast_walk.threads(), fast_walk.thread_bytes())
    fast_walk.set_threads(3, 0)
    yield
    fast_walk.set_threads(*saved)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    seed=st.integers(0, 2**16),
    n=st.integers(1, 60),
    picks=_picks(3),
)
def test_scans_with_threads_give_the_reference_events(
    threaded: None, seed: int, n: int, picks: list[tuple[int, int, bool]]
) -> None:
    data, positions, base = _run(seed, n)
    data = _break(data, positions, picks)
    for kw in ({}, {"mode": ScanMode.RECOVERY}, {"batch_runs": True}):
        with reference_path():
            ref = [repr(e) for e in scan_log(data, file="f", base_offset=base, **kw)]  # type: ignore[call-overload]
        got = []
        for e in scan_log(data, file="f", base_offset=base, **kw):  # type: ignore[call-overload]
            if isinstance(e, fast_walk.BatchRun):
                got += [repr(h) for h in e.headers()]
            else:
                got.append(repr(e))
        if kw.get("batch_runs"):
            ref = [r for r in ref if not r.startswith("Record(")]
        assert got == ref


def test_the_default_is_a_helper_where_there_is_a_second_core() -> None:
    import os

    assert 1 <= fast_walk.threads() <= 2
    assert fast_walk.threads() <= (os.cpu_count() or 1)


@pytest.mark.parametrize("bads", [(70, 30), (89,), (0,), (88, 89), ()])
@pytest.mark.parametrize("threads", [2, 4, 16, 1000])
def test_a_large_damaged_run_on_threads_ends_at_its_first_mismatch(
    threads: int, bads: tuple[int, ...]
) -> None:
    """A window of 3 MiB (above the compiled threshold, walked both ways of the timed choice over the
    parametrized calls): the first damaged batch ends the run, the first batch, one in the middle or
    the last framed one, as on one thread."""
    assert WALK is not None
    seg = SegmentBuilder(base_offset=0)
    for _ in range(90):
        seg.add_v2(records(8, value_size=4000), codec=Codec.NONE)
    positions = [p for p, _size, _last, _ts in seg.spans]
    data = bytearray(seg.data)
    assert 2 << 20 < len(data) < 4 << 20
    for bad in bads:
        data[positions[bad] + 200] ^= 0xFF
    first = min(bads, default=90)
    args = (bytes(data), 0, len(data), len(data), len(data), -1, -1, 0, 8192)
    got = WALK.walk_v2(*args, threads)
    assert got[:2] == (first, positions[first] if first < 90 else len(data))
    assert got == WALK.walk_v2(*args)


def test_windows_at_the_default_threshold_walk_the_same_either_way() -> None:
    """At the compiled threshold the first windows go each way twice (a helper, then none) and the
    later ones the cheaper way: every call gives the one-thread result."""
    assert WALK is not None
    seg = SegmentBuilder(base_offset=0)
    for _ in range(60):
        seg.add_v2(records(8, value_size=4000), codec=Codec.NONE)
    data = seg.data
    args = (data, 0, len(data), len(data), len(data), -1, -1, 0, 8192)
    one = WALK.walk_v2(*args)
    assert one[0] == 60
    for _ in range(12):
        assert WALK.walk_v2(*args, 2) == one


@pytest.mark.parametrize("helper", [False, True])
def test_a_mapped_scan_hands_back_what_it_passed_with_the_reference_events(
    tmp_path: Path, helper: bool
) -> None:
    """A mapped log of several release windows (`EVICT_EVERY`), broken here and there: the compiled
    walk hands back the pages before each window (`release_from`; on its helper when it has one),
    and the events are the reference's on the file's bytes."""
    rng = random.Random(7)
    seg = SegmentBuilder(base_offset=0)
    while len(seg.data) < 3 * EVICT_EVERY + 12345:
        seg.add_v2(records(4, value_size=rng.randint(1000, 60000)), codec=Codec.NONE)
    positions = [p for p, _size, _last, _ts in seg.spans]
    data = _break(
        seg.data, positions, [(len(positions) // 2, 100, False), (len(positions) * 3 // 4, 0, True)]
    )
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    saved = (fast_walk.threads(), fast_walk.thread_bytes())
    fast_walk.set_threads(2 if helper else 1, 0)
    try:
        for kw in ({}, {"batch_runs": True}):
            with reference_path():
                ref = [repr(e) for e in scan_log(data, file="f", base_offset=0, **kw)]  # type: ignore[call-overload]
            with open_buffer(path) as buf:
                assert isinstance(page_evicter(buf), MapEvicter)
                got = []
                for e in scan_log(buf, file="f", base_offset=0, **kw):  # type: ignore[call-overload]
                    if isinstance(e, fast_walk.BatchRun):
                        got += [repr(h) for h in e.headers()]
                    else:
                        got.append(repr(e))
                assert bytes(buf) == data
            assert got == ref
    finally:
        fast_walk.set_threads(*saved)
