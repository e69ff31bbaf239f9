"""The options and events of decoding keys and values (`ops.payloads.decode`), in a module of their own
so that the command line and the renderers import them without the decoders' imports."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kdump.formats.records import Record

# The schema sources, in their default order: _schemas partitions, local files, a registry URL.
SOURCES = ("topic", "files", "registry")
# What keys and values may be decoded as (`values.TYPED` after the first two).
TYPES = ("raw", "registry", "int32", "int64", "float", "double", "uuid", "json")


@dataclass(frozen=True, slots=True)
class PayloadOptions:
    """How keys and values are decoded, and where schemas come from (picklable, for workers)."""

    key_type: str = "raw"
    value_type: str = "raw"
    schemas: tuple[str, ...] = ()  # `_schemas` partitions, log dirs holding one, or segments
    schema_files: tuple[tuple[str, str], ...] = ()  # (id or subject, path)
    registry: str | None = None
    order: tuple[str, ...] = SOURCES
    where: str | None = None  # a jq expression (render.where_filter applies it)
    encoding: str = "utf8"  # how bytes inside decoded values are shown

    @property
    def decoding(self) -> bool:
        """Whether keys or values are decoded at all."""
        return self.key_type != "raw" or self.value_type != "raw"


class Decoded(NamedTuple):
    """One key or value as shown: its JSON text when it decoded (else None: shown raw)."""

    json: bytes | None
    schema_id: int | None
    format: str | None


RAW = Decoded(None, None, None)


class PayloadRecord(NamedTuple):
    """A record whose key and value were decoded (or stay raw)."""

    record: Record
    key: Decoded
    value: Decoded


@dataclass(slots=True)
class PayloadTally:
    """What the keys and values of one file decoded to."""

    file: str
    decoded: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))  # by format
    failed: int = 0
    not_framed: int = 0  # `registry` asked, but no schema id in the payload or a header
    unknown_schema: int = 0
    deleted_schema: int = 0
    unknown: dict[str, list[int]] = field(default_factory=dict)  # ref label -> [count, first offset]
    deleted: dict[str, list[int]] = field(default_factory=dict)

    def merge(self, other: PayloadTally) -> None:
        """Add another tally of the same file (a worker's chunk)."""
        for k, n in other.decoded.items():
            self.decoded[k] = self.decoded.get(k, 0) + n
        self.failed += other.failed
        self.not_framed += other.not_framed
        self.unknown_schema += other.unknown_schema
        self.deleted_schema += other.deleted_schema
        for mine, theirs in ((self.unknown, other.unknown), (self.deleted, other.deleted)):
            for label, (n, first) in theirs.items():
                have = mine.setdefault(label, [0, first])
                have[0] += n
                have[1] = min(have[1], first)

    def to_row(self) -> dict[str, Any]:
        """The JSON object of the tally (type `payloads`)."""
        return {
            "type": "payloads",
            "file": self.file,
            "decoded": {k: n for k, n in sorted(self.decoded.items()) if n},
            "failed": self.failed,
            "not_framed": self.not_framed,
            "unknown_schema": self.unknown_schema,
            "deleted_schema": self.deleted_schema,
            "unknown_schemas": sorted(self.unknown),
            "deleted_schemas": sorted(self.deleted),
        }
