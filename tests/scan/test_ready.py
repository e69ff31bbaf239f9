"""`scan_log(ready=...)`: a buffer filled while it is scanned gives the same events as a full one.

A stored slice is fetched on a thread while the task scans it (`spark.ranged.open_slice`); the
scanner asks `ready(position)` before it reads below a position. The buffer here starts as zeros
and is filled only as far as `ready` was asked, so any read past what the scanner asked for would
see zeros and change the events: every batch, record, finding and the summary must stay the same,
on clean and damaged segments, from the start and from a later batch.
"""

from __future__ import annotations

from builders import SegmentBuilder, records
from hypothesis import given, settings
from hypothesis import strategies as st

from kdump.formats.constants import Codec
from kdump.formats.records import NewRecord
from kdump.scan.log_scanner import scan_log


def _segment() -> bytes:
    seg = SegmentBuilder(base_offset=0)
    for i, codec in enumerate([*Codec, Codec.NONE, Codec.ZSTD]):
        seg.add_v2(records(4 + i, value_size=40 + 10 * i), codec=codec)
    seg.add_marker(1, commit=True)
    seg.add_v2([NewRecord(b"k", None, 5, ())])
    return bytes(seg.data)


SEGMENT = _segment()


class _Filling:
    """A zeroed copy of `data` that holds `data`'s bytes only below the highest position asked."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.buf = bytearray(len(data))
        self.filled = 0
        self.asked: list[int] = []

    def ready(self, position: int) -> None:
        self.asked.append(position)
        if position > self.filled:
            self.buf[self.filled : position] = self.data[self.filled : position]
            self.filled = min(position, len(self.data))


def _events(buf: bytes | bytearray, **kw: object) -> list[object]:
    return list(scan_log(memoryview(buf), file="t", base_offset=0, **kw))  # type: ignore[arg-type]


def _same(data: bytes, **kw: object) -> _Filling:
    filling = _Filling(data)
    assert _events(filling.buf, ready=filling.ready, **kw) == _events(data, **kw)
    return filling


def test_a_clean_segment_is_read_no_further_than_asked() -> None:
    filling = _same(SEGMENT)
    assert filling.asked == sorted(filling.asked)  # in order: a fetch in order never waits on a gap
    _same(SEGMENT, deep=True)


POSITIONS = [ev.position for ev in scan_log(memoryview(SEGMENT)) if type(ev).__name__ == "BatchHeader"]

# Damage where it changes how the scanner frames batches (length field, magic byte), where it
# only fails a checksum (anywhere in a batch), or a cut: each sends the scan down another path.
_FIELD = st.sampled_from([("length", 8, 4), ("magic", 16, 1), ("any", 0, 0)])


@settings(max_examples=300, deadline=None)
@given(
    damage=st.lists(
        st.tuples(st.integers(0, len(POSITIONS) - 1), _FIELD, st.integers(0, 2**32 - 1)), max_size=3
    ),
    cut=st.integers(0, 200),
    start_batch=st.integers(0, 3),
    deep=st.booleans(),
)
def test_damaged_segments_scan_the_same(
    damage: list[tuple[int, tuple[str, int, int], int]], cut: int, start_batch: int, deep: bool
) -> None:
    data = bytearray(SEGMENT)
    for batch, (kind, at, width), value in damage:
        pos = POSITIONS[batch]
        if kind == "any":
            data[(pos + value) % len(data)] ^= value % 255 + 1
        else:
            data[pos + at : pos + at + width] = (value % 256**width).to_bytes(width, "big")
    data = data[: len(data) - cut]
    start = POSITIONS[start_batch] if POSITIONS[start_batch] < len(data) else 0
    _same(bytes(data), deep=deep, start=start)
