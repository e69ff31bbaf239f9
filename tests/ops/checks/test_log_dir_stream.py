"""The streamed verify of a broker's log dir (`kdump.ops.checks.log_dir_stream`) reports what the
planned one (`verify_targets` over fully loaded targets) reports: the same reports, in the same
order, field for field, on log dirs with damage, odd entries, a partition that cannot be listed, a
log dir and a partition of it both given, and a KRaft log dir with a stray topic id; and the CLI
prints the same bytes. It holds only the partitions being checked, never the whole log dir."""

from __future__ import annotations

import dataclasses
import gc
import os
import shutil
import uuid
from pathlib import Path

import pytest
from builders import build_partition
from click.testing import CliRunner
from corpus import require_full_corpus

from kdump.cli import cli
from kdump.formats.checkpoints import encode_partition_metadata
from kdump.model import listing as listing_module
from kdump.model.log_dir import discover
from kdump.model.partition import PartitionDir
from kdump.ops.checks import log_dir_stream
from kdump.ops.checks.log_dir_stream import streamed_partitions, verify_streamed
from kdump.ops.checks.verify import PartitionReport, VerifyOptions, verify_targets
from kdump.scan import held

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "logdir"


def _comparable(reports: list[PartitionReport]) -> list[dict[str, object]]:
    return [dataclasses.asdict(r) for r in reports]


def _both(paths: list[Path], jobs: int) -> tuple[list[PartitionReport], list[PartitionReport]]:
    """(planned, streamed) reports of the same paths."""
    planned = list(verify_targets([discover(str(p)) for p in paths], VerifyOptions(jobs=jobs)))
    streamed = list(verify_streamed([discover(str(p), lazy=True) for p in paths], VerifyOptions(jobs=jobs)))
    return planned, streamed


@pytest.fixture
def odd_log_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A log dir of 40 partitions with damage and every kind of odd entry, streamed from 1 partition."""
    monkeypatch.setattr(log_dir_stream, "STREAM_MIN", 1)
    log_dir = tmp_path / "kafka-logs"
    for i in range(40):
        build_partition(log_dir / f"orders-{i}", segments=2, batches_per_segment=2)
    shutil.copyfile(SAMPLES / "meta.properties", log_dir / "meta.properties")
    log = sorted((log_dir / "orders-17").glob("*.log"))[0]
    data = bytearray(log.read_bytes())
    data[70] ^= 0xFF  # a damaged batch
    log.write_bytes(bytes(data))
    (log_dir / "orders-3" / "00000000000000000099.index").write_bytes(b"")  # an orphan index
    (log_dir / "orders-5" / "notes.txt").write_text("x")  # an unknown file in a partition
    (log_dir / "aaa-junk.txt").write_text("x")  # unknown log-dir entries, before and among partitions
    (log_dir / "orders-20x").mkdir()
    build_partition(log_dir / "badname", segments=1, batches_per_segment=1)  # segments, misnamed dir
    (log_dir / "orders-39").rename(log_dir / "real-orders-39")
    (log_dir / "orders-39").symlink_to(log_dir / "real-orders-39")  # a symlinked partition
    os.mkfifo(log_dir / "orders-7.fifo")
    (log_dir / "orders-9").mkdir(exist_ok=True)
    # orders-12 and orders-30 cannot be listed: each is the log dir's finding, in its entry's place.
    real = listing_module.list_dir_types

    def list_dir_types(path: Path) -> tuple[list[str], frozenset[str]] | str:
        return "Permission denied" if path.name in ("orders-12", "orders-30") else real(path)

    monkeypatch.setattr(listing_module, "list_dir_types", list_dir_types)
    if held.compiled is not None:  # the compiled read of a partition cannot open them either
        real_read = held.compiled.read_dir

        class _Compiled:
            @staticmethod
            def read_dir(path: str, limit: int, budget: int) -> object:
                return (
                    None if Path(path).name in ("orders-12", "orders-30") else real_read(path, limit, budget)
                )

        monkeypatch.setattr(held, "compiled", _Compiled)
    return log_dir


@pytest.mark.parametrize("jobs", [1, 2])
def test_streamed_reports_are_the_planned_ones(odd_log_dir: Path, jobs: int) -> None:
    planned, streamed = _both([odd_log_dir], jobs)
    assert _comparable(streamed) == _comparable(planned)
    codes = {f.code for r in streamed for f in r.findings}
    assert "unreadable-file" in codes
    assert "partition-name-invalid" in codes
    assert "orphan-index" in codes
    rollup = streamed[-1]
    assert rollup.kind == "log-dir"
    assert rollup.taken_as == "a log dir of 40 partitions"
    unread = [f.file for f in rollup.findings if f.code == "unreadable-file"]
    assert unread == [str(odd_log_dir / "orders-12"), str(odd_log_dir / "orders-30")]


def test_a_partition_given_beside_its_log_dir_is_reported_once(odd_log_dir: Path) -> None:
    paths = [odd_log_dir / "orders-4", odd_log_dir, odd_log_dir / "orders-6", odd_log_dir.parent]
    planned, streamed = _both(paths, 2)
    assert _comparable(streamed) == _comparable(planned)
    labels = [r.label for r in streamed]
    assert len(labels) == len(set(labels))


def test_cli_output_is_byte_for_byte_the_planned_one(
    odd_log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs = {}
    for streamed in (True, False):
        monkeypatch.setattr(log_dir_stream, "STREAM_MIN", 1 if streamed else 10**9)
        for fmt in ("text", "json"):
            result = CliRunner().invoke(cli, ["verify", "--format", fmt, str(odd_log_dir)])
            assert result.exit_code == 3, result.output  # unreadable entries
            outputs[streamed, fmt] = result.stdout
    assert outputs[True, "text"] == outputs[False, "text"]
    assert outputs[True, "json"] == outputs[False, "json"]


def test_kraft_log_dir_with_a_stray_topic_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each worker replays the metadata image beside the partitions it checks: the stray copy is
    found wherever it is dealt."""
    monkeypatch.setattr(log_dir_stream, "STREAM_MIN", 1)
    src = require_full_corpus() / "kafka-3.8.0"
    log_dir = tmp_path / "data"
    log_dir.mkdir()
    for name in ("__cluster_metadata-0", "c-none-0", "txn-0"):
        shutil.copytree(src / name, log_dir / name)
    for i in range(1, 30):
        shutil.copytree(src / "c-none-0", log_dir / f"c-none-{i}")
    (log_dir / "c-none-21" / "partition.metadata").write_bytes(encode_partition_metadata(uuid.UUID(int=9)))
    planned, streamed = _both([log_dir], 2)
    assert _comparable(streamed) == _comparable(planned)
    stray = {r.label for r in streamed for f in r.findings if f.code == "topic-id-unknown"}
    assert str(log_dir / "c-none-21") in stray
    assert str(log_dir / "c-none-0") not in stray


def test_only_the_partition_being_checked_is_alive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The memory bound at 100,000 partitions, pinned on 300: while reports stream out, no more
    than a few partition objects exist at once (the planned verify held all 300 to the end)."""
    monkeypatch.setattr(log_dir_stream, "STREAM_MIN", 1)
    log_dir = tmp_path / "kafka-logs"
    build_partition(log_dir / "t-0", segments=1, batches_per_segment=1)
    for i in range(1, 300):
        shutil.copytree(log_dir / "t-0", log_dir / f"t-{i}")
    alive = []
    for n, _report in enumerate(verify_streamed([discover(str(log_dir), lazy=True)], VerifyOptions(jobs=1))):
        if n % 50 == 49:
            alive.append(sum(isinstance(o, PartitionDir) for o in gc.get_objects()))
    assert len(alive) == 6
    assert max(alive) <= 2, alive


def test_a_streamed_log_dir_reports_progress_a_partition_at_a_time(
    odd_log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The progress of a streamed log dir comes one call per partition checked, and
    `streamed_partitions` gives their number from the listing alone (a bar counted in bytes would
    list and `stat` every partition first); anything checked otherwise has no such count."""
    target = discover(str(odd_log_dir), lazy=True)
    assert target.entries is not None
    assert streamed_partitions([target]) == len(target.entries.names)
    calls: list[int] = []
    reports = list(verify_streamed([target], VerifyOptions(jobs=1), calls.append))
    checked = [r for r in reports[:-1] if r.kind == "partition"]
    assert len(calls) == len(checked)
    assert calls == [r.log_bytes for r in checked]
    assert len(calls) <= len(target.entries.names)
    assert streamed_partitions([discover(str(odd_log_dir / "orders-1"))]) is None
    monkeypatch.setattr(log_dir_stream, "STREAM_MIN", 10**9)
    assert streamed_partitions([target]) is None
