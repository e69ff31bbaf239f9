"""`kdump reindex`: rebuild .index, .timeindex and .txnindex as the broker's recovery would."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path

import click

from kdump.cli.exit_codes import ExitCode
from kdump.cli.output import (
    allow_unknown_option,
    discover_all,
    format_option,
    progress_bar,
    resolve_format,
    say_problems,
)
from kdump.cli.repair import LocalPath, check_backup_dir, interval_options, repair_options, write_rows
from kdump.ops.common.topic_config import IntervalResolver
from kdump.ops.repair.preflight import check_room, reindex_needs
from kdump.ops.repair.reindex import DEFAULT_INDEX_INTERVAL_BYTES, ReindexPlan, apply_reindex, plan_reindex
from kdump.ops.repair.safety import default_backup_dir


@click.command("reindex")
@click.argument("paths", nargs=-1, required=True, type=LocalPath(readable=False))
@repair_options
@interval_options
@click.option(
    "--rebuild-all",
    is_flag=True,
    help="Rebuild every index with the recovery rule, not only those verify finds wrong or missing.",
)
@allow_unknown_option
@format_option
def reindex_command(
    paths: tuple[str, ...],
    apply: bool,
    backup_dir: Path | None,
    index_interval_bytes: int | None,
    metadata_log: Path | None,
    rebuild_all: bool,
    allow_unknown: bool,
    fmt: str | None,
) -> None:
    """Rebuild segment indexes offline, byte for byte as the broker's recovery writes them.

    Only the valid prefix of each log is indexed (what recovery keeps). By default only the index
    files that `kdump verify` finds wrong or missing are rebuilt: the broker writes some correct
    entries on append that its recovery rule would place elsewhere (--rebuild-all rewrites those
    too). A dry run by default: it shows, per segment, which index files differ and how. With --apply every replaced file is
    first copied to the backup dir, then rewritten atomically (temporary file, fsync, rename).
    Refuses (exit 4) while a broker holds the log dir's .lock.

    \b
    Exit codes: 0 nothing to do or done, 1 changes would be made (dry run), 2 usage,
    3 cannot read or write (a log that cannot be read is never "nothing to do"; a failed write is
    undone), 4 refused, 5 cannot repair here: no room, read-only or unwritable (nothing touched).

    \b
    Examples:
      kdump reindex /var/lib/kafka/data/orders-0
      kdump reindex --apply --index-interval-bytes 4096 /var/lib/kafka/data
    """
    fmt = resolve_format(fmt)
    check_backup_dir(backup_dir)
    targets, failed = discover_all(paths, allow_unknown=allow_unknown)
    plans: list[ReindexPlan] = []
    with ExitStack() as stack:
        progress = progress_bar(stack, targets, fmt, "reading")
        intervals = IntervalResolver(index_interval_bytes, metadata_log, DEFAULT_INDEX_INTERVAL_BYTES)
        for t in targets:
            plans.extend(plan_reindex(t, progress=progress, intervals=intervals, rebuild_all=rebuild_all))
    failed = (
        say_problems([f for t in targets for f in t.problems] + [f for p in plans for f in p.problems])
        or failed
    )
    pending = sum(len(p.changes) for p in plans)
    kept = sum(p.kept for p in plans)
    rows = []
    for plan in plans:
        if fmt != "json" and plan.changes:
            click.echo(f"{plan.label}: index.interval.bytes {plan.interval_bytes} ({plan.interval_source})")
        for c in plan.changes:
            rows.append(
                {
                    "type": "reindex-change",
                    "partition": plan.label,
                    "file": str(c.path),
                    "kind": c.kind,
                    "exists": c.exists,
                    "old_entries": c.old_entries,
                    "new_entries": c.new_entries,
                    "missing": c.missing,
                    "extra": c.extra,
                    "changed": c.changed,
                    "stale": c.stale,
                    "preallocated_slots": c.preallocated_slots,
                    "index_interval_bytes": plan.interval_bytes,
                    "applied": False,
                }
            )
            if fmt != "json":
                click.echo(f"{'rewrite' if apply else 'would rewrite'} {c.path}: {c.describe}")
    if apply and sum(1 for p in plans if p.changes) > 1:
        # Every partition's room at once, before the first is touched.
        check_room(
            "reindex",
            [
                n
                for p in plans
                if p.changes
                for n in reindex_needs(
                    p.changes, _sub(backup_dir, p) or default_backup_dir(p.root, p.log_dir)
                )
            ],
        )
    if apply:
        for plan in plans:
            result = apply_reindex(plan, backup_dir if len(plans) == 1 else _sub(backup_dir, plan))
            if result.written and fmt != "json":
                click.echo(
                    f"rewrote {len(result.written)} files of {plan.label}; backup in {result.backup_dir}"
                )
            for row in rows:
                if row["partition"] == plan.label:
                    row["applied"] = True
                    row["backup_dir"] = str(result.backup_dir)
    if fmt == "json":
        write_rows(
            [
                *rows,
                {
                    "type": "reindex-summary",
                    "file": None,
                    "files": pending,
                    "applied": apply,
                    "partitions": len(plans),
                    "kept": kept,
                },
            ]
        )
    elif failed:
        click.echo(f"{pending} files would change; some input could not be read (see above)")
    elif pending == 0:
        click.echo("indexes are as verify expects them: nothing to do")
    elif not apply:
        click.echo(f"{pending} files would change; run again with --apply to write them")
    if kept and fmt != "json":
        click.echo(
            f"{kept} index files differ from the recovery rule but verify finds them correct: kept "
            "(--rebuild-all rewrites them)"
        )
    if failed:
        sys.exit(ExitCode.UNREADABLE)
    sys.exit(ExitCode.FINDINGS if pending and not apply else ExitCode.OK)


def _sub(backup_dir: Path | None, plan: ReindexPlan) -> Path | None:
    return None if backup_dir is None else backup_dir / plan.root.name
