"""The one-file build runs whatever the host's C library (issue 34): in a root that holds no C
library at all (the file, the data and /proc, as in a distroless or scratch container) and in a root
with musl only and a static shell (as in the apache/kafka image, which is Alpine), `verify --deep`,
`dump --records` and `kdump man verify` give the same stdout and exit status as the installed kdump
on the corpus log dirs (the full corpus beside the checkout, else the bundled subset) and the samples.

The file is `$KDUMP_ONEFILE`, else `dist/kdump`; the musl root is made from Debian's `musl` and
`busybox-static` packages (`apt-get download` into ~/.cache/kdump/onefile/debs when they are not
there yet, then `dpkg -x`). Without the file, root or those packages these tests skip
(KDUMP_REQUIRE_ONEFILE=1, as in CI, makes that a failure).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from corpus import REPO_ROOT, available_corpus_root, iter_corpus_dirs

ONEFILE = Path(os.environ.get("KDUMP_ONEFILE", REPO_ROOT / "dist" / "kdump"))
_CACHE = Path(os.environ.get("KDUMP_CACHE", Path.home() / ".cache" / "kdump"))
DEBS = _CACHE / "onefile" / "debs"
CHROOT = shutil.which("chroot") or shutil.which("chroot", path="/usr/sbin:/sbin")
ENV = {"NO_COLOR": "1", "COLUMNS": "120", "TERM": "dumb", "KDUMP_PROGRESS_DELAY": "3600"}
# Start-up (`kdump --version`): the target is 0.5 s median. The test holds the CPU time (user +
# system) to it, which a loaded machine does not inflate; wall-clock time only to a loose bound.
STARTUP_CPU_BOUND = 0.5
STARTUP_WALL_BOUND = 3.0


def _missing(reason: str) -> None:
    if os.environ.get("KDUMP_REQUIRE_ONEFILE") == "1":
        pytest.fail(f"{reason} (KDUMP_REQUIRE_ONEFILE=1)")
    pytest.skip(reason)


def _deb(package: str) -> Path:
    """The package's .deb in the cache, downloaded with apt-get the first time."""
    DEBS.mkdir(parents=True, exist_ok=True)
    found = sorted(DEBS.glob(f"{package}_*.deb"))
    if not found:
        got = subprocess.run(["apt-get", "download", package], cwd=DEBS, capture_output=True, text=True)
        found = sorted(DEBS.glob(f"{package}_*.deb"))
        if got.returncode != 0 or not found:
            _missing(f"Debian's {package} package could not be downloaded: {got.stderr.strip()[-300:]}")
    return found[-1]


def _link_tree(source: Path, target: Path) -> None:
    """The data, hard-linked where the file system allows (nothing here writes to it)."""

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, symlinks=True, copy_function=link)


class Root:
    """A directory entered with chroot: the built file at /kdump, the log dirs at /<name>/, /proc
    mounted while the test runs (as on any Linux host or container)."""

    def __init__(self, path: Path, tmpdir: str | None) -> None:
        self.path = path
        self.tmpdir = tmpdir
        self.log_dirs: list[list[str]] = []  # each log dir's partitions, as paths relative to /

    def run(self, argv: list[str], tmpdir: str | None = "default") -> subprocess.CompletedProcess[str]:
        env = {"PATH": "/bin", **ENV}
        chosen = self.tmpdir if tmpdir == "default" else tmpdir
        if chosen is not None:
            env["TMPDIR"] = chosen
        return subprocess.run(
            [str(CHROOT), str(self.path), *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=False,
        )


def _installed(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KDUMP_", "STATICX_"))} | ENV
    return subprocess.run(
        [sys.executable, "-m", "kdump", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=600
    )


@pytest.fixture(scope="module")
def onefile() -> Path:
    if not ONEFILE.is_file():
        _missing(f"no one-file build at {ONEFILE}: sudo python3 .ci/onefile/build.py (writes dist/kdump)")
    if os.geteuid() != 0 or CHROOT is None:
        _missing("running the file in a root of its own needs root and chroot")
    return ONEFILE


def _make_root(path: Path, onefile: Path, tmp_factory: pytest.TempPathFactory, tmpdir: str | None) -> Root:
    path.mkdir()
    shutil.copy2(onefile, path / "kdump")
    (path / "proc").mkdir()
    root = Root(path, tmpdir)
    corpus = available_corpus_root(tmp_factory)
    for corpus_dir in iter_corpus_dirs(corpus):
        partitions = [p for p in sorted(corpus_dir.iterdir()) if p.is_dir() and p.name != "expected"]
        for partition in partitions:
            _link_tree(partition, path / corpus_dir.name / partition.name)
        root.log_dirs.append([f"{corpus_dir.name}/{p.name}" for p in partitions if p.name != "_logdir-files"])
    _link_tree(REPO_ROOT / "samples" / "logdir", path / "samples")
    root.log_dirs.append(["samples"])
    return root


def _mounted(root: Root) -> Iterator[Root]:
    proc = root.path / "proc"
    subprocess.run(["mount", "-t", "proc", "proc", str(proc)], check=True)
    try:
        yield root
    finally:
        subprocess.run(["umount", "-l", str(proc)], check=False)
        shutil.rmtree(root.path)


@pytest.fixture(scope="module")
def no_libc(onefile: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Root]:
    """No C library, no loader, no shell, no /tmp: a scratch dir for the file's unpacking, named by
    TMPDIR, as the README tells a host without a writable /tmp to do."""
    base = tmp_path_factory.mktemp("onefile-roots")
    root = _make_root(base / "no-libc", onefile, tmp_path_factory, tmpdir="/scratch")
    (root.path / "scratch").mkdir()
    yield from _mounted(root)


@pytest.fixture(scope="module")
def musl(onefile: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Root]:
    """Debian's musl (libc.so and its loader /lib/ld-musl-x86_64.so.1) and busybox-static as /bin/sh,
    with a /tmp, as in an Alpine container."""
    debs = [_deb("musl"), _deb("busybox-static")]
    base = tmp_path_factory.mktemp("onefile-roots")
    root = _make_root(base / "musl", onefile, tmp_path_factory, tmpdir=None)
    for deb in debs:
        subprocess.run(["dpkg", "-x", str(deb), str(root.path)], check=True)
    (root.path / "bin" / "sh").symlink_to("busybox")
    (root.path / "tmp").mkdir(mode=0o1777)
    yield from _mounted(root)


def _c_libraries(root: Path) -> list[str]:
    """Every C library or loader file in the root (outside /proc)."""
    names = ("libc.so", "libc.so.6", "ld-linux-x86-64.so.2", "ld-musl-x86_64.so.1")
    found = []
    for folder, dirs, files in os.walk(root):
        if Path(folder) == root:
            dirs[:] = [d for d in dirs if d != "proc"]
        found += [f"{folder}/{f}" for f in files if f in names or f.startswith("libc-")]
    return sorted(str(Path(p).relative_to(root)) for p in found)


def _same_as_installed(root: Root, args: list[str], shell: bool) -> int:
    argv = ["/bin/sh", "-c", "cd / && ./kdump " + " ".join(args)] if shell else ["/kdump", *args]
    frozen = root.run(argv)
    installed = _installed(args, cwd=root.path)
    assert frozen.returncode == installed.returncode, (args, frozen.stderr[-2000:], installed.stderr[-2000:])
    assert frozen.stdout == installed.stdout, args
    assert "Traceback" not in frozen.stderr
    assert installed.returncode != 2, installed.stderr  # both refusing the command line proves nothing
    return len(installed.stdout)


def _check_commands(root: Root, shell: bool) -> None:
    shown = 0
    for partitions in root.log_dirs:
        shown += _same_as_installed(root, ["verify", "--deep", *partitions], shell)
        shown += _same_as_installed(root, ["dump", "--records", *partitions], shell)
    assert shown > 100_000
    manual = root.run(["/bin/sh", "-c", "/kdump man verify"] if shell else ["/kdump", "man", "verify"])
    assert manual.returncode == 0, manual.stderr
    assert manual.stdout == _installed(["man", "verify"], cwd=root.path).stdout
    assert manual.stdout.startswith("KDUMP-VERIFY(1)")


def _startup(root: Root, runs: int = 7) -> tuple[float, float]:
    """Median wall-clock and CPU seconds (user + system, of the file and everything it starts) of
    `kdump --version`; the CPU time is what a machine shared with other jobs does not inflate."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        version = root.run(["/kdump", "--version"])
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        assert version.returncode == 0, version.stderr
    return statistics.median(walls), statistics.median(cpus)


def test_runs_in_a_root_with_no_c_library(no_libc: Root) -> None:
    assert _c_libraries(no_libc.path) == []
    assert not (no_libc.path / "tmp").exists()
    assert not (no_libc.path / "bin").exists()
    version = no_libc.run(["/kdump", "--version"])
    assert version.returncode == 0, version.stderr
    assert (
        "C library: glibc 2.31, bundled in this file (staticx); the host's C library is not used"
        in version.stdout
    )
    _check_commands(no_libc, shell=False)
    wall, cpu = _startup(no_libc)
    assert cpu < STARTUP_CPU_BOUND, (wall, cpu)
    assert wall < STARTUP_WALL_BOUND, (wall, cpu)
    assert list((no_libc.path / "scratch").iterdir()) == []  # both unpacked copies are removed


def test_without_tmp_or_tmpdir_it_says_so(no_libc: Root) -> None:
    """No /tmp and no TMPDIR: the file cannot unpack itself; its wrapper says where it tried, and exits
    2 (staticx's code for its own failures) with nothing on stdout. The README names TMPDIR."""
    refused = no_libc.run(["/kdump", "--version"], tmpdir=None)
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert refused.stderr.startswith("kdump: Failed to create temporary directory in /tmp:"), refused.stderr


def test_runs_in_a_musl_root(musl: Root) -> None:
    assert _c_libraries(musl.path) == ["lib/ld-musl-x86_64.so.1", "lib/x86_64-linux-musl/libc.so"]
    loader = musl.run(["/lib/ld-musl-x86_64.so.1"])  # musl's loader, run bare, names itself
    assert "musl libc (x86_64)" in loader.stderr
    version = musl.run(["/bin/sh", "-c", "./kdump --version"])
    assert version.returncode == 0, version.stderr
    assert "C library: glibc 2.31, bundled in this file (staticx)" in version.stdout
    _check_commands(musl, shell=True)
    wall, cpu = _startup(musl)
    assert cpu < STARTUP_CPU_BOUND, (wall, cpu)
    assert wall < STARTUP_WALL_BOUND, (wall, cpu)
    assert list((musl.path / "tmp").iterdir()) == []


def test_with_tmp_mounted_noexec_it_says_so_and_tmpdir_works(musl: Root) -> None:
    """/tmp mounted noexec (hardened RHEL, some pod policies): the unpacked program cannot start; the
    wrapper names it and exits 3. TMPDIR pointing elsewhere, as the README says, works."""
    tmp = musl.path / "tmp"
    (musl.path / "scratch").mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "noexec,mode=1777", "tmpfs", str(tmp)], check=True)
    try:
        refused = musl.run(["/kdump", "--version"])
        assert refused.returncode == 3, refused.stderr
        assert refused.stdout == ""
        assert refused.stderr.startswith("Failed to execv() /tmp/staticx-"), refused.stderr
        assert "Permission denied" in refused.stderr
        works = musl.run(["/kdump", "--version"], tmpdir="/scratch")
        assert works.returncode == 0, works.stderr
        assert works.stdout.startswith("kdump, version ")
    finally:
        subprocess.run(["umount", "-l", str(tmp)], check=False)
        (musl.path / "scratch").rmdir()


def test_without_dev_shm_the_work_stays_in_one_process(no_libc: Root) -> None:
    """The no-libc root has no /dev, so no /dev/shm: no worker pool can be made there (its queues
    need POSIX semaphores). On logs big enough for the parallel paths of verify and dump, the file
    works in one process and prints what the installed kdump (with its workers) prints."""
    logs = sorted((REPO_ROOT / "samples" / "logdir").glob("*/*.log"))
    for partition in ("big-0", "big-1"):  # two segments of 9 MiB: over both parallel thresholds
        folder = no_libc.path / "big" / partition
        folder.mkdir(parents=True)
        with (folder / "00000000000000000000.log").open("wb") as out:
            while out.tell() < 9 << 20:
                for log in logs:
                    out.write(log.read_bytes())
    assert not (no_libc.path / "dev").exists()
    try:
        _same_as_installed(no_libc, ["verify", "--deep", "--jobs", "2", "big"], shell=False)
        _same_as_installed(no_libc, ["dump", "--records", "--jobs", "2", "big/big-0"], shell=False)
    finally:
        shutil.rmtree(no_libc.path / "big")
