"""The output boundary: choosing a format and writing data to stdout, diagnostics to stderr."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kdump.errors import KdumpError
from kdump.findings import Finding, Severity
from kdump.model.log_dir import Target, discover, expand

FORMATS = ("text", "json", "rich")
F = TypeVar("F", bound=Callable[..., Any])

if TYPE_CHECKING:
    from kdump.render.progress import ProgressBar


def format_option(fn: F) -> F:
    """The shared `--format` option."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMATS, case_sensitive=False),
        default=None,
        help="Output format: text, json (JSON Lines) or rich (tables). Default: rich on a terminal, else text.",
    )(fn)


DUMP_FORMATS = (*FORMATS, "kcat")


def dump_format_option(fn: F) -> F:
    """`dump`'s `--format`: the shared ones and kcat's JSON."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(DUMP_FORMATS, case_sensitive=False),
        default=None,
        help=(
            "Output format: text, json (JSON Lines), rich (tables) or kcat (records as `kcat -C -J` "
            "writes them; implies --records). Default at a terminal: records (and the batches of "
            "4 MiB of logs or more) as coloured lines, the rest as tables; else text."
        ),
    )(fn)


def commits_option(default: str, then: str) -> Callable[[F], F]:
    """`--commits PATH` (repeatable): where the groups' committed offsets are read, for the commands
    that say which consumer groups an event hurts; `default` is where they are found without it."""
    return click.option(
        "--commits",
        "commits_paths",
        multiple=True,
        type=click.Path(exists=True, file_okay=False),
        metavar="PATH",
        help="Where the groups' committed offsets are: a log dir or __consumer_offsets-N directory "
        f"(repeatable; default: {default}). {then}",
    )


def resolve_format(fmt: str | None) -> str:
    """The format to use when none was given: rich for a terminal, text for pipes and files."""
    if fmt is not None:
        return fmt
    return "rich" if sys.stdout.isatty() else "text"


def diag(message: str) -> None:
    """A diagnostic line on stderr."""
    for bar in _bars:
        bar.clear()
    click.echo(f"kdump: {message}", err=True)


def progress_bar(
    stack: ExitStack, targets: list[Target], fmt: str, label: str, partitions: int | None = None
) -> ProgressBar | None:
    """A progress bar on stderr over the targets' log bytes (over `partitions` partitions, one step
    each, when given), when stderr is a terminal (never otherwise); it shows once the run has lasted
    half a second. It is left finished on a line of its own when the `with` block ends normally, and
    erased when it ends with an error."""
    del fmt  # the bar goes to stderr: whatever the format of stdout, it is never mixed into it
    if not sys.stderr.isatty():
        return None
    from kdump.render.progress import ProgressBar

    if partitions is not None:
        bar = ProgressBar(label, partitions, sys.stderr, partitions=True)
    else:
        bar = ProgressBar(label, sum(t.log_bytes for t in targets), sys.stderr)
    _bars.append(bar)

    def done(exc_type: Any, _exc: Any, _tb: Any) -> None:
        if exc_type is None:
            bar.finish()
        else:
            bar.clear()
        _bars.remove(bar)

    stack.push(done)
    return bar


# The bars on screen: a diagnostic erases them first (they come back at their next step).
_bars: list[ProgressBar] = []


def allow_unknown_option(fn: F) -> F:
    """The shared `--allow-unknown` option."""
    return click.option(
        "--allow-unknown",
        is_flag=True,
        help="Report files and directories kdump does not recognise as info instead of errors.",
    )(fn)


def discover_all(
    paths: tuple[str, ...],
    *,
    allow_unknown: bool = False,
    expand_dirs: bool = True,
    keep_unread: bool = False,
    lazy: bool = False,
) -> tuple[list[Target], bool]:
    """Classify every path (a path given twice counts once); say on stderr what a path was taken
    to be where its name does not say (a file read by its content, a directory of log dirs);
    report the unreadable ones there. With `expand_dirs`, a directory of log dirs becomes
    the log dirs under it, and the findings about its own entries are said on stderr. A path
    that is no regular file (a FIFO, socket or device) is never read: it is said on stderr, counts
    as unreadable (exit 3), and is left out unless `keep_unread` (verify reports it instead).
    `lazy`: log dirs' partitions are named, not loaded (`discover`)."""
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
            target = discover(p, unknown=unknown, lazy=lazy)
        except KdumpError as exc:
            diag(str(exc))
            failed = True
            continue
        if target.note is not None or target.kind == "log-dirs":
            diag(f"{p}: taken as {target.taken_as()}")
        if not keep_unread and target.kind == "file" and any(could_not_read(f) for f in target.problems):
            failed = say_problems(list(target.problems)) or failed
            continue
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


def could_not_read(f: Finding) -> bool:
    """Whether a finding says kdump could not read what it was given: an unreadable entry, or a FIFO,
    socket or device where a file was expected (`wrong-file-type`, never read: reading could block
    or never end). A directory named like a segment is `wrong-file-type` too, but the broker skips
    it and so does kdump: that one is a finding, not an input left unread."""
    if f.code in UNREADABLE_CODES:
        return True
    return f.code == "wrong-file-type" and " is a directory" not in f.message


# Findings that mean kdump could not check what it read: a codec's library is missing or broken here.
# Every command that needed the codec exits 3 on them, as for a path it could not read.
UNCHECKED_CODES = frozenset({"codec-unavailable"})


def say_problems(problems: list[Finding]) -> bool:
    """Say on stderr the findings about the paths a repair was given; True when one means an input
    could not be read (the repair then exits 3, never "nothing to do")."""
    failed = False
    for f in problems:
        diag(f"{f.file}: {f.code}: {f.message}")
        failed = failed or could_not_read(f)
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
