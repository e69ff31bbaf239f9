"""What the repairing commands share: --apply/--backup-dir, target discovery, lock refusal."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from kdump.errors import PathError

F = TypeVar("F", bound=Callable[..., Any])


def repair_options(fn: F) -> F:
    """`--apply` and `--backup-dir`."""
    fn = click.option(
        "--backup-dir",
        type=click.Path(file_okay=False, path_type=Path),
        help="Where to keep every byte removed or replaced (default: a new timestamped folder beside the "
        "partition, or beside the log dir when the partition is in one). Must not exist yet; with several "
        "partitions each gets DIR/<partition>. Refused inside a broker log dir.",
    )(fn)
    return click.option("--apply", is_flag=True, help="Write the changes (the default is a dry run).")(fn)


def write_rows(rows: list[dict[str, Any]]) -> None:
    """JSON Lines to stdout."""
    import json

    for row in rows:
        sys.stdout.write(json.dumps(row, separators=(",", ":"), default=str) + "\n")
    sys.stdout.flush()


def check_backup_dir(backup_dir: Path | None) -> None:
    """Refuse a backup dir inside a broker log dir: the broker would take it for a partition."""
    if backup_dir is None:
        return
    from kdump.model.log_dir import looks_like_log_dir

    resolved = backup_dir.resolve()
    for parent in resolved.parents:
        if looks_like_log_dir(parent) and (parent / "meta.properties").exists():
            raise click.UsageError(
                f"--backup-dir {backup_dir} is inside the log dir {parent}; a broker would fail on it there"
            )


def _readable_dir(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    # A directory named on the command line that is not there is a path that cannot be read (exit
    # 3), not a usage error (2), as for the PATH arguments.
    if value is not None and not value.is_dir():
        why = "not a directory" if value.exists() else "no such directory"
        raise PathError(f"{value}: {why} (--metadata-log)")
    return value


def interval_options(fn: F) -> F:
    """`--index-interval-bytes` and `--metadata-log`: how rebuilt indexes are spaced."""
    fn = click.option(
        "--metadata-log",
        type=click.Path(path_type=Path),
        metavar="DIRECTORY",
        callback=_readable_dir,
        help="The __cluster_metadata-0 directory to read topic configs from (default: the one in the log dir).",
    )(fn)
    return click.option(
        "--index-interval-bytes",
        type=click.IntRange(min=0),
        default=None,
        help="The topic's index.interval.bytes: bytes of log between offset index entries. Default: the "
        "topic's own setting from the KRaft metadata log when one is at hand, else the broker default 4096.",
    )(fn)


class NotLocalError(click.ClickException):
    """A repair given a stored path: exit 3, as for any path kdump cannot work on."""

    exit_code = 3  # ExitCode.UNREADABLE

    def show(self, file: Any = None) -> None:
        click.echo(f"kdump: {self.message}", err=True)


class LocalPath(click.Path):
    """A path argument of a repair: a local file or directory, never a URL or a tarball.

    Repairs write beside the files they fix, with backups, fsync and renames that only a local
    filesystem offers; a stored copy is refused with exit 3 before anything else happens.
    """

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from kdump.store.locations import archive_split, is_url

        text = str(value)
        split = archive_split(text)
        what = (
            "a URL"
            if is_url(text)
            else None
            if split is None
            else "inside a tarball"
            if split[1]
            else "a tarball"
        )
        if what is not None:
            command = ctx.command_path if ctx is not None else "kdump"
            raise NotLocalError(
                f"{command} repairs local files only and {text} is {what}: copy or unpack it to a local "
                "disk and repair that copy (dump, verify and seek-by-time read it where it is)"
            )
        return super().convert(value, param, ctx)
