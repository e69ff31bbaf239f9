"""Salvage's fsyncs on a background thread (`kdump.ops.salvage.durable`): every output file and
directory is still durable before the report is written, and a sync that fails on the thread fails
the salvage and removes its output, as one on the main thread does."""

from __future__ import annotations

import errno
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from builders import build_partition
from corruptions import tree_state

from kdump.errors import RepairFaultError
from kdump.formats.constants import Codec
from kdump.model.partition import PartitionDir
from kdump.ops.repair import safety
from kdump.ops.salvage import durable
from kdump.ops.salvage.durable import Syncs
from kdump.ops.salvage.output import salvage
from kdump.render.salvage import batch_lines, record_lines

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names fds by /proc")

Event = tuple[str, str, str]  # (call, thread name, path)


def _part(tmp_path: Path) -> Path:
    part = tmp_path / "in" / "t-0"
    build_partition(part, segments=2, batches_per_segment=20, records_per_batch=20, codec=Codec.GZIP)
    return part


def _salvage(part: Path, out: Path) -> Any:
    return salvage(
        PartitionDir.load(part), out, record_line=record_lines(), batch_lines=batch_lines(), parquet=True
    )


def _spy(monkeypatch: pytest.MonkeyPatch, fail: Callable[[Event], bool] | None = None) -> list[Event]:
    """Record every fsync and open of the output (which thread, which path); fail the fsyncs
    `fail` picks with EIO."""
    events: list[Event] = []

    def fsync(fd: int) -> None:
        event = ("fsync", threading.current_thread().name, str(Path(f"/proc/self/fd/{fd}").readlink()))
        events.append(event)
        if fail is not None and fail(event):
            raise OSError(errno.EIO, "injected EIO")
        safety._Calls.fsync(fd)

    def open_(path: Any, *args: Any) -> int:
        events.append(("open", threading.current_thread().name, str(Path(path).absolute())))
        return int(safety._Calls.open(path, *args))

    monkeypatch.setattr(safety.CALLS, "fsync", fsync)
    monkeypatch.setattr(safety.CALLS, "open", open_)
    return events


def test_every_output_is_durable_before_the_report_and_the_waits_run_on_a_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    part = _part(tmp_path)
    reference = tmp_path / "reference"
    _salvage(part, reference)
    monkeypatch.setattr(durable, "WRITEBACK_BYTES", 4096)  # a writeback every few batches
    events = _spy(monkeypatch)
    out = tmp_path / "out"
    _salvage(part, out)

    report = str(out / "report.json")
    at_report = next(i for i, (call, _, path) in enumerate(events) if call == "open" and path == report)
    synced_before = {path for call, _, path in events[:at_report] if call == "fsync"}
    outputs = {str(p) for p in out.rglob("*") if p.name != "report.json"} | {str(out)}
    assert outputs <= synced_before, outputs - synced_before
    # The report, then the directory naming it, after.
    assert [path for call, _, path in events[at_report:] if call == "fsync"] == [report, str(out)]
    # The clean partition's and the records' waits ran on the thread; the records files started
    # their writeback while they grew.
    on_thread = [path for call, thread, path in events if call == "fsync" and thread.startswith("kdump-sync")]
    assert str(out / "t-0") in on_thread
    assert str(out / "t-0" / "00000000000000000000.log") in on_thread
    assert on_thread.count(str(out / "records.jsonl")) >= 2  # a writeback at least, then the last
    assert on_thread.count(str(out / "records.parquet")) >= 2
    # The same bytes as without early writeback.
    for name in ("records.jsonl", "t-0/00000000000000000000.log", "t-0/00000000000000000000.index"):
        assert (out / name).read_bytes() == (reference / name).read_bytes()
    assert not [t for t in threading.enumerate() if t.name.startswith("kdump-sync")]


@pytest.mark.parametrize(
    "which",
    [
        "t-0/00000000000000000000.log",  # the clean copy, synced while the records are written
        "t-0",  # the clean partition's directory
        "records.jsonl",  # its first writeback, part way through
        "records.parquet",  # every sync of it, the last one included
    ],
)
def test_a_sync_that_fails_on_the_thread_fails_the_salvage_and_removes_the_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    part = _part(tmp_path)
    before = tree_state(part)
    out = tmp_path / "out"
    monkeypatch.setattr(durable, "WRITEBACK_BYTES", 4096)
    fired: list[Event] = []

    def fail(event: Event) -> bool:
        hit = event[1].startswith("kdump-sync") and event[2] == str(out / which)
        if hit and (not fired or which == "records.parquet"):
            fired.append(event)
            return True
        return False

    _spy(monkeypatch, fail)
    with pytest.raises(RepairFaultError, match="was removed"):
        _salvage(part, out)
    assert fired
    assert not out.exists()
    assert tree_state(part) == before
    assert not [t for t in threading.enumerate() if t.name.startswith("kdump-sync")]


def test_a_fault_on_the_main_thread_waits_for_the_queued_syncs(tmp_path: Path) -> None:
    """The output is removed only once nothing syncs or holds a file in it any more."""
    started = threading.Event()
    release = threading.Event()
    fh = (tmp_path / "f").open("wb")

    def fault_while_syncing() -> None:
        with Syncs() as syncs:
            syncs._submit(lambda: (started.set(), release.wait(5)))
            syncs.sync_close(fh)
            started.wait(5)
            threading.Timer(0.2, release.set).start()
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        fault_while_syncing()
    assert release.is_set()
    assert fh.closed


def test_finish_raises_the_first_error_of_the_queue(tmp_path: Path) -> None:
    def boom() -> None:
        raise OSError(errno.ENOSPC, "injected")

    with Syncs() as syncs:
        syncs._submit(boom)
        syncs.sync_dir(tmp_path)
        with pytest.raises(OSError, match="injected"):
            syncs.finish()


def test_pyarrow_missing_on_the_import_thread_fails_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pyarrow is imported on a thread while the plan scans; what that import raised is raised on
    the caller's thread before the output directory is made."""
    from kdump.errors import KdumpError
    from kdump.ops.salvage import parquet

    def missing() -> None:
        assert threading.current_thread().name == "kdump-import"
        raise KdumpError("records.parquet needs pyarrow")

    monkeypatch.setattr(parquet, "load_pyarrow", missing)
    out = tmp_path / "out"
    with pytest.raises(KdumpError, match="needs pyarrow"):
        _salvage(_part(tmp_path), out)
    assert not out.exists()
