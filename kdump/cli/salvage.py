"""`kdump salvage`: recover what the broker's recovery throws away, into a new directory."""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from pathlib import Path

import click

from kdump.cli.exit_codes import ExitCode
from kdump.cli.output import (
    UNCHECKED_CODES,
    could_not_read,
    format_option,
    progress_bar,
    resolve_format,
    say_problems,
)
from kdump.cli.repair import interval_options
from kdump.errors import KdumpError
from kdump.model.log_dir import discover
from kdump.model.partition import PartitionDir
from kdump.ops.common.topic_config import IntervalResolver
from kdump.ops.repair.reindex import DEFAULT_INDEX_INTERVAL_BYTES
from kdump.render.rows import ENCODINGS


@click.command("salvage")
@click.argument("partition_dir", type=click.Path(), metavar="PATH")
@click.option(
    "--out",
    "out",
    default=None,
    metavar="DIR",
    type=click.Path(path_type=Path),
    help="The directory to write into: created, or an empty one. Refused when it is not empty, is a "
    "link, or lies inside a Kafka log dir or the partition. Default: a new "
    "<log dir>.kdump-salvage/<partition>-<UTC time> beside the log dir holding the partition.",
)
@click.option(
    "--encoding",
    type=click.Choice(ENCODINGS, case_sensitive=False),
    default="utf8",
    show_default=True,
    help="How keys, values and header values are written in records.jsonl (utf8 escapes invalid bytes as "
    "\\xNN; records.parquet always holds the raw bytes).",
)
@click.option("--no-parquet", is_flag=True, help="Do not write records.parquet (it needs pyarrow).")
@interval_options
@format_option
def salvage_command(
    partition_dir: str,
    out: Path | None,
    encoding: str,
    no_parquet: bool,
    index_interval_bytes: int | None,
    metadata_log: Path | None,
    fmt: str | None,
) -> None:
    """Get back every batch of a damaged partition that still verifies, past every damaged region.

    The broker's recovery truncates a segment at its first invalid batch and deletes every later
    segment. salvage reads PATH, a partition directory or a segment file given alone (never
    writing to it), and writes into --out DIR:

    \b
      records.jsonl             every record of every batch whose checksum verifies, as
                                `dump --records --format json` prints it (control records marked)
      records.parquet           the same with Spark's kafka-source columns, plus segment,
                                position and isControl
      <partition>/              a clean partition: those batches byte for byte, damaged regions
                                cut, offsets unchanged, fresh indexes; then verified
      partial-unverified.jsonl  records decoded before the damage in batches whose checksum
                                fails: unverified
      report.json               per damaged region: its byte range, the offsets and time lost,
                                what was recovered after it and how (also printed)

    \b
    Exit codes: 0 everything that verifies was written (the report says what was lost, if
    anything), 1 the salvage is incomplete: the clean partition does not verify or records of a
    kept batch do not decode, 2 usage, 3 cannot read or write, or records could not be decompressed
    (codec-unavailable), 4 refused (--out), 5 no room or not writable for the output
    (nothing written). So `kdump salvage P && kdump trim-tail --apply P`
    trims only once the salvage is written. Without --out, the output goes to a new directory
    beside the log dir: the command runs the same from any working directory.

    \b
    Examples:
      kdump salvage /var/lib/kafka/data/orders-0 --out /srv/salvage/orders-0
      kdump salvage --format json orders-0 --out /tmp/s | jq .lost_offsets
      kdump salvage /var/lib/kafka/data/orders-0   # into /var/lib/kafka/data.kdump-salvage/
    """
    from kdump.ops.salvage.output import default_out_dir, salvage
    from kdump.render.salvage import batch_lines, record_lines, text_report

    fmt = resolve_format(fmt)
    try:
        target = discover(partition_dir)
    except KdumpError as exc:
        click.echo(f"kdump: {exc}", err=True)
        sys.exit(ExitCode.UNREADABLE)
    if target.kind == "file" and any(could_not_read(f) for f in target.problems):
        say_problems(list(target.problems))  # a FIFO, socket or device: never read
        sys.exit(ExitCode.UNREADABLE)
    if target.kind == "file" and target.segments:
        # A segment given alone (a copy such as `copy.log`): salvaged as a partition of that one
        # segment, named after the directory holding it.
        part = PartitionDir(target.path.resolve().parent, None, None, segments=list(target.segments))
    elif target.kind != "partition":
        raise click.UsageError(
            f"{partition_dir} is not a partition directory or a segment (salvage takes one)"
        )
    else:
        part = target.partitions()[0]  # as discovered: listed once
    # Entries of the partition that are not read (a FIFO named like a segment): said now, and the
    # salvage, whole for everything else, exits 3 at the end: what they held is not in it.
    unread = say_problems([f for f in (*target.problems, *part.problems) if could_not_read(f)])
    resolver = IntervalResolver(index_interval_bytes, metadata_log, DEFAULT_INDEX_INTERVAL_BYTES)
    interval, source = resolver.for_partition(part.path, target.log_dir_path)
    if out is None:
        out = default_out_dir(part.path, target.log_dir_path)
    with ExitStack() as stack:
        result = salvage(
            part,
            out,
            record_line=record_lines(encoding),
            batch_lines=batch_lines(encoding),
            interval_bytes=interval,
            parquet=not no_parquet,
            interval_source=source,
            progress=progress_bar(stack, [target], fmt, "salvaging"),
            source=target.path if target.kind == "file" else None,
            rerun=_rerun(partition_dir, out, encoding, no_parquet, interval),
        )
    if fmt == "json":
        sys.stdout.write(json.dumps(result.report, separators=(",", ":")) + "\n")
    else:
        for line in text_report(result.report):
            click.echo(line)
    unchecked = [f for f in result.decode_failures if f.code in UNCHECKED_CODES]
    if unchecked:
        # The clean partition is copied byte for byte and needs no codec; the records files do.
        click.echo(
            f"kdump: the records of {len(unchecked)} batches were not decompressed (a codec's library cannot "
            f"be loaded here): records.jsonl and records.parquet are incomplete",
            err=True,
        )
        sys.exit(ExitCode.UNREADABLE)
    if unread:
        click.echo("kdump: some entries of the partition were not read (see above)", err=True)
        sys.exit(ExitCode.UNREADABLE)
    if not result.ok:
        click.echo("kdump: the salvage is incomplete: see the errors above", err=True)
        sys.exit(ExitCode.FINDINGS)
    # What was lost is the report's to say; the exit status says the salvage wrote all it could, so
    # that `salvage ... && trim-tail --apply ...` goes on to the trim.
    sys.exit(ExitCode.OK)


def _rerun(partition_dir: str, out: Path, encoding: str, no_parquet: bool, interval: int) -> list[str]:
    """The same salvage, as a command to paste once a failed write's cause is fixed."""
    words = ["kdump", "salvage", "--out", str(out), "--encoding", encoding]
    if no_parquet:
        words.append("--no-parquet")
    return [*words, "--index-interval-bytes", str(interval), partition_dir]
