"""A small engine for the binary format of Kafka's generated messages, driven by field tables in Python.

Kafka describes most of its internal records (consumer offsets, transaction state, KRaft metadata and control
records, the consumer protocol) as *messages*: an ordered list of typed fields, each present in a range of
versions. The bytes of a message are its fields one after the other, with no names and no framing:

* fixed-size big-endian integers (`int8`, `int16`, `uint16`, `int32`, `uint32`, `int64`), `float64`
  (IEEE 754), `bool` (one byte, non-zero is true) and `uuid` (16 bytes);
* `string` and `bytes`: a length, then that many bytes (strings are UTF-8). In a message's *flexible*
  versions the length is "compact": an unsigned varint holding length + 1. Otherwise it is an `int16`
  (string) or `int32` (bytes). A negative length (compact: 0) is null, allowed only in the field's
  nullable versions;
* arrays: a count (compact `uvarint` count + 1 in flexible versions, `int32` otherwise), then the elements;
* nested structs: their fields inline. A nullable struct is preceded by a presence marker: an `int8` (negative
  means null) or, for a tagged struct, an unsigned varint (0 means null);
* in flexible versions every struct ends with a *tagged field* section: `uvarint` count, then for each field a
  `uvarint` tag, a `uvarint` size and the field's bytes. Tags the table declares for the version are decoded
  into their fields; tags it does not know are kept raw (`UnknownTaggedField`). A field whose version range
  does not include the decoded version is absent from the bytes and takes its default.

The engine follows the reader Kafka generates from its JSON schema files, including its leniencies:
unsigned varints are read as Java `int`s (five bytes at most, the high bits of the fifth byte dropped), a
negative tagged field count reads as zero, the size of a known tag is not checked against the bytes its
field used, and invalid UTF-8 becomes U+FFFD exactly where Java puts them (`java_utf8_decode`).

What `decode_message` returns, the *JSON view*, is what Kafka's generated `*JsonConverter.write` builds, so
that `kafka_json` of it is the text `kafka-dump-log.sh` prints:

* keys are the fields' camelCase names, in declaration order;
* a field absent in the version is left out; a tagged field is left out while it holds its default;
* integers and bools are Python `int`/`bool`; `float64` is a `float`, or the strings `"NaN"`, `"Infinity"`,
  `"-Infinity"` as Jackson writes non-finite numbers;
* `string` is `str`, `bytes` is standard base64 with padding,
  `uuid` is Kafka's `Uuid.toString()` (URL-safe base64 without padding, 22 characters);
* structs are `dict`s, arrays `list`s, null is `None`.

`view="full"` instead gives every field the table declares for the message, absent ones with their defaults.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final, Literal

from kdump.errors import CorruptFieldError, DecodeError, TruncatedError
from kdump.formats.internal.java_text import float_to_json as float_to_json
from kdump.formats.internal.java_text import java_double_to_string as java_double_to_string
from kdump.formats.internal.java_text import java_utf8_decode as java_utf8_decode
from kdump.formats.internal.java_text import json_string as json_string
from kdump.formats.internal.java_text import kafka_json as kafka_json
from kdump.formats.internal.reader import ZERO_UUID as ZERO_UUID
from kdump.formats.internal.reader import Buffer as Buffer
from kdump.formats.internal.reader import Reader as Reader
from kdump.formats.internal.reader import to_int32 as to_int32
from kdump.formats.internal.reader import uuid_to_str as uuid_to_str
from kdump.formats.internal.releases import KafkaRelease, parse_release
from kdump.formats.internal.versions import ALL_VERSIONS as ALL_VERSIONS
from kdump.formats.internal.versions import MAX_VERSION as MAX_VERSION
from kdump.formats.internal.versions import NO_VERSIONS as NO_VERSIONS
from kdump.formats.internal.versions import Versions as Versions

View = Literal["json", "full"]

MAX_STRING_LENGTH: Final = 0x7FFF


class UnsupportedVersionError(DecodeError):
    """A message version outside the range the field table knows."""


class Prim(Enum):
    """The scalar and variable-length field types."""

    BOOL = "bool"
    INT8 = "int8"
    INT16 = "int16"
    UINT16 = "uint16"
    INT32 = "int32"
    UINT32 = "uint32"
    INT64 = "int64"
    FLOAT64 = "float64"
    UUID = "uuid"
    STRING = "string"
    BYTES = "bytes"


BOOL: Final = Prim.BOOL
INT8: Final = Prim.INT8
INT16: Final = Prim.INT16
UINT16: Final = Prim.UINT16
INT32: Final = Prim.INT32
UINT32: Final = Prim.UINT32
INT64: Final = Prim.INT64
FLOAT64: Final = Prim.FLOAT64
UUID: Final = Prim.UUID
STRING: Final = Prim.STRING
BYTES: Final = Prim.BYTES


class _Default(Enum):
    TYPE = "the type's default"


TYPE_DEFAULT: Final = _Default.TYPE
"""Marks a field whose default is its type's (0, false, "", empty, zero uuid, empty struct)."""


@dataclass(frozen=True, slots=True)
class ArrayOf:
    """An array whose elements are a scalar, a string or a struct."""

    element: Prim | StructType


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a struct. `default` is in the JSON view (`None` for null)."""

    name: str
    type: Prim | ArrayOf | StructType
    versions: Versions
    nullable: Versions = NO_VERSIONS
    tagged: Versions = NO_VERSIONS
    tag: int | None = None
    default: Any = TYPE_DEFAULT
    since: KafkaRelease | None = None  # the release that added this tagged field (None: 3.8 or earlier)

    def __post_init__(self) -> None:
        if not self.tagged.empty and self.tag is None:
            raise ValueError(f"field {self.name} has tagged versions but no tag")


@dataclass(frozen=True, slots=True)
class StructType:
    """A struct: its fields, and the versions its own reader accepts.

    `common=True` for Kafka's "commonStructs" (and for top-level messages): their readers do not check the
    version. An inline struct's reader rejects versions beyond its message's valid range, which only matters
    when a message is decoded with `lenient=True`.
    """

    name: str
    fields: tuple[Field, ...]
    versions: Versions = ALL_VERSIONS
    common: bool = False
    tags: dict[int, Field] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        tags: dict[int, Field] = {}
        for f in self.fields:
            if f.tag is not None and not _intersect(f.versions, f.tagged).empty:
                tags[f.tag] = f
        object.__setattr__(self, "tags", tags)


@dataclass(frozen=True, slots=True)
class MessageType:
    """A top-level message: its struct, valid versions, flexible versions and (metadata records) api key."""

    name: str
    valid: Versions
    flexible: Versions
    struct: StructType
    api_key: int | None = None
    since: tuple[tuple[int, KafkaRelease], ...] = ()
    """(version, the Kafka release that added it) for versions added after 3.8; for a metadata record
    added after 3.8, version 0's entry is the release that added the record type."""


@dataclass(frozen=True, slots=True)
class UnknownTaggedField:
    """A tagged field whose tag the table does not declare, kept raw.

    `path` is a JSON pointer to the struct that held it (`""` for the message itself, `/members/0`, ...).
    """

    path: str
    tag: int
    data: bytes

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "tag": self.tag, "data": base64.b64encode(self.data).decode("ascii")}


@dataclass(frozen=True, slots=True)
class DecodedMessage:
    """The JSON view of a message, where its bytes ended, and the tagged fields nobody declared."""

    data: dict[str, Any]
    end: int
    unknown_tagged_fields: tuple[UnknownTaggedField, ...] = ()


# --------------------------------------------------------------------------------------------- table helpers


def versions(spec: str) -> Versions:
    """Shorthand for `Versions.parse`."""
    return Versions.parse(spec)


def fld(
    name: str,
    type_: Prim | ArrayOf | StructType,
    vers: str = "0+",
    *,
    nullable: str = "none",
    tagged: str = "none",
    tag: int | None = None,
    default: Any = TYPE_DEFAULT,
    since: str | None = None,
) -> Field:
    """Declare a field with Kafka's version-range strings (`"0+"`, `"1-3"`, `"none"`); `since` is the Kafka
    release (`"4.3"`) that added a tagged field."""
    return Field(
        name,
        type_,
        Versions.parse(vers),
        Versions.parse(nullable),
        Versions.parse(tagged),
        tag,
        default,
        None if since is None else parse_release(since),
    )


def struct_of(name: str, *fields: Field, vers: str = "0+", common: bool = False) -> StructType:
    """Declare an inline struct (`common=True` for one of Kafka's commonStructs)."""
    return StructType(name, tuple(fields), Versions.parse(vers), common)


def message(
    name: str,
    valid: str,
    flexible: str,
    *fields: Field,
    api_key: int | None = None,
    since: dict[int, str] | None = None,
) -> MessageType:
    """Declare a top-level message; `since` maps a version added after Kafka 3.8 to its release."""
    valid_versions = Versions.parse(valid)
    return MessageType(
        name,
        valid_versions,
        Versions.parse(flexible),
        StructType(name, tuple(fields), valid_versions, common=True),
        api_key,
        tuple((v, parse_release(r)) for v, r in sorted((since or {}).items())),
    )


def _intersect(a: Versions, b: Versions) -> Versions:
    return Versions(max(a.lo, b.lo), min(a.hi, b.hi))


# ------------------------------------------------------------------------------------------------- reading


_FIXED_READ = {
    Prim.INT8: Reader.int8,
    Prim.INT16: Reader.int16,
    Prim.UINT16: Reader.uint16,
    Prim.INT32: Reader.int32,
    Prim.UINT32: Reader.uint32,
    Prim.INT64: Reader.int64,
}


class _Decoder:
    """Decodes one message at one version; `cv` is the version the field conditions test."""

    __slots__ = ("cv", "flexible", "lenient", "reader", "top", "unknown", "version", "view")

    def __init__(self, msg: MessageType, reader: Reader, version: int, *, lenient: bool, view: View) -> None:
        self.top = msg
        self.reader = reader
        self.version = version
        self.lenient = lenient
        self.view = view
        self.unknown: list[UnknownTaggedField] = []
        # Kafka's generated code tests the version against ranges clipped to the valid versions, so a version
        # outside them (read leniently) behaves like the nearest valid one.
        self.cv = min(max(version, msg.valid.lo), msg.valid.hi)
        self.flexible = self.cv in msg.flexible

    def read_struct(self, st: StructType, path: str) -> dict[str, Any]:
        cv = self.cv
        if not st.common and self.version not in self.top.valid:
            v = self.version
            if (v > self.top.valid.hi and st.versions.hi > self.top.valid.hi) or (
                v < self.top.valid.lo and st.versions.lo < self.top.valid.lo
            ):
                raise UnsupportedVersionError(f"Can't read version {v} of {st.name}")
        values: dict[str, Any] = {}
        tagged_names: set[str] = set()
        for f, tagged in _struct_plan(st, cv):
            if tagged:
                tagged_names.add(f.name)
                values[f.name] = default_value(f)
            else:
                values[f.name] = self.read_field(f, path, tagged=False)
        if self.flexible:
            self.read_tagged_section(st, path, values)
        out: dict[str, Any] = {}
        for f in st.fields:
            if f.name in values:
                value = values[f.name]
                if self.view == "json" and f.name in tagged_names and is_default(f, value):
                    continue
                out[f.name] = value
            elif self.view == "full":
                out[f.name] = default_value(f)
        return out

    def read_tagged_section(self, st: StructType, path: str, values: dict[str, Any]) -> None:
        r = self.reader
        where = f"tagged fields of {st.name}{' at ' + path if path else ''}"
        count = r.uvarint(f"{where}: count")
        for _ in range(max(count, 0)):
            tag = r.uvarint(f"{where}: tag")
            size = r.uvarint(f"{where}: size of tag {tag}")
            f = st.tags.get(tag)
            if f is None:
                if size < 0:
                    raise CorruptFieldError(f"{where}: tag {tag} has negative size {size}")
                self.unknown.append(UnknownTaggedField(path, tag, r.take(size, f"{where}: tag {tag}")))
                continue
            if self.cv not in _intersect(f.versions, f.tagged):
                raise CorruptFieldError(f"{where}: tag {tag} is not valid for version {self.version}")
            values[f.name] = self.read_field(f, path, tagged=True)

    def read_field(self, f: Field, path: str, *, tagged: bool) -> Any:
        t = f.type
        what = f"{path}/{f.name}"
        nullable = self.cv in f.nullable
        if isinstance(t, StructType):
            if nullable:
                if tagged:
                    present = self.reader.uvarint(f"{what}: presence") > 0
                else:
                    present = self.reader.int8(f"{what}: presence") >= 0
                if not present:
                    return None
            return self.read_struct(t, what)
        if isinstance(t, ArrayOf):
            count = self.read_length(what)
            if count < 0:
                if nullable:
                    return None
                raise _not_nullable(f.name, what)
            if count > self.reader.remaining:
                left = self.reader.remaining
                raise TruncatedError(
                    f"{what}: tried to allocate a collection of size {count}, but there are only {left} bytes remaining",
                    java=f"Tried to allocate a collection of size {count}, but there are only {left} bytes remaining.",
                )
            element = t.element
            if isinstance(element, StructType):
                return [self.read_struct(element, f"{what}/{i}") for i in range(count)]
            return [self.read_scalar(element, f"{what}/{i}", f.name, nullable=False) for i in range(count)]
        return self.read_scalar(t, what, f.name, nullable=nullable)

    def read_length(self, what: str, *, string: bool = False) -> int:
        r = self.reader
        if self.flexible:
            return to_int32(r.uvarint(f"{what}: length") - 1)
        if string:
            return r.int16(f"{what}: length")
        return r.int32(f"{what}: length")

    def read_scalar(self, t: Prim, what: str, name: str, *, nullable: bool) -> Any:
        r = self.reader
        if t is Prim.STRING or t is Prim.BYTES:
            is_string = t is Prim.STRING
            size = self.read_length(what, string=is_string)
            if size < 0:
                if nullable:
                    return None
                raise _not_nullable(name, what)
            if is_string:
                if size > MAX_STRING_LENGTH:
                    raise CorruptFieldError(f"string field {name} had invalid length {size} ({what})")
                return java_utf8_decode(r.take(size, what))
            return base64.b64encode(r.take(size, what)).decode("ascii")
        read = _FIXED_READ.get(t)
        if read is not None:
            return read(r, what)
        if t is Prim.BOOL:
            return r.int8(what) != 0
        if t is Prim.UUID:
            return uuid_to_str(r.uuid_bytes(what))
        if t is Prim.FLOAT64:
            return float_to_json(r.float64(what))
        raise AssertionError(f"unhandled type {t}")  # pragma: no cover


def decode_message(
    msg: MessageType,
    buf: Buffer,
    version: int,
    *,
    pos: int = 0,
    end: int | None = None,
    lenient: bool = False,
    view: View = "json",
    path: str = "",
) -> DecodedMessage:
    """Decode `msg` at `version` from `buf[pos:end]`; bytes after the message are left alone.

    A version outside `msg.valid` raises `UnsupportedVersionError`, unless `lenient`: then the bytes are read
    the way Kafka's generated reader reads them (as the nearest valid version; inline structs refuse).
    Bytes that do not decode raise `TruncatedError` or `CorruptFieldError`.
    """
    if version not in msg.valid and not lenient:
        raise UnsupportedVersionError(
            f"{msg.name} version {version} is outside the known versions {msg.valid}"
        )
    reader = Reader(buf, pos, end)
    decoder = _Decoder(msg, reader, version, lenient=lenient, view=view)
    data = decoder.read_struct(msg.struct, path)
    return DecodedMessage(data, reader.pos, tuple(decoder.unknown))


# The fields of a struct present at a version, each with whether it is tagged there: a metadata replay
# decodes tens of thousands of records of a few (struct, version) pairs, and testing every field's version
# ranges per record was a quarter of its time. Keyed by id(st); the struct is kept in the value so the id
# stays its own.
_PLANS: dict[tuple[int, int], tuple[StructType, tuple[tuple[Field, bool], ...]]] = {}


def _struct_plan(st: StructType, cv: int) -> tuple[tuple[Field, bool], ...]:
    cached = _PLANS.get((id(st), cv))
    if cached is not None and cached[0] is st:
        return cached[1]
    plan = tuple((f, cv in f.tagged) for f in st.fields if cv in f.versions)
    _PLANS[(id(st), cv)] = (st, plan)
    return plan


def _not_nullable(name: str, what: str) -> CorruptFieldError:
    text = f"non-nullable field {name} was serialized as null"
    return CorruptFieldError(f"{text} ({what})", java=text)


# ------------------------------------------------------------------------------------------------ defaults


def default_value(f: Field) -> Any:
    """A field's default in the JSON view."""
    if f.default is not TYPE_DEFAULT:
        return f.default
    t = f.type
    if isinstance(t, ArrayOf):
        return []
    if isinstance(t, StructType):
        return {g.name: default_value(g) for g in t.fields}
    return _PRIM_DEFAULTS[t]


_PRIM_DEFAULTS: Final[dict[Prim, Any]] = {
    Prim.BOOL: False,
    Prim.INT8: 0,
    Prim.INT16: 0,
    Prim.UINT16: 0,
    Prim.INT32: 0,
    Prim.UINT32: 0,
    Prim.INT64: 0,
    Prim.FLOAT64: 0.0,
    Prim.UUID: ZERO_UUID,
    Prim.STRING: "",
    Prim.BYTES: "",
}


def is_default(f: Field, value: Any) -> bool:
    """Kafka's "non-default value" test for tagged fields, on JSON-view values."""
    default = default_value(f)
    if default is None or value is None:
        return value is None and default is None
    if f.type is Prim.FLOAT64:
        return isinstance(value, float) and value == float(default)
    return bool(value == default)
