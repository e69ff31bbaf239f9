"""A plan's kept batches held packed (`KeptList`): every way of reading them gives what was put in."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import records
from hypothesis import given
from hypothesis import strategies as st

from kdump.formats.batch import decode_legacy_header, decode_v2_header
from kdump.formats.constants import Codec
from kdump.formats.records import build_legacy_entry, build_v2_batch
from kdump.model.segment import Segment
from kdump.ops.salvage_kept import FRAMING, INTACT, RESYNC, KeptBatch, KeptList

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
    with pytest.raises(IndexError):
        held[len(kept)]


def test_v2_batches_are_held_packed_and_others_whole() -> None:
    held = KeptList([_v2(0, 0, 3, Codec.LZ4), _legacy(100, 3), _v2(200, 4, 2, Codec.NONE)])
    assert isinstance(held[0].packed, bytes)
    assert not isinstance(held[1].packed, bytes)
    assert held[1].how == RESYNC
    assert held[1].broker_keeps is False
    assert held[2].header.base_offset == 4
