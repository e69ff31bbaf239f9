"""Finding entries without trusting framing: whether a plausible entry starts at a position, and the
next one after framing is lost (the forensic scan's resynchronisation).

A candidate needs magic 0..2 at +16, a length that fits, header fields Kafka writes (checked before
any checksum, so a search through dense garbage stays linear), and a matching checksum.
"""

from __future__ import annotations

import re
import struct

from kdump.formats.batch import (
    legacy_crc,
    v2_crc,
)
from kdump.formats.constants import (
    HEADER_SIZE_UP_TO_MAGIC,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    V1_RECORD_OVERHEAD,
    V2_HEADER_SIZE,
)
from kdump.scan.pages import Buffer, first_nonzero

_MAGIC_BYTE = re.compile(rb"[\x00-\x02]")
_LENGTH = struct.Struct(">i")


def min_length(magic: int) -> int:
    """Smallest valid length field for a format (entry size minus the 12-byte log overhead)."""
    if magic == 2:
        return V2_HEADER_SIZE - LOG_OVERHEAD
    if magic == 1:
        return V1_RECORD_OVERHEAD
    return MIN_BATCH_LENGTH


_V2_FIELDS = struct.Struct(">qiibIhi8x8xqhii")  # through recordsCount, skipping the timestamps
_LEGACY_FIELDS = struct.Struct(">qiIbB")


def _structurally_plausible(buf: Buffer, q: int, length: int, magic: int) -> bool:
    """Cheap header checks that random bytes almost never pass, made before any checksum.

    Without them a resync through dense garbage would checksum every candidate's claimed length,
    which grows with the square of the garbage's size.
    """
    if magic == 2:
        if length < V2_HEADER_SIZE - LOG_OVERHEAD:
            return False
        base, _len, _epoch, _magic, _crc, attributes, delta, producer_id, producer_epoch, base_seq, count = (
            _V2_FIELDS.unpack_from(buf, q)
        )
        # Kafka writes attribute bits 7..15 as zero and codecs 0..4; offsets and counts are sane.
        return bool(
            attributes & ~0x7F == 0
            and attributes & 0x07 <= 4
            and base >= 0
            and 0 <= count <= delta + 1
            and producer_id >= -1
            and producer_epoch >= -1
            and base_seq >= -1
        )
    offset, _len, _crc, _magic, attributes = _LEGACY_FIELDS.unpack_from(buf, q)
    if offset < 0 or attributes & ~0x0F or attributes & 0x07 > 3:
        return False
    # A legacy message's key and value lengths account for its length exactly.
    pos = q + LOG_OVERHEAD + (V1_RECORD_OVERHEAD if magic == 1 else MIN_BATCH_LENGTH) - 8
    end = q + LOG_OVERHEAD + length
    (key_len,) = _LENGTH.unpack_from(buf, pos)
    if key_len < -1 or pos + 4 + max(key_len, 0) + 4 > end:
        return False
    (value_len,) = _LENGTH.unpack_from(buf, pos + 4 + max(key_len, 0))
    return bool(value_len >= -1 and pos + 8 + max(key_len, 0) + max(value_len, 0) == end)


def plausible_entry_at(buf: Buffer, q: int, end: int) -> bool:
    """Whether a checksum-valid entry with a sane header and length starts at `q` and ends by `end`."""
    if q + HEADER_SIZE_UP_TO_MAGIC >= end:
        return False
    magic = buf[q + 16]
    if magic > 2:
        return False
    (length,) = _LENGTH.unpack_from(buf, q + 8)
    if length < min_length(magic) or q + LOG_OVERHEAD + length > end:
        return False
    if not _structurally_plausible(buf, q, length, magic):
        return False
    size = length + LOG_OVERHEAD
    stored = struct.unpack_from(">I", buf, q + (17 if magic == 2 else 12))[0]
    return bool(stored == (v2_crc(buf, q, size) if magic == 2 else legacy_crc(buf, q, size)))


def find_next_entry(buf: Buffer, start: int, end: int) -> int | None:
    """Search forward from `start` for the next plausible entry; None when there is none.

    Candidates need a magic byte 0..2 at +16 and a non-zero length field; runs of zeros are
    skipped in one step, so a large zeroed region costs one chunked pass, not one check per byte.
    """
    q = start
    while q + LOG_OVERHEAD + MIN_BATCH_LENGTH <= end:
        m = _MAGIC_BYTE.search(buf, q + 16, end)
        if m is None:
            return None
        q = m.start() - 16
        nz = first_nonzero(buf, q + 8, end)
        if nz is None:
            return None
        if nz > q + 11:
            # The length field of any entry at q..nz-12 would be zero: jump past the zeros.
            q = nz - 11
            continue
        if plausible_entry_at(buf, q, end):
            return q
        q += 1
    return None


# Pages already scanned are handed back every this many bytes, so resident memory stays flat. A
# scan holds up to twice this many (a compiled walk stops at the next stride): at 16 MiB the scans
# of the partition `salvage` writes (its index rebuild, its verify) each peaked 33 MiB above the
