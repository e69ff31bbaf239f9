"""Decompressing as much of a damaged payload as its codec frame allows, for forensic salvage.

`kdump.formats.codecs.decompress` is all or nothing, as Kafka's consumer is. When a batch fails its
checksum, what can still be read is the output the codec produced before it met the damage:

- none: the payload itself;
- gzip and zstd: streaming decompressors fed a few bytes at a time, so the output before the
  failing input is kept (deflate does not notice most damage at once: bytes just before an error
  may already be wrong, which is why everything salvaged this way is unverified);
- snappy: a raw block (what Kafka's Java client writes today), or each chunk of the xerial
  framing, is decoded element by element up to the first literal or copy that cannot be right;
- lz4 (frame format): the whole blocks before the first one that does not decode.

The result is capped by `max_size`, like `decompress`.
"""

from __future__ import annotations

import zlib
from typing import Any

from kdump.errors import CodecError
from kdump.formats.codecs import (
    _INT32_LE,
    _LZ4_BLOCK_SIZES,
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    LZ4_FRAME_MAGIC,
    _load,
    is_xerial,
    xerial_chunks,
)
from kdump.formats.constants import Codec

Buffer = bytes | bytearray | memoryview

# Input fed per call to a streaming decompressor: a failing call loses at most its own output.
_FEED = 64


def decompress_prefix(
    codec: int, data: Buffer, *, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
) -> tuple[bytes, str | None]:
    """The bytes a (possibly damaged) v2 payload decompresses to before any error, and the error.

    Never raises for bad input: the error is returned as text (None when the payload decoded whole).
    """
    raw = bytes(data)
    try:
        if codec == Codec.NONE:
            return raw[:max_size], None
        if codec == Codec.GZIP:
            return _stream(zlib.decompressobj(16 + zlib.MAX_WBITS), raw, max_size, "gzip")
        if codec == Codec.ZSTD:
            return _stream(_load("zstandard").ZstdDecompressor().decompressobj(), raw, max_size, "zstd")
        if codec == Codec.SNAPPY:
            return _snappy(raw, max_size)
        if codec == Codec.LZ4:
            return _lz4(raw, max_size)
    except Exception as exc:  # a missing codec library: nothing can be decoded
        return b"", f"the codec cannot be loaded: {exc}"
    return b"", f"unknown compression type id: {codec}"


def _stream(obj: Any, raw: bytes, max_size: int, name: str) -> tuple[bytes, str | None]:
    out = bytearray()
    for i in range(0, len(raw), _FEED):
        try:
            out += obj.decompress(raw[i : i + _FEED])
        except Exception as exc:
            return bytes(out[:max_size]), f"{name} stream fails at input byte {i}: {exc}"
        if len(out) > max_size:
            return bytes(out[:max_size]), f"{name} payload expands beyond {max_size} bytes"
        if getattr(obj, "eof", False):
            return bytes(out), None
    return bytes(out), f"{name} stream ends before its end marker"


def _snappy(raw: bytes, max_size: int) -> tuple[bytes, str | None]:
    snappy = _load("snappy")
    if not is_xerial(raw):
        try:
            return bytes(snappy.uncompress(raw))[:max_size], None
        except Exception:
            return _snappy_block_prefix(raw, max_size)
    out = bytearray()
    try:
        for pos, chunk in xerial_chunks(raw):
            try:
                out += snappy.uncompress(chunk)
            except Exception:
                part, error = _snappy_block_prefix(chunk, max_size - len(out))
                return bytes(out + part), f"xerial snappy chunk at {pos}: {error}"
            if len(out) > max_size:
                return bytes(out[:max_size]), f"snappy payload expands beyond {max_size} bytes"
    except CodecError as exc:
        return bytes(out), str(exc)
    return bytes(out), None


def _lz4(raw: bytes, max_size: int) -> tuple[bytes, str | None]:
    block = _load("lz4.block")
    if len(raw) < 7 or _INT32_LE.unpack_from(raw, 0)[0] != LZ4_FRAME_MAGIC:
        return b"", "lz4 frame magic missing"
    flg, bd = raw[4], raw[5]
    block_max = _LZ4_BLOCK_SIZES.get((bd >> 4) & 0x07)
    if flg >> 6 != 1 or not flg & 0x20 or block_max is None:
        return b"", "lz4 frame descriptor is not one Kafka writes"
    # The header checksum is not checked: the descriptor is already known good enough to read blocks.
    pos = 7 + (8 if flg & 0x08 else 0)
    checksum = 4 if flg & 0x10 else 0
    out = bytearray()
    while True:
        if pos + 4 > len(raw):
            return bytes(out), "lz4 frame ends without its end mark"
        (word,) = _INT32_LE.unpack_from(raw, pos)
        if word == 0:
            return bytes(out), None
        size = word & 0x7FFFFFFF
        if size > block_max or pos + 4 + size > len(raw):
            return bytes(out), f"lz4 block of {size} bytes at {pos} does not fit the frame"
        chunk = raw[pos + 4 : pos + 4 + size]
        try:
            out += chunk if word & 0x80000000 else block.decompress(chunk, uncompressed_size=block_max)
        except Exception as exc:
            return bytes(out), f"lz4 block at {pos} does not decompress: {exc}"
        if len(out) > max_size:
            return bytes(out[:max_size]), f"lz4 payload expands beyond {max_size} bytes"
        pos += 4 + size + checksum


def _snappy_block_prefix(block: bytes, max_size: int) -> tuple[bytes, str]:
    """Decode a raw snappy block element by element, up to the first element that cannot be right.

    The format (a varint length, then literals and back-references tagged by their low two bits)
    has no checksum: a damaged literal decodes to wrong bytes, a damaged tag usually to a copy that
    reaches before the start or past the stated length, where this stops.
    """
    expected = 0
    pos = 0
    for shift in range(0, 35, 7):
        if pos >= len(block):
            return b"", "snappy block ends inside its length"
        b = block[pos]
        pos += 1
        expected |= (b & 0x7F) << shift
        if b < 0x80:
            break
    limit = min(expected, max_size)
    out = bytearray()
    while pos < len(block) and len(out) < limit:
        tag = block[pos]
        kind = tag & 3
        if kind == 0:
            n = tag >> 2
            pos += 1
            if n >= 60:
                extra = n - 59
                n = int.from_bytes(block[pos : pos + extra], "little")
                pos += extra
            n += 1
            if pos + n > len(block) or len(out) + n > limit:
                return bytes(out), f"snappy literal of {n} bytes at {pos} does not fit"
            out += block[pos : pos + n]
            pos += n
            continue
        if kind == 1:
            length, offset = (
                4 + ((tag >> 2) & 7),
                ((tag >> 5) << 8) | (block[pos + 1] if pos + 1 < len(block) else 0),
            )
            pos += 2
        else:
            width = 2 if kind == 2 else 4
            length, offset = (tag >> 2) + 1, int.from_bytes(block[pos + 1 : pos + 1 + width], "little")
            pos += 1 + width
        if pos > len(block) or offset == 0 or offset > len(out) or len(out) + length > limit:
            return bytes(out), f"snappy copy at {pos} (offset {offset}, length {length}) is impossible"
        start = len(out) - offset
        for i in range(length):  # copies may overlap their own output
            out.append(out[start + i])
    if len(out) != expected:
        return bytes(out), f"snappy block decodes to {len(out)} of its {expected} bytes"
    return bytes(out), "snappy block is damaged"
