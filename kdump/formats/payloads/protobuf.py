"""Protobuf values with the protobuf runtime: a schema's file descriptors (its own and those of every
import, resolved through the registry's references) built into a pool of their own, the message
picked by the payload's message-index list, the value shown as the runtime's canonical JSON mapping
(`json_format.MessageToDict`, field names as written in the .proto, fields at their defaults shown).

A registry stores a Protobuf schema as .proto text (Confluent's registry, in `_schemas`) or as a
base64 `FileDescriptorProto` (what confluent-kafka's Python serializer registers). The second is
read here; .proto text is compiled by `kdump.ops.payloads.proto_text` (it needs the compiler and files).
"""

from __future__ import annotations

import base64
import binascii
import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kdump.errors import DecodeError
from kdump.formats.payloads import missing
from kdump.formats.payloads.avro import describe_failure

# Imports every registry resolves without a reference: the runtime's own well-known types.
WELL_KNOWN_PREFIX = "google/protobuf/"


def _runtime() -> Any:
    try:
        from google.protobuf import descriptor_pb2
    except ImportError:
        raise missing("protobuf", "decoding Protobuf") from None
    return descriptor_pb2


def descriptor_from_base64(text: str) -> bytes | None:
    """The serialized `FileDescriptorProto` a schema text holds in base64, or None when the text
    is not that (then it is .proto source)."""
    stripped = text.strip()
    if not stripped or any(c in stripped for c in " \n;{}"):
        return None
    try:
        raw = base64.b64decode(stripped, validate=True)
    except (binascii.Error, ValueError):
        return None
    try:
        _runtime().FileDescriptorProto.FromString(raw)
    except Exception:
        return None
    return raw


def _well_known(name: str) -> bytes | None:
    if not name.startswith(WELL_KNOWN_PREFIX) or not name.endswith(".proto"):
        return None
    module = name[len(WELL_KNOWN_PREFIX) : -len(".proto")].replace("/", ".") + "_pb2"
    try:
        return bytes(importlib.import_module(f"google.protobuf.{module}").DESCRIPTOR.serialized_pb)
    except (ImportError, AttributeError):
        return None


class ProtobufSchema:
    """One registry schema's file and its imports, ready to decode values by message index."""

    def __init__(self, root: bytes, imports: Mapping[str, bytes]) -> None:
        """`root` is the schema's serialized `FileDescriptorProto`; `imports` those of the files it
        imports (directly or not), by file name. Well-known types need not be given.

        Raises:
            DecodeError: the descriptors do not build (a missing import, a clash, bad bytes).
        """
        descriptor_pb2 = _runtime()
        from google.protobuf import descriptor_pool

        self._pool = descriptor_pool.DescriptorPool()
        try:
            files = {n: descriptor_pb2.FileDescriptorProto.FromString(b) for n, b in imports.items()}
            main = descriptor_pb2.FileDescriptorProto.FromString(root)
        except Exception as exc:
            raise DecodeError(f"not a protobuf file descriptor: {describe_failure(exc)}") from None
        added: set[str] = set()

        def add(fdp: Any, trail: tuple[str, ...]) -> None:
            if fdp.name in added:
                return
            if fdp.name in trail:
                raise DecodeError(f"import cycle through {fdp.name}")
            for dep in fdp.dependency:
                if dep in files:
                    add(files[dep], (*trail, fdp.name))
                elif dep not in added:
                    wk = _well_known(dep)
                    if wk is None:
                        raise DecodeError(f"{fdp.name} imports {dep}, which no reference resolves")
                    add(descriptor_pb2.FileDescriptorProto.FromString(wk), (*trail, fdp.name))
            try:
                self._pool.Add(fdp)
            except Exception as exc:
                raise DecodeError(f"{fdp.name} does not build: {describe_failure(exc)}") from None
            added.add(fdp.name)

        add(main, ())
        self._main = main
        self._readers: dict[tuple[int, ...], Callable[[bytes], Any]] = {}

    def message_name(self, indexes: Sequence[int]) -> str:
        """The full name of the message the index list names."""
        return str(self._descriptor(indexes).full_name)

    def _descriptor(self, indexes: Sequence[int]) -> Any:
        # The indexes walk the file's messages in declaration order, then their nested messages.
        container = list(self._main.message_type)
        name = self._main.package
        if not indexes:
            raise DecodeError("empty message-index list")
        for depth, i in enumerate(indexes):
            if i >= len(container):
                raise DecodeError(
                    f"message index {list(indexes)} names no message (level {depth} has {len(container)})"
                )
            name = f"{name}.{container[i].name}" if name else container[i].name
            container = list(container[i].nested_type)
        return self._pool.FindMessageTypeByName(name)

    def reader(self, indexes: Sequence[int]) -> Callable[[bytes], Any]:
        """A function decoding one serialized message of the indexed type to its JSON mapping."""
        key = tuple(indexes)
        found = self._readers.get(key)
        if found is not None:
            return found
        from google.protobuf import json_format, message_factory

        cls = message_factory.GetMessageClass(self._descriptor(indexes))

        def decode(data: bytes) -> Any:
            try:
                msg = cls.FromString(data)
            except Exception as exc:
                raise DecodeError(
                    f"not a {cls.DESCRIPTOR.full_name} message: {describe_failure(exc)}"
                ) from None
            return json_format.MessageToDict(
                msg, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
            )

        self._readers[key] = decode
        return decode
