"""Verify of many partitions deals whole partitions to forked workers (`kdump.ops.checks.units`):
the same reports, in the same order, as one process checking segment by segment."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from builders import build_partition

from kdump.model.log_dir import discover
from kdump.ops.checks import units
from kdump.ops.checks.verify import PartitionReport, VerifyOptions, verify_targets


def test_deal_cuts_consecutive_ranges_of_about_equal_weight() -> None:
    spans = units.deal([1] * 100, 10)
    assert spans == [(i, i + 10) for i in range(0, 100, 10)]
    # A heavy unit closes its chunk; every unit is in exactly one range, in order.
    spans = units.deal([1, 1, 50, 1, 1, 1], 4)
    assert [i for a, b in spans for i in range(a, b)] == list(range(6))
    assert (2, 3) in spans or any(a <= 2 < b and b == 3 for a, b in spans)
    assert units.deal([], 4) == []


def test_ramp_starts_with_one_unit_and_grows_to_the_steady_size() -> None:
    spans = units.ramp(100, 16)
    assert [b - a for a, b in spans][:6] == [1, 2, 4, 8, 16, 16]
    units_covered = [i for a, b in spans for i in range(a, b)]
    assert units_covered == list(range(100))  # consecutive, every unit once
    assert units.ramp(3, 0) == [(0, 1), (1, 2), (2, 3)]  # a steady size of 0 is taken as 1
    assert units.ramp(0, 8) == []


def test_whole_units_are_dealt_only_when_none_is_a_large_share() -> None:
    assert units.worth_dealing([1] * 40, 2)
    assert not units.worth_dealing([1] * 40, 1)  # one process: nothing to deal
    assert not units.worth_dealing([1] * 5, 2)  # too few to keep the workers busy to the end
    assert not units.worth_dealing([1] * 39 + [1000], 2)  # one big partition: spread by segment


def _comparable(reports: list[PartitionReport]) -> list[dict[str, object]]:
    return [dataclasses.asdict(r) for r in reports]


def test_dealt_reports_are_the_ones_of_one_process(tmp_path: Path) -> None:
    log_dir = tmp_path / "kafka-logs"
    for i in range(48):
        build_partition(log_dir / f"orders-{i}", segments=2, batches_per_segment=3)
    # A damaged one among them: its findings come back from the worker that checked it.
    log = sorted((log_dir / "orders-17").glob("*.log"))[0]
    data = bytearray(log.read_bytes())
    data[70] ^= 0xFF
    log.write_bytes(bytes(data))
    weights = [units.UNIT_COST * 3] * 48
    assert units.worth_dealing(weights, 2)  # 48 partitions of 2 segments: dealt on 2 workers
    dealt = list(verify_targets([discover(str(log_dir))], VerifyOptions(jobs=2)))
    alone = list(verify_targets([discover(str(log_dir))], VerifyOptions(jobs=1)))
    assert [r.label for r in dealt] == [r.label for r in alone]
    assert _comparable(dealt) == _comparable(alone)
    assert any(r.findings for r in dealt if r.label.endswith("orders-17"))
