"""The kept batches of a salvage plan, and how a plan holds them.

A plan of a big segment keeps tens of thousands of batches (71,246 in a 135 MB segment of small
batches): each is held as a fixed-size slot of one byte array (`KeptList`), its header packed,
rather than as objects; a `KeptBatch` is made when one is read.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import overload

from kdump.formats.batch import BatchHeader
from kdump.formats.constants import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
)
from kdump.model.segment import Segment

INTACT, FRAMING, RESYNC = "intact", "framing", "resync"
HOW = {
    INTACT: "before any damage in its segment (the broker's recovery keeps it)",
    FRAMING: "read through the length fields past a batch that failed its checksum",
    RESYNC: "found by searching forward (magic, length and checksum agree) after framing was lost",
}
_HOWS = (INTACT, FRAMING, RESYNC)

# A checksum-valid v2 header, packed: position, size, then the header's fields (crc_ok is True and
# the computed checksum the stored one).
_PACKED = struct.Struct("<qiqiibIhqqqhii")


@dataclass(frozen=True, slots=True)
class KeptBatch:
    """A batch whose bytes go into the clean partition, and how it was found."""

    segment: Segment
    packed: BatchHeader | bytes
    how: str
    broker_keeps: bool  # inside the prefix the broker's recovery keeps (`valid_bytes`)

    @classmethod
    def of(cls, segment: Segment, h: BatchHeader, how: str, broker_keeps: bool) -> KeptBatch:
        """A kept batch holding its header packed where it can (a checksum-valid v2 batch)."""
        packed: BatchHeader | bytes = h
        if h.magic == 2 and h.crc_ok and h.base_offset is not None and h.count is not None:
            try:
                packed = _PACKED.pack(
                    h.position, h.size, h.base_offset, h.last_offset - h.base_offset,
                    h.partition_leader_epoch, h.magic, h.crc, h.attributes, h.base_timestamp,
                    h.max_timestamp, h.producer_id, h.producer_epoch, h.base_sequence, h.count,
                )  # fmt: skip
            except struct.error:
                packed = h
        return cls(segment, packed, how, broker_keeps)

    @property
    def header(self) -> BatchHeader:
        """The batch's header, as the scan read it."""
        p = self.packed
        if not isinstance(p, bytes):
            return p
        return _unpacked(*_PACKED.unpack(p))

    @property
    def low(self) -> int:
        """The batch's first offset (a legacy message's own offset)."""
        h = self.header
        return h.base_offset if h.base_offset is not None else h.last_offset


def _unpacked(
    pos: int, size: int, base: int, delta: int, epoch: int, magic: int, crc: int, attrs: int,
    base_ts: int, max_ts: int, pid: int, pepoch: int, bseq: int, count: int, *_flags: int,
) -> BatchHeader:  # fmt: skip
    return BatchHeader(
        pos, base, base + delta, count, size, magic, crc, True, crc, attrs, attrs & COMPRESSION_MASK,
        (attrs & TIMESTAMP_TYPE_MASK) >> 3, base_ts, max_ts, pid, pepoch, bseq, epoch,
        bool(attrs & TRANSACTIONAL_MASK), bool(attrs & CONTROL_MASK), bool(attrs & DELETE_HORIZON_MASK),
    )  # fmt: skip


# A slot: the packed header, then a byte of how it was reached (an index of _HOWS, 4 more when the
# broker keeps it); _OTHER marks a batch held whole in `KeptList._other` (a legacy or odd header).
_SLOT = _PACKED.size + 1
_OTHER = 0xFF
_WHOLE_SLOT = struct.Struct(_PACKED.format + "B")
_SPAN_SLOT = struct.Struct(f"<qi{_SLOT - 13}xB")  # position, size, flags


class KeptList(Sequence[KeptBatch]):
    """A segment's kept batches, in order: a list of `KeptBatch` held in one byte array."""

    __slots__ = ("_data", "_other", "_segment")

    def __init__(self, batches: Iterable[KeptBatch] = ()) -> None:
        self._data = bytearray()
        self._other: dict[int, KeptBatch] = {}
        self._segment: Segment | None = None
        for k in batches:
            self.append(k)

    def append(self, k: KeptBatch) -> None:
        """Add a batch at the end."""
        if self._segment is None:
            self._segment = k.segment
        if isinstance(k.packed, bytes) and k.segment is self._segment and k.how in _HOWS:
            self._data += k.packed
            self._data.append(_HOWS.index(k.how) | (4 if k.broker_keeps else 0))
        else:
            self._other[len(self)] = k
            self._data += bytes(_SLOT - 1)
            self._data.append(_OTHER)

    def __len__(self) -> int:
        return len(self._data) // _SLOT

    @overload
    def __getitem__(self, i: int) -> KeptBatch: ...

    @overload
    def __getitem__(self, i: slice) -> list[KeptBatch]: ...

    def __getitem__(self, i: int | slice) -> KeptBatch | list[KeptBatch]:
        if isinstance(i, slice):
            return [self._at(j) for j in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError("kept batch index out of range")
        return self._at(i % n)

    def _at(self, i: int) -> KeptBatch:
        end = (i + 1) * _SLOT
        flags = self._data[end - 1]
        if flags == _OTHER:
            return self._other[i]
        assert self._segment is not None
        return KeptBatch(
            self._segment, bytes(self._data[end - _SLOT : end - 1]), _HOWS[flags & 3], flags >= 4
        )

    def headers(self) -> Iterator[BatchHeader]:
        """The batches' headers, in order (what `k.header for k in self` gives, faster)."""
        for i, fields in enumerate(_WHOLE_SLOT.iter_unpack(self._data)):
            yield self._other[i].header if fields[-1] == _OTHER else _unpacked(*fields)

    def spans(self) -> Iterator[tuple[int, int]]:
        """The batches' positions and sizes, in order."""
        for i, (position, size, flags) in enumerate(_SPAN_SLOT.iter_unpack(self._data)):
            if flags == _OTHER:
                h = self._other[i].header
                yield h.position, h.size
            else:
                yield position, size

    def __iter__(self) -> Iterator[KeptBatch]:
        for i in range(len(self)):
            yield self._at(i)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, KeptList | list):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list

    def __repr__(self) -> str:
        return f"KeptList({list(self)!r})"
