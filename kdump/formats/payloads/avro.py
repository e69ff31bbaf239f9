"""Avro values with fastavro: a registry schema (and the named types its references define) parsed
once, then each value read without a schema in front, as the registry's serializers write it.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable, Sequence
from typing import Any

from kdump.errors import DecodeError
from kdump.formats.payloads import missing


def _fastavro() -> Any:
    try:
        import fastavro
    except ImportError:
        raise missing("fastavro", "decoding Avro") from None
    return fastavro


def avro_reader(schema: str, references: Sequence[str] = (), skip: int = 0) -> Callable[[bytes], Any]:
    """A function that decodes one Avro value written with `schema` (after `skip` bytes: the wire
    format's prefix).

    `references` are the schema texts of the referenced schemas, dependencies first: the named
    types they define are what `schema` may use by name (Confluent's Avro references).

    Raises:
        DecodeError: a schema that does not parse.
    """
    fastavro = _fastavro()
    named: dict[str, Any] = {}
    try:
        for text in references:
            fastavro.parse_schema(json.loads(text), named_schemas=named)
        parsed = fastavro.parse_schema(json.loads(schema), named_schemas=named)
    except Exception as exc:  # fastavro raises several kinds (SchemaParseException, KeyError, ...)
        raise DecodeError(f"the Avro schema does not parse: {exc}") from None
    read = fastavro.schemaless_reader
    bytes_io = io.BytesIO

    def decode(data: bytes) -> Any:
        bio = bytes_io(data)
        if skip:
            bio.seek(skip)
        try:
            value = read(bio, parsed, None)
        except Exception as exc:  # EOFError, UnicodeDecodeError, IndexError, ValueError, ...
            raise DecodeError(f"not an Avro value of this schema: {type(exc).__name__}: {exc}") from None
        left = len(data) - bio.tell()
        if left:
            raise DecodeError(f"{left} bytes left over after the Avro value: not written with this schema")
        return value

    return decode


def _float_fields(schema: Any) -> list[str] | None:
    """The fields of a top-level record whose type is float or double (or a union holding one),
    when no float lies deeper; None when one does (or the schema is not a record)."""
    if not isinstance(schema, dict) or schema.get("type") != "record":
        return None
    names = []
    for f in schema.get("fields", []):
        t = f.get("type")
        branches = t if isinstance(t, list) else [t]
        if any(
            b in ("float", "double") or (isinstance(b, dict) and b.get("type") in ("float", "double"))
            for b in branches
        ):
            names.append(f["name"])
        elif '"float"' in json.dumps(t) or '"double"' in json.dumps(t):
            return None
    return names


def finite_check(schema: str, references: Sequence[str] = ()) -> Callable[[Any], bool] | None:
    """How to tell that a decoded value holds only finite floats: None when the schema holds no
    float or double; a look at the top-level fields that hold them when none lies deeper; else a
    look at every part of the value."""
    from kdump.formats.payloads.values import all_finite

    texts = [schema, *references]
    if not any('"float"' in t or '"double"' in t for t in texts):
        return None
    try:
        names = None if references else _float_fields(json.loads(schema))
    except ValueError:
        names = None
    if names is None:
        return all_finite
    isfinite = math.isfinite

    def check(value: Any) -> bool:
        for name in names:
            x = value[name]
            if x.__class__ is float and not isfinite(x):
                return False
        return True

    return check
