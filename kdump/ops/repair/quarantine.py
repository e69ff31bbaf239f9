"""`quarantine`: move stray segment files (`kdump.ops.checks.strays`) and swaps whose completion would lose
offsets (`kdump.ops.checks.swaps`) out of a partition into a backup.

The repair of `segment-stray` and `swap-loses-offsets`: nothing is cut from the segments the broker serves. Each stray `.log`
and its indexes are moved into a new backup directory under the broker's lock (the same journal as
every repair: a manifest written before each step, a hard link or an exclusive copy, fsync, then the
unlink), so `kdump restore BACKUP_DIR` puts them back byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kdump.model.log_dir import Target
from kdump.ops.checks.continuity import cleanup_policy
from kdump.ops.checks.strays import Stray, find_strays
from kdump.ops.checks.swaps import LosingSwap, losing_swaps
from kdump.ops.checks.verify import VerifyOptions, check_segments
from kdump.ops.repair.safety import Journal, default_backup_dir, log_dir_lock


@dataclass(frozen=True, slots=True)
class QuarantinePlan:
    """The stray files of one partition, and where its lock and backups are."""

    label: str
    root: Path
    log_dir: Path | None
    strays: tuple[Stray, ...]
    swaps: tuple[LosingSwap, ...] = ()

    @property
    def files(self) -> tuple[Path, ...]:
        """Every file to move: the stray segments' and the losing swaps'."""
        return tuple(p for s in self.strays for p in s.files) + tuple(p for w in self.swaps for p in w.files)


def plan_quarantine(target: Target) -> list[QuarantinePlan]:
    """The stray segment files and losing swaps of every partition of a target (a partition or a log dir)."""
    plans = []
    for part in target.partitions():
        results = list(check_segments(part.segments, VerifyOptions(jobs=1)))
        strays = tuple(find_strays(results))
        kept = [r for r in results if all(r is not s.result for s in strays)]
        swaps = tuple(losing_swaps(part, kept, cleanup_policy(part, kept)[0])) if part.leftovers else ()
        plans.append(QuarantinePlan(str(part.path), part.path, target.log_dir_path, strays, swaps))
    return plans


def apply_quarantine(plan: QuarantinePlan, backup_dir: Path | None = None) -> Path | None:
    """Move the plan's files into a new backup directory (None when there is nothing to move)."""
    if not plan.files:
        return None
    with log_dir_lock(plan.log_dir):
        bdir = backup_dir or default_backup_dir(plan.root, plan.log_dir)
        journal = Journal.create(bdir, plan.root, "quarantine")
        for path in plan.files:
            journal.move_out(path)
        return bdir
