"""`kdump man`: the manual pages, wherever kdump runs (the one-file build carries them inside)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import click

from kdump.cli.exit_codes import ExitCode
from kdump.cli.output import diag


def man_dirs() -> list[Path]:
    """Where the pages may be, first found wins: inside the package (the one-file build), the
    checkout kdump runs from (an editable install), the install prefix (a wheel's data files)."""
    package = Path(__file__).resolve().parents[1]
    return [
        package / "man",
        package.parent / "man",
        Path(sys.prefix) / "share/man/man1",
        Path(sys.prefix) / "share/man/man7",
    ]


def page_file(name: str) -> Path | None:
    """The file of page `name`: `kdump`, a command (`verify`), or a topic (`findings`, `spark`)."""
    stem = "kdump" if name in ("", "kdump") else f"kdump-{name.lower().removeprefix('kdump-')}"
    for directory in man_dirs():
        for section in ("1", "7"):
            candidate = directory / f"{stem}.{section}"
            if candidate.is_file():
                return candidate
    return None


def page_names() -> list[str]:
    names: set[str] = set()
    for directory in man_dirs():
        if directory.is_dir():
            for path in directory.glob("kdump*.[17]"):
                names.add(path.stem.removeprefix("kdump-").removeprefix("kdump") or "kdump")
    return sorted(names)


@click.command("man")
@click.argument("page", required=False, default="kdump")
@click.option("--roff", is_flag=True, help="Write the page's roff source (to install it where man finds it).")
@click.option("--list", "list_pages", is_flag=True, help="List the pages there are.")
def man_command(page: str, roff: bool, list_pages: bool) -> None:
    """Show a manual page: kdump, a command (verify, dump, ...), findings or spark.

    On a terminal with man(1), man shows it; otherwise it is written as plain text, so a host
    without man (a broker's container) still has the manual. The one-file build carries every page.
    """
    if list_pages:
        for name in page_names():
            click.echo(name)
        return
    path = page_file(page)
    if path is None:
        names = page_names()
        known = ", ".join(names) or "none: this install has no manual pages (they are in the source's man/)"
        diag(f"kdump: no manual page {page!r}; there are: {known}")
        sys.exit(ExitCode.USAGE if names else ExitCode.UNREADABLE)
    if roff:
        click.echo(path.read_text(encoding="utf-8"), nl=False)
        return
    man = shutil.which("man")
    if man and sys.stdout.isatty() and os.environ.get("KDUMP_MAN_TEXT") != "1":
        # The one-file build's pages are real files while it runs (it unpacks itself): man reads them.
        sys.exit(subprocess.run([man, "-l", str(path)], check=False).returncode)
    from kdump.render.man_text import render

    width = shutil.get_terminal_size((80, 24)).columns if sys.stdout.isatty() else 80
    click.echo(render(path.read_text(encoding="utf-8"), width=min(width, 100) - 1), nl=False)
