"""Zig-zag varints, as Kafka's v2 records and headers use them.

A varint stores 7 bits per byte, least significant group first, the high bit of each byte saying
"more follows". Zig-zag maps signed to unsigned so small negative numbers stay short:
0 -> 0, -1 -> 1, 1 -> 2, -2 -> 3 ... Kafka allows at most 5 bytes for an int32 and 10 for an int64
(`ByteUtils.readVarint` / `readVarlong`); a longer run is corrupt.
"""

from __future__ import annotations

from kdump.errors import CorruptFieldError, TruncatedError

Buffer = bytes | bytearray | memoryview


def decode_varint(data: Buffer, position: int, max_bytes: int = 5) -> tuple[int, int]:
    """Decode a zig-zag varint at `position`; return (value, position after it).

    Args:
        data: the buffer.
        position: where the varint starts.
        max_bytes: 5 for an int32 varint, 10 for a varlong.

    Raises:
        TruncatedError: the buffer ends inside the varint.
        CorruptFieldError: the varint is longer than `max_bytes`.
    """
    raw = 0
    shift = 0
    end = len(data)
    for i in range(max_bytes):
        if position + i >= end:
            raise TruncatedError(f"varint at position {position} runs past the end of the buffer")
        b = data[position + i]
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            # Kafka accumulates into a Java int (long): the bits of a 5th (10th) byte beyond 32 (64) are
            # dropped, so the value always fits its field; without this, 5 bytes decoded to up to 2**34.
            # (Found by tests/fuzz.)
            raw &= 0xFFFFFFFF if max_bytes <= 5 else 0xFFFFFFFFFFFFFFFF
            return (raw >> 1) ^ -(raw & 1), position + i + 1
        shift += 7
    raise CorruptFieldError(f"varint at position {position} is longer than {max_bytes} bytes")


def decode_varlong(data: Buffer, position: int) -> tuple[int, int]:
    """Decode a zig-zag varlong (at most 10 bytes)."""
    return decode_varint(data, position, 10)


def decode_uvarint(data: Buffer, position: int, max_bytes: int = 5) -> tuple[int, int]:
    """Decode an unsigned varint (no zig-zag), as Kafka's generated messages use it."""
    raw = 0
    shift = 0
    end = len(data)
    for i in range(max_bytes):
        if position + i >= end:
            raise TruncatedError(f"unsigned varint at position {position} runs past the end of the buffer")
        b = data[position + i]
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            return raw, position + i + 1
        shift += 7
    raise CorruptFieldError(f"unsigned varint at position {position} is longer than {max_bytes} bytes")


def encode_uvarint(value: int) -> bytes:
    """Encode an unsigned varint."""
    if value < 0:
        raise ValueError("unsigned varint cannot be negative")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """Encode a zig-zag varint or varlong (the encoding is the same; only the length bound differs)."""
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"{value} does not fit a varlong")
    return encode_uvarint(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)
