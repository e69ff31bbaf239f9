from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest
from corpus_paths import corpus_file_params, oracle_body
from hypothesis import given
from hypothesis import strategies as st

from kdump.errors import CorruptFieldError
from kdump.formats.txn_index import ENTRY_SIZE, AbortedTxn, decode_txn_index, encode_txn_index

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
ENTRIES = st.builds(
    AbortedTxn,
    version=st.integers(min_value=-(2**15), max_value=2**15 - 1),
    producer_id=INT64,
    first_offset=INT64,
    last_offset=INT64,
    last_stable_offset=INT64,
)


@given(st.lists(ENTRIES, max_size=30), st.integers(min_value=0, max_value=ENTRY_SIZE - 1))
def test_round_trip_ignoring_partial_tail(entries: list[AbortedTxn], trailing: int) -> None:
    data = encode_txn_index(entries)
    assert len(data) == ENTRY_SIZE * len(entries)
    decoded = decode_txn_index(data + b"\xff" * trailing)
    assert decoded.entries == tuple(entries)
    assert decoded.trailing_bytes == trailing


def test_layout() -> None:
    data = encode_txn_index([AbortedTxn(0, 3, 40, 62, 63)])
    assert data == struct.pack(">hqqqq", 0, 3, 40, 62, 63)


@pytest.mark.parametrize(
    ("version", "kafka_version"),
    [(0, 0), (0x0001, 0), (0x00FF, 0), (0x0100, 1), (0x7FFF, 127), (-1, -1), (-256, -1), (-(2**15), -128)],
)
def test_kafka_reads_only_the_high_byte(version: int, kafka_version: int) -> None:
    (entry,) = decode_txn_index(encode_txn_index([AbortedTxn(version, 1, 2, 3, 4)])).entries
    assert entry.version == version
    assert entry.kafka_version == kafka_version


def test_encode_rejects_out_of_range() -> None:
    with pytest.raises(CorruptFieldError, match="int16"):
        encode_txn_index([AbortedTxn(2**15, 0, 0, 0, 0)])
    with pytest.raises(CorruptFieldError, match="last_offset"):
        encode_txn_index([AbortedTxn(0, 0, 0, 2**63, 0)])


def test_empty() -> None:
    decoded = decode_txn_index(b"")
    assert (decoded.entries, decoded.trailing_bytes) == ((), 0)


_ENTRY_LINE = re.compile(
    r"version: (-?\d+) producerId: (-?\d+) firstOffset: (-?\d+) lastOffset: (-?\d+) lastStableOffset: (-?\d+)"
)


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_file_params("*/*.txnindex"))
def test_matches_kafka_dump(path: Path) -> None:
    decoded = decode_txn_index(path.read_bytes())
    expected = []
    for line in oracle_body(path):
        match = _ENTRY_LINE.fullmatch(line)
        assert match, f"unexpected oracle line {line!r}"
        expected.append(tuple(int(group) for group in match.groups()))
    # DumpLogSegments prints the version as Kafka reads it.
    assert [(e.kafka_version, *e[1:]) for e in decoded.entries] == expected
    assert decoded.trailing_bytes == 0
    last_offsets = [e.last_offset for e in decoded.entries]
    assert last_offsets == sorted(set(last_offsets))
    assert all(
        e.version == 0 and e.first_offset <= e.last_offset < e.last_stable_offset for e in decoded.entries
    )
