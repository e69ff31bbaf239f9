"""`kdump verify`: integrity checks for CI, pre-start checks and incident triage."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from itertools import chain
from pathlib import Path
from typing import Any

import click

from kdump.cli.exit_codes import ExitCode
from kdump.cli.output import (
    UNCHECKED_CODES,
    allow_unknown_option,
    could_not_read,
    diag,
    discover_all,
    engine_options,
    format_option,
    progress_bar,
    resolve_format,
)
from kdump.errors import KdumpError
from kdump.findings import Severity
from kdump.model.log_dir import expand
from kdump.ops.checks.log_dir_stream import streamed_partitions, verify_streamed
from kdump.ops.checks.verify import PartitionReport, VerifyOptions
from kdump.ops.tiered.partitions import TieredContext
from kdump.render.report import Tally


@click.command("verify")
@click.argument("paths", nargs=-1, required=True, type=click.Path(readable=False))
@click.option("--deep", is_flag=True, help="Also decompress and decode every record.")
@click.option(
    "--fail-on",
    type=click.Choice(["info", "warning", "error"], case_sensitive=False),
    default="error",
    show_default=True,
    help="Exit 1 when a finding has this severity or worse.",
)
@click.option(
    "--junit", "junit", type=click.Path(dir_okay=False), help="Also write a JUnit XML report to this file."
)
@click.option(
    "--max-bytes", type=click.IntRange(min=0), help="Check only this many bytes of each log (live brokers)."
)
@click.option(
    "--jobs",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Worker processes (0: all cores).",
)
@engine_options
@click.option(
    "--output",
    type=click.Path(file_okay=False),
    help="With --engine spark: write the findings as Parquet and JSON Lines into this directory.",
)
@click.option(
    "--allow-empty",
    is_flag=True,
    help="Also pass partition directories holding no file a broker writes (empty segments and a "
    "formatted log dir pass without it).",
)
@click.option(
    "--remote-log-metadata",
    "remote_log_metadata",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Check tiered storage against the __remote_log_metadata in this directory: a "
    "__remote_log_metadata-N partition or a log dir holding them (repeatable; default: the log dirs given).",
)
@click.option(
    "--show",
    type=click.Choice(["info", "warning", "error"], case_sensitive=False),
    default="info",
    show_default=True,
    help="Show findings of this severity or worse, and a partition's line only where it has one "
    "(or was not wholly checked); the total always counts everything. The exit status is --fail-on's.",
)
@click.option("--quiet", "-q", is_flag=True, help="Show errors only: the same as --show error.")
@allow_unknown_option
@format_option
def verify_command(
    paths: tuple[str, ...],
    deep: bool,
    fail_on: str,
    junit: str | None,
    max_bytes: int | None,
    jobs: int,
    engine: str,
    master: str | None,
    output: str | None,
    allow_empty: bool,
    remote_log_metadata: tuple[str, ...],
    show: str,
    quiet: bool,
    allow_unknown: bool,
    fmt: str | None,
) -> None:
    """Check segments, indexes and partition state; exit 1 when damage is found.

    PATH may be a segment file, a partition directory, a whole log dir or a directory of log dirs
    (copies of several brokers); partitions are checked in parallel. Every entry under PATH is
    accounted for: what kdump cannot read or does not recognise is a finding, and every summary
    says how many log bytes were checked of how many there were. A path that holds nothing to
    check fails. Nothing is ever written (except the --junit report you ask for).
    A PATH may also be an object store URL (s3://bucket/logs, credentials from the AWS
    environment) or a tarball of a log dir (.tar, .tar.gz, .tar.zst), read where it is.

    Tiered storage: a log dir's remote-log-index-cache is checked as the broker checks it at
    start-up, and a tiered partition starts at its checkpointed log start offset, below its first
    local segment. A PATH in the layout of Kafka's LocalTieredStorage (a directory holding
    kafka-tiered-storage/, locally or at a URL) is a remote store: each remote segment is scanned
    and checked against __remote_log_metadata, read from the log dirs given beside it or from
    --remote-log-metadata.

    \b
    Exit codes: 0 clean, 1 findings at or above --fail-on (an unrecognised entry, nothing to
    check and a check that covered less than it was given are errors), 2 usage error, 3 a path
    could not be read, or records could not be decompressed: a codec's library is missing or
    broken here (codec-unavailable names it and how to install it; counts are shown unknown).

    \b
    Examples:
      kdump verify /var/lib/kafka/data
      kdump verify --format json --fail-on warning orders-0 > findings.jsonl
      kdump verify --junit kdump.xml /var/lib/kafka/data
      kdump verify /var/lib/kafka/data s3://bucket/tiered
      kdump verify --remote-log-metadata /copies/broker1 /mnt/tiered-store
    """
    threshold = Severity.parse(fail_on)
    floor = Severity.ERROR if quiet else Severity.parse(show)
    fmt = resolve_format(fmt)
    stores, paths = split_remote_stores(paths)
    targets, unreadable = (
        discover_all(
            paths, allow_unknown=allow_unknown, expand_dirs=False, keep_unread=True, lazy=engine != "spark"
        )
        if paths
        else ([], False)
    )
    options = VerifyOptions(deep=deep, max_bytes=max_bytes, jobs=jobs, allow_empty=allow_empty)
    tiered = tiered_context(targets, remote_log_metadata)
    if engine == "spark":
        if stores:
            raise click.UsageError("a remote store is verified with the local engine, not --engine spark")
        from kdump.spark.fleet import run_fleet_verify

        reports = run_fleet_verify(targets, options, master=master, output=output)
        code = _write_junit(junit, reports, threshold, _exit_code(reports, threshold, unreadable))
        _print_reports(reports, fmt, code, floor=floor)
    else:
        if master is not None or output is not None:
            raise click.UsageError("--master and --output go with --engine spark")
        with ExitStack() as stack:
            progress = progress_bar(stack, targets, fmt, "verifying", streamed_partitions(targets))
            # Kept: every report where the JUnit file or the table lists them; else only those with
            # findings (the exit code's), the rest counted as they go (`Tally`: 100,000 partitions).
            keep_all = bool(junit) or fmt == "rich"
            reports = []
            tally = Tally()
            printer = _Printer(fmt, floor)
            for report in chain(
                verify_streamed(targets, options, progress, tiered), verify_stores(stores, tiered, options)
            ):
                tally.add(report)
                if keep_all or report.findings:
                    reports.append(report)
                if progress is not None:
                    progress.clear()  # stdout may be the same terminal: never print onto the bar
                printer.report(report)
            code = _write_junit(junit, reports, threshold, _exit_code(reports, threshold, unreadable))
            if progress is not None:
                progress.finish()  # on its own line before the total
            printer.finish(reports, tally, code)
    sys.exit(code)


def split_remote_stores(paths: tuple[str, ...]) -> tuple[list[Path], tuple[str, ...]]:
    """The paths in LocalTieredStorage's layout (remote stores), and the others."""
    from kdump.model.log_dir import looks_like_remote_store
    from kdump.store.queries import as_path, exists

    stores: list[Path] = []
    rest: list[str] = []
    for p in paths:
        try:
            path = as_path(p) if exists(p) else None
        except KdumpError:
            path = None
        if path is not None and path.is_dir() and looks_like_remote_store(path):
            stores.append(path)
        else:
            rest.append(p)
    return stores, tuple(rest)


def tiered_context(targets: list[Any], metadata: tuple[str, ...]) -> TieredContext:
    """Remote log metadata from --remote-log-metadata, else from the log dirs given (per partition's own)."""
    log_dirs = tuple(t.path for t in expand(targets) if t.kind == "log-dir")
    return TieredContext(metadata_paths=tuple(Path(p) for p in metadata), store_metadata_paths=log_dirs)


def verify_stores(stores: list[Path], tiered: TieredContext, options: VerifyOptions) -> Any:
    """Reports of each remote store given, checked against the remote log metadata at hand."""
    if not stores:
        return  # without loading the remote store's modules
    from kdump.model.remote_store import RemoteStore
    from kdump.ops.checks.remote import verify_remote_store

    for path in stores:
        yield from verify_remote_store(RemoteStore.load(path), tiered.store_metadata(), options)


def _write_junit(junit: str | None, reports: list[PartitionReport], threshold: Severity, code: int) -> int:
    """Write the JUnit report if asked, before the total is printed: the total's exit code is final."""
    if not junit:
        return code
    from kdump.render.report import junit_xml

    try:
        Path(junit).write_text(junit_xml(reports, threshold), encoding="utf-8")
    except OSError as exc:
        diag(f"cannot write {junit}: {exc.strerror or exc}")
        # A report CI was promised and cannot read fails the run; as for an unreadable path, 3 wins over 1.
        return int(ExitCode.UNREADABLE)
    return code


def _exit_code(reports: list[PartitionReport], threshold: Severity, unreadable: bool) -> int:
    # Unread paths and records no codec here could decompress: not checked, never a pass (3 wins over 1).
    if unreadable or any(could_not_read(f) or f.code in UNCHECKED_CODES for r in reports for f in r.findings):
        return int(ExitCode.UNREADABLE)
    if any((r.worst() or 0) >= threshold for r in reports):
        return int(ExitCode.FINDINGS)
    return int(ExitCode.OK)


class _Printer:
    """Streams reports as they complete, in the chosen format."""

    def __init__(self, fmt: str, floor: Severity = Severity.INFO) -> None:
        self.fmt = fmt
        self.floor = floor
        self.console = None
        if fmt == "rich":
            from kdump.render.rich_tty import make_console

            self.console = make_console(sys.stdout)

    def report(self, r: PartitionReport) -> None:
        from kdump.render import report as render

        shown = [f for f in r.findings if f.severity >= self.floor]
        if not render.worth_a_line(r, self.floor):
            return
        if self.fmt == "json":
            import json

            for row in [*render.finding_rows(r, shown), render.report_summary_row(r)]:
                sys.stdout.write(json.dumps(row, separators=(",", ":")) + "\n")
        elif self.console is not None:
            from kdump.render.rich_tty import finding_text, print_whole_lines

            for f in shown:
                print_whole_lines(self.console, finding_text(f))
        else:
            sys.stdout.write("\n".join(render.report_lines(r, shown)) + "\n")
        sys.stdout.flush()

    def finish(self, reports: list[PartitionReport], tally: Tally, code: int) -> None:
        """The total (`tally`) and, as a table, every report (`reports`, all kept for it)."""
        _print_reports(
            reports, self.fmt, code, only_total=True, console=self.console, floor=self.floor, tally=tally
        )


def _print_reports(
    reports: list[PartitionReport],
    fmt: str,
    code: int,
    only_total: bool = False,
    console: Any = None,
    floor: Severity = Severity.INFO,
    tally: Tally | None = None,
) -> None:
    from kdump.render import report as render

    if not only_total:
        printer = _Printer(fmt, floor)
        for r in reports:
            printer.report(r)
        console = printer.console
    total = render.overall_row(reports if tally is None else tally, code)
    if fmt == "json":
        import json

        sys.stdout.write(json.dumps(total, separators=(",", ":")) + "\n")
    elif console is not None:
        from kdump.render.rich_tty import verify_table

        verify_table(console, [r for r in reports if render.worth_a_line(r, floor)], code)
    else:
        f = total["findings"]
        coverage = render.coverage_text(total["log_bytes"], total["checked_bytes"], total["limited"])
        sys.stdout.write(
            f"Total: {total['partitions']} partitions, {total['segments']} segments, {total['batches']} batches, "
            f"{render.records_text(total['records_counted'], total['uncounted_batches'])}; {f['error']} errors, {f['warning']} warnings, {f['info']} info; "
            f"{coverage}; exit {code}\n"
        )
    sys.stdout.flush()
