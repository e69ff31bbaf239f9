from __future__ import annotations

import struct
from pathlib import Path

import crc32c
import pytest
from corpus_paths import corpus_file_params, oracle_body
from hypothesis import given
from hypothesis import strategies as st

from kdump.errors import CorruptFieldError, DecodeError, TruncatedError
from kdump.formats.producer_snapshot import (
    ENTRY_SIZE,
    HEADER_SIZE,
    ProducerSnapshotEntry,
    decode_producer_snapshot,
    encode_producer_snapshot,
)


def _int(bits: int) -> st.SearchStrategy[int]:
    return st.integers(min_value=-(2 ** (bits - 1)), max_value=2 ** (bits - 1) - 1)


ENTRIES = st.builds(
    ProducerSnapshotEntry,
    producer_id=_int(64),
    producer_epoch=_int(16),
    last_sequence=_int(32),
    last_offset=_int(64),
    offset_delta=_int(32),
    timestamp=_int(64),
    coordinator_epoch=_int(32),
    current_txn_first_offset=_int(64),
)
SAMPLE = ProducerSnapshotEntry(
    producer_id=3,
    producer_epoch=0,
    last_sequence=582,
    last_offset=647,
    offset_delta=19,
    timestamp=1795297244974,
    coordinator_epoch=0,
    current_txn_first_offset=628,
)


@given(st.lists(ENTRIES, max_size=20))
def test_round_trip(entries: list[ProducerSnapshotEntry]) -> None:
    data = encode_producer_snapshot(entries)
    assert len(data) == HEADER_SIZE + ENTRY_SIZE * len(entries)
    snapshot = decode_producer_snapshot(data)
    assert snapshot.entries == tuple(entries)
    assert snapshot.version == 1
    assert snapshot.crc_ok
    assert snapshot.stored_crc == snapshot.computed_crc == crc32c.crc32c(data[6:])


def test_empty_snapshot_layout() -> None:
    # The 10-byte files that fill the corpus: version 1, CRC of the zero count, count 0.
    data = encode_producer_snapshot([])
    assert data == struct.pack(">hIi", 1, crc32c.crc32c(bytes(4)), 0)
    assert decode_producer_snapshot(data).entries == ()


def test_derived_fields() -> None:
    assert SAMPLE.has_batch_metadata
    assert (SAMPLE.first_sequence, SAMPLE.first_offset, SAMPLE.open_txn_first_offset) == (563, 628, 628)
    # Sequences wrap at int32 max the way DefaultRecordBatch.decrementSequence does.
    wrapped = SAMPLE._replace(last_sequence=2, offset_delta=5)
    assert wrapped.first_sequence == 2**31 - 1 - 3 + 1
    no_batch = SAMPLE._replace(last_offset=-1, current_txn_first_offset=-1)
    assert (no_batch.has_batch_metadata, no_batch.first_sequence, no_batch.first_offset) == (
        False,
        None,
        None,
    )
    assert no_batch.open_txn_first_offset is None


@given(ENTRIES)
def test_first_fields_stay_in_java_ranges(entry: ProducerSnapshotEntry) -> None:
    if entry.has_batch_metadata:
        assert entry.first_sequence is not None
        assert -(2**31) <= entry.first_sequence < 2**31
        assert entry.first_offset is not None
        assert -(2**63) <= entry.first_offset < 2**63


# --- damage -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("length", range(HEADER_SIZE))
def test_truncated_header(length: int) -> None:
    data = encode_producer_snapshot([SAMPLE])[:length]
    with pytest.raises(TruncatedError, match="schema validation"):
        decode_producer_snapshot(data)


@pytest.mark.parametrize("cut", [1, 20, ENTRY_SIZE - 1, ENTRY_SIZE, ENTRY_SIZE + 5])
def test_truncated_entries(cut: int) -> None:
    data = encode_producer_snapshot([SAMPLE, SAMPLE._replace(producer_id=4)])
    with pytest.raises(TruncatedError, match=r"Error reading array of size 2, only \d+ bytes available"):
        decode_producer_snapshot(data[:-cut])


def test_bad_crc_is_reported_not_raised() -> None:
    data = bytearray(encode_producer_snapshot([SAMPLE]))
    data[HEADER_SIZE + 3] ^= 0x40
    snapshot = decode_producer_snapshot(bytes(data))
    assert not snapshot.crc_ok
    assert snapshot.stored_crc != snapshot.computed_crc
    assert snapshot.entries[0].producer_id == SAMPLE.producer_id ^ (0x40 << 32)


def test_corrupt_stored_crc() -> None:
    data = bytearray(encode_producer_snapshot([SAMPLE]))
    struct.pack_into(">I", data, 2, 12345)
    snapshot = decode_producer_snapshot(data)
    assert (snapshot.crc_ok, snapshot.stored_crc) == (False, 12345)
    assert snapshot.entries == (SAMPLE,)


@pytest.mark.parametrize("version", [0, 2, -1, 256])
def test_unknown_version(version: int) -> None:
    data = bytearray(encode_producer_snapshot([SAMPLE]))
    struct.pack_into(">h", data, 0, version)
    with pytest.raises(CorruptFieldError, match=f"^Snapshot contained an unknown file version {version}$"):
        decode_producer_snapshot(data)


def test_negative_count() -> None:
    data = bytearray(encode_producer_snapshot([]))
    struct.pack_into(">i", data, 6, -1)
    with pytest.raises(CorruptFieldError, match="cannot be negative"):
        decode_producer_snapshot(data)


def test_count_too_small_for_the_bytes() -> None:
    data = bytearray(encode_producer_snapshot([SAMPLE, SAMPLE]))
    struct.pack_into(">i", data, 6, 1)
    with pytest.raises(CorruptFieldError, match="46 bytes after its 1 entries"):
        decode_producer_snapshot(data)


def test_trailing_garbage() -> None:
    with pytest.raises(CorruptFieldError, match="after its"):
        decode_producer_snapshot(encode_producer_snapshot([SAMPLE]) + b"\x00")


@given(st.binary(max_size=200))
def test_arbitrary_bytes_only_raise_decode_errors(data: bytes) -> None:
    try:
        snapshot = decode_producer_snapshot(data)
    except DecodeError:
        return
    assert len(data) == HEADER_SIZE + ENTRY_SIZE * len(snapshot.entries)


def test_encode_rejects_out_of_range() -> None:
    with pytest.raises(CorruptFieldError, match="producer_epoch"):
        encode_producer_snapshot([SAMPLE._replace(producer_epoch=2**15)])


# --- differential against kafka-dump-log ----------------------------------------------------------


def _kafka_line(entry: ProducerSnapshotEntry) -> str:
    """DumpLogSegments' line for one entry (Kafka 3.8, Java OptionalLong in currentTxnFirstOffset)."""
    txn = entry.open_txn_first_offset
    txn_text = "OptionalLong.empty" if txn is None else f"OptionalLong[{txn}]"
    line = (
        f"producerId: {entry.producer_id} producerEpoch: {entry.producer_epoch} "
        f"coordinatorEpoch: {entry.coordinator_epoch} currentTxnFirstOffset: {txn_text} "
        f"lastTimestamp: {entry.timestamp} "
    )
    if entry.has_batch_metadata:
        line += (
            f"firstSequence: {entry.first_sequence} lastSequence: {entry.last_sequence} "
            f"lastOffset: {entry.last_offset} offsetDelta: {entry.offset_delta} timestamp: {entry.timestamp}"
        )
    return line.rstrip()


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_file_params("*/*.snapshot"))
def test_matches_kafka_dump(path: Path) -> None:
    snapshot = decode_producer_snapshot(path.read_bytes())
    assert snapshot.crc_ok
    assert [_kafka_line(e) for e in snapshot.entries] == [line.rstrip() for line in oracle_body(path)]


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_file_params("*/*.snapshot.deleted"))
def test_deleted_snapshots_decode(path: Path) -> None:
    snapshot = decode_producer_snapshot(path.read_bytes())
    assert snapshot.crc_ok
