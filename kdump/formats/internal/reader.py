"""The primitive reads of Kafka's `Readable` over a buffer, with its leniencies (`schema` builds on it)."""

from __future__ import annotations

import base64
import struct
from typing import Final

from kdump.errors import CorruptFieldError, TruncatedError
from kdump.formats.internal.java_text import java_utf8_decode as java_utf8_decode

Buffer = bytes | bytearray | memoryview

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")


def to_int32(value: int) -> int:
    """Wrap an integer to a Java `int`."""
    value &= 0xFFFFFFFF
    return value - 0x1_0000_0000 if value & 0x8000_0000 else value


def uuid_to_str(raw: bytes) -> str:
    """Kafka's `Uuid.toString()`: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


ZERO_UUID: Final = uuid_to_str(bytes(16))


class Reader:
    """A cursor over a buffer, with the primitive reads of Kafka's `Readable`."""

    __slots__ = ("buf", "end", "pos")

    def __init__(self, buf: Buffer, pos: int = 0, end: int | None = None) -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def _need(self, size: int, what: str) -> int:
        pos = self.pos
        if size > self.end - pos:
            raise TruncatedError(
                f"{what}: needs {size} byte(s) at position {pos}, only {max(self.end - pos, 0)} left"
            )
        self.pos = pos + size
        return pos

    def int8(self, what: str = "int8") -> int:
        value: int = _I8.unpack_from(self.buf, self._need(1, what))[0]
        return value

    def int16(self, what: str = "int16") -> int:
        value: int = _I16.unpack_from(self.buf, self._need(2, what))[0]
        return value

    def uint16(self, what: str = "uint16") -> int:
        value: int = _U16.unpack_from(self.buf, self._need(2, what))[0]
        return value

    def int32(self, what: str = "int32") -> int:
        value: int = _I32.unpack_from(self.buf, self._need(4, what))[0]
        return value

    def uint32(self, what: str = "uint32") -> int:
        value: int = _U32.unpack_from(self.buf, self._need(4, what))[0]
        return value

    def int64(self, what: str = "int64") -> int:
        value: int = _I64.unpack_from(self.buf, self._need(8, what))[0]
        return value

    def float64(self, what: str = "float64") -> float:
        value: float = _F64.unpack_from(self.buf, self._need(8, what))[0]
        return value

    def uuid_bytes(self, what: str = "uuid") -> bytes:
        """A uuid's 16 bytes, short of which Java's two `getLong`s underflow (no message, unlike `take`)."""
        pos = self._need(16, what)
        return bytes(self.buf[pos : pos + 16])

    def take(self, size: int, what: str = "bytes") -> bytes:
        if size < 0:
            raise CorruptFieldError(f"{what}: negative size {size}")
        pos, left = self.pos, max(self.end - self.pos, 0)
        if size > left:  # `_need`'s check, with the words of Java's byte array reader
            raise TruncatedError(
                f"{what}: needs {size} byte(s) at position {pos}, only {left} left",
                java=f"Error reading byte array of {size} byte(s): only {left} byte(s) available",
            )
        self.pos = pos + size
        return bytes(self.buf[pos : pos + size])

    def uvarint(self, what: str = "unsigned varint") -> int:
        """Kafka's `readUnsignedVarint`: at most 5 bytes, the result wrapped to a Java `int`."""
        result = 0
        for i in range(5):
            pos = self._need(1, what)
            byte = self.buf[pos]
            result |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                return to_int32(result)
        raise CorruptFieldError(
            f"{what}: varint is too long, the most significant bit in the 5th byte is set"
        )
