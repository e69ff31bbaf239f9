#!/usr/bin/env python3
"""Build kdump as one executable file for Linux x86_64 that runs whatever the host's C library:
glibc of any age, musl (Alpine, the apache/kafka image), or none at all (distroless, scratch).

    sudo python3 .ci/onefile/build.py [--out dist] [--cache ~/.cache/kdump/onefile]

Why this way:
- A frozen program is linked against a C library and its loader (/lib64/ld-linux-x86-64.so.2);
  Alpine has neither (musl's loader has another name), RHEL 8 and Amazon Linux 2 have too old a
  glibc for a file built on a current system. So the file carries its own: PyInstaller freezes
  kdump into one file, then staticx wraps that file in a static loader (built with musl, no
  dependency on the host) that unpacks the program with the glibc, its loader and every library
  it links to into a private temporary directory and runs it there. Every library comes from the
  build root, so the file behaves the same on every host; only the kernel is the host's (glibc
  2.31 needs Linux 3.2 or later). Alternatives: a musl build of CPython (no musl wheels of lz4,
  cramjam, crc32c for every release; a second interpreter to compile and keep), a static CPython
  (extension modules need dlopen, which a static musl binary lacks), or our own loader-carrying
  launcher (staticx is that, maintained, with documented PyInstaller support: it adds the
  libraries of the binaries packed inside the PyInstaller archive too).
- Built in a Debian 11 (bullseye, glibc 2.31) root made with debootstrap from Debian's packages,
  entered with chroot: the oldest release Debian's archive here still serves, so the carried glibc
  needs the oldest kernel, and PyInstaller's floor check (inspect_bundle.py) stays meaningful.
- Debian 11 has Python 3.9 and kdump needs 3.11, so CPython 3.11 is compiled in that root from the
  source Debian itself ships (the python3.11 source package of Debian 12: upstream 3.11.2 and
  Debian's backported security fixes, applied here; the Debian packaging patches are not).
- PyInstaller freezes it: the freezer Python projects use most, kept up to date for CPython 3.11,
  with hooks for the libraries kdump uses, and a one-file mode (unpacks itself to a private
  temporary directory, runs, removes it) that needs no Python on the host. Nuitka compiles to C
  instead (longer builds); PyOxidizer and shiv are unmaintained or need a Python on the host.
- Both unpacking steps use $TMPDIR, else /tmp: a host without a writable /tmp (or with /tmp
  mounted noexec) needs TMPDIR set to a directory that is (the README says so; the tests run the
  file in a root with no /tmp at all that way).
- Wheels come from PyPI (pinned in requirements.txt), fetched on the host by its pip and installed
  in the root with no index: the root needs no network beyond Debian's packages.

Roots and sources are cached under --cache (a few hundred MB; the compiled CPython is reused while
its source, patches and flags are the same). The file lands in --out as `kdump`, with `kdump.json`
beside it: how it was built, its size, the highest glibc symbol version the frozen program asks
for, and the libraries (and glibc) the wrapper carries. Needs root (debootstrap, chroot, mount),
debootstrap and network to Debian's packages and PyPI.
"""

from __future__ import annotations

import argparse
import datetime
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SUITE = "bullseye"
DEBIAN_VERSION = "Debian 11 (bullseye)"
MIRROR = "http://deb.debian.org/debian"
SECURITY_MIRROR = "http://deb.debian.org/debian-security"
# The python3.11 source package of Debian 12, checked against the sha256 Debian's Sources index gives.
PYTHON_POOL = f"{MIRROR}/pool/main/p/python3.11"
PYTHON_ORIG = (
    "python3.11_3.11.2.orig.tar.gz",
    "2411c74bda5bbcfcddaf4531f66d1adc73f247f529aee981b029513aefdbf849",
)
PYTHON_DEBIAN = (
    "python3.11_3.11.2-6+deb12u8.debian.tar.xz",
    "ece2d63c70ac0b7a401fbe6b51b0103be997c294a01a3865549be1862794ba97",
)
PYTHON_LABEL = "CPython 3.11.2 with Debian's security fixes (3.11.2-6+deb12u8)"
# Debian's series lists its packaging patches (install layout, multiarch, ...) first, then the fixes
# taken from upstream; from this one on, every patch is a fix and is applied.
FIRST_UPSTREAM_FIX = "shutdown-deadlock.diff"
# No rpath: Debian 11's linker writes it as DT_RUNPATH into libpython and every extension module,
# which staticx refuses (a RUNPATH would send the loader to the host's /opt/python/lib before the
# libraries it unpacked); the root's loader finds libpython through ld.so.conf.d instead.
CONFIGURE = ["--prefix=/opt/python", "--enable-shared"]
BUILD_PACKAGES = [
    "gcc",
    "make",
    "patch",
    "libc6-dev",
    "binutils",
    "libssl-dev",
    "zlib1g-dev",
    "libffi-dev",
    "libbz2-dev",
    "liblzma-dev",
]
# Modules kdump imports by name at run time (codecs.load, the lazy command group), which a freezer's
# import analysis cannot see.
# kdump.scan._mapguard is imported by name (importlib), which the freezer's import scan does not see:
# without it the file reads every file into memory instead of mapping it (kdump/scan/source.py).
HIDDEN_IMPORTS = [
    "lz4.block",
    "lz4.frame",
    "snappy",
    "cramjam",
    "zstandard",
    "crc32c",
    "kdump.scan._mapguard",
    "kdump.scan._dirfiles",
]
STDLIB_NEEDED = [
    "zlib",
    "_bz2",
    "_lzma",
    "_ssl",
    "_hashlib",
    "_ctypes",
    "pyexpat",
    "_json",
    "_decimal",
    "mmap",
    "_multiprocessing",
]
STATICX = next(
    line.split("==")[1].strip()
    for line in (HERE / "requirements.txt").read_text().splitlines()
    if line.startswith("staticx==")
)
COMPILED = [
    "kdump.formats._fastrecords",
    "kdump.formats._avrojson",
    "kdump.formats._fastwalk",
    "kdump.scan._mapguard",
    "kdump.scan._dirfiles",
]


def log(message: str) -> None:
    print(f"[onefile {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def run(cmd: list[str], **kwargs: object) -> None:
    subprocess.run(cmd, check=True, **kwargs)  # type: ignore[call-overload]


class Root:
    """A Debian root entered with chroot, /proc and /dev mounted only while a command runs in it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def run(self, script: str, env: dict[str, str] | None = None) -> None:
        mounts = [
            ("proc", self.path / "proc", ["-t", "proc", "proc"]),
            ("dev", self.path / "dev", ["--bind", "/dev"]),
        ]
        done: list[Path] = []
        try:
            for _, target, args in mounts:
                run(["mount", *args, str(target)])
                done.append(target)
            full_env = {
                "PATH": "/opt/python/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "HOME": "/root",
                "LC_ALL": "C.UTF-8",
            }
            full_env.update(env or {})
            run(["chroot", str(self.path), "/bin/sh", "-ec", script], env=full_env)
        finally:
            for target in reversed(done):
                subprocess.run(["umount", "-l", str(target)], check=False)


def debootstrap(target: Path) -> None:
    """A minimal bullseye root (no Python in it), retried: Debian's mirror drops a download now and then."""
    if (target / ".kdump-ready").exists():
        return
    for attempt in range(1, 4):
        shutil.rmtree(target, ignore_errors=True)
        log(f"debootstrap {SUITE} into {target} (attempt {attempt})")
        proc = subprocess.run(
            ["debootstrap", "--variant=minbase", SUITE, str(target), MIRROR],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode == 0:
            (target / ".kdump-ready").write_text(f"{SUITE} minbase {datetime.date.today()}\n")
            return
        log(proc.stdout[-2000:] + proc.stderr[-2000:])
    raise SystemExit(f"debootstrap of {SUITE} failed three times")


def build_root(cache: Path, base: Path) -> Root:
    target = cache / f"{SUITE}-build"
    if not (target / ".kdump-ready").exists():
        shutil.rmtree(target, ignore_errors=True)
        log(f"copying the {SUITE} root to {target} and installing the compiler and headers")
        run(["cp", "-a", str(base), str(target)])
        (target / ".kdump-ready").unlink()
        with (target / "etc/apt/sources.list").open("a") as sources:
            sources.write(f"deb {SECURITY_MIRROR} {SUITE}-security main\n")
        Root(target).run(
            "apt-get update -q >/dev/null\n"
            f"DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends {' '.join(BUILD_PACKAGES)} >/dev/null\n"
            "apt-get clean\n"
        )
        (target / ".kdump-ready").write_text("build packages installed\n")
    return Root(target)


def download(url: str, dest: Path, sha256: str) -> Path:
    if not dest.exists() or hashlib.sha256(dest.read_bytes()).hexdigest() != sha256:
        log(f"downloading {url}")
        with urllib.request.urlopen(url, timeout=120) as response:
            data = response.read()
        if hashlib.sha256(data).hexdigest() != sha256:
            raise SystemExit(f"{url}: sha256 differs from Debian's index")
        dest.write_bytes(data)
    return dest


def build_python(cache: Path, root: Root) -> None:
    """CPython 3.11 in the root's /opt/python, unless the same source, patches and flags built it."""
    stamp = json.dumps([PYTHON_ORIG, PYTHON_DEBIAN, FIRST_UPSTREAM_FIX, CONFIGURE])
    stamp_file = root.path / "opt/python/.kdump-stamp"
    if stamp_file.exists() and stamp_file.read_text() == stamp:
        return
    orig = download(f"{PYTHON_POOL}/{PYTHON_ORIG[0]}", cache / PYTHON_ORIG[0], PYTHON_ORIG[1])
    debian = download(f"{PYTHON_POOL}/{PYTHON_DEBIAN[0]}", cache / PYTHON_DEBIAN[0], PYTHON_DEBIAN[1])
    work = root.path / "build/python"
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(root.path / "opt/python", ignore_errors=True)
    work.mkdir(parents=True)
    run(["tar", "-xzf", str(orig), "-C", str(work)])
    run(["tar", "-xJf", str(debian), "-C", str(work)])
    source = work / "Python-3.11.2"
    series = (work / "debian/patches/series").read_text().split()
    fixes = series[series.index(FIRST_UPSTREAM_FIX) :]
    log(f"applying Debian's {len(fixes)} upstream fixes to CPython 3.11.2")
    for name in fixes:
        with (work / "debian/patches" / name).open("rb") as patch:
            run(["patch", "-p1", "--batch", "--quiet"], stdin=patch, cwd=source)
    # The fix of CVE-2026-4224 calls an internal function from pyexpat, which Debian builds into
    # the interpreter; built as a shared module it must say it is one, as pyexpat.c does from 3.12.
    pyexpat = source / "Modules/pyexpat.c"
    pyexpat.write_text(
        "#ifndef Py_BUILD_CORE_BUILTIN\n#  define Py_BUILD_CORE_MODULE 1\n#endif\n" + pyexpat.read_text()
    )
    log("compiling CPython in the root (a few minutes)")
    root.run(
        "cd /build/python/Python-3.11.2\n"
        f"./configure {' '.join(CONFIGURE)} >/build/python/configure.log 2>&1\n"
        f"make -j{os.cpu_count() or 2} >/build/python/make.log 2>&1\n"
        "make install >/build/python/install.log 2>&1\n"
        "echo /opt/python/lib >/etc/ld.so.conf.d/kdump-python.conf\n"
        "ldconfig\n"
        # Every module kdump or the freezer may load must have been built (make only warns).
        f"/opt/python/bin/python3.11 -c 'import {', '.join(STDLIB_NEEDED)}'\n"
    )
    shutil.rmtree(work)
    stamp_file.write_text(stamp)


def fetch_wheels(dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    log("downloading the pinned wheels")
    platforms = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux_2_28_x86_64", "linux_x86_64"]
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--only-binary=:all:",
        "--no-deps",
        "-d",
        str(dest),
    ]
    for platform in platforms:
        cmd += ["--platform", platform]
    cmd += [
        "--python-version",
        "3.11",
        "--implementation",
        "cp",
        "--abi",
        "cp311",
        "--abi",
        "abi3",
        "--abi",
        "none",
    ]
    run([*cmd, "-r", str(HERE / "requirements.txt")])


def copy_source(dest: Path) -> str:
    """kdump's sources as they are in the checkout (uncommitted changes too), and the commit they are on."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
    shutil.copytree(REPO / "kdump", dest / "kdump", ignore=ignore)
    shutil.copytree(REPO / "man", dest / "man")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, dest / name)
    proc = subprocess.run(
        ["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True, text=True
    )
    return proc.stdout.strip() or "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "dist", help="where kdump and kdump.json land")
    default_cache = Path(os.environ.get("KDUMP_CACHE", Path.home() / ".cache/kdump")) / "onefile"
    parser.add_argument("--cache", type=Path, default=default_cache, help="roots, sources, CPython")
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("the one-file build needs root (debootstrap, chroot, mount)")
    for tool in ("debootstrap", "chroot", "mount"):
        if shutil.which(tool) is None:
            raise SystemExit(f"the one-file build needs {tool} (Debian: apt-get install debootstrap)")
    start = time.monotonic()
    cache: Path = args.cache.resolve()
    cache.mkdir(parents=True, exist_ok=True)
    base = cache / f"{SUITE}-minbase"
    with (cache / ".lock").open("w") as lock:
        # One build at a time makes or changes the roots and the compiled CPython.
        fcntl.flock(lock, fcntl.LOCK_EX)
        debootstrap(base)
        root = build_root(cache, base)
        build_python(cache, root)

    # A folder of this run's own: two builds sharing the cache (a CI run beside a developer's) must
    # not write into each other's.
    inside = f"/build/kdump-{os.getpid()}"
    build = root.path / inside.lstrip("/")
    shutil.rmtree(build, ignore_errors=True)
    build.mkdir(parents=True)
    fetch_wheels(build / "wheels")
    commit = copy_source(build / "src")
    shutil.copy2(HERE / "entry.py", build / "entry.py")
    shutil.copy2(HERE / "inspect_bundle.py", build / "inspect_bundle.py")
    info = {
        "built_with": f"PyInstaller one-file in staticx {STATICX}, {PYTHON_LABEL}",
        "built_on": f"{DEBIAN_VERSION}, glibc 2.31",
        "commit": commit,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
    }
    (build / "src/kdump/_build.json").write_text(json.dumps(info, indent=1) + "\n")
    hidden = " ".join(f"--hidden-import {name}" for name in HIDDEN_IMPORTS)
    checks = "; ".join(f"import {name}" for name in COMPILED)
    log("installing the wheels and kdump (its C extensions compiled in the root), then freezing")
    root.run(
        f"cd {inside}\n"
        f"python3.11 -m venv {inside}/venv\n"
        f". {inside}/venv/bin/activate\n"
        "pip install --quiet --no-index --find-links wheels -r /dev/stdin <<'EOF'\n"
        + (HERE / "requirements.txt").read_text()
        + "EOF\n"
        "pip install --quiet --no-index --no-build-isolation --no-deps ./src\n"
        # The compiled paths are not optional here: a file without them would be the slow one.
        f'python -c "{checks}"\n'
        f"cd {inside}/src\n"
        f"pyinstaller --log-level WARN --noconfirm --onefile --strip --name kdump --distpath {inside}/dist"
        f" --workpath {inside}/work --specpath {inside} --collect-submodules kdump {hidden}"
        " --exclude-module pyspark --exclude-module pyarrow --exclude-module tkinter"
        f" --add-data {inside}/src/man:kdump/man --add-data {inside}/src/kdump/_build.json:kdump"
        f" {inside}/entry.py\n"
        # The wrapper: the frozen file, its loader and every library it or the binaries packed in
        # it link to, unpacked and run from $TMPDIR (staticx reads PyInstaller's archive itself).
        # Not compressed: the frozen file is compressed already, and xz-decompressing it on every
        # run cost 0.4 to 0.7 s of start-up for 3 MB less.
        f"mv {inside}/dist/kdump {inside}/dist/kdump-pyinstaller\n"
        f"staticx --no-compress --loglevel WARNING {inside}/dist/kdump-pyinstaller {inside}/dist/kdump\n"
        f"python {inside}/inspect_bundle.py {inside}/dist/kdump-pyinstaller {inside}/dist/kdump"
        f" > {inside}/dist/bundle.json\n",
        env={"SOURCE_DATE_EPOCH": str(int(time.time()))},
    )
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy2(build / "dist/kdump", out / "kdump")
    bundle = json.loads((build / "dist/bundle.json").read_text())
    shutil.rmtree(build)
    info.update(bundle, size=(out / "kdump").stat().st_size)
    (out / "kdump.json").write_text(json.dumps(info, indent=1) + "\n")
    log(
        f"{out / 'kdump'}: {info['size'] / 1e6:.1f} MB, glibc floor {bundle['glibc_floor']}"
        f" ({bundle['glibc_floor_from']}), carries glibc {bundle['carried_glibc']} and"
        f" {len(bundle['carried_libraries'])} libraries, {time.monotonic() - start:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
