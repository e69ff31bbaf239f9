"""The kept batches of a salvage plan, and how a plan holds them.

A plan of a big segment keeps tens of thousands of batches (71,246 in a 135 MB segment of small
batches): each is held as a fixed-size slot of one byte array (`KeptList`), its header packed,
rather than as objects; a `KeptBatch` is made when one is read. The plan's scan holds every framed
entry the same way (`ScanEntries`, the compiled walk's runs packed from their columns): a header
object per batch there made the scan the peak of a salvage's memory (about 900 bytes a batch, 76
MiB for that segment; now about 250).
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
from kdump.formats.fast_walk import N_COLUMNS, BatchRun
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
        packed = _pack(h)
        return cls(segment, h if packed is None else packed, how, broker_keeps)

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


def _pack(h: BatchHeader) -> bytes | None:
    """A checksum-valid v2 header packed (None for any other, or a field out of the slot's range)."""
    if h.magic != 2 or not h.crc_ok or h.base_offset is None or h.count is None:
        return None
    try:
        return _PACKED.pack(
            h.position, h.size, h.base_offset, h.last_offset - h.base_offset, h.partition_leader_epoch,
            h.magic, h.crc, h.attributes, h.base_timestamp, h.max_timestamp, h.producer_id,
            h.producer_epoch, h.base_sequence, h.count,
        )  # fmt: skip
    except struct.error:
        return None


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
_SPAN = struct.Struct("<qi")
_CHECK_SLOT = struct.Struct(f"<qi16xbI{_SLOT - 34}xB")  # position, size, magic, crc, flags


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

    def append_slot(self, segment: Segment, slot: bytes | bytearray, broker_keeps: bool) -> None:
        """Add a batch from a packed slot of `ScanEntries` (its header packed, then how it was reached)."""
        if self._segment is None:
            self._segment = segment
        assert segment is self._segment
        self._data += slot
        if broker_keeps:
            self._data[-1] |= 4

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

    def hows(self) -> Iterator[tuple[str, bool]]:
        """How each batch was reached and whether the broker keeps it, in order (no object per batch)."""
        for i, flags in enumerate(self._data[_SLOT - 1 :: _SLOT]):
            if flags == _OTHER:
                k = self._other[i]
                yield k.how, k.broker_keeps
            else:
                yield _HOWS[flags & 3], flags >= 4

    def checked(self) -> Iterator[tuple[int, int, int, int]]:
        """The batches' positions, sizes, magic and stored checksums, in order (what copying them
        checks, without a header object each)."""
        for i, (position, size, magic, crc, flags) in enumerate(_CHECK_SLOT.iter_unpack(self._data)):
            if flags == _OTHER:
                h = self._other[i].header
                yield h.position, h.size, h.magic, h.crc
            else:
                yield position, size, magic, crc

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


_HELD = 0x80  # how-byte flag of a `ScanEntries` slot whose header is held whole


class ScanEntries:
    """A segment's framed entries in order, each with how it was reached, as the plan's scan found
    them: checksum-valid v2 headers packed in slots like `KeptList`'s (no object per batch), any
    other header (one that failed its checksum, a legacy entry) held whole."""

    __slots__ = ("_data", "_other")

    def __init__(self, entries: Iterable[tuple[BatchHeader, str]] = ()) -> None:
        self._data = bytearray()
        self._other: dict[int, BatchHeader] = {}
        for h, how in entries:
            self.add(h, how)

    def add(self, h: BatchHeader, how: str) -> None:
        """Add an entry at the end."""
        packed = _pack(h)
        if packed is None:
            self._other[len(self)] = h
            self._data += bytes(_SLOT - 1)
            self._data.append(_HOWS.index(how) | _HELD)
        else:
            self._data += packed
            self._data.append(_HOWS.index(how))

    def add_run(self, run: BatchRun, first_how: str, how: str) -> None:
        """Add a run of the compiled walk from its columns, without a header object per batch."""
        n = run.n
        view = memoryview(run.columns).cast("q")
        pos, base, last, count, size, crc, attrs, base_ts, max_ts, pid, pepoch, bseq, epoch = (
            view[k * n : (k + 1) * n] for k in range(N_COLUMNS)
        )
        flags = _HOWS.index(first_how), _HOWS.index(how)
        pack = _WHOLE_SLOT.pack
        out = bytearray()
        try:
            for i, p, sz, b, lst, ep, c, at, bt, mt, pi, pe, bs, ct in zip(
                range(n),
                pos,
                size,
                base,
                last,
                epoch,
                crc,
                attrs,
                base_ts,
                max_ts,
                pid,
                pepoch,
                bseq,
                count,
                strict=True,
            ):
                out += pack(p, sz, b, lst - b, ep, 2, c, at, bt, mt, pi, pe, bs, ct, flags[i > 0])
        except struct.error:  # a field out of the slot's range: the headers one by one
            for i, h in enumerate(run.headers()):
                self.add(h, how if i else first_how)
            return
        self._data += out

    def __len__(self) -> int:
        return len(self._data) // _SLOT

    def held(self) -> Iterator[tuple[int, BatchHeader]]:
        """The entries held whole, by index (among them every one that failed its checksum)."""
        return iter(self._other.items())

    def header(self, i: int) -> BatchHeader:
        """Entry `i`'s header, as the scan read it."""
        end = (i + 1) * _SLOT
        if self._data[end - 1] & _HELD:
            return self._other[i]
        return _unpacked(*_PACKED.unpack_from(self._data, end - _SLOT))

    def __iter__(self) -> Iterator[tuple[BatchHeader, str]]:
        """Every entry's header and how it was reached."""
        for i in range(len(self)):
            yield self.header(i), _HOWS[self._data[(i + 1) * _SLOT - 1] & 3]

    def fields(self) -> Iterator[tuple[int, int, bool, int, int, int | None, int, int | None]]:
        """What the plan decides on, entry by entry: position, size, crc_ok, magic, compression,
        base offset, last offset, count (no header object for a packed entry)."""
        other = self._other
        for i, t in enumerate(_WHOLE_SLOT.iter_unpack(self._data)):
            if t[14] & _HELD:
                h = other[i]
                yield (
                    h.position,
                    h.size,
                    h.crc_ok,
                    h.magic,
                    h.compression,
                    h.base_offset,
                    h.last_offset,
                    h.count,
                )
            else:
                yield t[0], t[1], True, 2, t[7] & COMPRESSION_MASK, t[2], t[2] + t[3], t[13]

    def keep(self, i: int, kept: KeptList, segment: Segment, valid_bytes: int) -> None:
        """Put entry `i` in `kept` (the broker keeps it when it ends within `valid_bytes`)."""
        start = i * _SLOT
        if self._data[start + _SLOT - 1] & _HELD:
            h = self._other[i]
            how = _HOWS[self._data[start + _SLOT - 1] & 3]
            kept.append(KeptBatch.of(segment, h, how, h.position + h.size <= valid_bytes))
            return
        position, size = _SPAN.unpack_from(self._data, start)
        kept.append_slot(segment, self._data[start : start + _SLOT], position + size <= valid_bytes)
