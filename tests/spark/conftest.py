"""Spark fixtures: one local[2] SparkSession for the whole run, registered with the `kdump` source.

Starting a JVM costs 10-20 s, so every Spark test shares this session. The tests skip, saying why,
when pyspark/pyarrow are not installed or no Java runtime is found. The corpus comes from the
`corpus_root` fixture of `tests/conftest.py` (the full corpus, else the bundled subset); synthetic
partitions built here need no corpus at all.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def spark_unavailable() -> str | None:
    """Why Spark tests cannot run here, or None."""
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as exc:
        return f"pyspark/pyarrow not installed ({exc.name}); install kdump[spark]"
    java_home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (java_home and (Path(java_home) / "bin" / "java").exists()):
        return "no Java runtime: java is not on PATH and JAVA_HOME is unset"
    return None


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local[2] session with filter pushdown enabled; the workers run this interpreter."""
    reason = spark_unavailable()
    if reason:
        pytest.skip(reason)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    from kdump.spark import register

    session = (
        SparkSession.builder.master("local[2]")
        .appName("kdump-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    yield session
    session.stop()


# --- synthetic data: runs without the corpus ----------------------------------------------------

T0 = 1_700_000_000_000


def _write_segment(directory: Path, base: int, batches: list[bytes], timeindex: bool = True) -> None:
    """A `.log` and its `.index` (one entry per batch: last offset, position) and `.timeindex`."""
    from kdump.formats.batch import decode_v2_header
    from kdump.formats.offset_index import encode_offset_index
    from kdump.formats.time_index import encode_time_index

    directory.mkdir(parents=True, exist_ok=True)
    data = b"".join(batches)
    entries = []
    times = []
    pos = 0
    best = -1
    for b in batches:
        if b[16] == 2:
            h = decode_v2_header(b, 0, len(b))
            entries.append((h.last_offset, pos))
            if h.max_timestamp > best:
                best = h.max_timestamp
                times.append((best, h.last_offset))
        pos += len(b)
    name = f"{base:020d}"
    (directory / f"{name}.log").write_bytes(data)
    (directory / f"{name}.index").write_bytes(encode_offset_index(entries, base))
    if timeindex:
        (directory / f"{name}.timeindex").write_bytes(encode_time_index(times, base))


def build_synthetic_log_dir(root: Path) -> Path:
    """A small log dir of hand-made batches covering what the corpus covers, and a large segment.

    - `syn-0`: every codec, null keys and values, headers (one key not UTF-8, one null value),
      LogAppendTime, a transaction with its commit marker; a second segment without `.timeindex`.
    - `legacy-0`: v0 and v1 messages, plain and compressed wrappers, v1 LogAppendTime.
    - `big-0`: one 2 MB segment of 1600 gzip and plain batches, indexed every 4 KiB (for splits).
    """
    from kdump.formats.constants import Codec, ControlType
    from kdump.formats.control import encode_control_key, encode_end_txn_marker
    from kdump.formats.records import NewRecord, build_legacy_entry, build_v2_batch

    log_dir = root / "synthetic"
    recs = [
        NewRecord(b"k0", b"v0", T0, ((b"h", b"x"),)),
        NewRecord(None, b"v1", T0 + 5),
        NewRecord(b"k2", None, T0 + 2, ((b"bad\xff\xfekey", None), (b"ok", b""))),
    ]
    batches = [build_v2_batch(0, recs, producer_id=11, producer_epoch=2, base_sequence=0)]
    offset = 3
    for codec in (Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD):
        five = [NewRecord(b"key-%d" % i, bytes([codec]) * (50 + i * 40), T0 + 10 * i) for i in range(5)]
        batches.append(build_v2_batch(offset, five, codec=codec, partition_leader_epoch=1))
        offset += 5
    lat = [NewRecord(b"lat", b"x" * i, T0 + i) for i in range(3)]
    batches.append(build_v2_batch(offset, lat, log_append_time=T0 + 999, partition_leader_epoch=1))
    offset += 3
    txn = [NewRecord(b"t", b"in-txn-%d" % i, T0 + 50) for i in range(2)]
    batches.append(
        build_v2_batch(
            offset,
            txn,
            transactional=True,
            producer_id=7,
            producer_epoch=1,
            base_sequence=0,
            partition_leader_epoch=1,
        )
    )
    offset += 2
    marker = [NewRecord(encode_control_key(ControlType.COMMIT), encode_end_txn_marker(5), T0 + 60)]
    batches.append(
        build_v2_batch(
            offset,
            marker,
            transactional=True,
            control=True,
            producer_id=7,
            producer_epoch=1,
            partition_leader_epoch=1,
        )
    )
    offset += 1
    _write_segment(log_dir / "syn-0", 0, batches)
    second = []
    base = offset
    for b in range(10):
        four = [NewRecord(b"s%d" % i, b"second-%d-%d" % (b, i), T0 + 1000 + b * 10 + i) for i in range(4)]
        second.append(build_v2_batch(offset, four, partition_leader_epoch=3))
        offset += 4
    _write_segment(log_dir / "syn-0", base, second, timeindex=False)

    legacy = [
        build_legacy_entry(0, [NewRecord(b"a", b"v0-%d" % i, -1) for i in range(3)], magic=0),
        build_legacy_entry(
            3, [NewRecord(None, b"v0z-%d" % i, -1) for i in range(3)], magic=0, codec=Codec.GZIP
        ),
        build_legacy_entry(6, [NewRecord(b"b", b"v1-%d" % i, T0 + i) for i in range(2)], magic=1),
        build_legacy_entry(
            8, [NewRecord(b"c", b"v1z-%d" % i, T0 + i) for i in range(3)], magic=1, codec=Codec.GZIP
        ),
        build_legacy_entry(
            11,
            [NewRecord(b"d", b"lat-%d" % i, T0 + i) for i in range(2)],
            magic=1,
            codec=Codec.GZIP,
            log_append_time=T0 + 77,
        ),
    ]
    (log_dir / "legacy-0").mkdir(parents=True)
    (log_dir / "legacy-0" / f"{0:020d}.log").write_bytes(b"".join(legacy))

    big = []
    offset = 0
    for b in range(1600):
        n = 10
        rows = [
            NewRecord(b"big-%d" % (offset + i), (b"%08d" % (offset + i)) * 12, T0 + offset + i)
            for i in range(n)
        ]
        big.append(build_v2_batch(offset, rows, codec=Codec.GZIP if b % 3 == 0 else Codec.NONE))
        offset += n
    _write_big_segment(log_dir / "big-0", big)
    return log_dir


def _write_big_segment(directory: Path, batches: list[bytes]) -> None:
    """Like `_write_segment`, with the broker's sparse index: one entry per 4 KiB of log."""
    from kdump.formats.batch import decode_v2_header
    from kdump.formats.offset_index import encode_offset_index

    directory.mkdir(parents=True, exist_ok=True)
    entries = []
    pos = 0
    since = 0
    for b in batches:
        h = decode_v2_header(b, 0, len(b))
        if since >= 4096:
            entries.append((h.last_offset, pos))
            since = 0
        since += len(b)
        pos += len(b)
    (directory / f"{0:020d}.log").write_bytes(b"".join(batches))
    (directory / f"{0:020d}.index").write_bytes(encode_offset_index(entries, 0))


@pytest.fixture(scope="session")
def synthetic_log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A read-only synthetic log dir (copy it before damaging anything)."""
    return build_synthetic_log_dir(tmp_path_factory.mktemp("synthetic"))
