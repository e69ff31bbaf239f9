"""Plain typed keys and values as Kafka's own serializers write them, and decoded values as JSON.

Typed decoders follow `org.apache.kafka.common.serialization`: `IntegerSerializer` (4 bytes,
big-endian), `LongSerializer` (8), `FloatSerializer` (4, IEEE 754), `DoubleSerializer` (8),
`UUIDSerializer` (the 36-character text form; 16 raw bytes are read too), and JSON text. A value of
the wrong size does not decode: it is shown raw with a finding, never guessed.

Decoded values become JSON text once, here: with orjson when it is installed (the `payloads`
extra), else the standard library. Bytes inside a decoded value (Avro `bytes`/`fixed`) are shown
in the dump's `--encoding`; decimals as their exact text; dates and times in ISO 8601; UUIDs as text.
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
import json
import math
import struct
import uuid
from collections.abc import Callable
from typing import Any

from kdump.errors import DecodeError

TYPED = ("int32", "int64", "float", "double", "uuid", "json")


def decode_typed(kind: str, data: bytes) -> Any:
    """A plain key or value of a typed serializer as a Python value.

    Raises:
        DecodeError: the bytes are not a value of that type.
    """
    n = len(data)
    if kind == "int32":
        if n != 4:
            raise DecodeError(f"an int32 is 4 bytes, not {n}")
        return int.from_bytes(data, "big", signed=True)
    if kind == "int64":
        if n != 8:
            raise DecodeError(f"an int64 is 8 bytes, not {n}")
        return int.from_bytes(data, "big", signed=True)
    if kind in ("float", "double"):
        size = 4 if kind == "float" else 8
        if n != size:
            raise DecodeError(f"a {kind} is {size} bytes, not {n}")
        value = struct.unpack(">f" if size == 4 else ">d", data)[0]
        return value if math.isfinite(value) else str(value)
    if kind == "uuid":
        try:
            return str(uuid.UUID(bytes=bytes(data)) if n == 16 else uuid.UUID(data.decode("ascii")))
        except (ValueError, UnicodeDecodeError):
            raise DecodeError(f"{n} bytes that are not a UUID (36 characters of text, or 16 bytes)") from None
    if kind == "json":
        return parse_json(data)
    raise ValueError(f"unknown type {kind!r}")


def parse_json(data: bytes) -> Any:
    """JSON text (UTF-8) as a Python value.

    Raises:
        DecodeError: not UTF-8, or not one JSON document.
    """
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise DecodeError(f"not JSON: {exc}") from None


def _bytes_text(encoding: str) -> Callable[[bytes], str]:
    if encoding == "hex":
        return bytes.hex
    if encoding == "base64":
        return lambda b: base64.b64encode(b).decode("ascii")
    return lambda b: b.decode("utf-8", "backslashreplace")


def _plain(obj: Any, text: Callable[[bytes], str]) -> Any:
    """What the JSON encoder cannot take, made plain (recursively, for the standard library)."""
    if isinstance(obj, dict):
        return {str(k): _plain(v, text) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v, text) for v in obj]
    if isinstance(obj, bytes | bytearray | memoryview):
        return text(bytes(obj))
    if isinstance(obj, decimal.Decimal | uuid.UUID):
        return str(obj)
    if isinstance(obj, _dt.datetime | _dt.date | _dt.time):
        return obj.isoformat()
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    return obj


class JsonWriter:
    """Decoded values to compact JSON text (bytes), in one `--encoding` for the bytes they hold."""

    def __init__(self, encoding: str = "utf8") -> None:
        self.text = _bytes_text(encoding)
        try:
            import orjson
        except ImportError:
            self._orjson: Any = None
        else:
            self._orjson = orjson

    def _default(self, obj: Any) -> Any:
        if isinstance(obj, bytes | bytearray | memoryview):
            return self.text(bytes(obj))
        if isinstance(obj, decimal.Decimal):
            return str(obj)
        raise TypeError

    def dumps(self, obj: Any) -> bytes:
        """Compact JSON of a decoded value (non-finite floats as their text, "nan", "inf")."""
        return self.dumps_checked(obj, all_finite)

    def dumps_checked(self, obj: Any, finite: Callable[[Any], bool] | None) -> bytes:
        """`dumps`, where `finite` tells whether a value holds only finite floats (None: it holds
        no float), for a check cheaper than looking at every part of the value."""
        fast = self._orjson
        if fast is not None:
            try:
                out: bytes = fast.dumps(obj, default=self._default)
            except TypeError:
                pass  # an integer beyond 64 bits, a non-string key: the general way below
            else:
                # orjson writes NaN and infinities as null: then the value is written the general way.
                if finite is None or b"null" not in out or finite(obj):
                    return out
        return json.dumps(_plain(obj, self.text), separators=(",", ":")).encode()


def all_finite(obj: Any) -> bool:
    """Whether a value holds no NaN or infinity (orjson writes those as null)."""
    stack = [obj]
    isfinite = math.isfinite
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is float:
            if not isfinite(item):
                return False
        elif kind is dict:
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
    return True
