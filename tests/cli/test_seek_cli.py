"""`kdump seek-by-time` on the command line: TIME forms, output formats, exit codes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from corpus import CORPUS_ROOT

from kdump.formats.offset_index import encode_offset_index
from kdump.formats.records import NewRecord, build_v2_batch
from kdump.formats.time_index import encode_time_index

CORPUS = CORPUS_ROOT  # ../shared/corpus beside the checkout, or $KDUMP_CORPUS
NO_CORPUS = f"the real-broker corpus is not at {CORPUS} (it sits beside the checkout as ../shared/corpus)"

Run = Callable[..., Result]
HOUR = 3_600_000
# Timestamps relative to the test's start, so relative TIMEs (-2h) have known answers.
NOW = int(time.time() * 1000)


def write_partition(path: Path, base_times: list[list[int]], *, interval_bytes: int = 200) -> Path:
    """Segments of one-record-per-millisecond batches (4 records each), indexed like a broker."""
    path.mkdir(parents=True)
    offset = 0
    for times in base_times:
        base, log = offset, bytearray()
        offsets: list[tuple[int, int]] = []
        tindex: list[tuple[int, int]] = []
        since, max_ts, max_off = 0, -1, base
        for t in times:
            recs = [NewRecord(b"k", b"value-%d" % (offset + j), t + j) for j in range(4)]
            if t + 3 > max_ts:
                max_ts, max_off = t + 3, offset + 3
            if len(log) - since > interval_bytes:
                offsets.append((offset + 3, len(log)))
                if not tindex or max_ts > tindex[-1][0]:
                    tindex.append((max_ts, max_off))
                since = len(log)
            log += build_v2_batch(offset, recs)
            offset += 4
        if not tindex or max_ts > tindex[-1][0]:
            tindex.append((max_ts, max_off))
        (path / f"{base:020d}.log").write_bytes(bytes(log))
        (path / f"{base:020d}.index").write_bytes(encode_offset_index(offsets, base))
        (path / f"{base:020d}.timeindex").write_bytes(encode_time_index(tindex, base))
    return path


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    """A log dir with two partitions: batches every 10 minutes over the last 5 hours."""
    d = tmp_path / "data"
    start = NOW - 5 * HOUR
    write_partition(
        d / "orders-0",
        [[start + i * 600_000 for i in range(15)], [start + i * 600_000 for i in range(15, 30)]],
    )
    write_partition(d / "orders-1", [[start + 300_000 + i * 600_000 for i in range(30)]])
    (d / "replication-offset-checkpoint").write_text("0\n2\norders 0 100\norders 1 120\n")
    (d / "log-start-offset-checkpoint").write_text("0\n1\norders 1 8\n")
    return d


def rows(result: Result) -> list[dict[str, object]]:
    return [json.loads(line) for line in result.stdout.splitlines()]


@pytest.mark.parametrize(
    ("spec", "hours_ago"),
    [("-2h", 2), ("-90m", 1.5), ("-1d", 24), ("-3600s", 1), ("-1.5h", 1.5), ("-7200000ms", 2)],
)
def test_relative_times_are_not_options(kdump: Run, log_dir: Path, spec: str, hours_ago: float) -> None:
    # `-2h` would be `-2` plus `-h` (help) to a plain click command.
    res = kdump("seek-by-time", "--format", "json", spec, str(log_dir / "orders-0"))
    assert res.exit_code == 0, res.stderr
    (row,) = rows(res)
    target = row["target_timestamp"]
    assert isinstance(target, int)
    assert abs(target - (int(time.time() * 1000) - hours_ago * HOUR)) < 60_000
    assert isinstance(row["timestamp"], int)
    assert row["timestamp"] >= target
    assert row["timestamp"] - target < 600_000 or hours_ago == 24


def test_double_dash_also_works(kdump: Run, log_dir: Path) -> None:
    res = kdump("seek-by-time", "--format", "json", "--", "-2h", str(log_dir / "orders-0"))
    assert res.exit_code == 0, res.stderr
    assert rows(res)[0]["offset"] is not None


def test_real_entry_point_with_a_relative_time(log_dir: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "kdump", "seek-by-time", "-2h", "--format", "json", str(log_dir / "orders-0")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["type"] == "seek"


def test_epoch_iso_and_now(kdump: Run, log_dir: Path) -> None:
    t = NOW - 3 * HOUR + 1
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t // 1000)) + f".{t % 1000:03d}Z"
    by_epoch = rows(kdump("seek-by-time", "--format", "json", str(t), str(log_dir / "orders-0")))
    by_iso = rows(kdump("seek-by-time", "--format", "json", iso, str(log_dir / "orders-0")))
    assert by_epoch[0]["offset"] == by_iso[0]["offset"]
    assert by_epoch[0]["target_timestamp"] == by_iso[0]["target_timestamp"] == t
    assert by_epoch[0]["timestamp"] == t
    res = kdump("seek-by-time", "--format", "json", "now", str(log_dir / "orders-0"))
    assert res.exit_code == 0
    assert rows(res)[0]["offset"] is None  # nothing is at or after now: a null answer, exit 0


def test_json_row_per_partition_of_a_log_dir(kdump: Run, log_dir: Path) -> None:
    res = kdump("seek-by-time", "--format", "json", str(NOW - 4 * HOUR), str(log_dir))
    assert res.exit_code == 0, res.stderr
    out = rows(res)
    assert [r["partition"] for r in out] == [str(log_dir / "orders-0"), str(log_dir / "orders-1")]
    for r in out:
        assert r["type"] == "seek"
        for key in ("offset", "timestamp", "segment", "position", "used_index", "scan_fallback", "findings"):
            assert key in r
        assert r["used_index"] is True
        assert r["findings"] == []
    assert out[0]["offset"] == 24
    assert out[1]["offset"] == 24  # its batches come 5 minutes later


def test_special_targets_and_sentinels(kdump: Run, log_dir: Path) -> None:
    def one(spec: str, part: str = "orders-1") -> dict[str, object]:
        res = kdump("seek-by-time", "--format", "json", spec, str(log_dir / part))
        assert res.exit_code == 0, res.stderr
        return rows(res)[0]

    assert one("earliest")["offset"] == one("-2")["offset"] == 8  # from log-start-offset-checkpoint
    latest = one("latest")
    assert latest == one("-1")
    assert (latest["offset"], latest["log_end_offset"], latest["high_watermark"]) == (120, 120, 120)
    mx = one("max-timestamp")
    assert mx == one("-3")
    assert mx["offset"] == 119
    assert one("earliest", "orders-0")["offset"] == 0


def test_text_and_rich_output(kdump: Run, log_dir: Path) -> None:
    res = kdump("seek-by-time", "--format", "text", "latest", str(log_dir / "orders-0"))
    assert res.exit_code == 0
    line = res.stdout.splitlines()[0]
    assert "offset: 120 (log end offset)" in line
    assert "high-watermark: 100" in line
    assert "via: index" in line
    res = kdump("seek-by-time", "--format", "rich", str(NOW - 4 * HOUR), str(log_dir))
    assert res.exit_code == 0
    assert "kdump seek-by-time" in res.stdout
    assert "orders-1" in res.stdout


def test_damaged_index_is_reported_and_still_answered(kdump: Run, log_dir: Path) -> None:
    part = log_dir / "orders-0"
    good = rows(kdump("seek-by-time", "--format", "json", str(NOW - 4 * HOUR), str(part)))[0]
    index = part / "00000000000000000000.index"
    data = bytearray(index.read_bytes())
    data[4:8] = (int.from_bytes(data[4:8], "big") + 3).to_bytes(4, "big")  # position off by 3
    data[12:16] = (int.from_bytes(data[12:16], "big") + 3).to_bytes(4, "big")
    index.write_bytes(bytes(data))
    (part / "00000000000000000000.timeindex").unlink()
    res = kdump("seek-by-time", "--format", "json", str(NOW - 4 * HOUR), str(part))
    assert res.exit_code == 0
    bad = rows(res)[0]
    assert (bad["offset"], bad["timestamp"]) == (good["offset"], good["timestamp"])
    assert bad["scan_fallback"] is True
    codes = {f["code"] for f in bad["findings"]}  # type: ignore[union-attr]
    assert "time-index-missing" in codes
    text = kdump("seek-by-time", str(NOW - 4 * HOUR), str(part)).stdout
    assert "via: scan" in text
    assert "WARNING time-index-missing" in text


def test_exit_codes(kdump: Run, log_dir: Path, tmp_path: Path) -> None:
    part = str(log_dir / "orders-0")
    res = kdump("seek-by-time", "--format", "json", "0", str(tmp_path / "missing-0"), part)
    assert res.exit_code == 3
    assert "missing-0" in res.stderr
    assert len(rows(res)) == 1  # the readable partition is still answered
    assert kdump("seek-by-time", "yesterday", part).exit_code == 2
    assert kdump("seek-by-time", "2026-11-21T10:00:00", part).exit_code == 2  # no zone
    assert kdump("seek-by-time", "-7", part).exit_code == 2
    assert kdump("seek-by-time", "1", part + "/00000000000000000000.log").exit_code == 2
    assert kdump("seek-by-time", "1").exit_code == 2
    assert kdump("seek-by-time", "--frobnicate", "1", part).exit_code == 2
    (tmp_path / "not-kafka").mkdir()
    (tmp_path / "not-kafka" / "notes.txt").write_text("hello")
    assert kdump("seek-by-time", "1", str(tmp_path / "not-kafka")).exit_code == 2
    empty = tmp_path / "empty-log-dir"
    empty.mkdir()
    (empty / "meta.properties").write_text("version=0\n")
    res = kdump("seek-by-time", "1", str(empty))
    assert (res.exit_code, res.stdout) == (0, "")
    assert "no partition directories" in res.stderr


def test_log_dir_option_reads_checkpoints_elsewhere(kdump: Run, log_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "copied-checkpoints"
    elsewhere.mkdir()
    (elsewhere / "replication-offset-checkpoint").write_text("0\n1\norders 0 77\n")
    res = kdump(
        "seek-by-time", "--format", "json", "--log-dir", str(elsewhere), "latest", str(log_dir / "orders-0")
    )
    assert rows(res)[0]["high_watermark"] == 77


def test_help_documents_the_time_forms(kdump: Run) -> None:
    res = kdump("seek-by-time", "--help")
    assert res.exit_code == 0
    text = re.sub(r"-\s+", "-", " ".join(res.stdout.split()))  # undo wrapping, also at hyphens
    for word in ("ISO-8601", "-30m", "earliest", "latest", "max-timestamp", "--log-dir", "Exit codes"):
        assert word in text


@pytest.mark.corpus
def test_corpus_partitions_of_a_topic(kdump: Run) -> None:
    root = CORPUS / "kafka-3.8.0"
    if not root.is_dir():
        pytest.skip(NO_CORPUS)
    parts = [str(root / f"multi-part-{i}") for i in range(3)]
    res = kdump(
        "seek-by-time", "--format", "json", "--log-dir", str(root / "_logdir-files"), "latest", *parts
    )
    assert res.exit_code == 0, res.stderr
    out = rows(res)
    assert [r["partition"] for r in out] == parts
    assert [r["offset"] for r in out] == [477, 692, 831]
    assert [r["high_watermark"] for r in out] == [477, 692, 831]
    live = CORPUS / "kafka-3.8.0-running-copy" / "live-0"
    res = kdump("seek-by-time", "--format", "json", "latest", str(live))
    assert rows(res)[0]["offset"] == 10496
