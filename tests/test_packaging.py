"""The wheel as a user installs it: built where there is no C compiler, installed into a fresh
environment, it still runs (the compiled paths are optional) and carries the manual pages where
man(1) and `kdump man` look for them (the prefix's share/man)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(p.name for p in (ROOT / "man").glob("kdump*.[17]"))


def _why_not() -> str | None:
    """Why the wheel cannot be built here without an index, or None."""
    if subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True).returncode != 0:
        return "building the wheel needs pip in the test environment"
    try:
        from importlib.metadata import version

        major, minor = (int(part) for part in version("setuptools").split(".")[:2])
    except Exception:  # absent, or a version that is not numbers: either way not usable
        return "building the wheel needs setuptools>=74.1 (pip install -e '.[dev]')"
    if (major, minor) < (74, 1):
        return "building the wheel needs setuptools>=74.1 (pip install -e '.[dev]')"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=str(_why_not()))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel built from a copy of the source (the checkout's build/ would hand back compiled
    objects of an earlier build), with `false` as the C compiler."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    skip = shutil.ignore_patterns("__pycache__", "*.so", "_build.json")
    shutil.copytree(ROOT / "kdump", src / "kdump", ignore=skip)
    shutil.copytree(ROOT / "man", src / "man")
    out = tmp_path_factory.mktemp("wheel")
    env = {**os.environ, "CC": "false", "LDSHARED": "false"}
    build = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "-q",
        "-w",
        str(out),
        str(src),
    ]
    subprocess.run(build, check=True, env=env, capture_output=True, timeout=300)
    (found,) = out.glob("kdump-*.whl")
    return found


def test_wheel_has_every_manual_page_and_no_compiled_code(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    shipped = sorted(Path(n).name for n in names if "/data/share/man/man" in n)
    assert shipped == PAGES
    assert len(PAGES) >= 13
    for name in names:
        if "/data/share/man/" in name:
            section = Path(name).suffix[1:]
            assert f"share/man/man{section}/" in name
    assert not [n for n in names if n.endswith(".so")]


def test_installed_wheel_runs_without_compiled_paths_and_finds_its_pages(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q", str(wheel)]
    subprocess.run(install, check=True, capture_output=True, timeout=300)
    # kdump's dependencies come from the test environment (PYTHONPATH); kdump itself from the new
    # environment, since the test environment's kdump is an editable install, found only through
    # its own site-packages' .pth files, which PYTHONPATH entries do not run.
    deps = sysconfig.get_paths()["purelib"]
    run_env = {**os.environ, "PYTHONPATH": deps}
    run_env.pop("KDUMP_PURE_PYTHON", None)

    def kdump(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [str(python), "-m", "kdump", *args]
        return subprocess.run(cmd, capture_output=True, text=True, env=run_env, cwd=tmp_path, timeout=120)

    version = kdump("--version")
    assert version.returncode == 0, version.stderr
    assert "compiled paths: none (the pure-Python reference path)" in version.stdout
    located = subprocess.run(
        [str(python), "-c", "import kdump, sys; print(kdump.__file__)"],
        capture_output=True,
        text=True,
        env=run_env,
        cwd=tmp_path,
        check=True,
    )
    assert Path(located.stdout.strip()).is_relative_to(env_dir)

    listed = kdump("man", "--list")
    assert listed.returncode == 0, listed.stderr
    stems = (Path(p).stem for p in PAGES)
    assert listed.stdout.split() == sorted(
        s.removeprefix("kdump-").removeprefix("kdump") or "kdump" for s in stems
    )
    roff = kdump("man", "verify", "--roff")
    assert roff.stdout == (ROOT / "man" / "kdump-verify.1").read_text(encoding="utf-8")
    assert (env_dir / "share/man/man7/kdump-findings.7").is_file()
    if shutil.which("man") is not None:  # man(1) derives its search path from PATH's bin directories
        path = f"{env_dir / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
        man_env = {k: v for k, v in run_env.items() if k != "MANPATH"} | {"PATH": path}
        found = subprocess.run(["man", "-w", "kdump-verify"], capture_output=True, text=True, env=man_env)
        assert found.stdout.strip() == str(env_dir / "share/man/man1/kdump-verify.1"), found.stderr

    verify = kdump("verify", str(ROOT / "samples" / "logdir"))
    assert verify.returncode == 0, verify.stdout + verify.stderr
