"""`kdump trim-tail`: the broker's tail recovery, shown first and applied only when asked."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from kdump.cli.exit_codes import ExitCode
from kdump.cli.output import commits_option, diag, discover_all, format_option, resolve_format, say_problems
from kdump.cli.repair import LocalPath, check_backup_dir, interval_options, repair_options, write_rows
from kdump.errors import CannotRepairError
from kdump.ops.common.topic_config import IntervalResolver
from kdump.ops.consumers import CommitTable, read_commits
from kdump.ops.consumers.repairs import cut_impact
from kdump.ops.repair.preflight import check_room
from kdump.ops.repair.safety import default_backup_dir
from kdump.ops.repair.trim import TrimPlan, apply_trim_tail, plan_trim_tail, trim_estimate
from kdump.render.consumers import commit_problems, impact_lines, impact_rows


@click.command("trim-tail")
@click.argument("paths", nargs=-1, required=True, type=LocalPath(readable=False))
@repair_options
@click.option(
    "--to-offset", type=click.IntRange(min=0), help="Truncate the partition so this offset and later go."
)
@click.option(
    "--drop-later-segments/--keep-later-segments",
    default=True,
    show_default=True,
    help="Move the segments after the cut (with their indexes and the producer snapshots past the new "
    "end) into the backup dir, as the broker's recovery deletes them; --keep-later-segments leaves them, "
    "and the log then has an offset hole that no broker produces.",
)
@commits_option("the partition's own log dir", "The plan then says which groups the cut hurts.")
@interval_options
@format_option
def trim_command(
    paths: tuple[str, ...],
    apply: bool,
    backup_dir: Path | None,
    to_offset: int | None,
    drop_later_segments: bool,
    index_interval_bytes: int | None,
    metadata_log: Path | None,
    fmt: str | None,
    commits_paths: tuple[str, ...] = (),
) -> None:
    """Cut a torn or corrupt segment tail exactly where the broker's recovery would.

    PATH is a segment .log or a partition directory (the first segment with invalid bytes is cut,
    normally the last, and the segments after it go, as the broker's recovery deletes them). A dry
    run by default: it shows the cut position, the bytes, batches, offsets and timestamps that would
    go, the later segments and files moved out, the bytes backed up, the new log end offset, and how
    many valid batches lie past the cut (get them back with `kdump salvage PATH` first).
    --apply keeps every removed byte in the backup dir, truncates, fsyncs and rebuilds the segment's
    indexes; `kdump restore` undoes it. The plan also says which consumer groups' commits the cut puts
    out of range or invalidates, and where they resume (committed offsets from --commits or the log dir).

    \b
    Exit codes: 0 nothing to do or done, 1 changes would be made (dry run), 2 usage,
    3 cannot read or write (a failed write is undone, and the message says what to run next),
    4 refused (a broker holds the log dir's .lock), 5 cannot repair here: no room for the backup,
    read-only or unwritable, or a file given that is not a segment .log (nothing touched).

    \b
    Examples:
      kdump trim-tail /var/lib/kafka/data/orders-0
      kdump trim-tail --apply /var/lib/kafka/data/orders-0
      kdump trim-tail --to-offset 5000 --apply orders-0
    """
    fmt = resolve_format(fmt)
    check_backup_dir(backup_dir)
    targets, failed = discover_all(paths)
    plans: list[TrimPlan] = []
    for t in targets:
        if t.kind == "file" and not t.path.name.endswith(".log"):
            # Not a command-line mistake but a path no trim applies to: nothing touched (exit 5).
            raise CannotRepairError(f"{t.given} is not a segment .log file or a partition directory")
        plans.extend(plan_trim_tail(t, to_offset=to_offset, drop_later_segments=drop_later_segments))
    problems = [f for t in targets for f in t.problems]
    problems += [f for t in targets for p in t.partitions() for f in p.problems]
    failed = say_problems(problems) or failed
    rows = []
    pending = [p for p in plans if p.needed]
    tables: dict[tuple[str, ...], CommitTable] = {}
    for plan in plans:
        row = plan.to_row()
        row["applied"] = False
        rows.append(row)
        commits = _commits_for(plan, commits_paths, tables)
        impacts = cut_impact(plan.root, plan.log_dir, plan.new_log_end_offset, commits) if plan.needed else []
        row["consumer_groups"] = impact_rows(impacts, str(plan.root))
        row["consumer_groups_read_from"] = [str(p) for p in commits.sources]
        # Of many partitions (a log dir), the clean ones are a count at the end, not a line each.
        if fmt != "json" and (plan.segment is not None or len(plans) == 1):
            click.echo(_describe(plan))
            lines = impact_lines(impacts, commits, asked=bool(commits_paths)) if plan.needed else []
            if lines:
                click.echo("\n".join(lines))
    if apply and len(pending) > 1:
        # Every partition's room at once, before the first is touched (each apply checks its own
        # exact bytes again).
        check_room(
            "trim-tail",
            [
                n
                for p in pending
                for n in trim_estimate(p, _sub(backup_dir, p) or default_backup_dir(p.root, p.log_dir))
            ],
        )
    if apply:
        intervals = IntervalResolver(index_interval_bytes, metadata_log)
        for plan, row in zip(plans, rows, strict=True):
            if not plan.needed:
                continue
            interval, _source = intervals.for_partition(plan.root, plan.log_dir)
            result = apply_trim_tail(
                plan, backup_dir if len(pending) == 1 else _sub(backup_dir, plan), interval
            )
            row["applied"] = True
            row["backup_dir"] = str(result.backup_dir)
            if fmt != "json":
                click.echo(
                    f"trimmed {result.removed_bytes} bytes from {result.truncated}, moved {len(result.moved)} files, "
                    f"rebuilt {len(result.reindexed)} index files; backup in {result.backup_dir} "
                    f"(undo: kdump restore {shlex.quote(str(result.backup_dir))})"
                )
    clean = sum(1 for p in plans if p.segment is None)
    if fmt == "json":
        write_rows(rows)
    else:
        if clean and len(plans) > 1:
            click.echo(f"nothing to trim in {clean} of {len(plans)} partitions")
        if pending and not apply:
            click.echo("run again with --apply to make these changes")
    if failed:
        sys.exit(ExitCode.UNREADABLE)
    sys.exit(ExitCode.FINDINGS if pending and not apply else ExitCode.OK)


def _describe(p: TrimPlan) -> str:
    if p.segment is None:
        return f"{p.label}: nothing to trim"
    offsets = (
        "no batches"
        if p.removed_first_offset is None
        else f"{p.removed_batches} batches, offsets {p.removed_first_offset}..{p.removed_last_offset}"
    )
    times = (
        ""
        if p.removed_min_timestamp is None
        else f", timestamps {p.removed_min_timestamp}..{p.removed_max_timestamp}"
    )
    later = ""
    if p.later_segments and p.drop_later_segments:
        later = (
            f"; removes {p.removed_segments} later segments as the broker does "
            f"({len(p.moved_files)} files with their indexes and snapshots)"
        )
    elif p.later_segments:
        later = f"; keeps {len(p.later_segments)} later segments, which the broker would delete"
    if p.epochs_dropped:
        later += f"; drops {p.epochs_dropped} leader epochs that start past the new end"
    text = (
        f"{p.segment.log}: cut at position {p.cut_position} of {p.size} ({p.reason}); removes {p.removed_bytes} bytes, "
        f"{offsets}{times}; {p.salvageable_batches} valid batches after the cut{later}; "
        f"backs up {p.backed_up_bytes} bytes; new log end offset {p.new_log_end_offset}"
    )
    if p.offset_hole is not None:
        first, last = p.offset_hole
        text += (
            f"; WARNING: leaves an offset hole {first}..{last} in the middle of the log, "
            "which no broker produces (verify reports it as offset-hole)"
        )
    if p.salvage_first:
        text += f"\n  valid data lies past the cut: first run  kdump salvage {shlex.quote(p.label)}"
    return text


def _commits_for(
    plan: TrimPlan, given: tuple[str, ...], tables: dict[tuple[str, ...], CommitTable]
) -> CommitTable:
    """The commits of --commits, or of the plan's own log dir; read once per set of paths."""
    paths = given or ((str(plan.log_dir),) if plan.log_dir is not None else ())
    if paths not in tables:
        tables[paths] = read_commits(paths) if paths else CommitTable()
        for line in commit_problems(tables[paths]):
            diag(line)
    return tables[paths]


def _sub(backup_dir: Path | None, plan: TrimPlan) -> Path | None:
    return None if backup_dir is None else backup_dir / plan.root.name
