"""`kdump --version` names the C library the process runs on (issue 34): the host's for a pip install.
The one-file build's line (the glibc it carries, under staticx) is checked on the built file in
tests/onefile, in roots with glibc, with musl only and with no C library at all."""

from __future__ import annotations

import os
import platform

import pytest
from click.testing import CliRunner

from kdump.cli import cli
from kdump.cli.c_library import c_library


def test_a_pip_install_names_the_hosts_c_library() -> None:
    libc, version = platform.libc_ver()
    if libc != "glibc":
        pytest.skip(f"this host's C library is not glibc ({libc or 'unknown'})")
    assert c_library() == f"glibc {version} (the host's)"
    shown = CliRunner().invoke(cli, ["--version"]).output
    assert f"C library: glibc {version} (the host's)\n" in shown
    assert f"build: Python package on CPython {platform.python_version()}\n" in shown


def test_a_bundle_dir_that_does_not_hold_the_mapped_library_changes_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: os.PathLike[str]
) -> None:
    """STATICX_BUNDLE_DIR is inherited by whatever the one-file build starts: a pip-installed kdump
    run from it still runs on the host's C library and must say so."""
    before = c_library()
    monkeypatch.setenv("STATICX_BUNDLE_DIR", str(tmp_path))
    assert c_library() == before
    assert "bundled" not in before
