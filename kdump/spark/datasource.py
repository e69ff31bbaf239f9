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

The source is split by concern: `kdump.spark.options` (options and bounds), `kdump.spark.planning`
(planning and split points, through the checked segment reader), `kdump.spark.arrow_rows` (Arrow
rows) and this module (the Spark classes; it re-exports the names users and tests import from it).
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from types import FrameType
from typing import Any

from kdump.errors import missing_module

try:
    import pyarrow  # noqa: F401  (the rows are Arrow batches: kdump.spark.arrow_rows)
    from pyspark.sql.datasource import DataSource, DataSourceReader, Filter, InputPartition
except ImportError as exc:
    # A missing pyspark or pyarrow is one sentence naming the install command.
    missing = missing_module(exc, "the kdump Spark data source")
    if missing is None:
        raise
    raise missing from exc

from kdump.spark.arrow_rows import read_batches, read_findings, read_records
from kdump.spark.options import (
    DEFAULT_BATCH_ROWS,
    DEFAULT_PACK_BYTES,
    DEFAULT_SPLIT_BYTES,
    Bounds,
    ReadOptions,
)
from kdump.spark.planning import (
    FindingsUnit,
    SegmentSlice,
    _starts_from_index,
    pack,
    plan_findings,
    plan_slices,
    split_starts,
)
from kdump.spark.schema import LEVELS, PAYLOAD_COLUMNS, ddl
from kdump.spark.workers import worker_python

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_PACK_BYTES",
    "DEFAULT_SPLIT_BYTES",
    "Bounds",
    "FindingsTask",
    "FindingsUnit",
    "KdumpDataSource",
    "KdumpPushdownReader",
    "KdumpReader",
    "ReadOptions",
    "SegmentSlice",
    "SliceTask",
    "_starts_from_index",
    "pack",
    "plan_findings",
    "plan_slices",
    "read_batches",
    "read_findings",
    "read_records",
    "register",
    "split_starts",
]


@dataclass(frozen=True, slots=True)
class SliceTask(InputPartition):
    """One Spark task of a records or batches read: one slice, or several small ones."""

    slices: tuple[SegmentSlice, ...]


@dataclass(frozen=True, slots=True)
class FindingsTask(InputPartition):
    """One Spark task of a findings read: one verify unit, or several small ones."""

    units: tuple[FindingsUnit, ...]


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
            elif opts.payloads is not None:
                from kdump.spark.payload_rows import read_payload_records

                yield from read_payload_records(partition.slices, self.bounds, opts.batch_rows, opts.payloads)
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
        decoded = level == "records" and any(
            k.lower() in ("keytype", "valuetype", "schemas", "schemafiles", "registry", "where")
            for k in self.options
        )
        return ddl(LEVELS[level] + (PAYLOAD_COLUMNS if decoded else ()))

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
