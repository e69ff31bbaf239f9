"""The `kdump` Spark data source against the local scanner: every record, every column.

Expected rows are built here straight from `scan_log` events (not from the data source's own
conversion code), over the Kafka corpus (or its bundled subset), synthetic data and damaged copies.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark not installed; install kdump[spark]")
pytest.importorskip("pyarrow", reason="pyarrow not installed; install kdump[spark]")

from kdump.formats.batch import BatchHeader
from kdump.formats.constants import CODEC_LABELS
from kdump.formats.records import Record
from kdump.model.log_dir import discover
from kdump.model.segment import Segment
from kdump.ops.checks.verify import VerifyOptions, verify_targets
from kdump.render.rows import finding_row
from kdump.scan.log_scanner import scan_log
from kdump.scan.source import open_buffer
from kdump.spark import datasource as ds
from kdump.spark.schema import BATCH_COLUMNS, FINDING_COLUMNS, RECORD_COLUMNS, arrow_schema

pytestmark = pytest.mark.spark

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
CORPUS_DIRS = ("kafka-3.8.0", "kafka-3.8.0-zk-legacy", "kafka-3.8.0-running-copy")


# --- expected rows, from the local scanner -----------------------------------------------------


def _ts(ms: int) -> datetime:
    return EPOCH + timedelta(milliseconds=ms)


def _segments(paths: Iterable[Path], leftovers: bool = False) -> list[tuple[str | None, int | None, Segment]]:
    out: list[tuple[str | None, int | None, Segment]] = []
    for p in paths:
        for part in discover(str(p)).partitions():
            extra = part.leftover_segments() if leftovers else []
            out.extend((part.topic, part.partition, s) for s in [*part.segments, *extra])
    return out


def _events(seg: Segment) -> Iterable[Any]:
    assert seg.log is not None
    with open_buffer(seg.log) as buf:
        yield from scan_log(buf, file=str(seg.log), base_offset=seg.base_offset, deep=True)


def expected_records(paths: Iterable[Path], leftovers: bool = False) -> list[dict[str, Any]]:
    rows = []
    for topic, partition, seg in _segments(paths, leftovers):
        h: BatchHeader | None = None
        for ev in _events(seg):
            if isinstance(ev, BatchHeader):
                h = ev
            elif isinstance(ev, Record):
                assert h is not None
                rows.append(
                    {
                        "key": ev.key,
                        "value": ev.value,
                        "topic": topic,
                        "partition": partition,
                        "offset": ev.offset,
                        "timestamp": _ts(ev.timestamp),
                        "timestampType": h.timestamp_type,
                        "headers": [{"key": k.decode("utf-8", "replace"), "value": v} for k, v in ev.headers]
                        or None,
                        "segment": str(seg.log),
                        "batchPosition": h.position,
                        "baseOffset": h.last_offset if h.base_offset is None else h.base_offset,
                        "lastOffset": h.last_offset,
                        "producerId": h.producer_id,
                        "producerEpoch": h.producer_epoch,
                        "baseSequence": h.base_sequence,
                        "isTransactional": h.is_transactional,
                        "isControl": h.is_control,
                        "partitionLeaderEpoch": h.partition_leader_epoch,
                        "codec": CODEC_LABELS.get(h.compression, f"unknown({h.compression})"),
                        "crcOk": h.crc_ok,
                        "magic": h.magic,
                    }
                )
    return rows


def expected_batches(paths: Iterable[Path]) -> list[dict[str, Any]]:
    rows = []
    for topic, partition, seg in _segments(paths):
        for h in _events(seg):
            if not isinstance(h, BatchHeader):
                continue
            rows.append(
                {
                    "topic": topic,
                    "partition": partition,
                    "segment": str(seg.log),
                    "batchPosition": h.position,
                    "baseOffset": h.last_offset if h.base_offset is None else h.base_offset,
                    "lastOffset": h.last_offset,
                    "count": h.count,
                    "size": h.size,
                    "magic": h.magic,
                    "crc": h.crc,
                    "computedCrc": h.computed_crc,
                    "crcOk": h.crc_ok,
                    "codec": CODEC_LABELS.get(h.compression, f"unknown({h.compression})"),
                    "timestampType": h.timestamp_type,
                    "baseTimestamp": _ts(h.base_timestamp),
                    "maxTimestamp": _ts(h.max_timestamp),
                    "producerId": h.producer_id,
                    "producerEpoch": h.producer_epoch,
                    "baseSequence": h.base_sequence,
                    "lastSequence": h.last_sequence,
                    "partitionLeaderEpoch": h.partition_leader_epoch,
                    "isTransactional": h.is_transactional,
                    "isControl": h.is_control,
                    "deleteHorizonMs": h.delete_horizon_ms,
                }
            )
    return rows


def _order(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Stable: records of one batch keep their order.
    return sorted(rows, key=lambda r: (r["segment"], r["batchPosition"]))


def assert_same_rows(actual: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(_order(actual), _order(expected), strict=True)):
        assert a == e, f"row {i} differs"


def load(spark: Any, paths: Iterable[Path], **options: Any) -> Any:
    reader = spark.read.format("kdump")
    for k, v in options.items():
        reader = reader.option(k, str(v).lower() if isinstance(v, bool) else str(v))
    return reader.load([str(p) for p in paths])


def rows_of(df: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = df.toArrow().to_pylist()
    return rows


def corpus_log_dirs(root: Path) -> list[Path]:
    dirs = [root / d for d in CORPUS_DIRS if (root / d).is_dir()]
    if not dirs:
        pytest.skip(f"no Kafka corpus under {root}")
    return dirs


# --- schema -----------------------------------------------------------------------------------


def test_arrow_schemas_are_the_ones_spark_checks(spark: Any) -> None:
    from pyspark.sql.pandas.types import to_arrow_schema

    for level, columns in (
        ("records", RECORD_COLUMNS),
        ("batches", BATCH_COLUMNS),
        ("findings", FINDING_COLUMNS),
    ):
        source = ds.KdumpDataSource({"level": level, "path": "."})
        struct = spark.createDataFrame([], source.schema()).schema
        assert to_arrow_schema(struct, timezone="UTC").equals(arrow_schema(columns)), level


def test_record_columns_start_with_the_kafka_source_columns(spark: Any, synthetic_log_dir: Path) -> None:
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    kafka = StructType(
        [
            StructField("key", BinaryType()),
            StructField("value", BinaryType()),
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("offset", LongType()),
            StructField("timestamp", TimestampType()),
            StructField("timestampType", IntegerType()),
            StructField(
                "headers",
                ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())])),
            ),
        ]
    )
    schema = load(spark, [synthetic_log_dir]).schema
    assert StructType(schema.fields[:8]) == kafka
    assert [f.name for f in schema.fields[8:]] == [name for name, _ in RECORD_COLUMNS[8:]]


# --- records and batches against the local scanner --------------------------------------------


def test_records_match_the_scanner_on_synthetic_data(spark: Any, synthetic_log_dir: Path) -> None:
    actual = rows_of(load(spark, [synthetic_log_dir]))
    expected = expected_records([synthetic_log_dir])
    assert_same_rows(actual, expected)
    syn = [r for r in actual if r["topic"] == "syn"]
    assert {r["codec"] for r in syn} == {"none", "gzip", "snappy", "lz4", "zstd"}
    assert any(r["headers"] and r["headers"][0]["key"] == "bad\ufffd\ufffdkey" for r in syn)
    assert any(r["isControl"] for r in syn)
    assert any(r["timestampType"] == 1 for r in syn)
    assert {r["magic"] for r in actual if r["topic"] == "legacy"} == {0, 1}


@pytest.mark.parametrize(
    "options",
    [{}, {"splitBytes": 65536}],
    ids=["one-task-per-segment", "split-at-64k"],
)
def test_records_match_the_scanner_on_the_corpus(
    spark: Any, corpus_root: Path, options: dict[str, Any]
) -> None:
    dirs = corpus_log_dirs(corpus_root)
    df = load(spark, dirs, leftovers=True, **options)
    actual = rows_of(df)
    expected = expected_records(dirs, leftovers=True)
    # 44,180 records with the full corpus, 4,905 with the bundled subset: either way, real data.
    assert len(expected) > 1_000
    assert_same_rows(actual, expected)


def test_batches_match_the_scanner_on_the_corpus(
    spark: Any, corpus_root: Path, synthetic_log_dir: Path
) -> None:
    dirs = [*corpus_log_dirs(corpus_root), synthetic_log_dir]
    actual = rows_of(load(spark, dirs, level="batches"))
    assert_same_rows(actual, expected_batches(dirs))


def test_a_single_segment_file_and_a_partition_directory(spark: Any, synthetic_log_dir: Path) -> None:
    log = synthetic_log_dir / "syn-0" / f"{29:020d}.log"
    rows = rows_of(load(spark, [log]))
    assert [r["offset"] for r in rows] == list(range(29, 69))
    assert {(r["topic"], r["partition"], r["segment"]) for r in rows} == {("syn", 0, str(log))}
    single = spark.read.format("kdump").load(str(synthetic_log_dir / "legacy-0"))
    assert single.count() == 13


# --- splitting -----------------------------------------------------------------------------------


def _batch_positions(log: Path) -> set[int]:
    seg = Segment(0, log)
    return {ev.position for ev in _events(seg) if isinstance(ev, BatchHeader)}


def test_large_segments_split_at_batch_boundaries_from_the_index(
    synthetic_log_dir: Path, tmp_path: Path
) -> None:
    part = tmp_path / "big-0"
    shutil.copytree(synthetic_log_dir / "big-0", part)
    log, index = part / f"{0:020d}.log", part / f"{0:020d}.index"
    seg = Segment(0, log, index)
    size = log.stat().st_size
    positions = _batch_positions(log)
    with open_buffer(log) as buf:
        from_index = ds._starts_from_index(buf, seg, [size // 4, size // 2, 3 * size // 4])
    assert from_index is not None
    assert len(from_index) == 3
    starts = ds.split_starts(seg, size, size // 4 + 1)
    assert [p for p, _ in starts] == from_index
    assert all(p in positions for p, _ in starts)
    # The offsets of the batches at the boundaries bound the slices, for pruning.
    assert all(o is not None and o % 10 == 0 for _, o in starts)

    # A damaged index (an entry pointing inside a batch) is caught; boundaries then come from a walk.
    data = bytearray(index.read_bytes())
    for at in range(4, len(data), 8):
        data[at : at + 4] = (int.from_bytes(data[at : at + 4], "big") + 3).to_bytes(4, "big")
    index.write_bytes(bytes(data))
    with open_buffer(log) as buf:
        assert ds._starts_from_index(buf, seg, [p for p, _ in starts]) is None
    walked = ds.split_starts(seg, size, size // 4 + 1)
    assert len(walked) == 3
    assert all(p in positions for p, _ in walked)

    # No index at all: the walk again.
    index.unlink()
    assert ds.split_starts(Segment(0, log), size, size // 4 + 1) == walked


def test_split_reads_equal_whole_reads_even_with_damage(
    spark: Any, synthetic_log_dir: Path, tmp_path: Path
) -> None:
    part = tmp_path / "big-0"
    shutil.copytree(synthetic_log_dir / "big-0", part)
    log = part / f"{0:020d}.log"
    data = bytearray(log.read_bytes())
    positions = sorted(_batch_positions(log))
    data[positions[800] + 70] ^= 0xFF  # inside a batch body: crc-mismatch, still decodable
    data[positions[1000] + 8 : positions[1000] + 12] = b"\x7f\xff\xff\xff"  # a length far past the end
    log.write_bytes(bytes(data))
    whole = load(spark, [part], packBytes=0)
    split = load(spark, [part], splitBytes=200_000, packBytes=0)
    assert whole.rdd.getNumPartitions() == 1
    assert split.rdd.getNumPartitions() >= 6
    expected = expected_records([part])
    assert_same_rows(rows_of(split), expected)
    assert_same_rows(rows_of(whole), expected)
    assert any(not r["crcOk"] for r in expected)


# --- damage and unreadable paths ---------------------------------------------------------------


def _damaged_copy(synthetic_log_dir: Path, tmp_path: Path) -> Path:
    root = tmp_path / "damaged"
    shutil.copytree(synthetic_log_dir, root)
    first = root / "syn-0" / f"{0:020d}.log"
    data = bytearray(first.read_bytes())
    data[data.index(b"v1")] ^= 0x20  # a value in the first (plain) batch: crc-mismatch, still decodable
    first.write_bytes(bytes(data))
    second = root / "syn-0" / f"{29:020d}.log"
    second.write_bytes(second.read_bytes()[:-25])  # partial trailing batch
    legacy = root / "legacy-0" / f"{0:020d}.log"
    legacy.write_bytes(legacy.read_bytes()[:40] + bytes(30) + legacy.read_bytes()[70:])  # lost framing
    (root / "ghost-0").mkdir()
    (root / "ghost-0" / f"{0:020d}.log").symlink_to(root / "nowhere.log")
    return root


def test_damage_never_fails_the_job(spark: Any, synthetic_log_dir: Path, tmp_path: Path) -> None:
    root = _damaged_copy(synthetic_log_dir, tmp_path)
    actual = rows_of(load(spark, [root]))
    expected = expected_records([root])
    assert_same_rows(actual, expected)
    assert any(not r["crcOk"] for r in actual)
    batches = rows_of(load(spark, [root], level="batches"))
    assert_same_rows(batches, expected_batches([root]))


def test_findings_are_verify_findings(
    spark: Any, synthetic_log_dir: Path, corpus_root: Path, tmp_path: Path
) -> None:
    root = _damaged_copy(synthetic_log_dir, tmp_path)
    paths = [root, root / "syn-0" / f"{29:020d}.log"]
    running = corpus_root / "kafka-3.8.0-running-copy"
    if running.is_dir():
        paths.append(running)
    rows = rows_of(load(spark, paths, level="findings"))
    targets = [discover(str(p)) for p in paths]
    expected = [
        (finding_row(f), r.label, r.kind)
        for r in verify_targets(targets, VerifyOptions(jobs=1))
        for f in r.findings
    ]
    fixed = [name for name, _ in FINDING_COLUMNS[:8]]
    actual = [
        ({**{k: row[k] for k in fixed}, **json.loads(row["details"])}, row["target"], row["scope"])
        for row in rows
    ]
    assert actual == expected
    codes = {row["code"] for row in rows}
    assert {"crc-mismatch", "partial-trailing-batch", "skipped-bytes"} <= codes


def test_an_unreadable_path_is_a_finding_not_an_error(spark: Any, tmp_path: Path) -> None:
    dangling = tmp_path / f"{0:020d}.log"
    dangling.symlink_to(tmp_path / "gone")
    findings = rows_of(load(spark, [dangling], level="findings"))
    # A symlink to nothing has its own code (the one classifier names what the path is).
    assert [(f["code"], f["file"]) for f in findings] == [("dangling-symlink", str(dangling))]
    assert load(spark, [dangling]).count() == 0


def test_a_file_vanishing_after_planning_yields_no_rows() -> None:
    reader = ds.KdumpReader(ds.ReadOptions(paths=("x",)))
    task = ds.SliceTask((ds.SegmentSlice("/nonexistent/00000000000000000000.log", 0, "t", 0),))
    assert list(reader.read(task)) == []


def test_a_missing_path_is_a_usage_error(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(Exception, match="path does not exist"):
        load(spark, [tmp_path / "missing"]).count()


# --- options and pushdown ----------------------------------------------------------------------


def test_options(spark: Any, synthetic_log_dir: Path) -> None:
    big = synthetic_log_dir / "big-0"
    rows = rows_of(load(spark, [big], fromOffset=995, toOffset=1004))
    assert [r["offset"] for r in rows] == list(range(995, 1005))
    t = datetime.fromtimestamp((1_700_000_000_000 + 15_990) / 1000, UTC)
    rows = rows_of(load(spark, [big], fromTimestamp=t.isoformat()))
    assert [r["offset"] for r in rows] == list(range(15_990, 16_000))
    rows = rows_of(load(spark, [big], toTimestamp=1_700_000_000_004))
    assert [r["offset"] for r in rows] == list(range(5))
    with pytest.raises(Exception, match="option level"):
        load(spark, [big], level="nonsense").count()
    with pytest.raises(Exception, match="splitbytes"):
        load(spark, [big], splitBytes="many").count()


def test_pushdown_prunes_and_stays_exact(spark: Any, synthetic_log_dir: Path) -> None:
    df = load(spark, [synthetic_log_dir], splitBytes=100_000, packBytes=0)
    everything = expected_records([synthetic_log_dir])
    all_tasks = df.rdd.getNumPartitions()

    narrow = df.where("offset BETWEEN 12000 AND 12010 AND topic = 'big'")
    assert [r["offset"] for r in rows_of(narrow)] == list(range(12000, 12011))
    assert narrow.rdd.getNumPartitions() <= 2 < all_tasks

    since = EPOCH + timedelta(milliseconds=1_700_000_000_000 + 15_000)
    late = df.where(df.timestamp >= since)
    want = [r for r in everything if r["timestamp"] >= since]
    assert_same_rows(rows_of(late), want)

    by_partition = df.where("partition IN (0) AND topic IN ('syn', 'legacy')")
    assert by_partition.count() == sum(1 for r in everything if r["topic"] in ("syn", "legacy"))

    # With pushdown off (Spark's default) the same queries run, unpruned.
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
    try:
        unpushed = load(spark, [synthetic_log_dir], splitBytes=100_000, packBytes=0).where(
            "offset BETWEEN 12000 AND 12010 AND topic = 'big'"
        )
        assert [r["offset"] for r in rows_of(unpushed)] == list(range(12000, 12011))
        assert unpushed.rdd.getNumPartitions() == all_tasks
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")


def test_push_filters_keeps_every_filter_for_spark(synthetic_log_dir: Path) -> None:
    from pyspark.sql.datasource import EqualTo, GreaterThan, In, LessThanOrEqual, StringStartsWith

    reader = ds.KdumpPushdownReader(
        ds.ReadOptions.parse({"path": str(synthetic_log_dir), "splitbytes": "100000"})
    )
    filters = [
        GreaterThan(("offset",), 99),
        LessThanOrEqual(("offset",), 150),
        In(("topic",), ("big", "other")),
        EqualTo(("partition",), 0),
        StringStartsWith(("segment",), "/"),
        GreaterThan(("timestamp",), datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)),
    ]
    assert list(reader.pushFilters(filters)) == filters
    assert reader.bounds == ds.Bounds(
        offset_lo=100,
        offset_hi=150,
        ts_lo_us=1_700_000_000_000_001,
        topics=frozenset({"big", "other"}),
        partitions=frozenset({0}),
    )
    tasks = reader.partitions()
    assert len(tasks) == 1
    (task,) = tasks
    assert isinstance(task, ds.SliceTask)
    assert [s.topic for s in task.slices] == ["big"]


def test_packing_keeps_order_and_big_items_alone() -> None:
    assert ds.pack(list("abcdef"), [1, 1, 5, 1, 1, 1], 3) == [("a", "b"), ("c",), ("d", "e", "f")]
    assert ds.pack(list("abc"), [1, 1, 1], 0) == [("a",), ("b",), ("c",)]


def test_findings_rows_carry_their_details(spark: Any, synthetic_log_dir: Path, tmp_path: Path) -> None:
    root = _damaged_copy(synthetic_log_dir, tmp_path)
    rows = rows_of(load(spark, [root / "syn-0"], level="findings"))
    crc = next(r for r in rows if r["code"] == "crc-mismatch")
    # salvage_first: valid batches lie past this one, so the repair hint names salvage first.
    assert set(json.loads(crc["details"])) == {"stored_crc", "computed_crc", "salvage_first"}
    assert (crc["severity"], crc["type"]) == ("error", "finding")
    assert (crc["target"], crc["scope"]) == (str(root / "syn-0"), "partition")
    assert Path(crc["file"]).name == f"{0:020d}.log"
