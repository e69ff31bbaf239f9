"""A location is resolved once: `discover` lists each directory under it once and looks at each
entry once, however many questions classification asks (measured by counting the calls)."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kdump.model.log_dir import discover

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@contextmanager
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Counter[str], Counter[str]]]:
    """(directories listed, by listdir or scandir; entries looked at), by path, while the block runs."""
    listed: Counter[str] = Counter()
    looked: Counter[str] = Counter()
    real_listdir, real_scandir, real_stat = os.listdir, os.scandir, os.stat

    def listdir(path: Any = ".") -> list[str]:
        listed[os.fspath(path)] += 1
        return real_listdir(path)

    def scandir(path: Any = ".") -> Any:
        listed[os.fspath(path)] += 1
        return real_scandir(path)

    def stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        looked[os.fspath(path)] += 1
        return real_stat(path, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(os, "listdir", listdir)
        m.setattr(os, "scandir", scandir)
        m.setattr(os, "stat", stat)
        yield listed, looked


def _dirs(root: Path) -> set[str]:
    return {str(root), *(str(p) for p in root.rglob("*") if p.is_dir())}


def test_a_directory_of_log_dirs_is_listed_once_per_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "copies"
    shutil.copytree(SAMPLES / "replicas", root)
    shutil.copytree(SAMPLES / "logdir", root / "broker3")
    dirs = _dirs(root)
    with counted(monkeypatch) as (listed, looked):
        target = discover(str(root))
    assert target.kind == "log-dirs"
    assert len(target.children) == 3
    # Before: 35 listings of these 16 directories (up to 5 of one: each question, "a log dir?", "a
    # partition?", "does it hold log dirs?", listed it again before it was loaded), and 193 looks
    # at its 186 entries.
    assert set(listed) == dirs
    assert max(listed.values()) == 1, listed.most_common(3)
    assert max(looked.values()) == 1, looked.most_common(3)


def test_a_log_dir_is_listed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "logdir"
    shutil.copytree(SAMPLES / "logdir", root)
    dirs = _dirs(root)
    entries = sum(1 for _ in root.rglob("*")) + 1
    with counted(monkeypatch) as (listed, looked):
        target = discover(str(root))
    assert target.kind == "log-dir"
    assert len(target.parts) == 10
    assert listed == Counter(dict.fromkeys(dirs, 1))  # before: the log dir itself 4 times, 14 in all
    # One look at each entry, the log dir's included, but its partition directories: the log dir's
    # readdir says they are directories (no stat each, at 100,000 partitions).
    assert sum(looked.values()) == entries - len(target.parts)


def test_a_partition_is_listed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    part = tmp_path / "txn-1"
    shutil.copytree(SAMPLES / "logdir" / "txn-1", part)
    with counted(monkeypatch) as (listed, _looked):
        target = discover(str(part))
    assert target.kind == "partition"
    # The partition once (before: 5 times); its parent once (is it a log dir holding the partition?).
    assert listed == Counter({str(part): 1, str(tmp_path): 1})
