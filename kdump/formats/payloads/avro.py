"""Avro values with fastavro: a registry schema (and the named types its references define) parsed
once, then each value read without a schema in front, as the registry's serializers write it.
"""

from __future__ import annotations

import io
import json
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


def avro_reader(schema: str, references: Sequence[str] = ()) -> Callable[[bytes], Any]:
    """A function that decodes one Avro value written with `schema`.

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

    def decode(data: bytes) -> Any:
        bio = io.BytesIO(data)
        try:
            value = read(bio, parsed, None)
        except Exception as exc:  # EOFError, UnicodeDecodeError, IndexError, ValueError, ...
            raise DecodeError(f"not an Avro value of this schema: {type(exc).__name__}: {exc}") from None
        left = len(data) - bio.tell()
        if left:
            raise DecodeError(f"{left} bytes left over after the Avro value: not written with this schema")
        return value

    return decode
