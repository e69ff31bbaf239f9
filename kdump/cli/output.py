"""The output boundary: choosing a format and writing data to stdout, diagnostics to stderr."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

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
