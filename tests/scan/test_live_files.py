"""Files that change while kdump reads them (issue 31): a finding, never a signal.

A live broker truncates a follower's log, trims an index at a roll, appends to its active segment
and deletes segments by retention while kdump has them mapped. A read of a mapped page the file no
longer has raises SIGBUS; kdump's guard (kdump/scan/_mapguard.c) reads it as zeros, and the change is
reported: file-shrank-while-read, file-replaced-while-read, file-grew-while-read. Both the compiled
walk and the reference path (which reads the mapping through CPython's memoryview) are covered.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from live_files import check_with_hook, segment

from kdump.findings import CATALOG
from kdump.formats import fast_walk
from kdump.formats.batch import BatchHeader
from kdump.model.segment import Segment
from kdump.ops.checks import segment as segment_check
from kdump.scan.events import ScanSummary
from kdump.scan.log_scanner import scan_log
from kdump.scan.source import _guard, file_change, open_buffer

KDUMP = [sys.executable, "-m", "kdump"]
# The finding codes these tests produce (tests/test_findings_catalog.py).
COVERED_CODES = frozenset({"file-shrank-while-read", "file-replaced-while-read", "file-grew-while-read"})


needs_guard = pytest.mark.skipif(_guard is None, reason="the mapping guard is not built here")


def test_ci_builds_the_guard() -> None:
    if os.environ.get("KDUMP_REQUIRE_COMPILED") and _guard is None:
        pytest.fail("KDUMP_REQUIRE_COMPILED is set but kdump.scan._mapguard is not built")


@needs_guard
def test_the_finding_codes_are_in_the_catalog() -> None:
    for code in ("file-shrank-while-read", "file-replaced-while-read", "file-grew-while-read"):
        assert code in CATALOG


@needs_guard
def test_a_mapping_read_past_a_truncation_reads_zeros_and_says_where(tmp_path: Path, path_kind: str) -> None:
    log = segment(tmp_path)
    size = log.stat().st_size
    cut = size // 3
    with open_buffer(log) as buf:
        assert file_change(buf) is None
        os.truncate(log, cut)
        # Every read past the cut faults; the scan (compiled walk or reference) goes on over zeros.
        events = list(scan_log(buf, deep=True))
        summary = events[-1]
        assert isinstance(summary, ScanSummary)
        assert summary.valid_bytes <= cut
        assert all(e.position + e.size <= cut for e in events if isinstance(e, BatchHeader) and e.crc_ok)
        change = file_change(buf)
    assert change is not None
    assert change.code == "file-shrank-while-read"
    page = os.sysconf("SC_PAGESIZE")
    assert f"up to position {cut - cut % page + (page if cut % page else 0)};" in change.message
    assert f"shrank from {size} to {cut} bytes" in change.message


@needs_guard
def test_the_compiled_walk_itself_survives_a_truncated_mapping(tmp_path: Path) -> None:
    if fast_walk.compiled is None:
        pytest.skip("the compiled walk is not built here")
    log = segment(tmp_path)
    size = log.stat().st_size
    with open_buffer(log) as buf:
        os.truncate(log, size // 2)
        got = fast_walk.walk(buf, 0, size, size, size, -1, -1, 0)
        assert got is not None
        assert 0 < got[0].end <= size // 2
        change = file_change(buf)
    assert change is not None
    assert change.code == "file-shrank-while-read"


@needs_guard
def test_a_segment_cut_between_batches_is_a_finding(
    tmp_path: Path, path_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = segment(tmp_path)
    codes = check_with_hook(log, lambda: os.truncate(log, log.stat().st_size // 2), monkeypatch)
    assert "file-shrank-while-read" in codes


@needs_guard
def test_a_segment_deleted_under_the_scan_is_a_finding(
    tmp_path: Path, path_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = segment(tmp_path)
    codes = check_with_hook(log, log.unlink, monkeypatch)
    assert "file-replaced-while-read" in codes


@needs_guard
def test_a_segment_appended_to_under_the_scan_is_a_finding(
    tmp_path: Path, path_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = segment(tmp_path)

    def append() -> None:
        with log.open("ab") as fh:
            fh.write(bytes(100))

    codes = check_with_hook(log, append, monkeypatch)
    assert "file-grew-while-read" in codes
    assert CATALOG["file-grew-while-read"].severity.name == "INFO"


@needs_guard
def test_an_index_trimmed_while_read_is_a_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = segment(tmp_path)
    index = log.with_suffix(".index")
    real = segment_check._index_checks

    def trimmed(buf: memoryview, *args: object) -> object:
        os.truncate(index, 0)
        return real(buf, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(segment_check, "_index_checks", trimmed)
    seg = Segment(base_offset=0, log=log, index=index, timeindex=log.with_suffix(".timeindex"))
    codes = [f.code for f in segment_check.check_segment(seg).findings]
    assert "file-shrank-while-read" in codes


@pytest.mark.parametrize("pure", ["0", "1"], ids=["compiled", "reference"])
def test_verify_and_dump_under_a_concurrent_truncation_loop(tmp_path: Path, pure: str) -> None:
    """A real race: another thread cuts and regrows the segment while `kdump verify --deep` and
    `kdump dump` read it. No signal, no traceback; a cut seen is a finding (and an error exit)."""
    log = segment(tmp_path, batches=1500)
    full = log.read_bytes()
    stop = threading.Event()

    def churn() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            os.truncate(log, len(full) // (2 + n % 5))
            time.sleep(0.002)
            with log.open("r+b") as fh:
                fh.write(full)
            time.sleep(0.002)

    env = {**os.environ, "KDUMP_PURE_PYTHON": pure}
    thread = threading.Thread(target=churn)
    thread.start()
    try:
        seen = set()
        for args in (["verify", "--deep", str(log.parent)], ["dump", "--records", str(log)]) * 3:
            proc = subprocess.run(
                [*KDUMP, *args], capture_output=True, text=True, env=env, timeout=300, check=False
            )
            assert proc.returncode >= 0, f"killed by signal {-proc.returncode}: {proc.stderr[-2000:]}"
            assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
            assert proc.returncode != 70, proc.stderr[-2000:]
            if "file-shrank-while-read" in proc.stdout + proc.stderr:
                assert proc.returncode == (1 if args[0] == "verify" else 0), proc.stdout[-2000:]
                seen.add(args[0])
    finally:
        stop.set()
        thread.join()


@needs_guard
@pytest.mark.parametrize("command", ["dump", "verify"])
def test_the_cli_reports_a_file_cut_between_batches(
    tmp_path: Path, path_kind: str, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole command, with the segment cut after the scan's second event: the finding on its
    output and an error exit, no signal, no traceback."""
    from click.testing import CliRunner

    from kdump.cli import cli
    from kdump.ops.dump import stream as dump_ops

    log = segment(tmp_path)
    for module in (dump_ops, segment_check):
        real = module.scan_log

        def scan(*args: object, _real: object = real, **kwargs: object) -> Iterator[object]:
            for i, ev in enumerate(_real(*args, **kwargs)):  # type: ignore[operator]
                if i == 1:
                    os.truncate(log, log.stat().st_size // 2)
                yield ev

        monkeypatch.setattr(module, "scan_log", scan)
    args = ["dump", "--records", str(log)] if command == "dump" else ["verify", "--deep", str(log.parent)]
    result = CliRunner().invoke(cli, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "file-shrank-while-read" in result.output
    # verify is the gate: an error finding (kdump could not check what it was given) fails it;
    # dump reports findings and exits 0 for them, as for any other.
    assert result.exit_code == (1 if command == "verify" else 0), result.output[-2000:]
