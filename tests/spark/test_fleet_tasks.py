"""How fleet verify deals a fleet into Spark tasks (`kdump.spark.fleet.work_items`), without Spark.

Spark's cost per task must be paid a few times per core, not once per segment: the tasks are few,
of nearly equal bytes, biggest first; a partition that fits in a task goes whole (its report is
built in that task, no shuffle), a bigger one is spread segment by segment. The segment files are
sparse files of the wanted sizes: dealing reads only their sizes.
"""

from __future__ import annotations

from pathlib import Path

from kdump.model.log_dir import discover
from kdump.ops.checks.verify import plan_verify
from kdump.spark import fleet
from kdump.spark.fleet import FleetUnit, fleet_units, task_bytes, work_items

MB = 1_000_000


def _units(root: Path, partitions: list[list[int]]) -> list[FleetUnit]:
    """A log dir whose partition `p` has segments of the sizes `partitions[p]` (sparse files)."""
    logs = root / "kafka-logs"
    logs.mkdir()
    (logs / "meta.properties").write_text("version=1\nnode.id=1\n")
    for p, sizes in enumerate(partitions):
        part = logs / f"t-{p}"
        part.mkdir()
        for k, size in enumerate(sizes):
            with open(part / f"{k * 1000:020d}.log", "wb") as fh:
                fh.truncate(size)
    return fleet_units(plan_verify([discover(str(logs))]))


def _task_bytes(units: list[FleetUnit], task: tuple[object, ...]) -> int:
    total = 0
    for item in task:
        assert isinstance(item, tuple)
        if isinstance(item[2], list):
            total += sum(s.log.stat().st_size for s in item[2] if s.log is not None)
        else:
            total += item[2].log.stat().st_size
    return total


def _dealt(tasks: list[tuple[object, ...]]) -> list[tuple[int, int]]:
    """(unit, segment place) of every segment dealt; a whole unit counts each of its segments."""
    out: list[tuple[int, int]] = []
    for task in tasks:
        for item in task:
            assert isinstance(item, tuple)
            unit = item[0]
            assert isinstance(unit, int)
            if isinstance(item[2], list):
                out.extend((unit, k) for k in range(len(item[2])))
            else:
                assert isinstance(item[1], int)
                out.append((unit, item[1]))
    return sorted(out)


def test_a_fleet_of_partitions_goes_in_a_few_even_tasks_per_core(tmp_path: Path) -> None:
    sizes = [[(3 + p % 10) * MB] for p in range(60)]
    units = _units(tmp_path, sizes)
    tasks, split = work_items(units, parallelism=2)
    assert split == set()  # every partition fits in a task: no shuffle
    assert len(tasks) == fleet.TASKS_PER_CORE * 2
    loads = [_task_bytes(units, t) for t in tasks]
    assert loads == sorted(loads, reverse=True)  # biggest first
    assert max(loads) - min(loads) <= 12 * MB  # within one partition of each other
    assert _dealt(tasks) == [(u, 0) for u in range(60)]  # each partition exactly once


def test_a_partition_bigger_than_a_task_is_spread_segment_by_segment(tmp_path: Path) -> None:
    big = [8 * MB] * 12
    units = _units(tmp_path, [[2 * MB], big, [1 * MB, 1 * MB], []])
    tasks, split = work_items(units, parallelism=2)
    limit = task_bytes(sum(big) + 4 * MB, 2)
    assert limit < sum(big)
    big_unit = next(u for u, unit in enumerate(units) if len(unit[4]) == 12)
    assert split == {big_unit}
    # Its segments went to different tasks, one each, and every other unit went whole.
    holding = [t for t in tasks if any(item[0] == big_unit for item in t)]  # type: ignore[index]
    assert len(holding) > 1
    expected = sorted((u, k) for u, unit in enumerate(units) for k in range(len(unit[4])))
    assert _dealt(tasks) == expected
    # The partition without segments is dealt too (its report says so).
    empty = next(u for u, unit in enumerate(units) if not unit[4])
    assert any(item[0] == empty for t in tasks for item in t)  # type: ignore[index]


def test_a_small_fleet_is_one_task(tmp_path: Path) -> None:
    units = _units(tmp_path, [[10_000]] * 30)
    tasks, split = work_items(units, parallelism=8)
    assert (len(tasks), split) == (1, set())
    assert task_bytes(300_000, 8) == fleet.MIN_TASK_BYTES
