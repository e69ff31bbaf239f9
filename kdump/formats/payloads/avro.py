"""Avro values with fastavro: a registry schema (and the named types its references define) parsed
once, then each value read without a schema in front, as the registry's serializers write it.
"""

from __future__ import annotations

import functools
import io
import json
import math
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

from kdump.errors import DecodeError
from kdump.formats.payloads import missing
from kdump.formats.payloads.limits import AvroItemBudget


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
        raise DecodeError(f"the Avro schema does not parse: {describe_failure(exc)}") from None
    read = fastavro.schemaless_reader
    bytes_io = io.BytesIO
    budget = _budget(schema, references)

    def decode(data: bytes) -> Any:
        if budget is not None:
            budget.check(data, skip)  # before fastavro builds a list of millions of items
        bio = bytes_io(data)
        if skip:
            bio.seek(skip)
        try:
            value = read(bio, parsed, None)
        except Exception as exc:  # EOFError, UnicodeDecodeError, IndexError, ValueError, ...
            raise DecodeError(f"not an Avro value of this schema: {describe_failure(exc)}") from None
        left = len(data) - bio.tell()
        if left:
            raise DecodeError(f"{left} bytes left over after the Avro value: not written with this schema")
        return value

    return decode


def _budget(schema: str, references: Sequence[str]) -> AvroItemBudget | None:
    """The item budget of a schema that has arrays of zero-size items (None: no need to walk)."""
    try:
        budget = AvroItemBudget(schema, list(references))
    except (ValueError, TypeError, AttributeError, KeyError, RecursionError):
        return None
    return budget if budget.amplifies else None


_OBJECT_REPR = re.compile(r"\s*(from|in|of)?\s*<[^<>]* (object )?at 0x[0-9a-fA-F]+>")


def describe_failure(exc: BaseException) -> str:
    """Why a value did not decode, in words: never a Python repr or an object's address (fastavro's
    EOFError says `cannot read boolean from <_io.BytesIO object at 0x...>`, or nothing at all)."""
    text = _OBJECT_REPR.sub("", str(exc)).strip()
    if isinstance(exc, EOFError):
        return (
            f"the value ends before its schema does ({text})"
            if text
            else "the value ends before its schema does"
        )
    if isinstance(exc, UnicodeDecodeError):
        return f"a string is not UTF-8 (byte {exc.start})"
    if not text:
        return f"it does not fit the schema ({type(exc).__name__})"
    return text


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


def _compiled() -> Any:
    """The compiled Avro-to-JSON module, or None (not built, or `KDUMP_PURE_PYTHON=1`)."""
    from kdump.formats import fast_records

    if os.environ.get(fast_records.PURE_PYTHON_ENV, "") not in ("", "0"):
        return None
    try:
        from kdump.formats import _avrojson
    except ImportError:
        return None
    return _avrojson


_PRIMITIVES = {"null": 0, "boolean": 1, "int": 2, "long": 3, "float": 4, "double": 5, "string": 6}
_ENUM, _RECORD, _ARRAY, _MAP, _UNION = 7, 8, 9, 10, 11


class _NotCompiled(Exception):
    """A schema part the compiled path does not take (bytes, fixed, logical types, recursion)."""


def _program(schema: Any, named: dict[str, Any], namespace: str, defining: set[str]) -> tuple[Any, ...]:
    """The tuple tree `_avrojson.to_json` walks (see there)."""
    import orjson

    def full(name: str, ns: str) -> str:
        return name if "." in name or not ns else f"{ns}.{name}"

    if isinstance(schema, str):
        if schema in _PRIMITIVES:
            return (_PRIMITIVES[schema],)
        key = full(schema, namespace)
        for candidate in (key, schema):
            if candidate in defining:
                raise _NotCompiled("a recursive type")
            if candidate in named:
                found: tuple[Any, ...] = named[candidate]
                return found
        raise _NotCompiled(f"unknown type {schema!r}")
    if isinstance(schema, list):
        return (_UNION, tuple(_program(b, named, namespace, defining) for b in schema))
    if not isinstance(schema, dict) or "logicalType" in schema:
        raise _NotCompiled("a logical type")
    kind = schema.get("type")
    if kind in ("record", "error", "enum"):
        name = full(str(schema["name"]), str(schema.get("namespace", namespace)))
        inner_ns = name.rpartition(".")[0]
        if kind == "enum":
            node: tuple[Any, ...] = (_ENUM, tuple(orjson.dumps(str(s)) for s in schema["symbols"]))
        else:
            defining.add(name)
            fields = []
            for i, f in enumerate(schema.get("fields", [])):
                prefix = ("{" if i == 0 else ",").encode() + orjson.dumps(str(f["name"])) + b":"
                fields.append((prefix, _program(f["type"], named, inner_ns, defining)))
            defining.discard(name)
            node = (_RECORD, tuple(fields))
        named[name] = node
        return node
    if kind == "array":
        return (_ARRAY, _program(schema["items"], named, namespace, defining))
    if kind == "map":
        return (_MAP, _program(schema["values"], named, namespace, defining))
    if kind in _PRIMITIVES:
        return (_PRIMITIVES[kind],)
    raise _NotCompiled(f"type {kind!r}")


def avro_json(
    schema: str, references: Sequence[str] = (), skip: int = 0
) -> Callable[[bytes], bytes | None] | None:
    """The compiled path: a function writing one Avro value (after `skip` bytes) as the JSON text
    `avro_reader` and `values.JsonWriter` give, or None where it declines; None when the module
    is not there or the schema holds a part it does not take."""
    compiled = _compiled()
    if compiled is None or _budget(schema, references) is not None:
        # Arrays of zero-size items: the Python reader, with the walk that bounds them, takes these.
        return None
    named: dict[str, Any] = {}
    try:
        for text in references:
            _program(json.loads(text), named, "", set())
        program = _program(json.loads(schema), named, "", set())
    except (_NotCompiled, ValueError, KeyError, TypeError, AttributeError):
        return None
    render: Callable[[bytes], bytes | None] = functools.partial(compiled.to_json, program, skip)
    return render
