"""`kdump quarantine`: move stray segment copies out of a partition, into a backup `restore` undoes."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kdump.cli.exit_codes import ExitCode
from kdump.cli.output import allow_unknown_option, discover_all, format_option, resolve_format, say_problems
from kdump.cli.repair import LocalPath, check_backup_dir, repair_options, write_rows
from kdump.ops.repair.quarantine import QuarantinePlan, apply_quarantine, plan_quarantine


@click.command("quarantine")
@click.argument("paths", nargs=-1, required=True, type=LocalPath(readable=False))
@repair_options
@allow_unknown_option
@format_option
def quarantine_command(
    paths: tuple[str, ...], apply: bool, backup_dir: Path | None, allow_unknown: bool, fmt: str | None
) -> None:
    """Move stray segment copies and losing swaps out of their partition, into a backup.

    A stray copy (verify's segment-stray) is a .log holding only offsets other segments of the
    partition hold: a copy of an older segment saved under a name inside another segment's range, or
    a segment copied under a name that is no segment name (copy.log). A losing swap
    (swap-loses-offsets) is a .log.swap the broker would complete at start with fewer offsets than
    the segments it replaces. Each is moved whole, with its indexes, into the backup dir; nothing is
    cut from the segments the broker serves. A dry run by default. Refuses (exit 4) while a broker
    holds the log dir's .lock; `kdump restore BACKUP_DIR` puts the files back.

    \b
    Exit codes: 0 nothing to do or done, 1 files would be moved (dry run), 2 usage,
    3 cannot read or write, 4 refused.

    \b
    Examples:
      kdump quarantine /var/lib/kafka/data/orders-0
      kdump quarantine --apply /var/lib/kafka/data
    """
    fmt = resolve_format(fmt)
    check_backup_dir(backup_dir)
    targets, failed = discover_all(paths, allow_unknown=allow_unknown)
    plans: list[QuarantinePlan] = [p for t in targets for p in plan_quarantine(t)]
    failed = say_problems([f for t in targets for f in t.problems]) or failed
    pending = sum(len(p.files) for p in plans)
    rows = []
    for plan in plans:
        bdir = None
        if apply and plan.files:
            bdir = apply_quarantine(plan, backup_dir if len(plans) == 1 else _sub(backup_dir, plan))
        for path in plan.files:
            rows.append(
                {
                    "type": "quarantine-move",
                    "partition": plan.label,
                    "file": str(path),
                    "applied": apply,
                    "backup_dir": None if bdir is None else str(bdir),
                }
            )
            if fmt != "json":
                click.echo(f"{'moved' if apply else 'would move'} {path}")
        if bdir is not None and fmt != "json":
            click.echo(f"moved {len(plan.files)} files of {plan.label}; backup in {bdir}")
    if fmt == "json":
        summary = {"type": "quarantine-summary", "file": None, "files": pending, "applied": apply}
        write_rows([*rows, {**summary, "partitions": len(plans)}])
    elif pending == 0:
        click.echo("no stray segment files: nothing to do")
    elif not apply:
        click.echo(f"{pending} files would move; run again with --apply to move them")
    if failed:
        sys.exit(ExitCode.UNREADABLE)
    sys.exit(ExitCode.FINDINGS if pending and not apply else ExitCode.OK)


def _sub(backup_dir: Path | None, plan: QuarantinePlan) -> Path | None:
    return None if backup_dir is None else backup_dir / plan.root.name
