"""Files that change while kdump reads them, on an install without the mapping guard (issue 31).

Without a compiler there is no kdump.scan._mapguard, and nothing can catch the SIGBUS of a read
past the end of a mapped file that shrank. There kdump does not map files: it reads them into
memory (kdump/scan/source.py, `_read_copy`), so a cut is still a finding and never a signal. These
tests take the guard away (`source._guard = None`, in this process or in a child kdump) and mirror
tests/scan/test_live_files.py. Before the copy, the child kdump died of SIGBUS (-7).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from live_files import check_with_hook, segment

from kdump.formats.batch import BatchHeader
from kdump.model.segment import Segment
from kdump.ops.checks import segment as segment_check
from kdump.scan import source
from kdump.scan.events import ScanSummary
from kdump.scan.log_scanner import scan_log
from kdump.scan.source import file_change, open_buffer


@pytest.fixture
def unguarded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source, "_guard", None)


def test_a_file_cut_after_it_was_opened_is_scanned_whole_and_reported(
    tmp_path: Path, unguarded: None, path_kind: str
) -> None:
    log = segment(tmp_path)
    size = log.stat().st_size
    with open_buffer(log) as buf:
        assert buf.readonly
        assert file_change(buf) is None
        os.truncate(log, size // 3)
        events = list(scan_log(buf, deep=True))
        change = file_change(buf)
    summary = events[-1]
    assert isinstance(summary, ScanSummary)
    # The bytes read before the cut are the file as it was: all of it checks.
    assert summary.valid_bytes == size
    assert all(e.crc_ok for e in events if isinstance(e, BatchHeader))
    assert change is not None
    assert change.code == "file-shrank-while-read"
    assert f"shrank from {size} to {size // 3} bytes" in change.message
    assert "its bytes were checked before they were cut" in change.message


def test_a_file_cut_during_the_reads_reads_zeros_past_the_cut_and_says_where(
    tmp_path: Path, unguarded: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = segment(tmp_path)
    size = log.stat().st_size
    chunk = 64 << 10
    cut = 3 * chunk + 100
    monkeypatch.setattr(source, "_READ_CHUNK", chunk)
    real = os.preadv
    calls = []

    def preadv(fd: int, buffers: list[memoryview], offset: int) -> int:
        calls.append(offset)
        if len(calls) == 2:
            os.truncate(log, cut)
        return real(fd, buffers, offset)

    monkeypatch.setattr(os, "preadv", preadv)
    with open_buffer(log) as buf:
        assert len(buf) == size
        assert bytes(buf[cut:]) == bytes(size - cut)
        summary = list(scan_log(buf, deep=True))[-1]
        change = file_change(buf)
    assert isinstance(summary, ScanSummary)
    assert summary.valid_bytes <= cut
    assert change is not None
    assert change.code == "file-shrank-while-read"
    assert f"up to position {cut};" in change.message


def test_a_segment_cut_deleted_or_appended_under_the_scan_is_a_finding(
    tmp_path: Path, unguarded: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def append(log: Path) -> None:
        with log.open("ab") as fh:
            fh.write(bytes(100))

    for name, hook, code in (
        ("cut", lambda log: os.truncate(log, log.stat().st_size // 2), "file-shrank-while-read"),
        ("deleted", Path.unlink, "file-replaced-while-read"),
        ("appended", append, "file-grew-while-read"),
    ):
        log = segment(tmp_path / name)
        with monkeypatch.context() as m:
            codes = check_with_hook(log, lambda log=log, hook=hook: hook(log), m)  # type: ignore[misc]
        assert code in codes, (name, codes)


def test_an_index_trimmed_while_read_is_a_finding(
    tmp_path: Path, unguarded: None, monkeypatch: pytest.MonkeyPatch
) -> None:
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


# A kdump without its guard whose scans cut the segment in half after their second event.
_CHILD = textwrap.dedent(
    """
    import os, sys
    from kdump.scan import source
    source._guard = None
    if os.environ.get("CUT"):
        from kdump.ops.checks import segment as segment_check
        from kdump.ops.dump import stream as dump_ops
        for module in (dump_ops, segment_check):
            def scan(*args, _real=module.scan_log, **kwargs):
                for i, ev in enumerate(_real(*args, **kwargs)):
                    if i == 1:
                        os.truncate(os.environ["CUT"], os.stat(os.environ["CUT"]).st_size // 2)
                    yield ev
            module.scan_log = scan
    from kdump.cli import main
    sys.argv[0] = "kdump"
    main()
    """
)


def _kdump(
    args: list[str], *, guarded: bool, cut: Path | None = None, pure: str = "0"
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CUT"}
    env["KDUMP_PURE_PYTHON"] = pure
    if cut is not None:
        env["CUT"] = str(cut)
    cmd = [sys.executable, "-c", _CHILD, *args] if not guarded else [sys.executable, "-m", "kdump", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120, check=False)


@pytest.mark.parametrize("pure", ["0", "1"], ids=["compiled", "reference"])
@pytest.mark.parametrize("command", ["dump", "verify"])
def test_the_cli_without_the_guard_reports_a_file_cut_between_batches(
    tmp_path: Path, command: str, pure: str
) -> None:
    log = segment(tmp_path)
    args = ["dump", "--records", str(log)] if command == "dump" else ["verify", "--deep", str(log.parent)]
    proc = _kdump(args, guarded=False, cut=log, pure=pure)
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}: {proc.stderr[-2000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "file-shrank-while-read" in proc.stdout + proc.stderr
    assert proc.returncode == (1 if command == "verify" else 0), proc.stdout[-2000:]


@pytest.mark.parametrize(
    "args", [["dump", "--records"], ["verify", "--deep"], ["dump", "--records", "--format", "json"]]
)
def test_without_the_guard_the_output_is_the_same(tmp_path: Path, args: list[str]) -> None:
    log = segment(tmp_path, batches=50)
    target = str(log.parent if args[0] == "verify" else log)
    with_guard = _kdump([*args, target], guarded=True)
    without = _kdump([*args, target], guarded=False)
    assert (without.returncode, without.stdout) == (with_guard.returncode, with_guard.stdout)
