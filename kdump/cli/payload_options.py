"""The options that decode keys and values (`dump`), and the decoder they build."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from kdump.cli.output import diag
from kdump.ops.dump.payload_events import SOURCES, TYPES, PayloadOptions

F = TypeVar("F", bound=Callable[..., Any])

_TYPE_HELP = (
    "registry: the Schema Registry wire format (Avro, Protobuf or JSON Schema, as its schema says); "
    "int32, int64, float, double, uuid, json: Kafka's plain serializers; raw: as is."
)


def payload_options(fn: F) -> F:
    """`--key-type`, `--value-type`, the schema sources and `--where`."""
    options = [
        click.option(
            "--where",
            metavar="EXPR",
            help="Show only records for which this jq expression holds, evaluated on the record's JSON "
            "object (as --format json prints it, decoded values included); implies --records.",
        ),
        click.option(
            "--schema-order",
            default=",".join(SOURCES),
            show_default=True,
            help="Which schema sources are asked first: topic (_schemas), files, registry.",
        ),
        click.option(
            "--registry",
            metavar="URL",
            help="A Schema Registry's Confluent-compatible API to fetch schemas from (read-only; "
            "credentials from KDUMP_REGISTRY_USER/KDUMP_REGISTRY_PASSWORD or KDUMP_REGISTRY_TOKEN).",
        ),
        click.option(
            "--schema-file",
            "schema_files",
            multiple=True,
            metavar="ID=PATH",
            help="A local schema (.avsc, .proto, .json) for a schema id, or SUBJECT=PATH for a subject "
            "that references name. Repeatable.",
        ),
        click.option(
            "--schemas",
            "schemas",
            multiple=True,
            type=click.Path(),
            metavar="PATH",
            help="A _schemas partition (or a log dir holding one) to read schemas from, offline. "
            "Default: the _schemas partition of the log dirs dumped. Repeatable.",
        ),
        click.option(
            "--value-type",
            type=click.Choice(TYPES, case_sensitive=False),
            help=f"Decode values as: {_TYPE_HELP} Default: registry when a schema source is given, else raw.",
        ),
        click.option(
            "--key-type",
            type=click.Choice(TYPES, case_sensitive=False),
            help="Decode keys as (see --value-type). Default: registry when a schema source is given, else raw.",
        ),
    ]
    for option in options:
        fn = option(fn)
    return fn


def build_payload_options(
    key_type: str | None,
    value_type: str | None,
    schemas: tuple[str, ...],
    schema_files: tuple[str, ...],
    registry: str | None,
    schema_order: str,
    where: str | None,
    encoding: str,
) -> PayloadOptions | None:
    """The options, or None when nothing about payloads was asked.

    Raises:
        click.BadParameter: a malformed ID=PATH or source order.
    """
    sourced = bool(schemas or schema_files or registry)
    if not (sourced or key_type or value_type or where):
        return None
    default = "registry" if sourced else "raw"
    files = []
    for item in schema_files:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise click.BadParameter(f"{item!r} is not ID=PATH or SUBJECT=PATH", param_hint="--schema-file")
        files.append((name, path))
    order = tuple(s.strip().lower() for s in schema_order.split(",") if s.strip())
    if not order or any(s not in SOURCES for s in order) or len(set(order)) != len(order):
        raise click.BadParameter(
            f"{schema_order!r}: give some of {', '.join(SOURCES)}, comma-separated",
            param_hint="--schema-order",
        )
    return PayloadOptions(
        key_type=key_type or default,
        value_type=value_type or default,
        schemas=tuple(schemas),
        schema_files=tuple(files),
        registry=registry,
        order=order,
        where=where,
        encoding=encoding,
    )


def prepare(options: PayloadOptions, targets: list[Path]) -> None:
    """Build the decoder (before any worker starts) and check `--where`; the `_schemas` findings go
    to stderr.

    Raises:
        PathError: a schema source cannot be read, or a library is missing (exit 3).
        click.BadParameter: --where is not a jq expression (exit 2).
    """
    from kdump.ops.payloads.decode import open_decoder
    from kdump.ops.payloads.where import WhereError, compile_where
    from kdump.render.text import finding_line

    if options.where is not None:
        try:
            compile_where(options.where)
        except WhereError as exc:
            raise click.BadParameter(str(exc), param_hint="--where") from None
    if options.decoding:
        decoder = open_decoder(options, targets)
        for f in decoder.catalog.findings:
            diag(finding_line(f))
        catalog = decoder.catalog
        if (
            catalog.log is None
            and not catalog.files
            and catalog.registry is None
            and "registry"
            in (
                options.key_type,
                options.value_type,
            )
        ):
            diag(
                "no schema source: no _schemas partition among the paths, no --schemas, --schema-file or --registry"
            )
