"""A plan's kept batches held packed (`KeptList`), and its scan's entries (`ScanEntries`): every way of
reading them gives what was put in, and a plan holds no object per clean batch."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from builders import SegmentBuilder, records
from hypothesis import given
from hypothesis import strategies as st

from kdump.formats import fast_walk
from kdump.formats.batch import BatchHeader, decode_legacy_header, decode_v2_header
from kdump.formats.constants import Codec
from kdump.formats.records import build_legacy_entry, build_v2_batch
from kdump.model.partition import PartitionDir
from kdump.model.segment import Segment
from kdump.ops.salvage.kept import FRAMING, INTACT, RESYNC, KeptBatch, KeptList, ScanEntries, _pack
from kdump.ops.salvage.plan import plan_salvage
from kdump.scan.log_scanner import scan_log

SEGMENT = Segment(base_offset=0, log=Path("/nowhere/00000000000000000000.log"))


def _v2(position: int, base: int, n: int, codec: int) -> KeptBatch:
    data = build_v2_batch(base, records(n, value_size=10), codec=codec, partition_leader_epoch=base % 7)
    h = decode_v2_header(data, 0, len(data))._replace(position=position)
    return KeptBatch.of(SEGMENT, h, INTACT, True)


def _legacy(position: int, base: int) -> KeptBatch:
    data = build_legacy_entry(base, records(1), magic=1)
    h = decode_legacy_header(data, 0, len(data))._replace(position=position)
    return KeptBatch.of(SEGMENT, h, RESYNC, False)


BATCHES = st.lists(
    st.tuples(
        st.booleans(), st.integers(1, 5), st.sampled_from(list(Codec)), st.sampled_from([INTACT, FRAMING])
    ),
    max_size=12,
)


@given(BATCHES)
def test_a_kept_list_reads_back_what_was_kept(spec: list[tuple[bool, int, int, str]]) -> None:
    kept: list[KeptBatch] = []
    position = offset = 0
    for legacy, n, codec, how in spec:
        k = _legacy(position, offset) if legacy else _v2(position, offset, n, codec)
        if not legacy:
            k = KeptBatch(k.segment, k.packed, how, how == INTACT)
        kept.append(k)
        position += k.header.size
        offset = k.header.last_offset + 1
    held = KeptList(kept)
    assert len(held) == len(kept)
    assert bool(held) == bool(kept)
    assert list(held) == kept
    assert held == kept
    assert [held[i] for i in range(-len(kept), len(kept))] == kept + kept
    assert held[1:3] == kept[1:3]
    assert list(held.headers()) == [k.header for k in kept]
    assert list(held.spans()) == [(k.header.position, k.header.size) for k in kept]
    assert list(held.hows()) == [(k.how, k.broker_keeps) for k in kept]
    assert list(held.checked()) == [
        (k.header.position, k.header.size, k.header.magic, k.header.crc) for k in kept
    ]
    with pytest.raises(IndexError):
        held[len(kept)]


def test_v2_batches_are_held_packed_and_others_whole() -> None:
    held = KeptList([_v2(0, 0, 3, Codec.LZ4), _legacy(100, 3), _v2(200, 4, 2, Codec.NONE)])
    assert isinstance(held[0].packed, bytes)
    assert not isinstance(held[1].packed, bytes)
    assert held[1].how == RESYNC
    assert held[1].broker_keeps is False
    assert held[2].header.base_offset == 4


# --- the plan's scan: every framed entry, packed ---------------------------------------------


def _failed(position: int, base: int) -> BatchHeader:
    data = bytearray(build_v2_batch(base, records(2, value_size=10)))
    data[-1] ^= 0xFF
    return decode_v2_header(bytes(data), 0, len(data))._replace(position=position)


ENTRIES = st.lists(
    st.tuples(
        st.sampled_from(["v2", "legacy", "failed"]),
        st.integers(1, 5),
        st.sampled_from([INTACT, FRAMING, RESYNC]),
    ),
    max_size=12,
)


@given(ENTRIES)
def test_scan_entries_read_back_what_was_added(spec: list[tuple[str, int, str]]) -> None:
    added: list[tuple[BatchHeader, str]] = []
    position = offset = 0
    for kind, n, how in spec:
        if kind == "v2":
            h = _v2(position, offset, n, Codec.NONE).header
        elif kind == "legacy":
            h = _legacy(position, offset).header
        else:
            h = _failed(position, offset)
        added.append((h, how))
        position += h.size
        offset = h.last_offset + 1
    entries = ScanEntries(added)
    assert len(entries) == len(added)
    assert list(entries) == added
    assert [entries.header(i) for i in range(len(added))] == [h for h, _ in added]
    assert {i for i, _ in entries.held()} == {i for i, (h, _) in enumerate(added) if _pack(h) is None}
    assert list(entries.fields()) == [
        (h.position, h.size, h.crc_ok, h.magic, h.compression, h.base_offset, h.last_offset, h.count)
        for h, _ in added
    ]
    kept = KeptList()
    for i, (h, _how) in enumerate(added):
        if h.crc_ok:
            entries.keep(i, kept, SEGMENT, valid_bytes=position // 2)
    assert list(kept) == [
        KeptBatch.of(SEGMENT, h, how, h.position + h.size <= position // 2) for h, how in added if h.crc_ok
    ]


def _many_batches(tmp_path: Path, n: int) -> Path:
    seg = SegmentBuilder()
    for _ in range(n):
        seg.add_v2(records(2, value_size=10))
    return seg.write(tmp_path / "t-0")


@pytest.mark.skipif(fast_walk.compiled is None, reason="the compiled batch walk is not built")
def test_a_walked_run_is_packed_as_its_headers(tmp_path: Path) -> None:
    buf = _many_batches(tmp_path, 50).read_bytes()
    runs = [ev for ev in scan_log(buf, batch_runs=True) if isinstance(ev, fast_walk.BatchRun)]
    assert runs, "the walk takes the batches after the first"
    for run in runs:
        entries = ScanEntries()
        entries.add_run(run, RESYNC, FRAMING)
        headers = run.headers()
        assert list(entries) == [(h, RESYNC if i == 0 else FRAMING) for i, h in enumerate(headers)]
        assert not dict(entries.held())


def test_the_plan_holds_no_object_per_clean_batch(tmp_path: Path) -> None:
    """A plan's scan of a segment of small batches holds each batch packed (about 250 bytes of
    Python memory each at its peak, a header object each was about 900): 400 bytes a batch at most,
    compiled walk or not."""
    n = 3000
    part = PartitionDir.load(_many_batches(tmp_path, n).parent)
    plan_salvage(part)  # modules loaded, caches warm
    tracemalloc.start()
    try:
        plan = plan_salvage(part)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(plan.segments[0].kept) == n
    assert not plan.segments[0].kept._other
    assert peak / n < 400
    assert held / n < 120
