"""Bounds on what a decoded key or value may grow to, per input byte: a payload past them is a
finding (`payload-over-limit`), shown raw, and the dump goes on.

Avro amplifies in one way only: an array whose items take no bytes (`null`, a record of such
fields, a zero-size `fixed`) holds as many items as its block count says, for free. Five bytes
then make a list of 50 million items, and `array<array<null>>` grows quadratically (16 KB of
input gave 160 MB of JSON). Every other item takes at least one byte, so its count is bounded by
the input already. The bounds:

- items (array elements and map entries) <= ITEMS_FLOOR + ITEMS_PER_BYTE x input bytes;
- JSON text <= OUTPUT_FLOOR + OUTPUT_PER_BYTE x input bytes.

ITEMS_PER_BYTE is 64 and OUTPUT_PER_BYTE 256: a legitimate value spends at least a byte on most
items, and its JSON is a few times its binary size (a boolean byte becomes `false,`, a string
byte at worst a 6-byte `\\u00XX` escape, field names are repeated per record); the floors (64 Ki
items, 1 MiB) leave small values with many empty fields alone. Past them, a value is a bomb, not
data anyone wrote.

Schemas with such arrays are walked (`AvroItemBudget`) before the value is built: counts of
zero-size items are added without iterating, so the walk is linear in the input; the compiled
Avro-to-JSON path declines those schemas (the walk runs in front of the Python reader instead).
The JSON length of every decoded value is checked after rendering.
"""

from __future__ import annotations

import json
from typing import Any

from kdump.errors import DecodeError

ITEMS_FLOOR = 1 << 16
ITEMS_PER_BYTE = 64
OUTPUT_FLOOR = 1 << 20
OUTPUT_PER_BYTE = 256


class PayloadLimitError(DecodeError):
    """A decoded key or value that would pass the bounds above."""


def item_limit(size: int) -> int:
    """The most array items and map entries a value of `size` bytes may hold."""
    return ITEMS_FLOOR + ITEMS_PER_BYTE * size


def output_limit(size: int) -> int:
    """The most bytes of JSON a value of `size` bytes may give."""
    return OUTPUT_FLOOR + OUTPUT_PER_BYTE * size


def check_output(text: bytes | str, size: int) -> None:
    """Raise PayloadLimitError when rendered JSON passes the output bound."""
    if len(text) > output_limit(size):
        raise PayloadLimitError(
            f"its JSON would be {len(text)} bytes from {size} bytes of input, past the bound of "
            f"{output_limit(size)} ({OUTPUT_PER_BYTE} per input byte)"
        )


_FULL = object()


class AvroItemBudget:
    """The item and output budget of one Avro schema, walked over a value's bytes before decoding.

    Built from the schema's JSON (and its references'); `amplifies` says whether the schema has an
    array of zero-size items at all (when not, `check` is never needed)."""

    def __init__(self, schema: str, references: tuple[str, ...] | list[str] = ()) -> None:
        self.named: dict[str, Any] = {}
        for text in references:
            self._collect(json.loads(text), "")
        self.root = json.loads(schema)
        self._collect(self.root, "")
        self.amplifies = self._amplifies(self.root, "", set())

    # -- the schema --------------------------------------------------------------------------------

    def _collect(self, s: Any, ns: str) -> None:
        if isinstance(s, list):
            for b in s:
                self._collect(b, ns)
        elif isinstance(s, dict):
            kind = s.get("type")
            if kind in ("record", "error", "enum", "fixed") and "name" in s:
                name = str(s["name"])
                space = str(s.get("namespace", ns))
                full = name if "." in name or not space else f"{space}.{name}"
                self.named[full] = s
                self.named.setdefault(name, s)
                ns = full.rpartition(".")[0]
            for f in s.get("fields", []) if kind in ("record", "error") else []:
                self._collect(f.get("type"), ns)
            for key in ("items", "values"):
                if key in s:
                    self._collect(s[key], ns)
            if isinstance(kind, (dict, list)):
                self._collect(kind, ns)

    def _resolve(self, s: Any, ns: str) -> Any:
        if isinstance(s, str) and s not in _PRIMITIVE:
            full = s if "." in s or not ns else f"{ns}.{s}"
            return self.named.get(full, self.named.get(s, s))
        if isinstance(s, dict) and isinstance(s.get("type"), (dict, list)):
            return s["type"]
        if isinstance(s, dict) and s.get("type") in _PRIMITIVE:
            return s["type"]
        return s

    def _zero(self, s: Any, ns: str, seen: set[int]) -> bool:
        """Whether a value of this type takes no bytes."""
        s = self._resolve(s, ns)
        if s == "null":
            return True
        if not isinstance(s, dict) or id(s) in seen:
            return False
        kind = s.get("type")
        if kind == "fixed":
            return int(s.get("size", 1)) == 0
        if kind in ("record", "error"):
            return all(self._zero(f.get("type"), ns, seen | {id(s)}) for f in s.get("fields", []))
        return False

    def _amplifies(self, s: Any, ns: str, seen: set[int]) -> bool:
        s = self._resolve(s, ns)
        if isinstance(s, list):
            return any(self._amplifies(b, ns, seen) for b in s)
        if not isinstance(s, dict) or id(s) in seen:
            return False
        seen = seen | {id(s)}
        kind = s.get("type")
        if kind == "array":
            return self._zero(s.get("items"), ns, set()) or self._amplifies(s.get("items"), ns, seen)
        if kind == "map":
            return self._amplifies(s.get("values"), ns, seen)
        if kind in ("record", "error"):
            return any(self._amplifies(f.get("type"), ns, seen) for f in s.get("fields", []))
        return False

    def _json_size(self, s: Any, ns: str) -> int:
        """The JSON text of a zero-size value, with its separator."""
        s = self._resolve(s, ns)
        if s == "null":
            return 5
        if isinstance(s, dict) and s.get("type") == "fixed":
            return 3
        fields = s.get("fields", []) if isinstance(s, dict) else []
        return 2 + sum(
            len(json.dumps(str(f.get("name")))) + 1 + self._json_size(f.get("type"), ns) for f in fields
        )

    # -- a value -------------------------------------------------------------------------------------

    def check(self, data: bytes, at: int = 0) -> None:
        """Walk one value from `at`; raise PayloadLimitError when it passes the bounds. Bytes that do
        not decode end the walk quietly: the decoder then says what is wrong with them."""
        size = len(data) - at
        walk = _Walk(self, data, at, item_limit(size), output_limit(size))
        try:
            walk.value(self.root, "")
        except PayloadLimitError:
            raise  # a DecodeError, so a ValueError: not one of the quiet ends below
        except (IndexError, ValueError, TypeError, KeyError, RecursionError, _Stop):
            return


_PRIMITIVE = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})


class _Stop(Exception):
    """Bytes that end or do not fit the schema: the walk ends; the decoder reports them."""


class _Walk:
    def __init__(self, budget: AvroItemBudget, data: bytes, at: int, items: int, output: int) -> None:
        self.b = budget
        self.data = data
        self.at = at
        self.items_left = items
        self.output_left = output
        self.items = items
        self.output = output

    def varint(self) -> int:
        shift = result = 0
        while True:
            if self.at >= len(self.data) or shift > 63:
                raise _Stop
            byte = self.data[self.at]
            self.at += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return (result >> 1) ^ -(result & 1)
            shift += 7

    def spend(self, items: int, output: int) -> None:
        self.items_left -= items
        self.output_left -= output
        if self.items_left < 0:
            raise PayloadLimitError(
                f"it holds more than {self.items} array items and map entries, the bound for "
                f"{len(self.data)} bytes of input ({ITEMS_PER_BYTE} per byte)"
            )
        if self.output_left < 0:
            raise PayloadLimitError(
                f"its JSON would pass {self.output} bytes, the bound for {len(self.data)} bytes of "
                f"input ({OUTPUT_PER_BYTE} per byte)"
            )

    def skip(self, n: int) -> None:
        if n < 0 or self.at + n > len(self.data):
            raise _Stop
        self.at += n

    def value(self, s: Any, ns: str) -> None:
        s = self.b._resolve(s, ns)
        if isinstance(s, list):
            index = self.varint()
            if not 0 <= index < len(s):
                raise _Stop
            self.value(s[index], ns)
            return
        if isinstance(s, str):
            if s in ("int", "long"):
                self.varint()
            elif s == "boolean":
                self.skip(1)
            elif s == "float":
                self.skip(4)
            elif s == "double":
                self.skip(8)
            elif s in ("bytes", "string"):
                self.skip(self.varint())
            elif s != "null":
                raise _Stop
            return
        kind = s.get("type")
        if kind in ("record", "error"):
            inner = str(s.get("namespace", ns))
            for f in s.get("fields", []):
                self.value(f.get("type"), inner)
        elif kind == "enum":
            self.varint()
        elif kind == "fixed":
            self.skip(int(s.get("size", 0)))
        elif kind in ("array", "map"):
            self.blocks(s, ns)
        elif kind in _PRIMITIVE:
            self.value(kind, ns)
        else:
            raise _Stop

    def blocks(self, s: dict[str, Any], ns: str) -> None:
        is_map = s.get("type") == "map"
        item = s.get("values") if is_map else s.get("items")
        zero = not is_map and self.b._zero(item, ns, set())
        each = self.b._json_size(item, ns) if zero else 0
        while True:
            count = self.varint()
            if count == 0:
                return
            if count < 0:
                count = -count
                self.varint()  # the block's size in bytes
            if zero:
                self.spend(count, count * each)  # no bytes to walk: counted at once
                continue
            for _ in range(count):
                self.spend(1, 0)
                if is_map:
                    self.skip(self.varint())
                self.value(item, ns)
