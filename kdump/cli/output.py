"""The output boundary: choosing a format and writing data to stdout, diagnostics to stderr."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any, TypeVar

import click

from kdump.errors import KdumpError
from kdump.model.log_dir import Target, discover

FORMATS = ("text", "json", "rich")
F = TypeVar("F", bound=Callable[..., Any])


def format_option(fn: F) -> F:
    """The shared `--format` option."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS),
        default=None,
        help="Output format: text, json (JSON Lines) or rich (tables). Default: rich on a terminal, else text.",
    )(fn)


def resolve_format(fmt: str | None) -> str:
    """The format to use when none was given: rich for a terminal, text for pipes and files."""
    if fmt is not None:
        return fmt
    return "rich" if sys.stdout.isatty() else "text"


def diag(message: str) -> None:
    """A diagnostic line on stderr."""
    click.echo(f"kdump: {message}", err=True)


def progress_bar(
    stack: ExitStack, targets: list[Target], fmt: str, label: str
) -> Callable[[int], None] | None:
    """A progress bar on stderr for long runs at a terminal; never in JSON mode."""
    if fmt == "json" or not sys.stderr.isatty():
        return None
    total = 0
    for t in targets:
        for root, _dirs, files in (
            os.walk(t.path) if t.kind != "file" else [(str(t.path.parent), [], [t.path.name])]
        ):
            total += sum(os.path.getsize(os.path.join(root, n)) for n in files if n.endswith(".log"))
    if total < (256 << 20):
        return None
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

    from kdump.render.rich_tty import make_console

    bar = stack.enter_context(
        Progress(
            label,
            BarColumn(),
            DownloadColumn(),
            TimeRemainingColumn(),
            console=make_console(sys.stderr, stderr=True),
            transient=True,
        )
    )
    task = bar.add_task("verify", total=total)
    return lambda n: bar.advance(task, n)


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
