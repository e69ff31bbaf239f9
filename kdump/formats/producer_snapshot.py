"""Producer-state snapshot (`<offset>.snapshot`): the idempotence/transaction state of each producer id.

Mirrors `ProducerStateManager.readSnapshot`/`writeSnapshot` in `org.apache.kafka.storage.internals.log`
(schema `PidSnapshotMap`, unchanged since Kafka 0.11) and `ProducerStateEntry`/`BatchMetadata`.
The offset in the file name is the next offset the snapshot covers (the log end offset when taken).

On-disk structure, big-endian:

| field        | type   | meaning                                                                  |
|--------------|--------|--------------------------------------------------------------------------|
| version      | int16  | snapshot format version; Kafka reads only 1                              |
| crc          | uint32 | CRC-32C (Castagnoli) over every byte from position 6 to the end of file  |
| entry_count  | int32  | number of entries that follow                                            |
| entries      | 46 B   | each; one per producer id, in the broker's map order:                    |

Each entry:

| field                    | type  | meaning                                                          |
|--------------------------|-------|------------------------------------------------------------------|
| producer_id              | int64 |                                                                  |
| producer_epoch           | int16 |                                                                  |
| last_sequence            | int32 | sequence of the last record of the producer's last batch         |
| last_offset              | int64 | Kafka offset of that record; negative when no batch is kept      |
| offset_delta             | int32 | last offset minus first offset of that batch                     |
| timestamp                | int64 | max timestamp of that batch (Kafka's `lastTimestamp`)            |
| coordinator_epoch        | int32 | transaction coordinator epoch of the last marker, -1 when none   |
| current_txn_first_offset | int64 | first offset of the producer's open transaction, -1 when none    |

Kafka first parses the whole schema (so a short file fails "schema validation"), then rejects any version
other than 1, then compares the CRC. Bytes after the entries are not a schema error for Kafka, only a
CRC mismatch. Here a wrong CRC is reported (`crc_ok`), never raised; a short header or short entry area
raises `TruncatedError`; an unknown version, a negative count, or bytes beyond the counted entries raise
`CorruptFieldError`. The version is checked before the entries, since another version may lay them out
differently.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from kdump.errors import CorruptFieldError, TruncatedError
from kdump.formats.checksums import crc32c as _crc32c

if TYPE_CHECKING:
    import mmap
    from typing import TypeAlias

    _Buffer: TypeAlias = bytes | bytearray | memoryview | mmap.mmap

__all__ = [
    "CRC_START",
    "ENTRY_SIZE",
    "HEADER_SIZE",
    "SNAPSHOT_VERSION",
    "ProducerSnapshot",
    "ProducerSnapshotEntry",
    "decode_producer_snapshot",
    "encode_producer_snapshot",
]

SNAPSHOT_VERSION = 1
_HEADER = struct.Struct(">hIi")
HEADER_SIZE = _HEADER.size
# The CRC covers the entry count and the entries: everything after version and crc.
CRC_START = 6
_CRC_POSITION = 2
_CRC = struct.Struct(">I")
_ENTRY = struct.Struct(">qhiqiqiq")
ENTRY_SIZE = _ENTRY.size
assert (HEADER_SIZE, ENTRY_SIZE) == (10, 46)

_INT_BITS = {"h": 16, "i": 32, "q": 64}
_ENTRY_FIELD_BITS = tuple(_INT_BITS[code] for code in "qhiqiqiq")


class ProducerSnapshotEntry(NamedTuple):
    """One producer's state, fields in on-disk order."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int

    @property
    def has_batch_metadata(self) -> bool:
        """Kafka keeps the last batch's metadata only when `last_offset` is not negative."""
        return self.last_offset >= 0

    @property
    def first_sequence(self) -> int | None:
        """First sequence of the last batch, wrapping below 0 the way producer sequences do."""
        if not self.has_batch_metadata:
            return None
        if self.last_sequence < self.offset_delta:
            return _wrap_int32((2**31 - 1) - (self.offset_delta - self.last_sequence) + 1)
        return _wrap_int32(self.last_sequence - self.offset_delta)

    @property
    def first_offset(self) -> int | None:
        """Kafka offset of the first record of the last batch."""
        if not self.has_batch_metadata:
            return None
        return _wrap_int64(self.last_offset - self.offset_delta)

    @property
    def open_txn_first_offset(self) -> int | None:
        """`current_txn_first_offset` as Kafka reads it: None unless it is >= 0."""
        return self.current_txn_first_offset if self.current_txn_first_offset >= 0 else None


@dataclass(frozen=True, slots=True)
class ProducerSnapshot:
    """A decoded snapshot with both CRCs, so a mismatch is evidence rather than an exception."""

    version: int
    stored_crc: int
    computed_crc: int
    crc_ok: bool
    entries: tuple[ProducerSnapshotEntry, ...]


def decode_producer_snapshot(buf: _Buffer) -> ProducerSnapshot:
    """Decode a producer snapshot; see the module docstring for what raises."""
    with memoryview(buf) as raw:
        view = raw.cast("B") if raw.format != "B" or raw.ndim != 1 else raw
        try:
            return _decode(view)
        finally:
            if view is not raw:
                view.release()


def _decode(view: memoryview) -> ProducerSnapshot:
    length = view.nbytes
    if length < HEADER_SIZE:
        raise TruncatedError(
            f"Snapshot failed schema validation: the header needs {HEADER_SIZE} bytes, found {length}"
        )
    version, stored_crc, count = _HEADER.unpack_from(view, 0)
    if version != SNAPSHOT_VERSION:
        raise CorruptFieldError(f"Snapshot contained an unknown file version {version}")
    if count < 0:
        raise CorruptFieldError(f"Snapshot failed schema validation: Array size {count} cannot be negative")
    available = length - HEADER_SIZE
    needed = count * ENTRY_SIZE
    if needed > available:
        raise TruncatedError(
            f"Snapshot failed schema validation: Error reading array of size {count}, "
            f"only {available} bytes available"
        )
    if needed < available:
        raise CorruptFieldError(
            f"Snapshot holds {available - needed} bytes after its {count} entries "
            f"(Kafka would report a CRC mismatch)"
        )
    computed_crc = _crc32c(view[CRC_START:])
    entries = tuple(ProducerSnapshotEntry._make(fields) for fields in _ENTRY.iter_unpack(view[HEADER_SIZE:]))
    return ProducerSnapshot(
        version=version,
        stored_crc=stored_crc,
        computed_crc=computed_crc,
        crc_ok=stored_crc == computed_crc,
        entries=entries,
    )


def encode_producer_snapshot(entries: Iterable[ProducerSnapshotEntry]) -> bytes:
    """Serialise a version-1 snapshot with a correct CRC; a field that does not fit its type raises."""
    body = bytearray()
    count = 0
    for entry in entries:
        for name, value, bits in zip(entry._fields, entry, _ENTRY_FIELD_BITS, strict=True):
            if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
                raise CorruptFieldError(f"Producer snapshot field {name}={value} does not fit an int{bits}")
        body += _ENTRY.pack(*entry)
        count += 1
    header = bytearray(_HEADER.pack(SNAPSHOT_VERSION, 0, count))
    crc = _crc32c(bytes(header[CRC_START:]) + body)
    _CRC.pack_into(header, _CRC_POSITION, crc)
    return bytes(header + body)


def _wrap_int32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def _wrap_int64(value: int) -> int:
    return (value + 2**63) % 2**64 - 2**63
