"""Payloads as people read them: the Schema Registry wire format, the registry's own `_schemas`
records, and decoders for Avro, Protobuf, JSON Schema and plain typed keys and values.

Pure decoding, no I/O. The libraries that do the decoding (fastavro, the protobuf runtime) are
imported only when a payload of their kind is decoded; a missing one is a `PathError` naming the
install command (`pip install 'kdump[payloads]'`).
"""

from __future__ import annotations

from kdump.errors import PathError

INSTALL = "pip install 'kdump[payloads]'"


def missing(library: str, what: str) -> PathError:
    """The error for a missing optional library: one sentence with the install command (exit 3)."""
    return PathError(f"{what} needs {library}: {INSTALL}")
