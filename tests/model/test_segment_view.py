"""The segment reader: checked positions for an offset or a position, through any byte source."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

import pytest
from builders import BASE_TS, SegmentBuilder, records
from hypothesis import given, settings
from hypothesis import strategies as st

from kdump.formats.batch import BatchHeader
from kdump.formats.offset_index import decode_offset_index, encode_offset_index
from kdump.model.byte_source import ByteSource, InMemory, MappedFile
from kdump.model.index_view import ReadLedger
from kdump.model.segment import Segment
from kdump.model.segment_view import SegmentView
from kdump.scan.log_scanner import scan_log


class RangedSource:
    """A store read by ranges, as a remote one would be: it refuses to hand out the whole file."""

    def __init__(self, path: Path) -> None:
        self._data = path.read_bytes()
        self.label = str(path)
        self.ranges: list[tuple[int, int]] = []

    def size(self) -> int:
        return len(self._data)

    def read(self, position: int, length: int) -> bytes:
        self.ranges.append((position, length))
        return self._data[position : position + length]

    def buffer(self) -> memoryview:
        raise AssertionError("positioning must read the log by ranges only")

    def lazy_buffer(self) -> tuple[memoryview, None]:
        raise AssertionError("positioning must read the log by ranges only")

    def modified_ms(self) -> int:
        return 0

    def close(self) -> None:
        pass


def _segment(tmp_path: Path, batches: int = 40) -> Segment:
    seg = SegmentBuilder()
    for i in range(batches):
        seg.add_v2(records(10, start_ts=BASE_TS + 10 * i, value_size=200))
    log = seg.write(tmp_path / "big-0", interval_bytes=1000)
    return Segment(0, log, log.with_suffix(".index"), log.with_suffix(".timeindex"))


def _batches(seg: Segment) -> list[BatchHeader]:
    assert seg.log is not None
    return [ev for ev in scan_log(seg.log.read_bytes(), base_offset=0) if isinstance(ev, BatchHeader)]


def test_byte_sources_satisfy_the_interface(tmp_path: Path) -> None:
    seg = _segment(tmp_path, 2)
    assert seg.log is not None
    data = seg.log.read_bytes()
    with MappedFile(seg.log) as mapped:
        sources: list[ByteSource] = [mapped, InMemory(data, "x"), RangedSource(seg.log)]
        for source in sources:
            assert isinstance(source, ByteSource)
            assert source.size() == len(data)
            assert bytes(source.read(10, 20)) == data[10:30]
            assert bytes(source.read(len(data) - 5, 100)) == data[-5:]
            assert bytes(source.read(len(data) + 5, 10)) == b""
        assert bytes(mapped.buffer()) == data


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Segment, list[BatchHeader]]:
    seg = _segment(tmp_path_factory.mktemp("view"))
    return seg, _batches(seg)


@settings(max_examples=60, deadline=None)
@given(offset=st.integers(0, 420))
def test_locate_lands_on_a_batch_at_or_before_the_offset(
    big: tuple[Segment, list[BatchHeader]], offset: int
) -> None:
    seg, batches = big
    holding = next((h for h in batches if h.last_offset >= offset), None)
    with ExitStack() as stack:
        view = SegmentView(seg, None, stack)
        position, header = view.locate(offset)
        assert view.ledger.findings == []
        if header is not None:
            assert header.position == position
            assert header.base_offset is not None
            assert header.base_offset <= offset
        if holding is not None:
            # Reading from there reaches the batch holding the offset: nothing is skipped.
            assert position <= holding.position
            assert offset < 19 or header is not None  # from the first entry (offset 19) on, it is used


def test_positioning_reads_the_log_by_ranges_only(big: tuple[Segment, list[BatchHeader]]) -> None:
    seg, batches = big
    assert seg.log is not None
    ranged = RangedSource(seg.log)
    with ExitStack() as stack:
        view = SegmentView(seg, None, stack, log_source=ranged)
        position, header = view.locate(305)
        assert header is not None
        assert (header.base_offset, header.position) == (290, position)  # the entry for 299
        found = view.batch_start_at_or_before(batches[20].position + 5)
        assert found is not None
        assert found[0] == batches[20].position
    # A few KiB: the prefix and the entry of each batch checked, never the whole log.
    fetched = sum(n for _, n in ranged.ranges)
    assert fetched < 3 * max(h.size for h in batches)
    assert fetched < seg.log.stat().st_size // 10


def test_an_entry_off_a_batch_start_is_reported_and_not_used(tmp_path: Path) -> None:
    seg = _segment(tmp_path)
    assert seg.index is not None
    entries = list(decode_offset_index(seg.index.read_bytes(), 0).entries)
    slot = max(i for i, e in enumerate(entries) if e.offset <= 305)
    entries[slot] = entries[slot]._replace(position=entries[slot].position + 3)
    seg.index.write_bytes(encode_offset_index(entries, 0))
    ledger = ReadLedger()
    with ExitStack() as stack:
        view = SegmentView(seg, None, stack, ledger)
        assert view.locate(305) == (0, None)
        assert view.batch_start_at_or_before(entries[slot].position) is None
    assert [f.code for f in ledger.fallback_findings] == ["index-offset-mismatch"]
    assert ledger.fallbacks == 2  # reported once, counted at each use


def test_zero_slots_are_preallocation_only_in_the_active_segment(tmp_path: Path) -> None:
    seg = _segment(tmp_path)
    assert seg.index is not None
    assert seg.timeindex is not None
    seg.index.write_bytes(seg.index.read_bytes().ljust(1200, b"\x00"))
    seg.timeindex.write_bytes(seg.timeindex.read_bytes().ljust(1200, b"\x00"))
    with ExitStack() as stack:
        active = SegmentView(seg, None, stack)
        assert active.locate(305)[1] is not None
        assert [f.code for f in active.ledger.findings] == ["index-preallocated-tail"]
        assert active.ledger.fallbacks == 0
        closed = SegmentView(seg, 400, stack)
        assert closed.locate(305) == (0, None)
        assert [f.code for f in closed.ledger.fallback_findings] == ["index-not-monotonic"]


def test_a_missing_index_is_a_fallback(tmp_path: Path) -> None:
    seg = _segment(tmp_path, 3)
    assert seg.log is not None
    with ExitStack() as stack:
        view = SegmentView(Segment(0, seg.log), None, stack)
        assert view.locate(15) == (0, None)
        assert [f.code for f in view.ledger.fallback_findings] == ["index-missing"]
