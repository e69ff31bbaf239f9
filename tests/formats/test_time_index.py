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
from kdump.formats.time_index import (
    ENTRY_SIZE,
    TimeIndexEntry,
    decode_time_index,
    encode_time_index,
    lookup_timestamp,
)

MAX_REL = 2**31 - 1
INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@st.composite
def sound_indexes(draw: st.DrawFn) -> tuple[int, list[TimeIndexEntry]]:
    """Increasing timestamps and offsets; only slot 0 may sit at the base offset."""
    base = draw(st.integers(min_value=0, max_value=2**62))
    relatives = sorted(draw(st.sets(st.integers(min_value=1, max_value=MAX_REL), max_size=50)))
    if draw(st.booleans()):
        relatives.insert(0, 0)
    timestamps = sorted(draw(st.sets(INT64, min_size=len(relatives), max_size=len(relatives))))
    return base, [TimeIndexEntry(t, base + r) for t, r in zip(timestamps, relatives, strict=True)]


@given(sound_indexes())
def test_round_trip(index: tuple[int, list[TimeIndexEntry]]) -> None:
    base, entries = index
    encoded = encode_time_index(entries, base)
    assert len(encoded) == ENTRY_SIZE * len(entries)
    decoded = decode_time_index(encoded, base)
    assert decoded.entries == tuple(entries)
    assert (decoded.slot_count, decoded.zero_tail_entries, decoded.trailing_bytes) == (len(entries), 0, 0)
    assert decoded.last_slot == (entries[-1] if entries else None)


@given(sound_indexes(), st.integers(min_value=1, max_value=300), st.integers(min_value=0, max_value=11))
def test_preallocated_tail_and_trailing_bytes(
    index: tuple[int, list[TimeIndexEntry]], tail_slots: int, trailing: int
) -> None:
    base, entries = index
    data = encode_time_index(entries, base) + bytes(ENTRY_SIZE * tail_slots + trailing)
    decoded = decode_time_index(data, base)
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
        assert decoded.entries == (TimeIndexEntry(0, base),)
        assert decoded.zero_tail_entries == 0
    assert decoded.zero_tail_is_zero
    assert decoded.trailing_bytes == trailing
    assert decoded.last_slot == TimeIndexEntry(0, base)


def test_stop_slot_is_offset_based_and_garbage_is_flagged() -> None:
    # Kafka stops at an offset equal to the base whatever the timestamp; the tail is then not zero.
    data = encode_time_index([(1000, 105), (2000, 110)], 100) + struct.pack(">qi", 3000, 0) + bytes(12)
    decoded = decode_time_index(data, 100)
    assert decoded.entries == (TimeIndexEntry(1000, 105), TimeIndexEntry(2000, 110))
    assert decoded.zero_tail_entries == 2
    assert not decoded.zero_tail_is_zero


def test_accepts_mmap(tmp_path: Path) -> None:
    data = encode_time_index([(1_700_000_000_000, 3)], 0) + bytes(24)
    path = tmp_path / "00000000000000000000.timeindex"
    path.write_bytes(data)
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        assert decode_time_index(mapped, 0) == decode_time_index(data, 0)


def test_empty_and_partial() -> None:
    assert decode_time_index(b"", 7).entries == ()
    partial = decode_time_index(b"\x01" * 11, 7)
    assert (partial.entries, partial.slot_count, partial.trailing_bytes, partial.last_slot) == (
        (),
        0,
        11,
        None,
    )


@pytest.mark.parametrize(("entry", "match"), [((5, 99), "relative offset"), ((2**63, 100), "int64")])
def test_encode_rejects_unrepresentable(entry: tuple[int, int], match: str) -> None:
    with pytest.raises(CorruptFieldError, match=match):
        encode_time_index([entry], 100)


@given(st.lists(st.integers(0, 10_000), unique=True, max_size=40), st.integers(-10, 10_020))
def test_lookup_is_largest_timestamp_at_or_below(timestamps: list[int], target: int) -> None:
    entries = [TimeIndexEntry(t, i) for i, t in enumerate(sorted(timestamps))]
    at_or_below = [e for e in entries if e.timestamp <= target]
    assert lookup_timestamp(entries, target) == (at_or_below[-1] if at_or_below else None)


def test_lookup_edges() -> None:
    entries = [TimeIndexEntry(100, 5), TimeIndexEntry(200, 9)]
    assert lookup_timestamp([], 0) is None
    assert lookup_timestamp(entries, 99) is None
    assert lookup_timestamp(entries, 150) == TimeIndexEntry(100, 5)
    assert lookup_timestamp(entries, 200) == TimeIndexEntry(200, 9)


# --- differential against kafka-dump-log ----------------------------------------------------------

_ENTRY_LINE = re.compile(r"timestamp: (-?\d+) offset: (-?\d+)")


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_file_params("*/*.timeindex"))
def test_matches_kafka_dump(path: Path) -> None:
    decoded = decode_time_index(path.read_bytes(), base_offset_of(path))
    expected = []
    for line in oracle_body(path):
        match = _ENTRY_LINE.fullmatch(line)
        assert match, f"unexpected oracle line {line!r}"
        expected.append(TimeIndexEntry(int(match[1]), int(match[2])))
    assert list(decoded.entries) == expected
    assert decoded.trailing_bytes == 0
    assert decoded.zero_tail_is_zero


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_file_params("*/*.timeindex"))
def test_last_slot_gives_kafkas_sanity_verdict(path: Path) -> None:
    """Kafka's TimeIndex.sanityCheck, recomputed from slot 0 and `last_slot`, agrees with the oracle."""
    base = base_offset_of(path)
    decoded = decode_time_index(path.read_bytes(), base)
    passes = decoded.trailing_bytes == 0
    if decoded.slot_count:
        assert decoded.last_slot is not None
        first_timestamp = decoded.entries[0].timestamp
        passes = (
            passes and decoded.last_slot.timestamp >= first_timestamp and decoded.last_slot.offset >= base
        )
    body = oracle_body(path, "index-sanity-check")
    assert passes == (body == [f"{path.relative_to(path.parents[2])} passed sanity check."])
    assert passes == (not oracle_for(path, "index-sanity-check").with_suffix(".txt.rc").exists())


@pytest.mark.corpus
def test_running_copy_has_preallocated_zero_tail() -> None:
    root = require_corpus()
    path = root / "kafka-3.8.0-running-copy" / "live-0" / "00000000000000008074.timeindex"
    data = path.read_bytes()
    decoded = decode_time_index(data, 8074)
    assert len(data) == 1048572
    assert len(decoded.entries) == 154
    assert decoded.entries[-1] == TimeIndexEntry(1795297330297, 10492)
    assert decoded.zero_tail_entries == 1048572 // 12 - 154
    assert decoded.zero_tail_is_zero
    # The zero last slot is what makes Kafka's sanity check fail on this file.
    assert decoded.last_slot == TimeIndexEntry(0, 8074)


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_file_params("*/*.timeindex", "*/*.timeindex.deleted"))
def test_closed_segments_are_trimmed_and_monotonic(path: Path) -> None:
    decoded = decode_time_index(path.read_bytes(), base_offset_of(path))
    if path.name == "00000000000000008074.timeindex" and path.parent.name == "live-0":
        assert decoded.has_zero_tail  # the active segment, copied live
        return
    assert decoded.slot_count == len(decoded.entries)
    assert decoded.trailing_bytes == 0
    timestamps = [e.timestamp for e in decoded.entries]
    offsets = [e.offset for e in decoded.entries]
    assert timestamps == sorted(set(timestamps))
    assert offsets == sorted(offsets)
