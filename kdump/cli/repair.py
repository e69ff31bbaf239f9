"""What the repairing commands share: --apply/--backup-dir, target discovery, lock refusal."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from kdump.cli.output import diag
from kdump.errors import KdumpError
from kdump.model.log_dir import Target, discover

F = TypeVar("F", bound=Callable[..., Any])


def repair_options(fn: F) -> F:
    """`--apply` and `--backup-dir`."""
    fn = click.option(
        "--backup-dir",
        type=click.Path(file_okay=False, path_type=Path),
        help="Where to keep every byte removed or replaced (default: a new timestamped folder beside the "
        "partition, or beside the log dir when the partition is in one). Must not exist yet.",
    )(fn)
    return click.option("--apply", is_flag=True, help="Write the changes (the default is a dry run).")(fn)


def discover_all(paths: tuple[str, ...]) -> tuple[list[Target], bool]:
    """Classify every path; report the unreadable ones on stderr."""
    targets: list[Target] = []
    failed = False
    for p in paths:
        try:
            targets.append(discover(p))
        except KdumpError as exc:
            diag(str(exc))
            failed = True
    return targets, failed


def write_rows(rows: list[dict[str, Any]]) -> None:
    """JSON Lines to stdout."""
    import json

    for row in rows:
        sys.stdout.write(json.dumps(row, separators=(",", ":"), default=str) + "\n")
    sys.stdout.flush()
