"""Test helpers: an encoder for the schema engine's field tables, and hypothesis strategies over them.

`encode_message(msg, data, version)` writes the bytes Kafka's generated writer would write for a *full
view* dict (every field of the table, as `decode_message(..., view="full")` returns). `full_values(msg,
version)` is a hypothesis strategy of such dicts: random values for the fields present in `version`, defaults
for the others. Round trips through both check that the engine and the tables agree over every message and
version (the tables themselves were checked field by field against Kafka 3.8.0's JSON schema files).
"""

from __future__ import annotations

import base64
import struct
from typing import Any, Literal

from hypothesis import strategies as st

from kdump.formats.internal.schema import (
    ArrayOf,
    Field,
    MessageType,
    Prim,
    StructType,
    default_value,
    is_default,
    uuid_to_str,
)

_FIXED = {
    Prim.INT8: struct.Struct(">b"),
    Prim.INT16: struct.Struct(">h"),
    Prim.UINT16: struct.Struct(">H"),
    Prim.INT32: struct.Struct(">i"),
    Prim.UINT32: struct.Struct(">I"),
    Prim.INT64: struct.Struct(">q"),
}

_RANGES = {
    Prim.INT8: (-(2**7), 2**7 - 1),
    Prim.INT16: (-(2**15), 2**15 - 1),
    Prim.UINT16: (0, 2**16 - 1),
    Prim.INT32: (-(2**31), 2**31 - 1),
    Prim.UINT32: (0, 2**32 - 1),
    Prim.INT64: (-(2**63), 2**63 - 1),
}


def uvarint(value: int) -> bytes:
    out = bytearray()
    value &= 0xFFFFFFFF
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def uuid_bytes(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "==")


class _Encoder:
    def __init__(
        self, msg: MessageType, version: int, unknown_tags: dict[str, list[tuple[int, bytes]]]
    ) -> None:
        self.msg = msg
        self.version = version
        self.flexible = version in msg.flexible
        self.unknown_tags = unknown_tags
        self.out = bytearray()

    def length(self, n: int | None, *, string: bool = False) -> None:
        if self.flexible:
            self.out += uvarint(0 if n is None else n + 1)
        elif string:
            self.out += struct.pack(">h", -1 if n is None else n)
        else:
            self.out += struct.pack(">i", -1 if n is None else n)

    def struct(self, st: StructType, data: dict[str, Any], path: str) -> None:
        v = self.version
        tagged: list[tuple[int, bytes]] = []
        for f in st.fields:
            if v not in f.versions:
                continue
            if v in f.tagged:
                value = data.get(f.name, default_value(f))  # a tag left out holds its default
                if not is_default(f, value):
                    assert f.tag is not None
                    sub = _Encoder(self.msg, v, self.unknown_tags)
                    sub.flexible = True
                    sub.field(f, value, f"{path}/{f.name}", tagged=True)
                    tagged.append((f.tag, bytes(sub.out)))
                continue
            self.field(f, data[f.name], f"{path}/{f.name}", tagged=False)
        if self.flexible:
            tagged += self.unknown_tags.get(path, [])
            tagged.sort(key=lambda item: item[0])
            self.out += uvarint(len(tagged))
            for tag, raw in tagged:
                self.out += uvarint(tag) + uvarint(len(raw)) + raw

    def field(self, f: Field, value: Any, path: str, *, tagged: bool) -> None:
        t = f.type
        if isinstance(t, StructType):
            if self.version in f.nullable:
                if tagged:
                    self.out += uvarint(0 if value is None else 1)
                else:
                    self.out += struct.pack(">b", -1 if value is None else 1)
                if value is None:
                    return
            self.struct(t, value, path)
        elif isinstance(t, ArrayOf):
            if value is None:
                self.length(None)
                return
            self.length(len(value))
            for i, item in enumerate(value):
                if isinstance(t.element, StructType):
                    self.struct(t.element, item, f"{path}/{i}")
                else:
                    self.scalar(t.element, item)
        else:
            self.scalar(t, value)

    def scalar(self, t: Prim, value: Any) -> None:
        if t is Prim.STRING or t is Prim.BYTES:
            if value is None:
                self.length(None, string=t is Prim.STRING)
                return
            raw = value.encode("utf-8") if t is Prim.STRING else base64.b64decode(value)
            self.length(len(raw), string=t is Prim.STRING)
            self.out += raw
        elif t in _FIXED:
            self.out += _FIXED[t].pack(value)
        elif t is Prim.BOOL:
            self.out.append(1 if value else 0)
        elif t is Prim.UUID:
            self.out += uuid_bytes(value)
        elif t is Prim.FLOAT64:
            number = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}.get(
                value, value
            )
            self.out += struct.pack(">d", number)
        else:  # pragma: no cover
            raise AssertionError(t)


def encode_message(
    msg: MessageType,
    data: dict[str, Any],
    version: int,
    *,
    unknown_tags: dict[str, list[tuple[int, bytes]]] | None = None,
) -> bytes:
    """The bytes of `data` (a full view) as `msg` at `version`.

    `unknown_tags` adds raw tagged fields, by the JSON pointer of the struct that holds them."""
    enc = _Encoder(msg, version, unknown_tags or {})
    enc.struct(msg.struct, data, "")
    return bytes(enc.out)


# ------------------------------------------------------------------------------------------------ strategies

_SURROGATES: tuple[Literal["Cs"]] = ("Cs",)
_TEXT = st.text(st.characters(exclude_categories=_SURROGATES), max_size=12)
_BYTES = st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode("ascii"))
_UUIDS = st.binary(min_size=16, max_size=16).map(uuid_to_str)


def _floats() -> st.SearchStrategy[Any]:
    def to_view(x: float) -> Any:
        if x != x:
            return "NaN"
        if x in (float("inf"), float("-inf")):
            return "Infinity" if x > 0 else "-Infinity"
        return x

    return st.floats(allow_nan=True, allow_infinity=True).map(to_view)


def _scalar(t: Prim, nullable: bool) -> st.SearchStrategy[Any]:
    if t in _RANGES:
        lo, hi = _RANGES[t]
        base: st.SearchStrategy[Any] = st.integers(lo, hi)
    elif t is Prim.BOOL:
        base = st.booleans()
    elif t is Prim.UUID:
        base = _UUIDS
    elif t is Prim.FLOAT64:
        base = _floats()
    elif t is Prim.STRING:
        base = _TEXT
    else:
        base = _BYTES
    return st.one_of(st.none(), base) if nullable else base


def _field_values(f: Field, version: int) -> st.SearchStrategy[Any]:
    nullable = version in f.nullable
    t = f.type
    if isinstance(t, StructType):
        inner = struct_values(t, version)
        return st.one_of(st.none(), inner) if nullable else inner
    if isinstance(t, ArrayOf):
        element = t.element
        items = (
            struct_values(element, version) if isinstance(element, StructType) else _scalar(element, False)
        )
        arrays = st.lists(items, max_size=3)
        return st.one_of(st.none(), arrays) if nullable else arrays
    return _scalar(t, nullable)


def struct_values(st_type: StructType, version: int) -> st.SearchStrategy[dict[str, Any]]:
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for f in st_type.fields:
        if version in f.versions:
            values = _field_values(f, version)
            if version in f.tagged:
                values = st.one_of(st.just(default_value(f)), values)
            parts[f.name] = values
        else:
            parts[f.name] = st.just(default_value(f))
    return st.fixed_dictionaries(parts)


def full_values(msg: MessageType, version: int) -> st.SearchStrategy[dict[str, Any]]:
    """Full-view dicts of `msg` at `version`."""
    return struct_values(msg.struct, version)


def json_view(msg: MessageType, data: dict[str, Any], version: int) -> dict[str, Any]:
    """What `decode_message` returns (view="json") for the full view `data`."""
    return _json_struct(msg.struct, data, version)


def _json_struct(st_type: StructType, data: dict[str, Any], version: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in st_type.fields:
        if version not in f.versions:
            continue
        value = data[f.name]
        if version in f.tagged and is_default(f, value):
            continue
        out[f.name] = _json_value(f, value, version)
    return out


def _json_value(f: Field, value: Any, version: int) -> Any:
    t = f.type
    if value is None:
        return None
    if isinstance(t, StructType):
        return _json_struct(t, value, version)
    if isinstance(t, ArrayOf) and isinstance(t.element, StructType):
        element = t.element
        return [_json_struct(element, item, version) for item in value]
    return value


def all_versions(msg: MessageType) -> list[int]:
    return list(range(msg.valid.lo, msg.valid.hi + 1))
