"""The `kdump` data source's options, and the row ranges (`Bounds`) options and pushed-down
filters keep. Parsed once on the driver; picklable. pyspark is imported only to read a filter.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar, overload

from kdump.formats.batch import BatchHeader
from kdump.ops.dump.payload_events import TYPES, PayloadOptions
from kdump.spark.schema import LEVELS

if TYPE_CHECKING:
    from pyspark.sql.datasource import Filter

__all__ = ["DEFAULT_BATCH_ROWS", "DEFAULT_PACK_BYTES", "DEFAULT_SPLIT_BYTES", "Bounds", "ReadOptions"]

_T = TypeVar("_T")

DEFAULT_SPLIT_BYTES = 64 << 20
DEFAULT_PACK_BYTES = 4 << 20
DEFAULT_BATCH_ROWS = 10_000


@dataclass(frozen=True, slots=True)
class Bounds:
    """Row ranges to keep (all inclusive; None: unbounded), from options and pushed-down filters.

    Timestamps are in microseconds, Spark's unit, so comparisons with pushed-down literals are exact.
    """

    offset_lo: int | None = None
    offset_hi: int | None = None
    ts_lo_us: int | None = None
    ts_hi_us: int | None = None
    topics: frozenset[str] | None = None
    partitions: frozenset[int] | None = None

    @property
    def on_records(self) -> bool:
        """Whether records must be checked one by one."""
        return any(v is not None for v in (self.offset_lo, self.offset_hi, self.ts_lo_us, self.ts_hi_us))

    def intersect(self, other: Bounds) -> Bounds:
        """Both sets of bounds at once."""
        return Bounds(
            _max(self.offset_lo, other.offset_lo),
            _min(self.offset_hi, other.offset_hi),
            _max(self.ts_lo_us, other.ts_lo_us),
            _min(self.ts_hi_us, other.ts_hi_us),
            _both(self.topics, other.topics),
            _both(self.partitions, other.partitions),
        )

    def keeps_target(self, topic: str | None, partition: int | None) -> bool:
        """Whether rows of this topic and partition can pass."""
        if self.topics is not None and topic not in self.topics:
            return False
        return self.partitions is None or partition in self.partitions

    def keeps_offsets(self, first: int | None, next_offset: int | None) -> bool:
        """Whether offsets in [first, next_offset) can pass (None: unknown)."""
        if self.offset_lo is not None and next_offset is not None and next_offset <= self.offset_lo:
            return False
        return not (self.offset_hi is not None and first is not None and first > self.offset_hi)

    def keeps_batch(self, h: BatchHeader) -> bool:
        """Whether a batch can hold records that pass, by its header alone."""
        low = h.base_offset if h.base_offset is not None else h.last_offset
        if self.offset_lo is not None and h.last_offset < self.offset_lo and h.base_offset is not None:
            return False
        if self.offset_hi is not None and low > self.offset_hi:
            return False
        # maxTimestamp is trusted only when the checksum vouches for it (it covers the field).
        return not (self.ts_lo_us is not None and h.crc_ok and h.max_timestamp * 1000 < self.ts_lo_us)

    def keeps_record(self, offset: int, timestamp_ms: int) -> bool:
        """Whether one record passes."""
        if self.offset_lo is not None and offset < self.offset_lo:
            return False
        if self.offset_hi is not None and offset > self.offset_hi:
            return False
        us = timestamp_ms * 1000
        if self.ts_lo_us is not None and us < self.ts_lo_us:
            return False
        return not (self.ts_hi_us is not None and us > self.ts_hi_us)

    def with_filter(self, f: Filter, level: str) -> Bounds:
        """These bounds narrowed by one pushed-down filter (unchanged when it is not usable)."""
        from pyspark.sql.datasource import EqualTo, In

        attr: tuple[str, ...] = tuple(getattr(f, "attribute", ()))
        if len(attr) != 1:
            return self
        column = attr[0]
        if column in ("topic", "partition") and level in ("records", "batches"):
            values: list[Any] | None = None
            if isinstance(f, EqualTo):
                values = [f.value]
            elif isinstance(f, In):
                values = list(f.value)
            if values is None:
                return self
            if column == "topic":
                return self.intersect(Bounds(topics=frozenset(v for v in values if isinstance(v, str))))
            return self.intersect(Bounds(partitions=frozenset(v for v in values if isinstance(v, int))))
        if level != "records" or column not in ("offset", "timestamp"):
            return self
        lo, hi = _range_of(f, column)
        if column == "offset":
            return self.intersect(Bounds(offset_lo=lo, offset_hi=hi))
        return self.intersect(Bounds(ts_lo_us=lo, ts_hi_us=hi))


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _both(a: frozenset[_T] | None, b: frozenset[_T] | None) -> frozenset[_T] | None:
    return b if a is None else a if b is None else a & b


def _literal(value: Any, column: str) -> int | None:
    """A filter literal as an offset, or a timestamp in microseconds; None when not comparable."""
    if column == "offset":
        return int(value) if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(value, datetime):
        when: datetime = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
        delta = when - datetime(1970, 1, 1, tzinfo=UTC)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return None


def _range_of(f: Filter, column: str) -> tuple[int | None, int | None]:
    """The inclusive range a comparison filter allows (integers on both sides)."""
    from pyspark.sql.datasource import EqualTo, GreaterThan, GreaterThanOrEqual, In, LessThan, LessThanOrEqual

    if isinstance(f, In):
        values = [v for v in (_literal(x, column) for x in f.value) if v is not None]
        if len(values) != len(f.value) or not values:
            return None, None
        return min(values), max(values)
    value = _literal(getattr(f, "value", None), column)
    if value is None:
        return None, None
    if isinstance(f, EqualTo):
        return value, value
    if isinstance(f, GreaterThan):
        return value + 1, None
    if isinstance(f, GreaterThanOrEqual):
        return value, None
    if isinstance(f, LessThan):
        return None, value - 1
    if isinstance(f, LessThanOrEqual):
        return None, value
    return None, None


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """The data source's options, parsed once on the driver (picklable)."""

    paths: tuple[str, ...]
    level: str = "records"
    split_bytes: int = DEFAULT_SPLIT_BYTES
    pack_bytes: int = DEFAULT_PACK_BYTES
    batch_rows: int = DEFAULT_BATCH_ROWS
    leftovers: bool = False
    deep: bool = False
    bounds: Bounds = field(default_factory=Bounds)
    payloads: PayloadOptions | None = None  # keyType, valueType, schemas, ..., where

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> ReadOptions:
        """Parse Spark's (lower-cased) option map.

        Raises:
            ValueError: an option has a value the source does not accept.
        """
        opts = {k.lower(): v for k, v in options.items()}
        paths: list[str] = []
        if "paths" in opts:
            loaded = json.loads(opts["paths"])
            paths.extend([loaded] if isinstance(loaded, str) else [str(p) for p in loaded])
        if "path" in opts:
            paths.insert(0, opts["path"])
        if not paths:
            raise ValueError(
                "kdump: give the log dirs, partition directories or segment files to read: load(path)"
            )
        level = opts.get("level", "records").lower()
        if level not in LEVELS:
            raise ValueError(f"kdump: option level must be one of {', '.join(LEVELS)}, not {level!r}")
        bounds = Bounds(
            offset_lo=_int_option(opts, "fromoffset"),
            offset_hi=_int_option(opts, "tooffset"),
            ts_lo_us=_ts_option(opts, "fromtimestamp"),
            ts_hi_us=_ts_option(opts, "totimestamp"),
        )
        return cls(
            paths=tuple(paths),
            level=level,
            split_bytes=_int_option(opts, "splitbytes", DEFAULT_SPLIT_BYTES, minimum=1),
            pack_bytes=_int_option(opts, "packbytes", DEFAULT_PACK_BYTES, minimum=0),
            batch_rows=_int_option(opts, "batchrows", DEFAULT_BATCH_ROWS, minimum=1),
            leftovers=_bool_option(opts, "leftovers"),
            deep=_bool_option(opts, "deep"),
            bounds=bounds if level == "records" else Bounds(),
            payloads=payload_options(opts, tuple(paths)) if level == "records" else None,
        )


@overload
def _int_option(opts: Mapping[str, str], name: str) -> int | None: ...
@overload
def _int_option(opts: Mapping[str, str], name: str, default: int, minimum: int | None = None) -> int: ...
def _int_option(
    opts: Mapping[str, str], name: str, default: int | None = None, minimum: int | None = None
) -> int | None:
    text = opts.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"kdump: option {name} must be an integer, not {text!r}") from None
    if minimum is not None and value < minimum:
        raise ValueError(f"kdump: option {name} must be at least {minimum}, not {value}")
    return value


def _bool_option(opts: Mapping[str, str], name: str) -> bool:
    text = opts.get(name, "false").strip().lower()
    if text not in ("true", "false"):
        raise ValueError(f"kdump: option {name} must be true or false, not {text!r}")
    return text == "true"


def _ts_option(opts: Mapping[str, str], name: str) -> int | None:
    """An option timestamp (epoch ms or ISO 8601) in microseconds; inclusive."""
    text = opts.get(name)
    if text is None:
        return None
    try:
        return int(text) * 1000
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"kdump: option {name} must be epoch milliseconds or ISO 8601, not {text!r}"
        ) from None
    return _literal(when, "timestamp")


def payload_options(opts: Mapping[str, str], paths: tuple[str, ...]) -> PayloadOptions | None:
    """`keyType`, `valueType`, `schemas` (a JSON list or one path), `schemaFiles` (a JSON object of
    id or subject to path), `registry`, `schemaOrder` and `where`; None when none is given. The
    `_schemas` partitions of the paths' log dirs are found here, on the driver, when `schemas` is
    not given."""
    from pathlib import Path

    from kdump.ops.dump.payload_events import SOURCES
    from kdump.ops.payloads.schema_catalog import sibling_schemas

    names = ("keytype", "valuetype", "schemas", "schemafiles", "registry", "where")
    if not any(n in opts for n in names):
        return None
    sourced = any(n in opts for n in ("schemas", "schemafiles", "registry"))
    types = {}
    for n in ("keytype", "valuetype"):
        t = opts.get(n, "registry" if sourced else "raw").lower()
        if t not in TYPES:
            raise ValueError(f"kdump: option {n} must be one of {', '.join(TYPES)}, not {t!r}")
        types[n] = t
    schemas: tuple[str, ...] = ()
    if "schemas" in opts:
        text = opts["schemas"].strip()
        loaded = json.loads(text) if text.startswith("[") else text
        schemas = (loaded,) if isinstance(loaded, str) else tuple(str(p) for p in loaded)
    elif "registry" in types.values():
        schemas = tuple(str(p) for p in sibling_schemas(Path(p) for p in paths if "://" not in p))
    files = json.loads(opts.get("schemafiles", "{}"))
    if not isinstance(files, dict):
        raise ValueError("kdump: option schemaFiles must be a JSON object of schema id or subject to path")
    order = tuple(s.strip() for s in opts.get("schemaorder", ",".join(SOURCES)).split(",") if s.strip())
    if not order or any(s not in SOURCES for s in order):
        raise ValueError(f"kdump: option schemaOrder takes some of {', '.join(SOURCES)}, comma-separated")
    return PayloadOptions(
        key_type=types["keytype"],
        value_type=types["valuetype"],
        schemas=schemas,
        schema_files=tuple((str(k), str(v)) for k, v in files.items()),
        registry=opts.get("registry"),
        order=order,
        where=opts.get("where"),
    )
