"""The output boundary: choosing a format and writing data to stdout, diagnostics to stderr."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any, TypeVar

import click

from kdump.errors import KdumpError
from kdump.findings import Finding, Severity
from kdump.model.log_dir import Target, discover, expand

FORMATS = ("text", "json", "rich")
F = TypeVar("F", bound=Callable[..., Any])


def format_option(fn: F) -> F:
    """The shared `--format` option."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS, case_sensitive=False),
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
    total = sum(t.log_bytes for t in targets)
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


def allow_unknown_option(fn: F) -> F:
    """The shared `--allow-unknown` option."""
    return click.option(
        "--allow-unknown",
        is_flag=True,
        help="Report files and directories kdump does not recognise as info instead of errors.",
    )(fn)


def discover_all(
    paths: tuple[str, ...], *, allow_unknown: bool = False, expand_dirs: bool = True
) -> tuple[list[Target], bool]:
    """Classify every path (a path given twice counts once); say on stderr what a path was taken
    to be where its name does not say (a file read by its content, a directory of log dirs);
    report the unreadable ones there. With `expand_dirs`, a directory of log dirs becomes
    the log dirs under it, and the findings about its own entries are said on stderr."""
    unknown = Severity.INFO if allow_unknown else Severity.ERROR
    targets: list[Target] = []
    failed = False
    seen: set[str] = set()
    for p in paths:
        key = os.path.realpath(p)
        if key in seen:
            diag(f"{p}: given twice; worked on once")
            continue
        seen.add(key)
        try:
            target = discover(p, unknown=unknown)
        except KdumpError as exc:
            diag(str(exc))
            failed = True
            continue
        if target.note is not None or target.kind == "log-dirs":
            diag(f"{p}: taken as {target.taken_as()}")
        if expand_dirs and target.kind == "log-dirs":
            for t in expand([target]):
                if t.kind == "log-dirs":
                    failed = say_problems(list(t.problems)) or failed
                else:
                    targets.append(t)
            continue
        targets.append(target)
    return targets, failed


# Findings that mean kdump could not read what it was given: a repair stops with exit 3 on them.
UNREADABLE_CODES = frozenset({"unreadable-file", "symlink-loop", "dangling-symlink"})


def say_problems(problems: list[Finding]) -> bool:
    """Say on stderr the findings about the paths a repair was given; True when one means an input
    could not be read (the repair then exits 3, never "nothing to do")."""
    failed = False
    for f in problems:
        diag(f"{f.file}: {f.code}: {f.message}")
        failed = failed or f.code in UNREADABLE_CODES
    return failed


def engine_options(fn: F) -> F:
    """The shared `--engine` and `--master` options of the commands that can run on Spark."""
    fn = click.option("--master", help="With --engine spark: the Spark master URL (default local[*]).")(fn)
    return click.option(
        "--engine",
        type=click.Choice(["local", "spark"], case_sensitive=False),
        default="local",
        show_default=True,
        help="Run locally, or on Spark for fleets of log dirs (needs kdump[spark]).",
    )(fn)
