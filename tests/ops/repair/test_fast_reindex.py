"""reindex's compiled index builder against the reference: the same `.index` and `.timeindex` bytes.

`_fastwalk.build_indexes` writes the entries `build_segment_indexes` places (the recovery rule) and
encodes them as `encode_offset_index` / `encode_time_index` do, or declines (None) where those
encoders refuse an entry; compared on hypothesis columns (gaps, equal and falling timestamps,
offsets below the base or too far above it, positions past 2^31-1) and on every corpus segment.
"""

from __future__ import annotations

import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdump.errors import CorruptFieldError
from kdump.formats import fast_walk
from kdump.formats.offset_index import encode_offset_index
from kdump.formats.time_index import encode_time_index
from kdump.model.partition import PartitionDir
from kdump.ops.checks.segment import check_segment
from kdump.ops.repair.reindex import build_segment_indexes

pytestmark = pytest.mark.skipif(
    fast_walk.compiled is None, reason="the compiled batch walk is not built here"
)


def _reference(rows: list[tuple[int, int, int]], interval: int, base: int) -> tuple[bytes, bytes] | None:
    offsets, times = build_segment_indexes([(p, 0, last, ts) for p, last, ts in rows], interval)
    try:
        return encode_offset_index(offsets, base), encode_time_index(times, base)
    except CorruptFieldError:
        return None


def _compiled(rows: list[tuple[int, int, int]], interval: int, base: int) -> tuple[bytes, bytes] | None:
    assert fast_walk.compiled is not None
    cols = [array.array("q", c) for c in zip(*rows, strict=True)] if rows else [array.array("q")] * 3
    out: tuple[bytes, bytes] | None = fast_walk.compiled.build_indexes(*cols, interval, base)
    return out


@settings(max_examples=400, deadline=None)
@given(
    steps=st.lists(st.tuples(st.integers(1, 9000), st.integers(0, 40), st.integers(-3, 50)), max_size=60),
    interval=st.sampled_from([0, 1, 4096, 10_000]),
    base=st.sampled_from([0, 1000, 2**40]),
    jump=st.sampled_from([0, 0, 2**31, -5, 2**33]),
)
def test_the_same_bytes_as_the_reference(
    steps: list[tuple[int, int, int]], interval: int, base: int, jump: int
) -> None:
    rows = []
    position, last, ts = 0, base, 1_700_000_000_000
    for i, (size, count, dts) in enumerate(steps):
        rows.append((position, last + (jump if i == len(steps) // 2 else 0), ts))
        position += size + (jump if i == len(steps) // 3 else 0)
        last += count
        ts += dts
    assert _compiled(rows, interval, base) == _reference(rows, interval, base)


def test_every_corpus_segment(corpus_root: Path) -> None:
    seen = 0
    for part in sorted(p for d in corpus_root.iterdir() if d.is_dir() for p in d.iterdir() if p.is_dir()):
        for seg in PartitionDir.load(part).segments:
            if seg.log is None:
                continue
            positions, _bases, lasts, max_ts = check_segment(seg, keep_spans=True).columns
            rows = list(zip(positions, lasts, max_ts, strict=True))
            for interval in (1, 4096):
                assert _compiled(rows, interval, seg.base_offset) == _reference(
                    rows, interval, seg.base_offset
                )
            seen += 1
    assert seen
