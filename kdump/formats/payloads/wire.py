"""The Schema Registry wire format: which schema a key or value was written with.

A serializer of Confluent's clients frames a payload in one of two ways (their `SchemaId` class,
identical in the Java and the Python client):

- in the payload: magic byte 0, the schema id as a 4-byte big-endian integer, then (Protobuf only)
  the message-index list, then the serialized message;
- in a header (`header.schema.id.serializer`, newer clients): `__key_schema_id` or
  `__value_schema_id` holds magic byte 1 and the schema's 16-byte GUID (most significant half
  first), then (Protobuf only) the message-index list; the payload is the bare serialized message.
  Deserializers also accept magic 0 and a 4-byte id in the header.

The message-index list names the message of a `.proto` file: a count then that many indexes, all
zigzag varints (Kafka's `ByteUtils.writeVarint`); the common case, the file's first message, is
written as the single byte 0 (a count of 0 meaning [0]).
"""

from __future__ import annotations

import uuid
from typing import NamedTuple

from kdump.errors import DecodeError
from kdump.formats.varint import decode_varint

KEY_SCHEMA_ID_HEADER = b"__key_schema_id"
VALUE_SCHEMA_ID_HEADER = b"__value_schema_id"
MAGIC_ID = 0
MAGIC_GUID = 1


class SchemaRef(NamedTuple):
    """Which schema: a registry id, or a GUID (the schema's MD5 as Confluent's registry gives it)."""

    schema_id: int | None
    guid: str | None

    def label(self) -> str:
        """`id 7` or `guid 8979...`."""
        return f"id {self.schema_id}" if self.schema_id is not None else f"guid {self.guid}"


class Framing(NamedTuple):
    """Where a payload's schema is named and where what the schema decodes starts.

    `indexes_at` is where a Protobuf message-index list starts, in `header` when the id came in a
    header, else in the payload (at `body`, which then moves past the list).
    """

    ref: SchemaRef
    body: int  # position in the payload of the serialized data (before any message indexes)
    header: bytes | None  # the header value that carried the id, or None: the payload prefix


def prefix_framing(data: bytes) -> Framing | None:
    """The framing of a payload that starts with magic 0 and a schema id, else None."""
    if len(data) < 5 or data[0] != MAGIC_ID:
        return None
    return Framing(SchemaRef(int.from_bytes(data[1:5], "big"), None), 5, None)


def header_ref(value: bytes) -> tuple[SchemaRef, int]:
    """The schema named by a `__key_schema_id` / `__value_schema_id` header value, and where its
    message-index list (Protobuf) starts.

    Raises:
        DecodeError: an unknown magic byte, or too few bytes for the id.
    """
    if not value:
        raise DecodeError("empty schema id header")
    if value[0] == MAGIC_ID:
        if len(value) < 5:
            raise DecodeError(f"schema id header of {len(value)} bytes: magic 0 needs 4 id bytes")
        return SchemaRef(int.from_bytes(value[1:5], "big"), None), 5
    if value[0] == MAGIC_GUID:
        if len(value) < 17:
            raise DecodeError(f"schema id header of {len(value)} bytes: magic 1 needs a 16-byte GUID")
        return SchemaRef(None, str(uuid.UUID(bytes=bytes(value[1:17])))), 17
    raise DecodeError(f"schema id header with unknown magic byte {value[0]}")


def header_value(headers: tuple[tuple[bytes, bytes | None], ...], name: bytes) -> bytes | None:
    """The first header of that name (the one deserializers read), or None."""
    for k, v in headers:
        if k == name:
            return v
    return None


def message_indexes(data: bytes, pos: int) -> tuple[list[int], int]:
    """The Protobuf message-index list at `pos`, and the position after it.

    Raises:
        DecodeError: a truncated list (or a varint over 5 bytes), a negative count or index, or a
            count the bytes cannot hold.
    """
    count, pos = decode_varint(data, pos)
    if count == 0:
        return [0], pos
    if count < 0 or count > len(data) - pos:
        raise DecodeError(f"message-index count {count} does not fit the {len(data) - pos} bytes left")
    out = []
    for _ in range(count):
        index, pos = decode_varint(data, pos)
        if index < 0:
            raise DecodeError(f"negative message index {index}")
        out.append(index)
    return out, pos
