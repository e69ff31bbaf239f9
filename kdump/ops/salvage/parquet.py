"""`records.parquet`: salvaged records with the columns of Spark's built-in `kafka` source.

The first eight columns are exactly those of Spark's `kafka` source, with its types (one table,
`kdump.formats.kafka_sink.KAFKA_COLUMNS`, serves this file and the Spark data source): `key`, `value`, `topic`,
`partition`, `offset`, `timestamp` (microseconds, UTC; a v0 record's -1 ms as the consumer reports
it), `timestampType` (-1, 0 CreateTime, 1 LogAppendTime) and `headers` (null when a record has
none). Then `segment` (the `.log` it came from), `position` (its batch's byte position there) and
`isControl` (transaction markers and other control records: never replay those).

The columns map one to one onto Spark's `kafka` sink (`key`, `value`, `headers`, `topic`,
`partition`), so `spark.read.parquet(...).write.format("kafka")` puts the records back.
pyarrow is imported only here, on first use (the `parquet` extra).
"""

from __future__ import annotations

import os
import sys
from array import array
from concurrent.futures import Future, ThreadPoolExecutor
from typing import IO, Any

from kdump.errors import KdumpError
from kdump.formats.batch import BatchHeader
from kdump.formats.kafka_sink import KAFKA_COLUMNS
from kdump.formats.records import Record
from kdump.model.segment import Segment

COLUMNS: tuple[tuple[str, str], ...] = (
    *KAFKA_COLUMNS,
    ("segment", "STRING"),
    ("position", "BIGINT"),
    ("isControl", "BOOLEAN"),
)

# A row group is written when it holds this many rows or its batches this many bytes, so that
# big records do not pile up in memory. The writer holds a row group's encoded pages besides its
# columns, and what it allocates stays resident after (heap fragments): 1 MiB row groups put the
# peak of a salvage of 1.1 M records 20 MiB lower than 4 MiB ones did.
ROW_GROUP = 65536
ROW_GROUP_BYTES = 1 << 20


def load_pyarrow() -> Any:
    """pyarrow and pyarrow.parquet, or a clear error naming the extra that installs them."""
    # pyarrow's default pool (mimalloc or jemalloc) keeps what it freed, and the Arrow calls that
    # build the records' columns (`kdump.formats.arrow_columns`) allocate there: the system
    # allocator hands it back (about 10 MiB less at the peak of a salvage). The variable is read
    # when pyarrow makes its default pool, at its import; a pool chosen in the environment is left
    # alone, and the environment is as it was after (child processes do not inherit it).
    choose = "pyarrow" not in sys.modules and "ARROW_DEFAULT_MEMORY_POOL" not in os.environ
    if choose:
        os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pa.default_memory_pool()  # made now, whatever pyarrow's import did
    except ImportError as exc:
        raise KdumpError(
            "records.parquet needs pyarrow: pip install 'kdump[parquet]' (or give --no-parquet)"
        ) from exc
    finally:
        if choose:
            os.environ.pop("ARROW_DEFAULT_MEMORY_POOL", None)
    return pa, pq


def arrow_schema() -> Any:
    """The Arrow schema of `records.parquet`."""
    pa, _ = load_pyarrow()
    header = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
    types = {
        "BINARY": pa.binary(),
        "STRING": pa.string(),
        "INT": pa.int32(),
        "BIGINT": pa.int64(),
        "BOOLEAN": pa.bool_(),
        "TIMESTAMP": pa.timestamp("us", tz="UTC"),
        "ARRAY<STRUCT<key: STRING, value: BINARY>>": pa.list_(pa.field("element", header, nullable=True)),
    }
    return pa.schema([pa.field(name, types[kind], nullable=True) for name, kind in COLUMNS])


class ParquetRecords:
    """Writes rows in row groups as they come, so memory stays bounded."""

    def __init__(self, out: IO[bytes], topic: str | None, partition: int | None) -> None:
        pa, pq = load_pyarrow()

        self._pa = pa
        self._schema = arrow_schema()
        # Dictionaries and statistics only where they pay: a dictionary of unique keys and values
        # costs more time than the whole write otherwise does (min/max statistics of them too).
        repeated = ["topic", "partition", "timestampType", "segment", "isControl"]
        # The system allocator hands freed row groups back; pyarrow's default pool (mimalloc) keeps
        # them: the row groups' columns are built in it too, not only the writer's pages (about 12
        # MiB less at the peak of a salvage of 1.1 M records).
        self._pool = pa.system_memory_pool()
        self._writer = pq.ParquetWriter(
            out,
            self._schema,
            # Snappy, Spark's own default for Parquet: every Parquet reader has it. zstd (level 1)
            # compressed smaller, but its compressing was the biggest part of a salvage beyond the
            # record dump: writing a 134 MB segment's records of large lz4 batches took 0.87 s
            # of CPU with zstd, 0.68 s with snappy (the whole salvage 1.55-1.69 s -> 1.37-1.43 s;
            # the file 79 MB -> 123 MB; 71k small zstd batches: 1.65 -> 1.32 s, 116 -> 183 MB).
            compression="snappy",
            use_dictionary=repeated,
            write_statistics=[*repeated, "offset", "timestamp", "position"],
            memory_pool=self._pool,
        )
        self._topic = topic
        self._partition = partition
        self._cols: dict[str, list[Any]] = {name: [] for name, _ in COLUMNS}
        self.rows = 0
        self._bytes = 0
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="kdump-parquet")
        self._pending: list[Future[None]] = []
        # Clean batches waiting to be written from the compiled path's buffers, in order.
        self._clean: list[tuple[Segment, BatchHeader, Any]] = []
        self._clean_rows = 0
        self._clean_bytes = 0

    def add_clean(self, segment: Segment, batch: BatchHeader, data: Any) -> None:
        """A clean v2 data batch by its decompressed records (`data`): written from the compiled
        record path's Arrow buffers, many batches at a time."""
        if self._cols["offset"]:
            self._flush()  # rows stay in order
        self._clean.append((segment, batch, data))
        self._clean_rows += batch.count or 0
        self._clean_bytes += len(data)
        if self._clean_rows >= ROW_GROUP or self._clean_bytes >= ROW_GROUP_BYTES:
            self._flush_clean()

    def _flush_clean(self) -> None:
        if not self._clean:
            return
        from kdump.formats import fast_records
        from kdump.formats.arrow_columns import record_arrays, take_per_batch

        pending, self._clean = self._clean, []
        self._clean_rows = self._clean_bytes = 0
        out = fast_records.columns_v2_many([(data, h) for _, h, data in pending])
        arrays = record_arrays(out[1]) if out is not None and out[0] == len(pending) else None
        if arrays is None:
            # Not buildable exactly in one go (a header key that is not UTF-8, a timestamp out of
            # range): these batches' records the reference way.
            for seg, h, data in pending:
                decoded = fast_records.decode_v2(data, h)
                assert decoded is not None  # the compiled path rendered it: it decodes
                self.add_batch(seg, h, decoded[0])
            self._flush()
            return
        assert out is not None  # the arrays were built from it
        pa, pool = self._pa, self._pool
        index = out[1].batch_index
        rows = len(index) // 4

        def per_row(values: list[Any], kind: Any, width: int = 0) -> Any:
            """A column of per-batch values, row by row: one value repeated (the common case: one
            segment, no control batch), or gathered by each row's batch."""
            if values.count(values[0]) == len(values):
                return pa.repeat(pa.scalar(values[0], kind), rows, memory_pool=pool)
            if width:
                return take_per_batch(array("q" if width == 8 else "i", values).tobytes(), width, index, kind)
            import pyarrow.compute as pc  # strings or flags that differ within the row group: rare

            return pc.take(pa.array(values, kind, memory_pool=pool), arrays["batch_index"], memory_pool=pool)

        per_batch = {
            "topic": pa.repeat(pa.scalar(self._topic, pa.string()), rows, memory_pool=pool),
            "partition": pa.repeat(pa.scalar(self._partition, pa.int32()), rows, memory_pool=pool),
            "timestampType": per_row([h.timestamp_type for _, h, _ in pending], pa.int32(), 4),
            "segment": per_row([str(seg.log) for seg, _, _ in pending], pa.string()),
            "position": per_row([h.position for _, h, _ in pending], pa.int64(), 8),
            "isControl": per_row([h.is_control for _, h, _ in pending], pa.bool_()),
        }
        columns = [arrays[name] if name in arrays else per_batch[name] for name, _ in COLUMNS]
        self._write(pa.Table.from_arrays(columns, schema=self._schema))
        self.rows += rows

    def add_batch(self, segment: Segment, batch: BatchHeader, records: list[Record]) -> None:
        """The records of one kept batch."""
        self._flush_clean()  # rows stay in order
        c = self._cols
        n = len(records)
        c["key"].extend(r.key for r in records)
        c["value"].extend(r.value for r in records)
        c["topic"].extend([self._topic] * n)
        c["partition"].extend([self._partition] * n)
        c["offset"].extend(r.offset for r in records)
        c["timestamp"].extend(r.timestamp * 1000 for r in records)
        c["timestampType"].extend([batch.timestamp_type] * n)  # -1 for v0, as the decoder sets it
        c["headers"].extend(
            [{"key": k.decode("utf-8", "replace"), "value": v} for k, v in r.headers] if r.headers else None
            for r in records
        )
        c["segment"].extend([str(segment.log)] * n)
        c["position"].extend([batch.position] * n)
        c["isControl"].extend([batch.is_control] * n)
        self.rows += n
        self._bytes += batch.size
        if len(c["offset"]) >= ROW_GROUP or self._bytes >= ROW_GROUP_BYTES:
            self._flush()

    def _flush(self) -> None:
        if not self._cols["offset"]:
            return
        pa = self._pa
        table = pa.Table.from_arrays(
            [pa.array(self._cols[f.name], f.type, memory_pool=self._pool) for f in self._schema],
            schema=self._schema,
        )
        self._write(table)
        for col in self._cols.values():
            col.clear()
        self._bytes = 0

    def _write(self, table: Any) -> None:
        """Encode and write a row group on the writer's thread (pyarrow releases the GIL), so that
        it overlaps with reading and rendering the next records; one at a time, so memory stays
        bounded."""
        while self._pending:
            self._pending.pop(0).result()
        self._pending.append(self._thread.submit(self._writer.write_table, table))

    def close(self) -> None:
        """Write what is left and the footer."""
        self._flush_clean()
        self._flush()
        try:
            for done in self._pending:
                done.result()
        finally:
            self._thread.shutdown()
        self._writer.close()
