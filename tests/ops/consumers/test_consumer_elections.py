"""`compare --commits`: for each replica as leader, the groups that election hurts (real corpus bytes).

Two replicas of the corpus's c-none-0 (or one built like it beside the bundled subset): the whole one, and a copy that `trim-tail` cut at offset 500 (a
replica that fell behind). The corpus's groups committed 1008 in epoch 0: led by the whole replica they
are untouched; led by the short one, their epoch ends at its log end and they move there.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

from builders import c_none_partition
from click.testing import Result

from kdump.ops.consumers import GroupPartitionImpact


def _replicas(corpus_root: Path, tmp_path: Path, kdump: Callable[..., Result]) -> tuple[Path, Path]:
    whole, short = tmp_path / "a", tmp_path / "b"
    shutil.copytree(corpus_root / "kafka-3.8.0" / "__consumer_offsets-0", whole / "__consumer_offsets-0")
    c_none_partition(corpus_root, whole / "c-none-0")
    shutil.copytree(whole / "c-none-0", short / "c-none-0")
    cut = kdump(
        "trim-tail", "--to-offset", "500", "--apply", "--backup-dir", str(tmp_path / "bk"), str(short)
    )
    assert cut.exit_code == 0, cut.stderr
    return whole, short


def test_each_replica_as_leader_names_the_groups_it_hurts(
    corpus_root: Path, tmp_path: Path, kdump: Callable[..., Result]
) -> None:
    whole, short = _replicas(corpus_root, tmp_path, kdump)
    result = kdump("compare", "--format", "json", str(whole), str(short))
    assert result.exit_code == 1, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    impacts = [r for r in rows if r["type"] == "group-impact"]
    assert set(impacts[0]) == {"type", "file", "leader", *GroupPartitionImpact.__slots__}
    by = {(r["leader"], r["group"]): r for r in impacts}
    whole_leads = by[(str(whole / "c-none-0"), "kdump-cg")]
    assert (whole_leads["epoch_check"], whole_leads["resume_latest"], whole_leads["hurt"]) == (
        "valid",
        1008,
        False,
    )
    short_leads = by[(str(short / "c-none-0"), "kdump-cg")]
    end = short_leads["log_end_offset"]
    assert end <= 500
    assert (short_leads["out_of_range"], short_leads["epoch_check"]) == ("past-log-end", "diverged")
    assert (short_leads["resume_earliest"], short_leads["resume_latest"]) == (end, end)
    assert short_leads["lost_unread"] == 3000 - 1008

    text = kdump("compare", "--leader", str(short), "--commits", str(whole), str(whole), str(short))
    assert f"if {short / 'c-none-0'} leads:" in text.stdout
    assert "group kdump-cg (classic) on c-none-0: committed 1008 (epoch 0)" in text.stdout
    assert f"if {whole / 'c-none-0'} leads" not in text.stdout  # --leader: that election only
