from __future__ import annotations

import mmap
import re
import struct
from pathlib import Path

import pytest
from corpus_paths import base_offset_of, corpus_file_params, oracle_body, oracle_for, require_corpus
from hypothesis import given
from hypothesis import strategies as st

from kdump.errors import CorruptFieldError
from kdump.formats.offset_index import (
    ENTRY_SIZE,
    OffsetIndexEntry,
    decode_offset_index,
    encode_offset_index,
    lookup_offset,
)

MAX_REL = 2**31 - 1
BASE_OFFSETS = st.integers(min_value=0, max_value=2**62)


@st.composite
def sound_indexes(draw: st.DrawFn) -> tuple[int, list[OffsetIndexEntry]]:
    """Strictly increasing entries, as the broker writes them (the first may sit at the base offset)."""
    base = draw(BASE_OFFSETS)
    relatives = sorted(draw(st.sets(st.integers(min_value=1, max_value=MAX_REL), max_size=50)))
    if draw(st.booleans()):
        relatives.insert(0, 0)
    positions = sorted(
        draw(st.lists(st.integers(0, 2**31 - 1), min_size=len(relatives), max_size=len(relatives)))
    )
    return base, [OffsetIndexEntry(base + r, p) for r, p in zip(relatives, positions, strict=True)]


@given(sound_indexes())
def test_round_trip(index: tuple[int, list[OffsetIndexEntry]]) -> None:
    base, entries = index
    encoded = encode_offset_index(entries, base)
    assert len(encoded) == ENTRY_SIZE * len(entries)
    decoded = decode_offset_index(encoded, base)
    assert decoded.entries == tuple(entries)
    assert decoded.slot_count == len(entries)
    assert (decoded.zero_tail_entries, decoded.zero_tail_is_zero, decoded.trailing_bytes) == (0, True, 0)
    assert decoded.last_slot == (entries[-1] if entries else None)


@given(sound_indexes(), st.integers(min_value=1, max_value=300), st.integers(min_value=0, max_value=7))
def test_preallocated_tail_and_trailing_bytes(
    index: tuple[int, list[OffsetIndexEntry]], tail_slots: int, trailing: int
) -> None:
    base, entries = index
    data = encode_offset_index(entries, base) + bytes(ENTRY_SIZE * tail_slots + trailing)
    decoded = decode_offset_index(data, base)
    slots = len(entries) + tail_slots
    if not any(data[: ENTRY_SIZE * slots]) and slots >= 2:
        # Zeros from the first byte, two slots or more: a preallocated file with no entry yet (the
        # broker never indexes the batch at position 0), not an entry at the base offset.
        assert decoded.entries == ()
        assert decoded.zero_tail_entries == slots
    elif entries:
        assert decoded.entries == tuple(entries)
        assert decoded.zero_tail_entries == tail_slots
    else:
        # One zero slot: Kafka's dump tool reads it as an entry at the base offset.
        assert decoded.entries == (OffsetIndexEntry(base, 0),)
        assert decoded.zero_tail_entries == 0
    assert decoded.zero_tail_is_zero
    assert decoded.trailing_bytes == trailing
    assert decoded.slot_count == len(entries) + tail_slots
    assert decoded.last_slot == OffsetIndexEntry(base, 0)


def test_tail_with_garbage_is_not_zero() -> None:
    data = encode_offset_index([(105, 0), (110, 4096)], 100) + bytes(8) + struct.pack(">ii", 0, 77) + bytes(8)
    decoded = decode_offset_index(data, 100)
    assert decoded.entries == (OffsetIndexEntry(105, 0), OffsetIndexEntry(110, 4096))
    assert decoded.zero_tail_entries == 3
    assert not decoded.zero_tail_is_zero
    assert decoded.has_zero_tail


def test_negative_relative_offset_is_decoded_not_raised() -> None:
    # The only corruption Kafka's sanity check can see (last offset below the base).
    decoded = decode_offset_index(struct.pack(">ii", -5, 10), 1000)
    assert decoded.entries == (OffsetIndexEntry(995, 10),)
    assert decoded.last_slot == OffsetIndexEntry(995, 10)


def test_empty_file() -> None:
    decoded = decode_offset_index(b"", 42)
    assert decoded.entries == ()
    assert (decoded.slot_count, decoded.trailing_bytes, decoded.last_slot) == (0, 0, None)


def test_trailing_bytes_only() -> None:
    decoded = decode_offset_index(b"\x00\x01\x02", 0)
    assert (decoded.entries, decoded.slot_count, decoded.trailing_bytes) == ((), 0, 3)


def test_accepts_bytearray_memoryview_and_mmap(tmp_path: Path) -> None:
    data = encode_offset_index([(3, 0), (9, 812)], 0) + bytes(16)
    expected = decode_offset_index(data, 0)
    assert decode_offset_index(bytearray(data), 0) == expected
    assert decode_offset_index(memoryview(data), 0) == expected
    assert decode_offset_index(memoryview(data).cast("I"), 0) == expected
    path = tmp_path / "00000000000000000000.index"
    path.write_bytes(data)
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        assert decode_offset_index(mapped, 0) == expected
        # Decoding must not leave an export behind, or closing the map would fail.


@pytest.mark.parametrize(("offset", "base"), [(99, 100), (100 + MAX_REL + 1, 100)])
def test_encode_rejects_unrepresentable_offsets(offset: int, base: int) -> None:
    with pytest.raises(CorruptFieldError, match="relative offset"):
        encode_offset_index([(offset, 0)], base)


@pytest.mark.parametrize("position", [-1, 2**31])
def test_encode_rejects_bad_positions(position: int) -> None:
    with pytest.raises(CorruptFieldError, match="Position"):
        encode_offset_index([(5, position)], 0)


@given(st.lists(st.integers(0, 10_000), unique=True, max_size=40), st.integers(-10, 10_020))
def test_lookup_is_largest_entry_at_or_below(offsets: list[int], target: int) -> None:
    entries = [OffsetIndexEntry(o, i * 10) for i, o in enumerate(sorted(offsets))]
    at_or_below = [e for e in entries if e.offset <= target]
    assert lookup_offset(entries, target) == (at_or_below[-1] if at_or_below else None)


def test_lookup_edges() -> None:
    entries = [OffsetIndexEntry(10, 0), OffsetIndexEntry(20, 100)]
    assert lookup_offset([], 5) is None
    assert lookup_offset(entries, 9) is None
    assert lookup_offset(entries, 10) == OffsetIndexEntry(10, 0)
    assert lookup_offset(entries, 19) == OffsetIndexEntry(10, 0)
    assert lookup_offset(entries, 2**63) == OffsetIndexEntry(20, 100)


# --- differential against kafka-dump-log ----------------------------------------------------------

_ENTRY_LINE = re.compile(r"offset: (-?\d+) position: (-?\d+)")


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_file_params("*/*.index"))
def test_matches_kafka_dump(path: Path) -> None:
    decoded = decode_offset_index(path.read_bytes(), base_offset_of(path))
    body = oracle_body(path)
    if decoded.slot_count == 0:
        assert body == [f"{path.relative_to(path.parents[2])} is empty."]
        return
    expected = []
    for line in body:
        match = _ENTRY_LINE.fullmatch(line)
        assert match, f"unexpected oracle line {line!r}"
        expected.append(OffsetIndexEntry(int(match[1]), int(match[2])))
    assert list(decoded.entries) == expected
    assert decoded.trailing_bytes == 0
    assert decoded.zero_tail_is_zero


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_file_params("*/*.index"))
def test_last_slot_gives_kafkas_sanity_verdict(path: Path) -> None:
    """Kafka's OffsetIndex.sanityCheck, recomputed from `last_slot`, agrees with the oracle."""
    base = base_offset_of(path)
    decoded = decode_offset_index(path.read_bytes(), base)
    body = oracle_body(path, "index-sanity-check")
    if decoded.slot_count == 0:
        assert body[0].endswith(" is empty.")
        return
    assert decoded.last_slot is not None
    passes = decoded.last_slot.offset >= base and decoded.trailing_bytes == 0
    assert passes == (body == [f"{path.relative_to(path.parents[2])} passed sanity check."])
    assert passes == (not oracle_for(path, "index-sanity-check").with_suffix(".txt.rc").exists())


@pytest.mark.corpus
def test_running_copy_has_preallocated_zero_tail() -> None:
    root = require_corpus()
    path = root / "kafka-3.8.0-running-copy" / "live-0" / "00000000000000008074.index"
    data = path.read_bytes()
    decoded = decode_offset_index(data, 8074)
    assert len(data) == 1048576
    assert len(decoded.entries) == 154
    assert decoded.entries[-1] == OffsetIndexEntry(10492, 947223)
    assert decoded.zero_tail_entries == 1048576 // 8 - 154
    assert decoded.zero_tail_is_zero
    assert decoded.last_slot == OffsetIndexEntry(8074, 0)


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_file_params("*/*.index", "*/*.index.deleted"))
def test_closed_segments_are_trimmed(path: Path) -> None:
    """Everything but the running copy's active segment was trimmed to its entries on close."""
    decoded = decode_offset_index(path.read_bytes(), base_offset_of(path))
    if path.name == "00000000000000008074.index" and path.parent.name == "live-0":
        assert decoded.has_zero_tail  # the active segment, copied live
        return
    assert decoded.slot_count == len(decoded.entries)
    assert decoded.trailing_bytes == 0
    offsets = [e.offset for e in decoded.entries]
    assert offsets == sorted(set(offsets))
