"""Directories of several brokers' log dirs named like partitions (`kafka`, `kafka-1`, `kafka-0..2`).

`kafka-1` parses as topic `kafka` partition 1, but a directory holding `meta.properties`, the log-dir
checkpoints or partition directories is a log dir whatever it is called: kdump trusts the content
before the name, as an operator's copy of a StatefulSet's volumes demands. A directory that really is
a partition named `kafka-1` (segments, `partition.metadata`, `leader-epoch-checkpoint`) stays one.
Every layout is built from real log dirs (`samples/logdir`, the corpus) and run through `verify`.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from kdump.model.log_dir import discover, looks_like_log_dir, looks_like_partition_dir

REPO = Path(__file__).resolve().parents[2]
SAMPLE_LOGDIR = REPO / "samples" / "logdir"
META = (SAMPLE_LOGDIR / "meta.properties").read_text()


def _log_bytes(root: Path) -> int:
    """The bytes of every segment `.log` under `root`, following links as the broker does."""
    return sum(
        (Path(d) / n).stat().st_size
        for d, _, names in os.walk(root, followlinks=True)
        for n in names
        if n.endswith(".log")
    )


def _sample_copy(dest: Path) -> Path:
    shutil.copytree(SAMPLE_LOGDIR, dest)
    return dest


def _idle(dest: Path) -> Path:
    """An idle broker's log dir as Kafka leaves it: meta.properties and empty checkpoints."""
    dest.mkdir()
    (dest / "meta.properties").write_text(META)
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        (dest / name).write_text("0\n0\n")
    (dest / "log-start-offset-checkpoint").write_text("0\n0\n")
    (dest / ".lock").write_bytes(b"")
    return dest


def _verify(kdump: Any, *args: str) -> tuple[Result, list[dict[str, Any]]]:
    result = kdump("verify", "--format", "json", *args)
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    return result, rows


def _summaries(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["file"]: r for r in rows if r["type"] == "summary" and r["scope"] != "overall"}


@pytest.mark.parametrize("names", [("kafka", "kafka-1", "kafka-2"), ("kafka-0", "kafka-1", "kafka-2")])
def test_brokers_named_like_partitions_are_log_dirs(
    kdump: Any, tmp_path: Path, names: tuple[str, ...]
) -> None:
    fleet = tmp_path / "copies"
    fleet.mkdir()
    busy = [_sample_copy(fleet / n) for n in names[:2]]
    idle = _idle(fleet / names[2])
    assert [discover(str(d)).kind for d in (*busy, idle)] == ["log-dir"] * 3
    assert discover(str(fleet)).kind == "log-dirs"

    result, rows = _verify(kdump, str(fleet))
    assert result.exit_code == 0, result.stdout + result.stderr
    assert not [r for r in rows if r["type"] == "finding" and r["severity"] != "info"], rows
    present = _log_bytes(fleet)
    assert present == 2 * _log_bytes(SAMPLE_LOGDIR) > 0
    overall = rows[-1]
    assert overall["scope"] == "overall"
    assert (overall["log_bytes"], overall["checked_bytes"]) == (present, present)
    sample_parts = sum(1 for p in SAMPLE_LOGDIR.iterdir() if p.is_dir())
    assert overall["partitions"] == 2 * sample_parts
    reports = _summaries(rows)
    for d in busy:
        assert reports[str(d)]["scope"] == "log-dir"
        assert reports[str(d)]["partitions"] == sample_parts
        assert reports[str(d)]["checked_bytes"] == _log_bytes(SAMPLE_LOGDIR)
    assert reports[str(idle)]["scope"] == "log-dir"
    assert reports[str(idle)]["taken_as"] == "an idle broker's log dir, with no partition"
    assert reports[str(idle)]["findings"] == {"error": 0, "warning": 0, "info": 0}
    # Each directory is reported once: three log dirs, the fleet, the overall line.
    dirs = [r["file"] for r in rows if r["type"] == "summary" and r["scope"] in ("log-dir", "log-dirs")]
    assert sorted(dirs) == sorted([*map(str, busy), str(idle), str(fleet)])


def test_statefulset_volumes_from_the_corpus(kdump: Any, tmp_path: Path, corpus_logdirs: Path) -> None:
    """kafka-0 the samples, kafka-1 the corpus's KRaft log dir (its files linked, as a copy would
    hold them), kafka-2 idle."""
    fleet = tmp_path / "volumes"
    fleet.mkdir()
    _sample_copy(fleet / "kafka-0")
    (fleet / "kafka-1").symlink_to(corpus_logdirs / "kafka-3.8.0", target_is_directory=True)
    _idle(fleet / "kafka-2")
    result, rows = _verify(kdump, str(fleet))
    assert result.exit_code == 0, result.stdout + result.stderr
    overall = rows[-1]
    present = _log_bytes(SAMPLE_LOGDIR) + _log_bytes(corpus_logdirs / "kafka-3.8.0")
    assert (overall["log_bytes"], overall["checked_bytes"]) == (present, present)
    assert overall["log_dirs"] == 3
    reports = _summaries(rows)
    corpus_parts = sum(1 for p in (corpus_logdirs / "kafka-3.8.0").iterdir() if p.is_dir())
    assert reports[str(fleet / "kafka-1")]["partitions"] == corpus_parts
    assert not [r for r in rows if r["type"] == "finding" and r["code"] == "nothing-to-check"]


def test_a_partition_named_kafka_1_stays_a_partition(kdump: Any, tmp_path: Path) -> None:
    log_dir = tmp_path / "data"
    log_dir.mkdir()
    (log_dir / "meta.properties").write_text(META)
    part = log_dir / "kafka-1"
    shutil.copytree(SAMPLE_LOGDIR / "txn-1", part)
    assert looks_like_partition_dir(part)
    assert not looks_like_log_dir(part)
    assert discover(str(part)).kind == "partition"
    target = discover(str(log_dir))
    assert target.kind == "log-dir"
    assert [p.name for p in target.partitions()] == ["kafka-1"]
    result, rows = _verify(kdump, str(log_dir))
    assert result.exit_code == 0, result.stdout
    assert rows[-1]["checked_bytes"] == rows[-1]["log_bytes"] == _log_bytes(part) > 0


def test_an_idle_log_dir_alone_is_healthy(kdump: Any, tmp_path: Path) -> None:
    """Given on its own, an idle (or freshly formatted) broker's log dir is what a broker writes: a
    pre-start gate on it must let the broker start."""
    idle = _idle(tmp_path / "kafka-2")
    assert discover(str(idle)).kind == "log-dir"
    result, rows = _verify(kdump, str(idle))
    assert result.exit_code == 0, result.stdout
    assert [r for r in rows if r["type"] == "finding"] == []


def test_a_log_dir_given_alone_and_inside_a_fleet_is_listed_once(kdump: Any, tmp_path: Path) -> None:
    fleet = tmp_path / "copies"
    fleet.mkdir()
    for n in ("kafka-0", "kafka-1"):
        _sample_copy(fleet / n)
    present = _log_bytes(fleet)
    for args in ((fleet, fleet / "kafka-1"), (fleet / "kafka-1", fleet)):
        result, rows = _verify(kdump, *map(str, args))
        assert result.exit_code == 0, result.stdout
        dirs = [r["file"] for r in rows if r["type"] == "summary" and r["scope"] in ("log-dir", "log-dirs")]
        assert sorted(dirs) == sorted(map(str, (fleet, fleet / "kafka-0", fleet / "kafka-1")))
        assert (rows[-1]["log_bytes"], rows[-1]["checked_bytes"]) == (present, present)
