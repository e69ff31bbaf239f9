"""Exit codes end to end, in real processes: a reader that stops reading, Ctrl-C, an unwritable report.

Each test runs `python -m kdump` as a subprocess, so what is checked is what a shell sees: the exit
status, and stderr without a Python traceback. Ctrl-C is a real SIGINT sent to the whole process
group, as a terminal sends it, so the worker processes of a parallel verify or dump get it too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from builders import records

from kdump.cli.exit_codes import ExitCode
from kdump.formats.records import build_v2_batch
from kdump.ops.checks.verify import PARALLEL_THRESHOLD_BYTES

KDUMP = [sys.executable, "-m", "kdump"]
SEG0 = "00000000000000000000.log"
# Ctrl-C must end kdump, workers included, within this many seconds.
INTERRUPT_DEADLINE = 1.0


def _big_segment(path: Path, size: int) -> None:
    """A valid v2 segment of about `size` bytes: one batch of 500 records, repeated with new offsets."""
    batch = build_v2_batch(0, records(500, value_size=100))
    data = bytearray()
    for i in range(size // len(batch) + 1):
        copy = bytearray(batch)
        struct.pack_into(">q", copy, 0, i * 500)  # baseOffset: outside the checksum
        data += copy
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


@pytest.fixture(scope="module")
def big_log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six partitions of 20 MiB each: enough for verify's and dump's worker pools, and for
    `verify --deep` to take seconds on two cores."""
    root = tmp_path_factory.mktemp("big") / "logs"
    first = root / "big-0" / SEG0
    _big_segment(first, 20 << 20)
    for p in range(1, 6):
        other = root / f"big-{p}" / SEG0
        other.parent.mkdir(parents=True)
        os.link(first, other)  # the same bytes; each partition is checked on its own
    assert 6 * first.stat().st_size >= PARALLEL_THRESHOLD_BYTES
    return root


def _no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert "Exception ignored" not in stderr, stderr


# --- a reader that stops reading ---------------------------------------------------------------


def _into_head(args: list[str]) -> tuple[int, str, bytes]:
    """`kdump ARGS | head -1`: kdump's exit status and stderr, and what head printed."""
    kdump = subprocess.Popen([*KDUMP, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = subprocess.Popen(["head", "-1"], stdin=kdump.stdout, stdout=subprocess.PIPE)
    assert kdump.stdout is not None
    assert kdump.stderr is not None
    kdump.stdout.close()  # head alone holds the read end now
    kdump.stdout = None
    shown, _ = head.communicate(timeout=60)
    # A kdump that hangs after its reader left fails here, on the timeout.
    _, stderr = kdump.communicate(timeout=30)
    return kdump.returncode, stderr.decode(), shown


def _into_closed_pipe(args: list[str]) -> tuple[int, str]:
    """kdump writing into a pipe whose reader has already gone (as `kdump ... | true`)."""
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([*KDUMP, *args], stdout=write_end, stderr=subprocess.PIPE)
    os.close(write_end)
    os.close(read_end)  # long before the interpreter has started and written anything
    _, stderr = proc.communicate(timeout=60)
    return proc.returncode, stderr.decode()


@pytest.mark.parametrize(
    "fmt", [["--format", "text"], ["--format", "json"], ["--format", "rich"]], ids=["text", "json", "rich"]
)
def test_dump_into_head_ends_quietly_with_0(fmt: list[str], corpus_logdirs: Path) -> None:
    code, stderr, shown = _into_head(["dump", "--records", *fmt, str(corpus_logdirs / "kafka-3.8.0")])
    assert shown  # head got its line
    _no_traceback(stderr)
    assert stderr == ""
    assert code == ExitCode.OK


def test_parallel_dump_into_head_ends_quietly_with_0(big_log_dir: Path) -> None:
    # 20 MiB of records decoded by two worker processes (render/parallel.py), cut after one line.
    code, stderr, shown = _into_head(["dump", "--records", "--jobs", "2", str(big_log_dir / "big-0")])
    assert shown.startswith(b"Dumping ")
    assert stderr == ""
    assert code == ExitCode.OK


def test_seek_into_closed_pipe_is_0(corpus_logdirs: Path) -> None:
    code, stderr = _into_closed_pipe(["seek-by-time", "earliest", str(corpus_logdirs / "kafka-3.8.0")])
    assert stderr == ""
    assert code == ExitCode.OK


@pytest.mark.parametrize("fmt", ["text", "json", "rich"])
def test_verify_into_closed_pipe_is_never_0(fmt: str, corpus_logdirs: Path) -> None:
    # The corpus is clean: a verify that finished would exit 0. Cut short, its verdict is unknown.
    code, stderr = _into_closed_pipe(["verify", "--format", fmt, str(corpus_logdirs / "kafka-3.8.0")])
    assert stderr == ""
    assert code == ExitCode.OUTPUT_CLOSED


def test_verify_of_a_missing_path_into_closed_pipe_fails(tmp_path: Path) -> None:
    code, stderr = _into_closed_pipe(["verify", str(tmp_path / "missing")])
    assert code == ExitCode.OUTPUT_CLOSED
    assert "missing" in stderr
    _no_traceback(stderr)


def test_reindex_dry_run_into_closed_pipe_is_never_0(corpus_root: Path) -> None:
    code, stderr = _into_closed_pipe(["reindex", str(corpus_root / "kafka-3.8.0" / "c-gzip-0")])
    assert code in (ExitCode.OUTPUT_CLOSED, ExitCode.FINDINGS)
    _no_traceback(stderr)


# --- Ctrl-C -----------------------------------------------------------------------------------


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):
            found |= {int(x) for x in Path(f"/proc/{pid}/task/{task}/children").read_text().split()}
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # Reparented to init and not reaped yet: a zombie is dead.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _working(proc: subprocess.Popen[bytes], out: Path, workers: int) -> set[int]:
    """Wait until kdump has written output and has `workers` child processes; their pids."""
    kids: set[int] = set()
    started = time.monotonic()
    while len(kids) < workers or out.stat().st_size == 0:
        assert proc.poll() is None, "kdump ended before it could be interrupted"
        assert time.monotonic() - started < 60, "kdump never got to work"
        kids = _children(proc.pid)
        time.sleep(0.01)
    time.sleep(0.2)  # into the middle of the work
    return kids


def _interrupt(args: list[str], workers: int, out: Path) -> tuple[int, float, str, set[int]]:
    """Start kdump in its own process group, wait until it is at work with `workers` child
    processes, press Ctrl-C; returns the exit status, the seconds it took to end, stderr and the
    workers' pids."""
    with out.open("wb") as sink:
        proc = subprocess.Popen([*KDUMP, *args], stdout=sink, stderr=subprocess.PIPE, start_new_session=True)
    try:
        kids = _working(proc, out, workers)
        assert proc.poll() is None, "kdump finished before it could be interrupted"
        pressed = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        try:
            proc.wait(timeout=INTERRUPT_DEADLINE + 5)
        finally:
            took = time.monotonic() - pressed
        assert proc.stderr is not None
        return proc.returncode, took, proc.stderr.read().decode(), kids
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _all_gone(pids: set[int]) -> bool:
    deadline = time.monotonic() + INTERRUPT_DEADLINE
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def two_cores() -> None:
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs two cores for a parallel run")


@pytest.fixture(scope="module")
def many_partitions(big_log_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two thousand partitions linked to the same 20 MiB segment (40 GB to check, no disk used): a
    deep verify that lasts many seconds even on the compiled batch walk and record path. (Four
    hundred were once enough; with the run check in C, a CI run found it finished before the test
    could press Ctrl-C.)"""
    root = tmp_path_factory.mktemp("many") / "logs"
    first = big_log_dir / "big-0" / SEG0
    for p in range(2000):
        seg = root / f"many-{p}" / SEG0
        seg.parent.mkdir(parents=True)
        os.link(first, seg)
    return root


@pytest.mark.usefixtures("two_cores")
def test_ctrl_c_stops_a_parallel_verify_and_its_workers(many_partitions: Path, tmp_path: Path) -> None:
    code, took, stderr, workers = _interrupt(
        ["verify", "--deep", "--jobs", "2", str(many_partitions)], 2, tmp_path / "out"
    )
    assert code == ExitCode.INTERRUPTED
    assert took < INTERRUPT_DEADLINE, took
    _no_traceback(stderr)
    assert stderr == "kdump: interrupted\n"
    assert _all_gone(workers), "worker processes outlived kdump"


@pytest.mark.usefixtures("two_cores")
def test_ctrl_c_stops_a_parallel_dump_and_its_workers(big_log_dir: Path, tmp_path: Path) -> None:
    args = ["dump", "--records", "--format", "json", "--jobs", "2", str(big_log_dir)]
    code, took, stderr, workers = _interrupt(args, 2, tmp_path / "out")
    assert code == ExitCode.INTERRUPTED
    assert took < INTERRUPT_DEADLINE, took
    assert stderr == "kdump: interrupted\n"
    assert _all_gone(workers), "worker processes outlived kdump"


def test_ctrl_c_stops_a_single_process_dump(big_log_dir: Path, tmp_path: Path) -> None:
    args = ["dump", "--records", "--jobs", "1", str(big_log_dir)]
    code, took, stderr, _ = _interrupt(args, 0, tmp_path / "out")
    assert code == ExitCode.INTERRUPTED
    assert took < INTERRUPT_DEADLINE, took
    assert stderr == "kdump: interrupted\n"


def test_sigint_to_kdump_alone_stops_its_workers(big_log_dir: Path, tmp_path: Path) -> None:
    # `kill -INT` to the main process only: the workers do not get it, kdump must end them itself.
    out = tmp_path / "out"
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [*KDUMP, "dump", "--records", "--jobs", "2", str(big_log_dir)],
            stdout=sink,
            stderr=subprocess.PIPE,
        )
    try:
        kids = _working(proc, out, 2)
        pressed = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
        assert time.monotonic() - pressed < INTERRUPT_DEADLINE
        assert proc.returncode == ExitCode.INTERRUPTED
        assert proc.stderr is not None
        assert proc.stderr.read().decode() == "kdump: interrupted\n"
        assert _all_gone(kids)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# --- reports and paths --------------------------------------------------------------------------


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KDUMP, *args], capture_output=True, text=True, timeout=60)


def test_unwritable_junit_fails_the_run_and_the_total_says_so(corpus_root: Path, tmp_path: Path) -> None:
    part = corpus_root / "kafka-3.8.0" / "c-gzip-0"
    junit = tmp_path / "no-such-dir" / "kdump.xml"
    done = _run("verify", "--junit", str(junit), str(part))
    assert done.returncode == ExitCode.UNREADABLE
    assert "exit 0" not in done.stdout
    assert done.stdout.splitlines()[-1].endswith("; exit 3"), done.stdout
    assert f"cannot write {junit}" in done.stderr
    _no_traceback(done.stderr)
    as_json = _run("verify", "--format", "json", "--junit", str(junit), str(part))
    assert as_json.returncode == ExitCode.UNREADABLE
    assert '"exit_code":3' in as_json.stdout.splitlines()[-1]


def test_unwritable_junit_keeps_exit_3_over_findings(tmp_path: Path) -> None:
    part = tmp_path / "torn-0"
    _big_segment(part / SEG0, 100_000)
    with (part / SEG0).open("ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x09\x00\x00\x00\x40")  # a torn batch header
    done = _run("verify", "--junit", str(tmp_path / "x" / "y.xml"), str(part))
    assert done.returncode == ExitCode.UNREADABLE
    assert done.stdout.splitlines()[-1].endswith("; exit 3")


def test_restore_of_a_missing_backup_is_3(tmp_path: Path) -> None:
    done = _run("restore", str(tmp_path / "no-such-backup"))
    assert done.returncode == ExitCode.UNREADABLE
    assert "no-such-backup" in done.stderr
    _no_traceback(done.stderr)


def test_restore_of_a_file_instead_of_a_backup_is_3(tmp_path: Path) -> None:
    f = tmp_path / "not-a-backup"
    f.write_text("x")
    done = _run("restore", str(f))
    assert done.returncode == ExitCode.UNREADABLE
    _no_traceback(done.stderr)


@pytest.mark.parametrize("command", ["reindex", "trim-tail"])
def test_a_missing_metadata_log_is_3_not_a_usage_error(command: str, tmp_path: Path) -> None:
    part = tmp_path / "t-0"
    _big_segment(part / SEG0, 10_000)
    done = _run(command, "--metadata-log", str(tmp_path / "no-such-dir"), str(part))
    assert done.returncode == ExitCode.UNREADABLE
    assert "no-such-dir: no such directory" in done.stderr
    _no_traceback(done.stderr)


def test_stdout_closed_from_the_start_still_gives_the_verdict(tmp_path: Path) -> None:
    # `kdump verify DIR >&-`: the output goes nowhere, as asked; the exit status is still the verdict.
    part = tmp_path / "t-0"
    _big_segment(part / SEG0, 10_000)

    def run() -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [*KDUMP, "verify", str(part)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: os.close(1),
            timeout=60,
        )

    clean = run()
    assert clean.returncode == ExitCode.OK, clean.stderr
    with (part / SEG0).open("ab") as f:
        f.write(struct.pack(">qi", 0, 1000) + b"\x00" * 8)  # a batch that runs past the end
    torn = run()
    assert torn.returncode == ExitCode.FINDINGS, torn.stderr
    assert b"Traceback" not in torn.stderr
