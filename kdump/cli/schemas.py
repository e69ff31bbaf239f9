"""`kdump schemas`: the schemas a `_schemas` topic holds, offline; write them out to rebuild a registry."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kdump.cli.exit_codes import ExitCode
from kdump.cli.output import could_not_read, diag, say_problems
from kdump.errors import KdumpError


@click.command("schemas")
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"], case_sensitive=False),
    default="text",
    show_default=True,
    help="Output format: text, or json (JSON Lines).",
)
@click.option("--show-schema", is_flag=True, help="Also show each version's schema text.")
@click.option(
    "--write",
    "write_dir",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Write every schema as a file, and manifest.json in registry import order, into DIR (new or empty).",
)
def schemas_command(paths: tuple[str, ...], fmt: str, show_schema: bool, write_dir: str | None) -> None:
    """List every schema a Schema Registry's _schemas topic holds, deleted ones marked.

    PATH is a _schemas partition directory, a log dir holding one, or a segment of it. Read offline:
    subjects, versions, ids, types, references, soft and hard deletes (a hard-deleted schema whose
    records compaction has not yet removed is still recoverable), and the registry's settings
    records. With --write, the schemas become files a lost registry is rebuilt from.

    \b
    Examples:
      kdump schemas /var/lib/kafka/data
      kdump schemas --format json --show-schema /var/lib/kafka/data/_schemas-0
      kdump schemas --write rebuilt-registry /backup/broker1
    """
    from kdump.ops.payloads.schema_catalog import read_schemas_log, schemas_partitions
    from kdump.ops.payloads.schema_export import summary_row, version_row, write_schemas
    from kdump.render.text import finding_line

    given = [Path(p) for p in paths]
    try:
        parts = schemas_partitions(given)
        if not parts:
            diag(f"no _schemas partition in {', '.join(paths)}")
            sys.exit(ExitCode.UNREADABLE)
        unread = _unread(parts)
        log, findings = read_schemas_log(parts)
    except KdumpError as exc:
        diag(str(exc))
        sys.exit(ExitCode.UNREADABLE)
    out = sys.stdout
    label = ", ".join(str(p) for p in parts) or None
    for f in findings:
        if fmt == "json":
            from kdump.render.rows import finding_row

            out.write(json.dumps(finding_row(f), separators=(",", ":")) + "\n")
        else:
            out.write(finding_line(f) + "\n")
    for sv in log.listing():
        row = version_row(sv, label, with_schema=show_schema)
        if fmt == "json":
            out.write(json.dumps(row, separators=(",", ":")) + "\n")
            continue
        refs = ", ".join(f"{r['name']}={r['subject']}/{r['version']}" for r in row["references"]) or "none"
        line = (
            f"subject: {sv.subject} version: {sv.version} id: {sv.schema_id} type: {sv.schema_type} "
            f"state: {sv.state}{'' if sv.schema is not None else ' (schema gone: compacted)'} "
            f"references: [{refs}] guid: {row['guid']} offset: {sv.offset}"
        )
        out.write(line + "\n")
        if show_schema and sv.schema is not None:
            out.write(f"  schema: {sv.schema}\n")
    summary = summary_row(log, label)
    if fmt == "json":
        out.write(json.dumps(summary, separators=(",", ":")) + "\n")
    else:
        states = ", ".join(f"{n} {s}" for s, n in summary["states"].items()) or "none"
        out.write(
            f"Schemas: {summary['subjects']} subjects, {summary['versions']} versions, {summary['ids']} ids "
            f"({states}); {summary['hard_deleted_recoverable']} hard-deleted still recoverable; "
            f"{summary['records']} records, {summary['settings']} settings records\n"
        )
    if write_dir is not None:
        try:
            written = write_schemas(log, Path(write_dir))
        except KdumpError as exc:
            diag(str(exc))
            sys.exit(ExitCode.UNREADABLE)
        diag(f"wrote {len(written) - 1} schemas and manifest.json into {write_dir}")
    if unread:
        sys.exit(ExitCode.UNREADABLE)


def _unread(parts: list[Path]) -> bool:
    """Say on stderr the entries of the partitions that are not read (FIFOs, sockets, devices,
    unreadable files); True when there is one: the listing then lacks what they might hold."""
    from kdump.model.log_dir import discover

    problems = []
    for part in parts:
        target = discover(str(part))
        problems += [*target.problems, *(f for p in target.partitions() for f in p.problems)]
    return say_problems([f for f in problems if could_not_read(f)])
