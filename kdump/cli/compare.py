"""`kdump compare`: the replicas of a partition side by side, and what a truncation would remove."""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from pathlib import Path

import click

from kdump.cli.exit_codes import ExitCode
from kdump.cli.output import (
    commits_option,
    could_not_read,
    diag,
    discover_all,
    engine_options,
    format_option,
    progress_bar,
    resolve_format,
    say_problems,
)
from kdump.model.log_dir import Target
from kdump.model.partition import PartitionDir
from kdump.ops.consumers import CommitTable, read_commits
from kdump.ops.consumers.elections import election_impacts
from kdump.ops.replicas.compare import PartitionComparison, compare_partition, exit_code, group_replicas


@click.command("compare")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--leader",
    type=click.Path(),
    help="The replica that is (or will be) the leader: a partition directory given, or the log dir "
    "holding it. The others' truncation is computed against it. Default: each replica in turn.",
)
@commits_option("the log dirs of the replicas", "For each replica as leader, the groups hurt.")
@engine_options
@format_option
def compare_command(
    paths: tuple[str, ...],
    leader: str | None,
    engine: str,
    master: str | None,
    fmt: str | None,
    commits_paths: tuple[str, ...] = (),
) -> None:
    """Compare the replicas of partitions: where they agree, where they diverge, what truncation removes.

    PATH is a partition directory (the same topic-partition copied from several brokers) or a log
    dir (partitions are matched by directory name across log dirs). Replicas are walked together
    batch by batch; each divergent range is a lag, a conflict or a gap. The truncation point of
    each follower is computed as the broker's OffsetsForLeaderEpoch exchange computes it. For each
    replica as leader, it says which consumer groups' commits that election puts out of range or
    invalidates, and where they resume (committed offsets from --commits or the replicas' log dirs).
    Nothing is ever written.

    \b
    Exit codes: 0 all replicas agree, 1 they diverge (or a checkpoint or error finding says they
    cannot be trusted), 2 usage error, 3 a replica, or part of one, could not be read.

    \b
    Examples:
      kdump compare broker1/orders-0 broker2/orders-0 broker3/orders-0
      kdump compare --leader broker1/orders-0 --format json broker*/orders-0
      kdump compare /mnt/broker1/kafka-logs /mnt/broker2/kafka-logs
      kdump compare --engine spark /mnt/broker*/kafka-logs
    """
    fmt = resolve_format(fmt)
    if len(paths) < 2:
        raise click.UsageError("give at least two partition directories or log dirs to compare")
    if engine == "spark":
        if leader is not None:
            raise click.UsageError("--leader goes with --engine local (a fleet has no one leader)")
        from kdump.spark.compare import run_fleet_compare

        fleet = run_fleet_compare(list(paths), master=master)
        for note in fleet.notes:
            diag(note)
        for row in fleet.rows:
            if fmt == "json":
                sys.stdout.write(
                    json.dumps({"type": "fleet-divergence", "file": row["replica_a"], **row}) + "\n"
                )
            else:
                sys.stdout.write(_fleet_line(row) + "\n")
        unreadable = fleet.unreadable or any(r["kind"] == "uncomparable" for r in fleet.rows)
        fleet_code = ExitCode.UNREADABLE if unreadable else (ExitCode.FINDINGS if fleet.rows else ExitCode.OK)
        if fmt != "json":
            sys.stdout.write(
                f"Total: {len(fleet.rows)} divergent or unreadable ranges; exit {int(fleet_code)}\n"
            )
        sys.exit(fleet_code)
    if master is not None:
        raise click.UsageError("--master goes with --engine spark")
    if commits_paths and engine == "spark":
        raise click.UsageError("--commits goes with --engine local")
    targets, failed = discover_all(paths)
    commits = _LazyCommits(commits_paths, targets)
    # A replica entry that is not read (a FIFO named like a segment): the comparison lacks it.
    unread = [f for t in targets for p in t.partitions() for f in (*t.problems, *p.problems)]
    failed = say_problems([f for f in unread if could_not_read(f)]) or failed
    groups, notes = group_replicas(targets)
    for note in notes:
        diag(note)
    results: list[PartitionComparison] = []
    with ExitStack() as stack:
        bar = progress_bar(stack, targets, fmt, "comparing")
        for _name, dirs in groups:
            labels = [str(d.path) for d in dirs]
            lead = _leader_label(leader, dirs) if leader is not None else None
            if leader is not None and lead is None:
                diag(f"--leader {leader}: not one of the replicas of {dirs[0].name}; computing each way")
            result = compare_partition(dirs, labels, lead)
            results.append(result)
            if bar is not None:
                bar.clear()  # stdout may be the same terminal: never print onto the bar
            _print(result, fmt)
            _print_elections(result, commits, fmt, leader is not None, bool(commits_paths))
            if bar is not None:
                bar(sum(d.log_bytes for d in dirs))
    code = exit_code(results, failed or not groups)
    _print_total(results, fmt, code)
    sys.exit(code)


def _fleet_line(row: dict[str, object]) -> str:
    last = "end" if row["last_offset"] is None else row["last_offset"]
    if row["kind"] == "topic-id-mismatch":
        return f"{row['partition_dir']} topic-id-mismatch: {row['reason']}"
    if row["kind"] == "uncomparable":
        return f"{row['partition_dir']} uncomparable {row['first_offset']}..{last}: {row['replica_a']} ({row['reason']})"
    return (
        f"{row['partition_dir']} {row['kind']} {row['first_offset']}..{last}: "
        f"{row['replica_a']} {row['records_a']} records epochs {row['leader_epochs_a']}, "
        f"{row['replica_b']} {row['records_b']} records epochs {row['leader_epochs_b']}"
    )


def _leader_label(leader: str, dirs: list[PartitionDir]) -> str | None:
    want = Path(leader).resolve()
    for d in dirs:
        here = Path(d.path).resolve()
        if here == want or here.parent == want:
            return str(d.path)
    return None


def _print(result: PartitionComparison, fmt: str) -> None:
    from kdump.render import compare as render

    if fmt == "json":
        for row in render.partition_rows(result):
            sys.stdout.write(json.dumps(row, separators=(",", ":")) + "\n")
    elif fmt == "rich":
        from kdump.render.rich_tty import make_console

        render.write_rich(make_console(sys.stdout), result)
    else:
        sys.stdout.write("\n".join(render.partition_lines(result)) + "\n")
    sys.stdout.flush()


class _LazyCommits:
    """The commits of --commits, or of the log dirs holding the replicas: read on first need, once."""

    def __init__(self, given: tuple[str, ...], targets: list[Target]) -> None:
        self.given = given
        self.targets = targets
        self.table: CommitTable | None = None

    def get(self) -> CommitTable:
        if self.table is None:
            from kdump.render.consumers import commit_problems

            dirs = self.given or tuple(sorted({str(t.log_dir_path) for t in self.targets if t.log_dir_path}))
            self.table = read_commits(dirs) if dirs else CommitTable()
            for line in commit_problems(self.table):
                diag(line)
        return self.table


def _print_elections(
    result: PartitionComparison, lazy: _LazyCommits, fmt: str, one_leader: bool, asked: bool
) -> None:
    from kdump.render.consumers import election_lines, impact_rows

    if result.refused or not result.replicas:
        return
    commits = lazy.get()
    elections = election_impacts(result, commits)
    if one_leader:
        labels = {t.leader for t in result.truncations}
        elections = [e for e in elections if e.leader in labels]
    if fmt == "json":
        for e in elections:
            for row in impact_rows(e.impacts, e.leader, e.leader):
                sys.stdout.write(json.dumps(row, separators=(",", ":")) + "\n")
    else:
        lines = election_lines(elections, commits, asked=asked)
        if lines:
            sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()


def _print_total(results: list[PartitionComparison], fmt: str, code: int) -> None:
    from kdump.render import compare as render

    if fmt == "json":
        sys.stdout.write(json.dumps(render.overall_row(results, code), separators=(",", ":")) + "\n")
    else:
        sys.stdout.write(render.total_line(results, code) + "\n")
    sys.stdout.flush()
