"""The data source and fleet verify on s3:// (a real S3 server, tests/s3_server.py): the same rows
and findings as the local files, with pushdown on and off; a task fetches only its slice."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark not installed; install kdump[spark]")
pytest.importorskip("pyarrow", reason="pyarrow not installed; install kdump[spark]")

from corpus import CORPUS_DIRS

from kdump.formats.constants import Codec
from kdump.formats.offset_index import encode_offset_index
from kdump.formats.records import NewRecord, build_v2_batch
from kdump.model.log_dir import discover
from kdump.ops.checks.verify import VerifyOptions
from kdump.render.rows import finding_row
from kdump.spark import arrow_rows
from kdump.spark import datasource as ds
from kdump.spark.fleet import run_fleet_verify
from kdump.spark.ranged import open_slice, open_slice_buffer
from kdump.store.remote import FETCHED


@pytest.fixture(scope="module")
def stored(
    spark: Any, s3_store: Any, corpus_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, str]:
    local = tmp_path_factory.mktemp("spark-s3") / "logs"
    for name in CORPUS_DIRS:
        shutil.copytree(corpus_root / name, local / name, ignore=shutil.ignore_patterns("expected"))
    url = s3_store.upload(local, "spark-tests/logs")
    _workers_see_the_store(spark)
    return local, url


def _workers_see_the_store(spark: Any) -> None:
    """The shared session's JVM started before the S3 server: hand its environment to the workers.

    (A user exports AWS_ENDPOINT_URL and the credentials before starting Spark; the workers then
    inherit them.) PySpark passes `sc.environment` to the workers of functions wrapped after it
    is set, so the source is registered again.
    """
    import os

    from kdump.spark import register

    env = spark.sparkContext.environment
    env.update({k: v for k, v in os.environ.items() if k.startswith("AWS_")})
    register(spark)


def _rows(spark: Any, root: str, level: str, where: str | None, prefix: str) -> list[str]:
    paths = [f"{root}/{name}" for name in CORPUS_DIRS]
    df = spark.read.format("kdump").option("level", level).option("splitBytes", "4096").load(paths)
    if where:
        df = df.where(where)
    out = []
    for row in df.collect():
        d = row.asDict(recursive=True)
        out.append(
            repr(sorted((k, v.replace(prefix, "LOC") if isinstance(v, str) else v) for k, v in d.items()))
        )
    return sorted(out)


# Each case costs some 40 s of CI. With pushdown off the source yields every row of the level and
# Spark filters, so a filtered case without pushdown covers the whole level read from the store; the
# same filter pushed down covers the source's own pruning.
@pytest.mark.parametrize(
    ("level", "where", "pushdown"),
    [
        ("records", "offset >= 560 AND offset <= 600", "true"),
        ("records", "offset >= 560 AND offset <= 600", "false"),
        ("batches", "topic = 'txn'", "true"),
        ("batches", "topic = 'txn'", "false"),
        ("findings", None, "true"),
    ],
)
def test_rows_from_store_equal_local(
    spark: Any, stored: tuple[Path, str], level: str, where: str | None, pushdown: str
) -> None:
    local, url = stored
    spark.conf.set("spark.sql.python.filterPushdown.enabled", pushdown)
    try:
        here = _rows(spark, str(local), level, where, str(local))
        there = _rows(spark, url, level, where, url)
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    assert here
    assert there == here


def test_fleet_verify_on_store_equals_local(spark: Any, stored: tuple[Path, str]) -> None:
    local, url = stored
    opts = VerifyOptions()

    def rows(path: str, prefix: str) -> list[Any]:
        reports = run_fleet_verify([discover(f"{path}/{name}") for name in CORPUS_DIRS], opts)
        return [
            (r.label.replace(prefix, "LOC"), r.size, r.valid_bytes, r.batches, r.records) for r in reports
        ] + [
            {k: v.replace(prefix, "LOC") if isinstance(v, str) else v for k, v in finding_row(f).items()}
            for r in reports
            for f in r.findings
        ]

    assert rows(url, url) == rows(str(local), str(local))


def _big_segment(directory: Path) -> Path:
    """A 4 MB segment of zstd and plain batches with the broker's sparse offset index."""
    directory.mkdir(parents=True)
    batches, entries, pos, since, offset = [], [], 0, 0, 0
    for b in range(800):
        rows = [
            NewRecord(b"k%d" % (offset + i), (b"%08d" % (offset + i)) * 60, 1_700_000_000_000 + offset + i)
            for i in range(10)
        ]
        batch = build_v2_batch(offset, rows, codec=Codec.ZSTD if b % 2 else Codec.NONE)
        if since >= 4096:
            entries.append((offset + 9, pos))
            since = 0
        batches.append(batch)
        since += len(batch)
        pos += len(batch)
        offset += 10
    (directory / f"{0:020d}.log").write_bytes(b"".join(batches))
    (directory / f"{0:020d}.index").write_bytes(encode_offset_index(entries, 0))
    return directory


def test_task_fetches_only_its_slice(s3_store: Any, tmp_path: Path) -> None:
    part = _big_segment(tmp_path / "logs" / "big-0")
    url = s3_store.upload(tmp_path / "logs", "slices/logs")
    size = (part / f"{0:020d}.log").stat().st_size
    opts = ds.ReadOptions(paths=(url,), split_bytes=size // 5 + 1)
    slices = ds.plan_slices(opts)
    local = ds.plan_slices(ds.ReadOptions(paths=(str(tmp_path / "logs"),), split_bytes=size // 5 + 1))
    assert len(slices) >= 4
    assert [(s.start, s.end) for s in slices] == [(s.start, s.end) for s in local]
    for s, here in zip(slices, local, strict=True):
        before = FETCHED.bytes
        # Scanned while it arrives, as a task reads it.
        with open_slice(s.log, s.start, s.end) as sliced:
            positions = [h.position for h in arrow_rows._scan_slice(sliced, s)]
        fetched = FETCHED.bytes - before
        with open_slice(here.log, here.start, here.end) as sliced:
            assert positions == [h.position for h in arrow_rows._scan_slice(sliced, here)]
        # Complete before it is scanned, as split planning and checks read it.
        with (
            open_slice_buffer(s.log, s.start, s.end) as buf,
            open_slice(here.log, here.start, here.end) as mine,
        ):
            assert bytes(buf[s.start : s.end]) == bytes(mine.view[s.start : s.end])
        # The slice, the rest of its last batch and the next batch's header: nothing more.
        assert s.size <= fetched <= s.size * 1.05 + 64
