"""The one-file build (`.ci/onefile/build.py`): the same output as the installed kdump on every corpus
partition, and it runs in a Debian 11 root (glibc 2.31, no Python) as on a broker host (roots with
musl only or no C library at all: test_any_c_library.py).

The file is `$KDUMP_ONEFILE`, else `dist/kdump` of the checkout; the root is `$KDUMP_ONEFILE_ROOT`,
else the build's cached bullseye root. Without them these tests skip (CI builds both and sets
KDUMP_REQUIRE_ONEFILE=1, which makes a missing file a failure).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from corpus import REPO_ROOT, iter_partition_dirs
from kafka4_corpus import decoder_of, kafka4_root, partitions

ONEFILE = Path(os.environ.get("KDUMP_ONEFILE", REPO_ROOT / "dist" / "kdump"))
_CACHE = Path(os.environ.get("KDUMP_CACHE", Path.home() / ".cache" / "kdump"))
ROOT = Path(os.environ.get("KDUMP_ONEFILE_ROOT", _CACHE / "onefile" / "bullseye-minbase"))
CHROOT = shutil.which("chroot") or shutil.which("chroot", path="/usr/sbin:/sbin")
BUILD = "sudo python3 .ci/onefile/build.py (writes dist/kdump)"
# Environment both runs share: no colour, a fixed width, the same worker count, no progress bars.
ENV = {"NO_COLOR": "1", "COLUMNS": "120", "TERM": "dumb", "KDUMP_PROGRESS_DELAY": "3600"}


def _missing(reason: str) -> None:
    if os.environ.get("KDUMP_REQUIRE_ONEFILE") == "1":
        pytest.fail(f"{reason} (KDUMP_REQUIRE_ONEFILE=1)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def onefile() -> Path:
    if not ONEFILE.is_file():
        _missing(f"no one-file build at {ONEFILE}: {BUILD}")
    return ONEFILE


def _run(cmd: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KDUMP_")} | ENV
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env, timeout=600, check=False)


def _both(onefile: Path, args: list[str], cwd: Path | None = None) -> int:
    """The built file and the installed kdump give the same stdout and exit status; the bytes of it."""
    frozen = _run([str(onefile), *args], cwd)
    installed = _run([sys.executable, "-m", "kdump", *args], cwd)
    assert frozen.returncode == installed.returncode, (args, frozen.stderr[-2000:], installed.stderr[-2000:])
    assert frozen.stdout == installed.stdout, args
    assert "Traceback" not in frozen.stderr
    # Equal because both refused the command line would prove nothing.
    assert installed.returncode != 2, installed.stderr
    return len(installed.stdout)


def test_build_record_says_how_and_the_floor(onefile: Path) -> None:
    info = json.loads(onefile.with_name("kdump.json").read_text())
    floor = tuple(int(p) for p in info["glibc_floor"].split("."))
    # The frozen program asks for no glibc newer than the one the staticx wrapper carries, and the
    # wrapper itself is a static executable: nothing of the host's C library is used (issue 34).
    assert floor <= (2, 31), info
    assert info["carried_glibc"] == "2.31", info
    assert {"libc.so.6", "ld-linux-x86-64.so.2"} <= set(info["carried_libraries"]), info
    assert info["static_executable"] is True, info
    assert info["size"] == onefile.stat().st_size
    assert info["size"] <= 25_000_000, info  # the bound
    version = _run([str(onefile), "--version"])
    assert version.returncode == 0
    assert "PyInstaller one-file in staticx" in version.stdout
    assert "C library: glibc 2.31, bundled in this file (staticx)" in version.stdout
    assert "Debian 11" in version.stdout
    # The compiled paths went in: without them the file would give the same output, slowly.
    assert "compiled paths: records, batch walk, Avro to JSON" in version.stdout


def test_every_codec_and_compiled_path_is_inside(onefile: Path) -> None:
    """A codec left out would pass verify with unchecked records (issue 26); the build must carry
    all four and the compiled paths, which kdump itself reports with KDUMP_REQUIRE_COMPILED."""
    batches = _run([str(onefile), "dump", str(REPO_ROOT / "samples" / "logdir")]).stdout
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        assert f"compresscodec: {codec}" in batches  # the samples hold every codec
    probe = _run([str(onefile), "verify", "--deep", str(REPO_ROOT / "samples" / "logdir")])
    assert probe.returncode == 0, probe.stdout + probe.stderr
    assert "codec-unavailable" not in probe.stdout + probe.stderr


def _partitions(tmp: Path) -> Iterator[tuple[str, Path]]:
    from corpus import available_corpus_root

    for corpus_dir, partition, _ in iter_partition_dirs(available_corpus_root(tmp)):
        yield f"{corpus_dir}/{partition.name}", partition


def test_every_corpus_partition_dumps_and_verifies_the_same(
    onefile: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    partitions = list(_partitions(tmp_path_factory.getbasetemp()))
    assert partitions
    shown = 0
    for _, partition in partitions:
        shown += _both(onefile, ["dump", "--records", "--format", "json", str(partition)])
        shown += _both(onefile, ["dump", str(partition)])  # batches, index entries, state files
        shown += _both(onefile, ["verify", "--deep", "--format", "json", str(partition)])
    assert shown > 1_000_000


def test_kafka4_log_dirs_verify_and_decode_the_same(
    onefile: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = kafka4_root(tmp_path_factory.getbasetemp())
    corpus_dirs = sorted(p for p in root.iterdir() if p.is_dir())
    assert corpus_dirs
    decoded = 0
    for corpus in corpus_dirs:
        parts = partitions(corpus)
        assert _both(onefile, ["verify", "--deep", "--format", "json", *map(str, parts)])
        for internal in (p for p in parts if decoder_of(p)):
            decoded += _both(
                onefile, ["dump", "--records", "--decode", "auto", "--format", "json", str(internal)]
            )
    assert decoded > 100_000


@pytest.fixture
def debian11(onefile: Path, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """The minimal bullseye root with /proc mounted (as on any host), a work folder inside it, and
    the built file copied there; removed afterwards."""
    if not (ROOT / "etc" / "debian_version").is_file():
        _missing(f"no Debian 11 root at {ROOT}: {BUILD}")
    if os.geteuid() != 0 or CHROOT is None:
        _missing("running a file in the Debian 11 root needs root and chroot")
    assert (ROOT / "etc" / "debian_version").read_text().startswith("11."), "the root is not Debian 11"
    work = ROOT / "tmp" / f"kdump-onefile-{os.getpid()}"
    work.mkdir()
    shutil.copy2(onefile, work / "kdump")
    proc = ROOT / "proc"
    mounted = subprocess.run(["mount", "-t", "proc", "proc", str(proc)], check=False).returncode == 0
    try:
        yield work, Path("/tmp") / work.name
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(proc)], check=False)
        shutil.rmtree(work)


def _in_root(command: str) -> subprocess.CompletedProcess[str]:
    """A shell command run inside the Debian 11 root, with nothing of the host's environment."""
    return subprocess.run(
        [str(CHROOT), str(ROOT), "/bin/sh", "-c", command],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", **ENV},
        check=False,
        timeout=300,
    )


def test_runs_in_debian11_without_python(debian11: tuple[Path, Path]) -> None:
    work, inside = debian11
    assert not list((ROOT / "usr" / "bin").glob("python*")), "the root must have no Python"
    shutil.copytree(REPO_ROOT / "samples" / "logdir", work / "logdir", symlinks=True)
    assert "2.31" in _in_root("ldd --version").stdout.splitlines()[0]
    for args in (["verify", "--deep", "--format", "json", "logdir"], ["dump", "--records", "logdir/txn-1"]):
        chrooted = _in_root(f"cd {inside} && ./kdump {' '.join(args)}")
        host = _run([sys.executable, "-m", "kdump", *args], cwd=work)
        assert chrooted.returncode == host.returncode, chrooted.stderr
        assert chrooted.stdout == host.stdout
    manual = _in_root(f"{inside}/kdump man verify")
    assert manual.returncode == 0, manual.stderr
    assert manual.stdout.startswith("KDUMP-VERIFY(1)")
