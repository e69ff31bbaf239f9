"""Never a false "ok": every path and every byte given to kdump is accounted for.

A table of hostile layouts, each run through `kdump verify --format json`: the exit code, the finding
codes, and the coverage (log bytes present and checked) are asserted for each. Then a property test
over random changes to a real partition, and the repairs' refusal to call unreadable input
"nothing to do".
"""

from __future__ import annotations

import ctypes
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from builders import build_partition
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdump.model.log_dir import discover
from kdump.ops.checks.verify import VerifyOptions, verify_targets

SEG0 = "00000000000000000000"
REPO = Path(__file__).resolve().parents[2]

COVERED_CODES = {
    "unknown-entry",
    "wrong-file-type",
    "symlink-loop",
    "dangling-symlink",
    "segment-name-invalid",
    "partition-name-invalid",
    "nothing-to-check",
    "incomplete-check",
    "unreadable-file",
}


def _drop_dac() -> None:
    """Run the child as root without the capabilities that let root read any file."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def run(*args: str, cwd: Path, unprivileged: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "kdump", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
        preexec_fn=_drop_dac if unprivileged and os.geteuid() == 0 else None,
    )


def rows(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def logdir(path: Path, partitions: int = 2) -> Path:
    """A small healthy log dir: `meta.properties` and partitions of two segments."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abcdefghijklmnopqrstuv\n")
    for i in range(partitions):
        build_partition(path / f"t-{i}", segments=2, batches_per_segment=3)
    return path


def log_sizes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*.log") if p.is_file() and not p.is_symlink())


class Case(NamedTuple):
    name: str
    build: Callable[[Path], list[str]]  # lays out the tree under tmp; returns verify's arguments
    exit_code: int
    codes: frozenset[str] = frozenset()
    # (present, checked) log bytes; None: equal to every regular .log file's size under tmp
    coverage: tuple[int, int] | None = None
    extra: tuple[str, ...] = ()
    unprivileged: bool = False


def _random_log(tmp: Path) -> list[str]:
    (tmp / "x").mkdir()
    (tmp / "x" / "suspect.log").write_bytes(random.Random(5).randbytes(1 << 20))
    return ["x/suspect.log"]


def _text_file(tmp: Path) -> list[str]:
    (tmp / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n" * 40)
    return ["passwd"]


def _copies(tmp: Path) -> list[str]:
    logdir(tmp / "copies" / "broker1")
    logdir(tmp / "copies" / "broker2", partitions=3)
    return ["copies"]


def _empty(tmp: Path) -> list[str]:
    (tmp / "empty").mkdir()
    return ["empty"]


def _not_kafka(tmp: Path) -> list[str]:
    (tmp / "docs").mkdir()
    (tmp / "docs" / "notes.txt").write_text("hello\n")
    (tmp / "docs" / "sub").mkdir()
    return ["docs"]


def _mixed(tmp: Path) -> list[str]:
    logdir(tmp / "copies" / "kraft")
    zk = logdir(tmp / "copies" / "zk", partitions=1)
    (zk / "lost+found").mkdir()
    (tmp / "copies" / "README").write_text("two brokers\n")
    return ["copies"]


def _file_for_dir(tmp: Path) -> list[str]:
    d = logdir(tmp / "ld", partitions=1)
    (d / "t-9").write_text("a file where a partition directory belongs\n")
    return ["ld"]


def _dir_for_file(tmp: Path) -> list[str]:
    build_partition(tmp / "t-0", segments=1, batches_per_segment=2)
    (tmp / "t-0" / "00000000000000009999.log").mkdir()
    return ["t-0"]


def _unreadable(tmp: Path) -> list[str]:
    build_partition(tmp / "t-0", segments=2, batches_per_segment=2)
    (tmp / "t-0" / f"{SEG0}.log").chmod(0)
    return ["t-0"]


def _symlink_loop(tmp: Path) -> list[str]:
    build_partition(tmp / "t-0", segments=1, batches_per_segment=2)
    (tmp / "t-0" / "00000000000000000100.log").symlink_to("00000000000000000100.log")
    return ["t-0"]


def _dangling(tmp: Path) -> list[str]:
    build_partition(tmp / "t-0", segments=1, batches_per_segment=2)
    (tmp / "t-0" / "00000000000000000100.log").symlink_to("/nonexistent/segment.log")
    return ["t-0"]


def _fifo(tmp: Path) -> list[str]:
    build_partition(tmp / "t-0", segments=1, batches_per_segment=2)
    os.mkfifo(tmp / "t-0" / "00000000000000000100.log")
    return ["t-0"]


def _device(tmp: Path) -> list[str]:
    build_partition(tmp / "t-0", segments=1, batches_per_segment=2)
    (tmp / "t-0" / "00000000000000000100.log").symlink_to("/dev/zero")
    (tmp / "t-0" / "leader-epoch-checkpoint.x").symlink_to("/dev/null")
    return ["t-0"]


def _stray(tmp: Path) -> list[str]:
    build_partition(tmp / "t-0", segments=1, batches_per_segment=2)
    (tmp / "t-0" / "notes.txt").write_text("stray\n")
    return ["t-0"]


def _short_names(tmp: Path) -> list[str]:
    build_partition(tmp / "t-0", segments=2, batches_per_segment=2)
    logs = sorted((tmp / "t-0").glob("*.log"))
    for p in (tmp / "t-0").iterdir():
        if p.suffix in (".index", ".timeindex"):
            p.unlink()
    logs[0].rename(tmp / "t-0" / "0.log")
    logs[1].rename(tmp / "t-0" / f"{int(logs[1].stem)}.log")
    return ["t-0"]


def _duplicate(tmp: Path) -> list[str]:
    build_partition(tmp / "t-0", segments=2, batches_per_segment=2)
    return ["t-0", "t-0", "./t-0"]


def _bad_partition_name(tmp: Path) -> list[str]:
    d = logdir(tmp / "ld", partitions=1)
    build_partition(d / "not_a_partition", segments=1, batches_per_segment=2)
    return ["ld"]


def _empty_segments(tmp: Path) -> list[str]:
    (tmp / "t-0").mkdir()
    (tmp / "t-0" / f"{SEG0}.log").write_bytes(b"")
    (tmp / "t-0" / f"{SEG0}.index").write_bytes(b"")
    (tmp / "t-0" / f"{SEG0}.timeindex").write_bytes(b"")
    return ["t-0"]


CASES = [
    Case(
        "random bytes named .log",
        _random_log,
        1,
        frozenset({"invalid-batch-length"}),
        extra=("--fail-on", "info"),
    ),
    Case("a text file", _text_file, 1, frozenset(), (1280, 1280)),
    Case("directory of log dirs", _copies, 0),
    Case("empty directory", _empty, 1, frozenset({"nothing-to-check"}), (0, 0)),
    Case(
        "directory of non-Kafka files",
        _not_kafka,
        1,
        frozenset({"unknown-entry", "nothing-to-check"}),
        (0, 0),
    ),
    Case("mixed log dirs", _mixed, 1, frozenset({"unknown-entry"})),
    Case("file instead of directory", _file_for_dir, 1, frozenset({"unknown-entry"})),
    Case("directory instead of file", _dir_for_file, 1, frozenset({"wrong-file-type"})),
    Case("unreadable file, unprivileged", _unreadable, 3, frozenset({"unreadable-file"}), unprivileged=True),
    Case("symlink loop", _symlink_loop, 3, frozenset({"symlink-loop"})),
    Case("dangling symlink", _dangling, 3, frozenset({"dangling-symlink"})),
    Case("FIFO named as a segment", _fifo, 3, frozenset({"wrong-file-type"})),
    Case("device named as a segment", _device, 3, frozenset({"wrong-file-type"})),
    Case("stray file in a partition", _stray, 1, frozenset({"unknown-entry"})),
    Case("non-20-digit segment names", _short_names, 1, frozenset({"segment-name-invalid"})),
    Case("duplicate paths", _duplicate, 0),
    Case("partition dir not named topic-N", _bad_partition_name, 1, frozenset({"partition-name-invalid"})),
    # Empty segments are a new topic's or an idle follower's: what a broker writes, healthy.
    Case("only empty segments", _empty_segments, 0, frozenset(), (0, 0)),
    Case(
        "only empty segments, --allow-empty",
        _empty_segments,
        0,
        frozenset(),
        (0, 0),
        extra=("--allow-empty",),
    ),
    Case("stray file, --allow-unknown", _stray, 0, frozenset(), extra=("--allow-unknown",)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_layouts(case: Case, tmp_path: Path) -> None:
    args = case.build(tmp_path)
    if case.unprivileged and os.geteuid() == 0 and sys.platform != "linux":
        pytest.skip("root reads any file, and capabilities can only be dropped on Linux")
    result = run(
        "verify", "--format", "json", *case.extra, *args, cwd=tmp_path, unprivileged=case.unprivileged
    )
    assert "Traceback" not in result.stderr
    out = rows(result.stdout)
    codes = {r["code"] for r in out if r["type"] == "finding"}
    overall = out[-1]
    assert overall["scope"] == "overall", result.stdout
    assert result.returncode == case.exit_code, (result.stdout, result.stderr)
    assert case.codes <= codes, codes
    if case.exit_code == 0:
        assert not [r for r in out if r["type"] == "finding" and r["severity"] == "error"], codes
    present, checked = case.coverage if case.coverage is not None else (log_sizes(tmp_path),) * 2
    if case.unprivileged:
        present = checked = log_sizes(tmp_path) - (tmp_path / "t-0" / f"{SEG0}.log").stat().st_size
    assert (overall["log_bytes"], overall["checked_bytes"]) == (present, checked)


def test_directory_of_log_dirs_reports_each_log_dir(tmp_path: Path) -> None:
    _copies(tmp_path)
    result = run("verify", "copies", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    assert any(
        line.startswith("ok: copies/broker1 (a log dir of 2 partitions): 2 partitions") for line in lines
    )
    assert any(
        line.startswith("ok: copies/broker2 (a log dir of 3 partitions): 3 partitions") for line in lines
    )
    assert any(line.startswith("ok: copies (a directory of 2 log dirs)") for line in lines)
    total = lines[-1]
    assert total.startswith("Total: 5 partitions, 10 segments")
    size = log_sizes(tmp_path)
    assert f"checked {size} of {size} log bytes (100.0%); exit 0" in total


def test_copied_segment_is_read_by_content(tmp_path: Path) -> None:
    build_partition(tmp_path / "t-0", segments=2, batches_per_segment=2)
    second = sorted((tmp_path / "t-0").glob("*.log"))[1]
    shutil.copy(second, tmp_path / "segment-copy.log")
    result = run("verify", "--format", "json", "segment-copy.log", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    base = int(second.stem)
    assert f"segment by its content, base offset {base} from its first batch" in result.stderr
    summary = next(r for r in rows(result.stdout) if r.get("scope") == "file")
    assert summary["first_offset"] == base
    assert summary["checked_bytes"] == summary["log_bytes"] == second.stat().st_size


def test_short_names_are_checked_where_the_broker_reads_them(tmp_path: Path) -> None:
    _short_names(tmp_path)
    result = run("verify", "--format", "json", "t-0", cwd=tmp_path)
    findings = [
        r for r in rows(result.stdout) if r["type"] == "finding" and r["code"] == "segment-name-invalid"
    ]
    assert len(findings) == 2
    assert "opens 00000000000000000000.log instead" in findings[0]["message"]
    summary = next(r for r in rows(result.stdout) if r.get("scope") == "partition")
    assert summary["segments"] == 2
    assert summary["batches"] == 4


def test_max_bytes_asks_for_less_and_says_so(tmp_path: Path) -> None:
    build_partition(tmp_path / "t-0", segments=2, batches_per_segment=4)
    result = run("verify", "--format", "json", "--max-bytes", "5000", "t-0", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    overall = rows(result.stdout)[-1]
    assert overall["limited"] is True
    assert 0 < overall["checked_bytes"] <= 2 * 5000 < overall["log_bytes"]
    text = run("verify", "--max-bytes", "5000", "t-0", cwd=tmp_path).stdout.splitlines()[-1]
    assert "limited by --max-bytes); exit 0" in text


def test_a_file_that_shrinks_after_listing_is_an_incomplete_check(tmp_path: Path) -> None:
    build_partition(tmp_path / "t-0", segments=2, batches_per_segment=4)
    target = discover(str(tmp_path / "t-0"))
    log = tmp_path / "t-0" / f"{SEG0}.log"
    os.truncate(log, log.stat().st_size // 2)
    reports = list(verify_targets([target], VerifyOptions(jobs=1)))
    codes = {f.code for r in reports for f in r.findings}
    assert "incomplete-check" in codes
    assert reports[0].checked_bytes < reports[0].log_bytes


def test_junit_carries_coverage(tmp_path: Path) -> None:
    build_partition(tmp_path / "t-0", segments=1, batches_per_segment=2)
    result = run("verify", "--junit", "r.xml", "t-0", cwd=tmp_path)
    assert result.returncode == 0
    xml = (tmp_path / "r.xml").read_text()
    size = log_sizes(tmp_path)
    assert f'<property name="log_bytes" value="{size}"/>' in xml
    assert f'<property name="checked_bytes" value="{size}"/>' in xml


# --- the repairs: unreadable input is never "nothing to do" ---------------------------------------


@pytest.mark.parametrize("command", ["reindex", "trim-tail", "dump"])
def test_repairs_and_dump_on_unreadable_input_exit_3(command: str, tmp_path: Path) -> None:
    _unreadable(tmp_path)
    result = run(command, "t-0", cwd=tmp_path, unprivileged=True)
    assert result.returncode == 3, (result.stdout, result.stderr)
    assert "unreadable-file" in result.stderr
    assert "nothing to do" not in result.stdout


def test_unreadable_path_named_directly_is_3(tmp_path: Path) -> None:
    _unreadable(tmp_path)
    result = run("verify", f"t-0/{SEG0}.log", cwd=tmp_path, unprivileged=True)
    assert result.returncode == 3, (result.stdout, result.stderr)


# --- random changes to a real partition: a finding for each, or full coverage -------------------

CHANGES = ("rename-log", "delete-index", "dir-for-index", "stray-file", "delete-log", "truncate-log")
EXPECTED = {
    "rename-log": "segment-name-invalid",
    "delete-index": "index-missing",
    "dir-for-index": "wrong-file-type",
    "stray-file": "unknown-entry",
    "delete-log": "orphan-index",
    "truncate-log": "partial-trailing-batch",
}


@pytest.fixture(scope="module")
def real_partition(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from corpus import available_corpus_root

    root = available_corpus_root(tmp_path_factory)
    part = root / "kafka-3.8.0" / "c-none-0"
    if not part.is_dir():
        pytest.skip(f"{part} is not in the corpus at hand")
    return part


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    changes=st.lists(
        st.tuples(st.sampled_from(CHANGES), st.integers(0, 50)), max_size=3, unique_by=lambda c: c[0]
    )
)
def test_any_change_is_reported_or_fully_covered(
    changes: list[tuple[str, int]], real_partition: Path, tmp_path: Path
) -> None:
    work = Path(tempfile.mkdtemp(dir=tmp_path)) / "c-none-0"
    shutil.copytree(real_partition, work)
    applied = []
    touched: set[Path] = set()
    for change, pick in changes:
        # Each change to a segment of its own, so that no change undoes what another did.
        logs = sorted(p for p in work.glob("*.log") if len(p.stem) == 20 and p not in touched)
        if not logs:
            break
        log = logs[pick % len(logs)]
        touched.add(log)
        index = log.with_suffix(".index")
        if change == "rename-log":
            log.rename(work / f"{int(log.stem)}.log")
        elif change == "delete-index" and index.exists():
            index.unlink()
        elif change == "dir-for-index" and index.exists():
            index.unlink()
            index.mkdir()
        elif change == "stray-file":
            (work / f"stray-{pick}.bin").write_bytes(b"x")
        elif change == "delete-log" and index.exists():
            log.unlink()
        elif change == "truncate-log" and log.stat().st_size > 100:
            os.truncate(log, log.stat().st_size - 7)
        else:
            continue
        applied.append(change)
    result = run("verify", "--format", "json", "--fail-on", "warning", str(work), cwd=tmp_path)
    out = rows(result.stdout)
    codes = {r["code"] for r in out if r["type"] == "finding"}
    for change in applied:
        assert EXPECTED[change] in codes, (change, codes)
    overall = out[-1]
    assert overall["checked_bytes"] == overall["log_bytes"] == log_sizes(work)
    assert (result.returncode == 0) == (not applied), (applied, codes)
    shutil.rmtree(work.parent)
