"""`kdump dump`: show batches, records, indexes and state files."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

import click

from kdump.cli.exit_codes import ExitCode
from kdump.cli.kafka_flags import kafka_flags
from kdump.cli.output import (
    UNCHECKED_CODES,
    diag,
    discover_all,
    dump_format_option,
    progress_bar,
    resolve_format,
    say_problems,
)
from kdump.cli.payload_options import build_payload_options, payload_options, prepare
from kdump.cli.timespec import TimeParam
from kdump.errors import KdumpError
from kdump.findings import Finding
from kdump.formats.batch import BatchHeader
from kdump.model.log_dir import Target
from kdump.ops.dump.internal import DECODERS
from kdump.ops.dump.stream import DumpEvent, DumpFilter, DumpOptions
from kdump.render.rows import ENCODINGS

if TYPE_CHECKING:
    from kdump.render.progress import ProgressBar

# Record lines at a terminal (`render.tty_lines`); "tty-full" with --full-values.
TTY_FORMATS = ("tty", "tty-full")
# At a terminal, a batch-level dump of logs this big streams as lines too (a table shows ~350 rows/s).
TABLE_MAX_LOG_BYTES = 4 << 20


@click.command("dump")
@click.argument("paths", nargs=-1, required=False, type=click.Path(readable=False))
@click.option(
    "--records", is_flag=True, help="Also show every record (offset, timestamp, key, value, headers)."
)
@click.option(
    "--encoding",
    type=click.Choice(ENCODINGS, case_sensitive=False),
    default="utf8",
    show_default=True,
    help="How keys, values and header values are shown (utf8 escapes invalid bytes as \\xNN).",
)
@click.option("--from-offset", type=click.IntRange(min=0), help="Show only offsets at or above this one.")
@click.option("--to-offset", type=click.IntRange(min=0), help="Show only offsets at or below this one.")
@click.option("--from-time", type=TimeParam(), help="Show only timestamps at or after this time.")
@click.option("--to-time", type=TimeParam(), help="Show only timestamps at or before this time.")
@click.option("--key", help="Show only records with this key (UTF-8); implies --records.")
@click.option("--producer-id", type=int, help="Show only batches of this producer id.")
@click.option("--control-only", is_flag=True, help="Show only control batches (transaction markers).")
@click.option("--transactional-only", is_flag=True, help="Show only transactional batches.")
@click.option(
    "--max-bytes", type=click.IntRange(min=0), help="Read only this many bytes of each file (live brokers)."
)
@click.option(
    "--jobs",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Worker processes decoding records (0: all cores).",
)
@click.option(
    "--decode",
    type=click.Choice(DECODERS, case_sensitive=False),
    default="auto",
    show_default=True,
    help="Decoder for internal topics' records; auto chooses by partition directory name.",
)
@click.option(
    "--transactions",
    "transactions_view",
    is_flag=True,
    help="Show transactions per producer instead: first and last offset, outcome, and hanging ones.",
)
@click.option(
    "--full-values",
    is_flag=True,
    help="At a terminal, show record lines and table cells whole (longer ones are cut with a mark "
    "saying how many bytes are left out).",
)
@payload_options
@dump_format_option
@kafka_flags
def dump_command(
    paths: tuple[str, ...],
    records: bool,
    encoding: str,
    from_offset: int | None,
    to_offset: int | None,
    from_time: int | None,
    to_time: int | None,
    key: str | None,
    producer_id: int | None,
    control_only: bool,
    transactional_only: bool,
    max_bytes: int | None,
    jobs: int,
    decode: str,
    transactions_view: bool,
    full_values: bool,
    fmt: str | None,
    key_type: str | None,
    value_type: str | None,
    schemas: tuple[str, ...],
    schema_files: tuple[str, ...],
    registry: str | None,
    schema_order: str,
    where: str | None,
) -> None:
    """Dump segments, indexes, snapshots and checkpoints, damaged or not.

    PATH may be a file (.log .index .timeindex .txnindex .snapshot, checkpoints and their
    .deleted/.cleaned/.swap variants): each is decoded by its kind. A partition directory or a
    whole log dir dumps the .log segments in offset order (name other files to dump them).
    Findings appear where they occur. Nothing is ever written. PATH may be an object store URL
    (s3://...) or lie in a tarball of a log dir (.tar, .tar.gz, .tar.zst), read where it is.

    \b
    Examples:
      kdump dump /var/lib/kafka/data/orders-0
      kdump dump --records --from-offset 1200 --to-offset 1210 orders-0
      kdump dump --records --format json --encoding base64 00000000000000000000.log | jq .
      kdump dump --value-type registry --where '.value.customer == "c-42"' /data/kafka-logs
    """
    payloads = build_payload_options(
        key_type, value_type, schemas, schema_files, registry, schema_order, where, encoding
    )
    targets, failed = discover_all(paths)
    problems = [f for t in targets for f in t.problems]
    problems += [f for t in targets for p in t.partitions() for f in p.problems]
    failed = say_problems(problems) or failed
    if payloads is not None:
        try:
            prepare(payloads, [t.path for t in targets])
        except KdumpError as exc:
            diag(str(exc))
            sys.exit(ExitCode.UNREADABLE)
    at_terminal = fmt is None and sys.stdout.isatty()
    options = DumpOptions(
        records=records or key is not None or payloads is not None or fmt == "kcat",
        filter=DumpFilter(
            from_offset=from_offset,
            to_offset=to_offset,
            from_time=from_time,
            to_time=to_time,
            key=None if key is None else key.encode("utf-8"),
            producer_id=producer_id,
            control_only=control_only,
            transactional_only=transactional_only,
        ),
        max_bytes=max_bytes,
        decode=decode,
        payloads=payloads,
    )
    fmt = resolve_format(fmt)
    if at_terminal and (options.records or sum(t.log_bytes for t in targets) >= TABLE_MAX_LOG_BYTES):
        # Records (and the batches of big logs) stream as coloured lines at a terminal: a table
        # cell per record or batch is hundreds of times slower than a line.
        fmt = "tty-full" if full_values else "tty"
    elif payloads is not None and fmt == "rich":
        fmt = "text"  # decoded values are long JSON: lines, not table cells
    if transactions_view:
        _show_transactions(targets, fmt)
        sys.exit(ExitCode.UNREADABLE if failed else ExitCode.OK)
    unchecked = _Unchecked()
    workers = jobs or os.cpu_count() or 1
    stack = ExitStack()
    try:
        with stack:
            # At a terminal the streamed output is the progress; a bar goes with output to a file or pipe.
            bar = None if sys.stdout.isatty() else progress_bar(stack, targets, fmt, "dumping")
            from kdump.ops.payloads.dumped import dump_targets

            events = unchecked.watch(
                _where(_advancing(dump_targets(targets, options), bar), options, encoding)
            )
            _write(targets, options, events, fmt, encoding, workers, full_values, bar, unchecked)
    except KdumpError as exc:
        diag(str(exc))
        failed = True
    if unchecked.batches:
        # What the dump needed to decompress and could not: never a complete dump (exit 3).
        diag(f"{unchecked.batches} batches were not decompressed: a codec's library cannot be loaded here")
        failed = True
    if failed:
        sys.exit(ExitCode.UNREADABLE)


def _advancing(events: Iterator[DumpEvent], bar: Callable[[int], None] | None) -> Iterator[DumpEvent]:
    """The events, the bar advanced by each batch's bytes as it passes (the events themselves, without one)."""
    return events if bar is None else _advance(events, bar)


def _advance(events: Iterator[DumpEvent], bar: Callable[[int], None]) -> Iterator[DumpEvent]:
    for ev in events:
        if isinstance(ev, BatchHeader):
            bar(ev.size)
        yield ev


def _write(
    targets: list[Target],
    options: DumpOptions,
    events: Iterator[Any],
    fmt: str,
    encoding: str,
    workers: int,
    full_values: bool,
    bar: ProgressBar | None,
    unchecked: _Unchecked,
) -> None:
    """Write the dump's events in `fmt` (records on every core where that pays), counting in
    `unchecked` the batches left undecompressed (the events' own are counted as they pass)."""
    if fmt == "kcat":
        from kdump.render.kcat import write_kcat

        write_kcat(events, sys.stdout, diag, encoding=encoding)
    elif (
        options.records
        and fmt != "rich"
        and not _selective(options)
        and (workers > 1 or _compiled_records() or fmt in TTY_FORMATS)
    ):
        _dump_parallel(targets, options, fmt, encoding, workers, unchecked, bar)
    elif fmt == "json":
        from kdump.render.jsonl import write_jsonl

        write_jsonl(events, sys.stdout, encoding=encoding)
    elif fmt == "rich":
        from kdump.render.rich_tty import write_rich

        write_rich(events, sys.stdout, encoding=encoding, full_values=full_values)
    elif fmt in TTY_FORMATS:
        from kdump.render.text import write_text
        from kdump.render.tty_lines import TtyWriter

        write_text(events, cast("IO[str]", TtyWriter(sys.stdout, full=fmt == "tty-full")), encoding=encoding)
    else:
        from kdump.render.text import write_text

        write_text(events, sys.stdout, encoding=encoding)


class _Unchecked:
    """Counts the batches a dump left undecompressed (codec-unavailable), whatever renders them."""

    def __init__(self) -> None:
        self.batches = 0

    def watch(self, events: Iterator[Any]) -> Iterator[Any]:
        for ev in events:
            if isinstance(ev, Finding) and ev.code in UNCHECKED_CODES:
                self.batches += 1
            yield ev


# Below this much log, starting worker processes costs more than it saves.
PARALLEL_MIN_BYTES = 8 << 20


def _selective(options: DumpOptions) -> bool:
    """A dump that shows only some records (a filter, `--where`) is rendered in this process from
    the deep scan, whichever record path is on: its summary counts every record of the batches read,
    and every finding of decoding them, as without a filter (chunks handed to workers hold only the
    batches that pass, so they could count neither)."""
    return options.filter.active or (options.payloads is not None and options.payloads.where is not None)


def _compiled_records() -> bool:
    """Whether the compiled record path is on (then even one job renders through the chunked path)."""
    from kdump.render.fast_lines import enabled

    return enabled()


def _dump_parallel(
    targets: list[Target],
    options: DumpOptions,
    fmt: str,
    encoding: str,
    workers: int,
    unchecked: _Unchecked,
    bar: Callable[[int], None] | None = None,
) -> None:
    """Records decoded on every core for big logs; everything else as usual, in order. Batches not
    decompressed (their codec's library cannot be loaded here) are counted in `unchecked`."""
    from kdump.ops.dump.stream import batch_events_for_expansion, dump_items
    from kdump.ops.payloads.dumped import dump_item
    from kdump.render.jsonl import write_jsonl
    from kdump.render.parallel import write_parallel
    from kdump.render.text import write_text

    for item in dump_items(targets, options):
        try:
            size = item.path.stat().st_size if item.is_log else 0
        except OSError:
            # Gone since it was listed (retention deleted it, a roll renamed it): the plain path
            # below opens it and says so as it says any file it cannot read.
            size, gone = 0, True
        else:
            gone = False
        if (
            item.is_log
            and not gone
            and (size >= PARALLEL_MIN_BYTES or _compiled_records() or fmt in TTY_FORMATS)
        ):
            logs: Iterator[tuple[Path, str, Iterator[DumpEvent], str | None]] = iter(
                [
                    (
                        item.path,
                        item.label,
                        _advancing(batch_events_for_expansion(item, options), bar),
                        item.decoder,
                    )
                ]
            )
            # A small log is rendered in this process (jobs=1): workers would cost more than they save.
            jobs = workers if size >= PARALLEL_MIN_BYTES else 1
            unchecked.batches += write_parallel(
                logs, sys.stdout, options=options, fmt=fmt, encoding=encoding, jobs=jobs
            )
        elif fmt == "json":
            write_jsonl(
                unchecked.watch(_where(_advancing(dump_item(item, options), bar), options, encoding)),
                sys.stdout,
                encoding=encoding,
            )
        elif fmt in TTY_FORMATS:
            from kdump.render.rich_tty import write_rich

            write_rich(
                unchecked.watch(dump_item(item, options)),
                sys.stdout,
                encoding=encoding,
                full_values=fmt == "tty-full",
            )
        else:
            write_text(
                unchecked.watch(_where(_advancing(dump_item(item, options), bar), options, encoding)),
                sys.stdout,
                encoding=encoding,
            )


def _where(events: Iterator[DumpEvent], options: DumpOptions, encoding: str) -> Iterator[Any]:
    """The events, with only the records `--where` keeps (all of them without it)."""
    if options.payloads is None or options.payloads.where is None:
        return events
    from kdump.ops.payloads.where import compile_where
    from kdump.render.where_filter import filter_where

    return filter_where(events, compile_where(options.payloads.where), encoding)


def _show_transactions(targets: list[Target], fmt: str) -> None:
    """The --transactions view: one line (or JSON object) per transaction, then counts."""
    import json

    from kdump.ops.dump.transactions import transactions_of

    parts = [p for t in targets for p in t.partitions()]
    for report in transactions_of(parts):
        if fmt == "json":
            for txn in report.transactions:
                sys.stdout.write(json.dumps(txn.to_row(report.partition), separators=(",", ":")) + "\n")
            sys.stdout.write(json.dumps(report.summary_row(), separators=(",", ":")) + "\n")
            continue
        click.echo(f"Transactions in {report.partition}")
        for t in report.transactions:
            span = (
                "begun before the oldest segment"
                if t.first_offset is None
                else f"{t.first_offset}..{t.last_offset}"
            )
            if t.state == "open":
                click.echo(
                    f"  HANGING producerId: {t.producer_id} producerEpoch: {t.producer_epoch} offsets: {span} "
                    f"batches: {t.batches} records: {t.records}: pins the last stable offset at {t.first_offset}"
                )
            else:
                click.echo(
                    f"  {t.state} producerId: {t.producer_id} producerEpoch: {t.producer_epoch} offsets: {span} "
                    f"marker: {t.marker_offset} coordinatorEpoch: {t.coordinator_epoch} "
                    f"batches: {t.batches} records: {t.records}"
                )
        s = report.summary_row()
        click.echo(f"  {s['committed']} committed, {s['aborted']} aborted, {s['open']} hanging")
