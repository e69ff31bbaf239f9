"""Transaction index (`<base>.txnindex`): the aborted transactions whose ABORT marker is in this segment.

Mirrors `org.apache.kafka.storage.internals.log.TransactionIndex` and `AbortedTxn`.

On-disk structure: a flat array of 34-byte entries, big-endian, no header, no checksum. The file is
created lazily (only segments that hold an ABORT marker have one) and is never preallocated.

| field              | type  | meaning                                                          |
|--------------------|-------|------------------------------------------------------------------|
| version            | int16 | entry format version; Kafka writes 0                             |
| producer_id        | int64 | producer whose transaction was aborted                           |
| first_offset       | int64 | Kafka offset of the transaction's first record                   |
| last_offset        | int64 | Kafka offset of the ABORT marker                                 |
| last_stable_offset | int64 | the partition's last stable offset when the abort was written    |

Writers append entries with strictly increasing `last_offset`.

Version quirk: Kafka writes the version as an int16 but reads back only the byte at position 0 (the high
byte), as a signed byte, and rejects the entry when that byte is > 0. We keep the full int16 in
`AbortedTxn.version` (what the writer put there) and expose Kafka's reading as `AbortedTxn.kafka_version`
(which `DumpLogSegments` prints). So 0x0001 reads as version 1 here but 0 to Kafka, and 0xFF00 as -256
here but -1 to Kafka; neither is rejected by Kafka. Decoding never raises on the version: checks decide.

Kafka ignores a partial entry at the end of the file; `trailing_bytes` reports its length.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from kdump.errors import CorruptFieldError

if TYPE_CHECKING:
    import mmap
    from typing import TypeAlias

    _Buffer: TypeAlias = bytes | bytearray | memoryview | mmap.mmap

__all__ = [
    "CURRENT_VERSION",
    "ENTRY_SIZE",
    "AbortedTxn",
    "TxnIndexContents",
    "decode_txn_index",
    "encode_txn_index",
]

ENTRY_SIZE = 34
CURRENT_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
assert _ENTRY.size == ENTRY_SIZE

_INT16_RANGE = range(-(2**15), 2**15)
_INT64_RANGE = range(-(2**63), 2**63)


class AbortedTxn(NamedTuple):
    """One aborted transaction, as stored."""

    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    @property
    def kafka_version(self) -> int:
        """The version as Kafka reads it: the high byte of the int16, signed."""
        return self.version >> 8


@dataclass(frozen=True, slots=True)
class TxnIndexContents:
    """Every complete entry of a `.txnindex` file, and the length of a partial one at its end."""

    entries: tuple[AbortedTxn, ...]
    trailing_bytes: int


def decode_txn_index(buf: _Buffer) -> TxnIndexContents:
    """Decode a transaction index; never raises for any byte content."""
    with memoryview(buf) as raw:
        view = raw.cast("B") if raw.format != "B" or raw.ndim != 1 else raw
        length = view.nbytes
        whole = length - length % ENTRY_SIZE
        entries = tuple(AbortedTxn._make(fields) for fields in _ENTRY.iter_unpack(view[:whole]))
        if view is not raw:
            view.release()
    return TxnIndexContents(entries=entries, trailing_bytes=length % ENTRY_SIZE)


def encode_txn_index(entries: Iterable[AbortedTxn]) -> bytes:
    """Serialise entries as Kafka lays them out; a field that does not fit its type raises."""
    out = bytearray()
    for entry in entries:
        if entry.version not in _INT16_RANGE:
            raise CorruptFieldError(f"Aborted transaction version {entry.version} does not fit an int16")
        for name in ("producer_id", "first_offset", "last_offset", "last_stable_offset"):
            value = getattr(entry, name)
            if value not in _INT64_RANGE:
                raise CorruptFieldError(f"Aborted transaction {name} {value} does not fit an int64")
        out += _ENTRY.pack(*entry)
    return bytes(out)
