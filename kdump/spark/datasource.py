"""`spark.read.format("kdump")`: Kafka's on-disk logs as a Spark DataFrame (PySpark Python data source).

    from kdump.spark import register
    register(spark)
    df = spark.read.format("kdump").load(["/data/broker1", "/data/broker2/orders-0"])

Paths may be log dirs, partition directories or single segment files; every path must be readable
by the driver (which lists the files and plans the tasks) and by the executors (which read them).

Options (case-insensitive):

- `level`: `records` (default): one row per record, Spark's `kafka` source columns then forensic
  columns (`kdump.spark.schema`); `batches`: one row per batch; `findings`: the findings of
  `kdump verify`, one row per finding, with verify's JSON fields.
- `splitBytes` (default 64 MiB): a segment larger than this is read by several tasks, split at
  batch boundaries taken from its offset index; each boundary must be the start of a
  checksum-valid batch, otherwise the boundaries come from walking the batch length fields.
- `packBytes` (default 4 MiB): segments (and, at level findings, partition directories) smaller
  than this share a task with their neighbours, up to about this many bytes; 0: a task each.
- `batchRows` (default 10000): rows per Arrow batch handed to Spark.
- `fromOffset`, `toOffset`, `fromTimestamp`, `toTimestamp`: inclusive record ranges (timestamps as
  epoch milliseconds or ISO 8601, UTC unless an offset is given) applied by the reader itself.
- `leftovers` (default false): also read `.log.deleted`, `.log.cleaned` and `.log.swap` files.
- `deep` (level findings, default false): decode every record, as `kdump verify --deep`.

Planning: one task per segment (per slice of a large segment) at levels records and batches, one
task per partition directory at level findings (its checks span the segments; `kdump verify
--engine spark` spreads the segments of a partition over tasks instead). Spark's cost per task
(tens of milliseconds) would dwarf the work of a small segment, hence `packBytes`. Each slice is
scanned forensically from its start over the whole file and owns the batches starting before its
end, so it frames and resyncs exactly as a whole-file scan does.

Filter pushdown: with `spark.sql.python.filterPushdown.enabled=true`, comparisons of `offset`,
`timestamp`, `topic` and `partition` with literals prune whole segments and slices (segment
offset ranges come from the file names, as the broker's own lookups assume) and let the reader skip
batches without decompressing them (by the offsets and, for checksum-valid batches, the
maxTimestamp of their header). Spark still applies every filter itself, so pushdown only saves
work (the `from*`/`to*` options prune the same way). With the setting off (Spark's default) the
reader does not declare `pushFilters`, so queries run unchanged, without pruning.

Damage never fails a job: a damaged batch is still read (`crcOk` false) as far as its records
decode, an unreadable file yields no rows at levels records and batches (and a warning in the
executor log), and `level=findings` says what is wrong with it.
"""

from __future__ import annotations

import gc
import json
import logging
import math
import sys
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from itertools import accumulate, chain, pairwise
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar, overload

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)

from kdump.errors import KdumpError, PathError
from kdump.findings import make_finding
from kdump.formats.batch import ENTRY_PREFIX, BatchHeader
from kdump.formats.filenames import parse_partition_dir_name
from kdump.formats.offset_index import decode_offset_index
from kdump.model.log_dir import Target, discover
from kdump.model.partition import PartitionDir
from kdump.model.segment import Segment
from kdump.ops.segment_check import check_segment
from kdump.ops.verify import file_report, partition_report, segments_of_file
from kdump.render.rows import codec_label
from kdump.scan.log_scanner import decode_batch_records, find_next_entry, plausible_entry_at, scan_log
from kdump.scan.source import open_buffer
from kdump.spark.ranged import open_slice_buffer, open_split_buffer
from kdump.spark.schema import (
    BATCH_COLUMNS,
    FINDING_COLUMNS,
    LEVELS,
    RECORD_COLUMNS,
    arrow_schema,
    ddl,
    finding_rows,
    headers_arrow_type,
)
from kdump.spark.workers import worker_python
from kdump.store.queries import as_path, exists

__all__ = [
    "KdumpDataSource",
    "ReadOptions",
    "SegmentSlice",
    "SliceTask",
    "plan_findings",
    "plan_slices",
    "register",
]

log = logging.getLogger("kdump.spark")
_T = TypeVar("_T")

DEFAULT_SPLIT_BYTES = 64 << 20
DEFAULT_PACK_BYTES = 4 << 20
DEFAULT_BATCH_ROWS = 10_000
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
# Timestamps in ms whose microsecond value still fits an int64 (Spark's TimestampType).
_TS_MS_MIN, _TS_MS_MAX = _INT64_MIN // 1000 + 1, _INT64_MAX // 1000


# --- options ------------------------------------------------------------------------------------


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


# --- planning ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SegmentSlice:
    """What levels records and batches read: a byte range of one `.log` file (`size` bytes long).

    `start` is a batch boundary; `end` is the next slice's start, or None for the end of the file.
    `first_offset` / `next_offset` bound the offsets the slice should hold (None: unknown): the
    file name's base offset and the next segment's, or the offsets of the batches at the bounds.
    """

    log: str
    base_offset: int
    topic: str | None
    partition: int | None
    start: int = 0
    end: int | None = None
    first_offset: int | None = None
    next_offset: int | None = None
    size: int = 0


@dataclass(frozen=True, slots=True)
class FindingsUnit:
    """What level findings checks: what `kdump verify` reports as one partition (or one file)."""

    label: str
    kind: str  # "partition" | "file" | "unreadable"
    path: str
    part: PartitionDir | None = None
    error: str = ""
    size: int = 0  # bytes of log data


@dataclass(frozen=True, slots=True)
class SliceTask(InputPartition):
    """One Spark task of a records or batches read: one slice, or several small ones."""

    slices: tuple[SegmentSlice, ...]


@dataclass(frozen=True, slots=True)
class FindingsTask(InputPartition):
    """One Spark task of a findings read: one verify unit, or several small ones."""

    units: tuple[FindingsUnit, ...]


def pack(items: Sequence[_T], sizes: Sequence[int], pack_bytes: int) -> list[tuple[_T, ...]]:
    """Group consecutive items smaller than `pack_bytes` into groups of about `pack_bytes`.

    An item of `pack_bytes` or more stays alone, so real segments (up to 1 GiB) keep a task each,
    while runs of tiny ones (compacted topics, test data) stop paying Spark's cost per task.
    """
    groups: list[tuple[_T, ...]] = []
    current: list[_T] = []
    total = 0
    for item, size in zip(items, sizes, strict=True):
        if size >= pack_bytes or pack_bytes <= 0:
            if current:
                groups.append(tuple(current))
                current, total = [], 0
            groups.append((item,))
            continue
        current.append(item)
        total += size
        if total >= pack_bytes:
            groups.append(tuple(current))
            current, total = [], 0
    if current:
        groups.append(tuple(current))
    return groups


def _resolve(paths: Sequence[str]) -> list[Target | tuple[str, str]]:
    """Classify each path; a path that exists but cannot be read becomes (path, error)."""
    out: list[Target | tuple[str, str]] = []
    for p in paths:
        if not exists(p, follow_symlinks=False):
            raise ValueError(f"kdump: path does not exist: {p}")
        try:
            out.append(discover(p))
        except KdumpError as exc:
            out.append((p, str(exc)))
    return out


def _topic_partition(directory: Path) -> tuple[str | None, int | None]:
    parsed = parse_partition_dir_name(directory.name)
    return (parsed.topic, parsed.partition) if parsed else (None, None)


def plan_slices(options: ReadOptions) -> list[SegmentSlice]:
    """The tasks of a records or batches read, in path, partition and offset order, pruned by bounds."""
    slices: list[SegmentSlice] = []
    bounds = options.bounds
    for target in _resolve(options.paths):
        if isinstance(target, tuple):
            log.warning("kdump: skipping %s: %s", target[0], target[1])
            continue
        groups: list[tuple[str | None, int | None, list[Segment], list[Segment]]] = []
        if target.kind == "file":
            topic, partition = _topic_partition(target.path.resolve().parent)
            groups.append((topic, partition, segments_of_file(target.path), []))
        else:
            try:
                parts = target.partitions()
            except KdumpError as exc:
                log.warning("kdump: skipping %s: %s", target.given, exc)
                continue
            for part in parts:
                extra = part.leftover_segments() if options.leftovers else []
                groups.append((part.topic, part.partition, part.segments, extra))
        for topic, partition, segments, extra in groups:
            if not bounds.keeps_target(topic, partition):
                continue
            for i, seg in enumerate(segments):
                nxt = segments[i + 1].base_offset if i + 1 < len(segments) else None
                slices.extend(_slices_of(seg, topic, partition, options.split_bytes, nxt, bounds))
            for seg in extra:
                slices.extend(_slices_of(seg, topic, partition, options.split_bytes, None, Bounds()))
    return slices


def _slices_of(
    seg: Segment, topic: str | None, partition: int | None, split_bytes: int, nxt: int | None, bounds: Bounds
) -> list[SegmentSlice]:
    assert seg.log is not None
    size = _file_size(seg.log)
    starts = split_starts(seg, size, split_bytes) if size > split_bytes else []
    positions = [0, *(p for p, _ in starts)]
    firsts: list[int | None] = [seg.base_offset if not seg.suffix else None, *(o for _, o in starts)]
    out = []
    for k, (pos, first) in enumerate(zip(positions, firsts, strict=True)):
        end = positions[k + 1] if k + 1 < len(positions) else None
        next_offset = firsts[k + 1] if k + 1 < len(firsts) else nxt
        if bounds.keeps_offsets(first, next_offset):
            nbytes = (size if end is None else end) - pos
            out.append(
                SegmentSlice(
                    str(seg.log), seg.base_offset, topic, partition, pos, end, first, next_offset, nbytes
                )
            )
    return out


def split_starts(seg: Segment, size: int, split_bytes: int) -> list[tuple[int, int | None]]:
    """Where to split a large segment: (position, first offset or None) of the batches starting slices.

    Boundaries near every `size / n`-th byte come from the offset index: each entry's position must
    be the start of a checksum-valid batch. If the index is missing, damaged, or an entry fails that
    check, the batch length fields are walked from the start of the file instead.
    """
    n = math.ceil(size / split_bytes)
    if n <= 1 or seg.log is None:
        return []
    targets = [size * k // n for k in range(1, n)]
    try:
        with open_split_buffer(seg, targets) as buf:
            size = len(buf)
            starts = _starts_from_index(buf, seg, targets)
            if starts is None:
                starts = _starts_from_scan(buf, targets)
            return [(p, _first_offset_at(buf, p)) for p in starts]
    except KdumpError:
        return []


def _first_offset_at(buf: memoryview, pos: int) -> int | None:
    offset, _length, magic = ENTRY_PREFIX.unpack_from(buf, pos)
    # A legacy wrapper's offset field is its last inner offset, not a lower bound.
    return int(offset) if magic == 2 else None


def _starts_from_index(buf: memoryview, seg: Segment, targets: list[int]) -> list[int] | None:
    if seg.index is None:
        return None
    try:
        with open_buffer(seg.index) as ibuf:
            entries = decode_offset_index(ibuf, seg.base_offset).entries
    except KdumpError:
        return None
    positions = [e.position for e in entries]
    if not positions or any(b <= a for a, b in pairwise(positions)):
        return None
    size = len(buf)
    starts: list[int] = []
    for t in targets:
        i = bisect_right(positions, t)
        if i == 0:
            continue
        p = positions[i - 1]
        if p <= (starts[-1] if starts else 0):
            continue
        if not plausible_entry_at(buf, p, size):
            return None
        starts.append(p)
    return starts or None


def _starts_from_scan(buf: memoryview, targets: list[int]) -> list[int]:
    """Walk the length fields from the start; take the first checksum-valid batch at or after each target.

    Where a length field cannot be right, the walk resumes at the next plausible batch, as the
    forensic scan does, so damage does not leave the rest of the segment to a single task.
    """
    size = len(buf)
    starts: list[int] = []
    ti = 0
    pos = 0
    while ti < len(targets) and pos + 17 < size:
        _offset, length, _magic = ENTRY_PREFIX.unpack_from(buf, pos)
        if pos >= targets[ti] and plausible_entry_at(buf, pos, size):
            starts.append(pos)
            while ti < len(targets) and targets[ti] <= pos:
                ti += 1
        if length >= 14 and pos + 12 + length <= size:
            pos += 12 + length
            continue
        nxt = find_next_entry(buf, pos + 1, size)
        if nxt is None:
            break
        pos = nxt
    return starts


def _file_size(path: Path | None) -> int:
    try:
        return path.stat().st_size if path is not None else 0
    except OSError:
        return 0


def _log_bytes(segments: Iterable[Segment]) -> int:
    return sum(_file_size(s.log) for s in segments)


def plan_findings(options: ReadOptions) -> list[FindingsUnit]:
    """The tasks of a findings read: verify's units (a partition directory, or a file given alone)."""
    units: list[FindingsUnit] = []
    for target in _resolve(options.paths):
        if isinstance(target, tuple):
            units.append(FindingsUnit(target[0], "unreadable", target[0], error=target[1]))
            continue
        if target.kind == "file":
            size = _log_bytes(segments_of_file(target.path))
            units.append(FindingsUnit(target.given, "file", str(target.path), size=size))
            continue
        try:
            parts = target.partitions()
        except KdumpError as exc:
            units.append(FindingsUnit(target.given, "unreadable", target.given, error=str(exc)))
            continue
        units.extend(
            FindingsUnit(str(p.path), "partition", str(p.path), p, size=_log_bytes(p.segments)) for p in parts
        )
    return units


# --- reading -----------------------------------------------------------------------------------


def _timestamps(ms: Sequence[int]) -> Any:
    """Epoch milliseconds as Spark timestamps (microseconds, UTC); null where out of range."""
    arr = pa.array(ms, pa.int64())
    try:
        us = pc.multiply_checked(arr, 1000)
    except pa.ArrowInvalid:
        us = pa.array([v * 1000 if _TS_MS_MIN <= v <= _TS_MS_MAX else None for v in ms], pa.int64())
    return us.cast(pa.timestamp("us", tz="UTC"))


def _header_keys(keys: list[bytes]) -> Any:
    arr = pa.array(keys, pa.binary())
    try:
        return arr.cast(pa.string())
    except pa.ArrowInvalid:
        # Kafka decodes header keys as UTF-8, replacing what does not decode.
        return pa.array([k.decode("utf-8", "replace") for k in keys], pa.string())


def _headers(hdrs: Sequence[tuple[tuple[bytes, bytes | None], ...]]) -> Any:
    """Record headers as Spark's `array<struct<key, value>>`; null (not empty) for a record with none."""
    htype = _HEADERS_TYPE
    lengths = [len(h) for h in hdrs]
    if not any(lengths):
        return pa.nulls(len(hdrs), htype)
    hkeys, hvalues = zip(*chain.from_iterable(hdrs), strict=True)
    keys = _header_keys(list(hkeys))
    values = pa.array(hvalues, pa.binary())
    struct = pa.StructArray.from_arrays([keys, values], fields=list(htype.value_type))
    offsets = pa.array(list(accumulate(lengths, initial=0)), pa.int32())
    mask = pa.array([n == 0 for n in lengths], pa.bool_())
    return pa.ListArray.from_arrays(offsets, struct, type=htype, mask=mask)


# Per-batch columns of record rows (repeated for each record of the batch), and their types.
_RECORD_BATCH_FIELDS: tuple[tuple[str, Callable[[SegmentSlice, BatchHeader], Any], Any], ...] = (
    ("topic", lambda s, h: s.topic, pa.string()),
    ("partition", lambda s, h: s.partition, pa.int32()),
    ("timestampType", lambda s, h: h.timestamp_type, pa.int32()),
    ("segment", lambda s, h: s.log, pa.string()),
    ("batchPosition", lambda s, h: h.position, pa.int64()),
    ("baseOffset", lambda s, h: h.last_offset if h.base_offset is None else h.base_offset, pa.int64()),
    ("lastOffset", lambda s, h: h.last_offset, pa.int64()),
    ("producerId", lambda s, h: h.producer_id, pa.int64()),
    ("producerEpoch", lambda s, h: h.producer_epoch, pa.int16()),
    ("baseSequence", lambda s, h: h.base_sequence, pa.int32()),
    ("isTransactional", lambda s, h: h.is_transactional, pa.bool_()),
    ("isControl", lambda s, h: h.is_control, pa.bool_()),
    ("partitionLeaderEpoch", lambda s, h: h.partition_leader_epoch, pa.int32()),
    ("codec", lambda s, h: codec_label(h.compression), pa.string()),
    ("crcOk", lambda s, h: h.crc_ok, pa.bool_()),
    ("magic", lambda s, h: h.magic, pa.int8()),
)
_RECORD_SCHEMA = arrow_schema(RECORD_COLUMNS)
_BATCH_SCHEMA = arrow_schema(BATCH_COLUMNS)
_FINDING_SCHEMA = arrow_schema(FINDING_COLUMNS)
_HEADERS_TYPE = headers_arrow_type()
_BATCH_STRUCT = pa.struct([pa.field(name, kind) for name, _, kind in _RECORD_BATCH_FIELDS])


class _RecordChunk:
    """Records of whole batches (of one or more slices) gathered until an Arrow batch is due."""

    __slots__ = ("batches", "index", "records")

    def __init__(self) -> None:
        self.records: list[Any] = []
        self.index: list[int] = []
        self.batches: list[tuple[SegmentSlice, BatchHeader]] = []

    def add(self, part: SegmentSlice, h: BatchHeader, records: list[Any]) -> None:
        self.index.extend([len(self.batches)] * len(records))
        self.batches.append((part, h))
        self.records.extend(records)

    def to_arrow(self) -> Any:
        """One `RecordBatch` of `RECORD_COLUMNS`: per-record columns from the records, per-batch
        columns built once per batch and repeated with a single `take`."""
        offsets, timestamps, keys, values, headers = list(zip(*self.records, strict=False))[:5]
        per_batch = pa.StructArray.from_arrays(
            [pa.array([get(s, h) for s, h in self.batches], kind) for _, get, kind in _RECORD_BATCH_FIELDS],
            fields=list(_BATCH_STRUCT),
        )
        repeated = dict(
            zip(_BATCH_STRUCT.names, per_batch.take(pa.array(self.index, pa.int32())).flatten(), strict=True)
        )
        columns = {
            "key": pa.array(keys, pa.binary()),
            "value": pa.array(values, pa.binary()),
            "offset": pa.array(offsets, pa.int64()),
            "timestamp": _timestamps(timestamps),
            "headers": _headers(headers),
            **repeated,
        }
        return pa.RecordBatch.from_arrays(
            [columns[name] for name in _RECORD_SCHEMA.names], schema=_RECORD_SCHEMA
        )


def _scan_slice(buf: memoryview, part: SegmentSlice) -> Iterator[BatchHeader]:
    """The batch headers of a slice, in position order (forensic scan, resyncing past damage).

    The scan sees the whole file, so a length field is judged as a whole-file scan judges it, and
    a resync lands where it would; the slice owns the batches that start before its end.
    """
    end = part.end
    for ev in scan_log(buf, file=part.log, base_offset=part.base_offset, start=part.start):
        if type(ev) is BatchHeader:
            if end is not None and ev.position >= end:
                return
            yield ev


def _readable_batches(
    slices: Iterable[SegmentSlice],
) -> Iterator[tuple[SegmentSlice, memoryview, BatchHeader]]:
    """Every batch of the slices, with its open buffer; a file that cannot be opened is skipped."""
    for part in slices:
        try:
            with open_slice_buffer(part.log, part.start, part.end) as buf:
                for h in _scan_slice(buf, part):
                    yield part, buf, h
        except PathError as exc:
            log.warning("kdump: cannot read %s: %s", part.log, exc)


def read_records(slices: Iterable[SegmentSlice], bounds: Bounds, batch_rows: int) -> Iterator[Any]:
    """Arrow batches of the records of the slices of one task."""
    exact = bounds.on_records
    chunk = _RecordChunk()
    for part, buf, h in _readable_batches(slices):
        if exact and not bounds.keeps_batch(h):
            continue
        records, _findings = decode_batch_records(buf, h, part.log)
        if exact:
            records = [r for r in records if bounds.keeps_record(r.offset, r.timestamp)]
        if not records:
            continue
        chunk.add(part, h, records)
        if len(chunk.records) >= batch_rows:
            yield chunk.to_arrow()
            chunk = _RecordChunk()
    if chunk.records:
        yield chunk.to_arrow()


def read_batches(slices: Iterable[SegmentSlice], batch_rows: int) -> Iterator[Any]:
    """Arrow batches of the batch headers of the slices of one task."""
    headers: list[tuple[SegmentSlice, BatchHeader]] = []
    for part, _buf, h in _readable_batches(slices):
        headers.append((part, h))
        if len(headers) >= batch_rows:
            yield _batches_to_arrow(headers)
            headers = []
    if headers:
        yield _batches_to_arrow(headers)


def _batches_to_arrow(rows: list[tuple[SegmentSlice, BatchHeader]]) -> Any:
    hs = [h for _, h in rows]
    columns = [
        pa.array([s.topic for s, _ in rows], pa.string()),
        pa.array([s.partition for s, _ in rows], pa.int32()),
        pa.array([s.log for s, _ in rows], pa.string()),
        pa.array([h.position for h in hs], pa.int64()),
        pa.array([h.base_offset if h.base_offset is not None else h.last_offset for h in hs], pa.int64()),
        pa.array([h.last_offset for h in hs], pa.int64()),
        pa.array([h.count for h in hs], pa.int32()),
        pa.array([h.size for h in hs], pa.int32()),
        pa.array([h.magic for h in hs], pa.int8()),
        pa.array([h.crc for h in hs], pa.int64()),
        pa.array([h.computed_crc for h in hs], pa.int64()),
        pa.array([h.crc_ok for h in hs], pa.bool_()),
        pa.array([codec_label(h.compression) for h in hs], pa.string()),
        pa.array([h.timestamp_type for h in hs], pa.int32()),
        _timestamps([h.base_timestamp for h in hs]),
        _timestamps([h.max_timestamp for h in hs]),
        pa.array([h.producer_id for h in hs], pa.int64()),
        pa.array([h.producer_epoch for h in hs], pa.int16()),
        pa.array([h.base_sequence for h in hs], pa.int32()),
        pa.array([h.last_sequence for h in hs], pa.int32()),
        pa.array([h.partition_leader_epoch for h in hs], pa.int32()),
        pa.array([h.is_transactional for h in hs], pa.bool_()),
        pa.array([h.is_control for h in hs], pa.bool_()),
        pa.array([h.delete_horizon_ms for h in hs], pa.int64()),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=_BATCH_SCHEMA)


def read_findings(unit: FindingsUnit, deep: bool) -> Iterator[Any]:
    """One Arrow batch of the findings of one verify unit."""
    if unit.kind == "unreadable":
        f = make_finding("unreadable-file", unit.path, unit.error)
        rows = finding_rows([f], unit.label, "file")
    elif unit.kind == "file":
        path = as_path(unit.path)
        results = [check_segment(s, deep=deep) for s in segments_of_file(path)]
        report = file_report(unit.label, path, results)
        rows = finding_rows(report.findings, report.label, report.kind)
    else:
        assert unit.part is not None
        results = [check_segment(s, deep=deep) for s in unit.part.segments]
        report = partition_report(unit.part, results, unit.label)
        rows = finding_rows(report.findings, report.label, report.kind)
    if rows:
        yield pa.RecordBatch.from_pylist(rows, schema=_FINDING_SCHEMA)


# --- the data source ---------------------------------------------------------------------------


def _planning_with_pushdown() -> bool:
    """Whether Spark is creating the reader to push filters into it.

    Spark refuses a reader that defines `pushFilters` unless `spark.sql.python.filterPushdown.enabled`
    is set, and the data source cannot read that setting. It does know which planning step created
    it: only the pushdown step (`data_source_pushdown_filters`) is given the pushdown reader.
    """
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.endswith("data_source_pushdown_filters.py"):
            return True
        frame = frame.f_back
    return False


class KdumpReader(DataSourceReader):
    """Plans and reads a `kdump` load (no filter pushdown)."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self.bounds = options.bounds

    def partitions(self) -> list[InputPartition]:
        """One task per segment slice, or per verify unit at level findings; small ones packed."""
        opts = self.options
        if opts.level == "findings":
            units = plan_findings(opts)
            return [FindingsTask(g) for g in pack(units, [u.size for u in units], opts.pack_bytes)]
        slices = plan_slices(replace(opts, bounds=self.bounds))
        return [SliceTask(g) for g in pack(slices, [s.size for s in slices], opts.pack_bytes)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Arrow batches of one task; damage and unreadable files never raise."""
        opts = self.options
        if isinstance(partition, FindingsTask):
            for unit in partition.units:
                yield from read_findings(unit, opts.deep)
            return
        if not isinstance(partition, SliceTask):
            return  # Spark's single placeholder partition when nothing was planned
        # Records and their bytes form no reference cycles, yet allocating millions of them sets off
        # the cyclic collector over and over (a third of the read time): pause it for the task.
        collecting = gc.isenabled()
        gc.disable()
        try:
            if opts.level == "batches":
                yield from read_batches(partition.slices, opts.batch_rows)
            else:
                yield from read_records(partition.slices, self.bounds, opts.batch_rows)
        finally:
            if collecting:
                gc.enable()


class KdumpPushdownReader(KdumpReader):
    """The reader Spark gets when filter pushdown is enabled: ranges narrow the plan and the scan."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """Narrow the bounds by every usable filter; Spark still applies all of them."""
        for f in filters:
            self.bounds = self.bounds.with_filter(f, self.options.level)
        return filters


class KdumpDataSource(DataSource):
    """`spark.read.format("kdump")`: records, batches or verify findings of Kafka log files."""

    @classmethod
    def name(cls) -> str:
        """The format name."""
        return "kdump"

    def schema(self) -> str:
        """The columns of the chosen level, as DDL."""
        level = str(self.options.get("level", "records")).lower()
        if level not in LEVELS:
            raise ValueError(f"kdump: option level must be one of {', '.join(LEVELS)}, not {level!r}")
        return ddl(LEVELS[level])

    def reader(self, schema: Any) -> DataSourceReader:
        """A reader for the options given."""
        options = ReadOptions.parse(self.options)
        if _planning_with_pushdown():
            return KdumpPushdownReader(options)
        return KdumpReader(options)


def register(spark: Any) -> None:
    """Register the `kdump` format with a SparkSession (its workers run a Python that has kdump)."""
    worker_python(spark)
    spark.dataSource.register(KdumpDataSource)
