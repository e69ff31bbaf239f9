"""seek-by-time on tiered storage equals the broker's ListOffsets, recorded from real 4.4.0 and 3.9.1 brokers:
every spec (-1 latest, -2 earliest, -3 max-timestamp, -4 earliest-local, -5 latest-tiered, -6
earliest-pending-upload where the release has it, and times before, in the remote part, in the local part
and after the data), on a tiered topic and on a plain one, offset, timestamp and leader epoch alike."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from tiered_corpus import VERSIONS, list_offsets, log_dir_copy, remote_copy, tiered_root

from kdump.model.partition import PartitionDir
from kdump.model.remote_store import RemoteStore
from kdump.ops.seek.by_time import SeekResult, SeekTarget, seek_partition
from kdump.ops.tiered.partitions import TieredContext

Run = Callable[..., Result]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiered_root(tmp_path_factory.getbasetemp())


@pytest.fixture(scope="module")
def copies(root: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    base = tmp_path_factory.mktemp("tiered-seek")
    return {
        v: (log_dir_copy(root, v, base / v / "data"), remote_copy(root, v, base / v / "remote"))
        for v in VERSIONS
    }


def _target(spec: str) -> SeekTarget:
    return int(spec) if spec.lstrip("-").isdigit() else spec  # type: ignore[return-value]


def _seek(log_dir: Path, topic: str, spec: str, ctx: TieredContext) -> SeekResult:
    return seek_partition(
        PartitionDir.load(log_dir / f"{topic}-0"), _target(spec), log_dir_path=log_dir, tiered=ctx
    )


def _as_broker(r: SeekResult, spec: str) -> dict[str, Any]:
    """kdump's answer in ListOffsets' terms: none is offset -1 (and, for a time, timestamp -1)."""
    timed = r.target in ("timestamp", "max-timestamp")
    return {
        "offset": -1 if r.offset is None else r.offset,
        "timestamp": (r.timestamp if r.timestamp is not None else -1) if timed else -1,
        "leaderEpoch": r.leader_epoch,
    }


def _cases() -> list[Any]:
    return [pytest.param(v, id=v) for v in VERSIONS]


@pytest.mark.parametrize("version", _cases())
def test_every_spec_equals_the_brokers_list_offsets(
    root: Path, copies: dict[str, tuple[Path, Path]], version: str
) -> None:
    log_dir, remote = copies[version]
    ctx = TieredContext(store=RemoteStore.load(remote))
    answers = list_offsets(root, version)
    specs = {a["spec"] for a in answers}
    assert {"earliest", "latest", "max-timestamp", "earliest-local", "latest-tiered"} <= specs
    compared = 0
    for a in answers:
        r = _seek(log_dir, a["topic"], a["spec"], ctx)
        assert _as_broker(r, a["spec"]) == {k: a[k] for k in ("offset", "timestamp", "leaderEpoch")}, (
            a["topic"],
            a["spec"],
            r.notes,
        )
        compared += 1
    assert compared >= 19
    # The tiered topic's remote part was really read: its earliest answers came from remote segments.
    remote_answers = [
        _seek(log_dir, "tiered", a["spec"], ctx)
        for a in answers
        if a["topic"] == "tiered" and a["offset"] in range(37, 280)
    ]
    assert remote_answers
    assert all("kafka-tiered-storage" in (r.segment or "") for r in remote_answers if r.target == "timestamp")


def test_tiered_partition_keeps_the_checkpointed_log_start(copies: dict[str, tuple[Path, Path]]) -> None:
    log_dir, _ = copies["4.4.0"]
    r = _seek(log_dir, "tiered", "earliest", TieredContext())
    assert r.tiered is True
    assert r.log_start_offset == 37  # log-start-offset-checkpoint, below the first local segment
    assert r.local_log_start_offset == 280
    plain = _seek(log_dir, "plain", "earliest", TieredContext())
    assert (plain.tiered, plain.log_start_offset) == (False, 0)


def test_without_the_remote_store_a_remote_time_is_no_answer_and_says_why(
    root: Path, copies: dict[str, tuple[Path, Path]]
) -> None:
    log_dir, _ = copies["4.4.0"]
    answers = [a for a in list_offsets(root, "4.4.0") if a["topic"] == "tiered"]
    in_remote = next(a for a in answers if a["spec"].isdigit() and 37 <= a["offset"] < 270)
    in_local = next(a for a in answers if a["spec"].isdigit() and a["offset"] >= 280)
    ctx = TieredContext()
    r = _seek(log_dir, "tiered", in_remote["spec"], ctx)
    assert r.offset is None
    assert any("give it with --remote" in n for n in r.notes)
    local = _seek(log_dir, "tiered", in_local["spec"], ctx)
    assert local.offset == in_local["offset"]
    # The special targets need no remote bytes.
    assert _seek(log_dir, "tiered", "latest-tiered", ctx).offset == 369


def test_without_remote_log_metadata_tiered_answers_say_so(
    tmp_path: Path, copies: dict[str, tuple[Path, Path]]
) -> None:
    src, _ = copies["4.4.0"]
    log_dir = tmp_path / "data"
    shutil.copytree(src, log_dir)
    shutil.rmtree(log_dir / "__remote_log_metadata-0")
    r = _seek(log_dir, "tiered", "latest-tiered", TieredContext())
    assert r.offset is None
    assert any("cannot tell what was copied" in n for n in r.notes)
    # Nor does a missing metadata log pass for "not tiered".
    shutil.rmtree(log_dir / "__cluster_metadata-0")
    r = _seek(log_dir, "tiered", "earliest-local", TieredContext())
    assert r.offset is None
    assert r.tiered is None
    assert any("cannot tell whether the partition is tiered" in n for n in r.notes)


@pytest.mark.parametrize(
    ("sentinel", "name"),
    [("-4", "earliest-local"), ("-5", "latest-tiered"), ("-6", "earliest-pending-upload")],
)
def test_cli_takes_the_list_offsets_sentinels(
    copies: dict[str, tuple[Path, Path]], kdump: Run, sentinel: str, name: str
) -> None:
    log_dir, remote = copies["4.4.0"]
    result = kdump(
        "seek-by-time", "--format", "json", "--remote", str(remote), sentinel, str(log_dir / "tiered-0")
    )
    assert result.exit_code == 0, result.stderr
    row = json.loads(result.stdout)
    assert row["target"] == name
    assert row["tiered"] is True
    assert (
        row["offset"] == {"earliest-local": 280, "latest-tiered": 369, "earliest-pending-upload": 370}[name]
    )
    assert row["leader_epoch"] == 2
    assert (row["log_start_offset"], row["local_log_start_offset"]) == (37, 280)
