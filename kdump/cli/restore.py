"""`kdump restore`: put back what reindex or trim-tail removed or replaced."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from kdump.cli.exit_codes import ExitCode
from kdump.cli.repair import LocalPath
from kdump.errors import KdumpError, LogDirLockedError, RepairFaultError
from kdump.model.log_dir import discover
from kdump.ops.repair.faults import command_line, describe_os_error
from kdump.ops.repair.preflight import check_room, read_manifest, restore_needs
from kdump.ops.repair.safety import MANIFEST, log_dir_lock, restore


@click.command("restore")
# Not `exists=True`: a missing or unreadable backup is a path that cannot be read (exit 3), not a usage
# error (2); reading its manifest below says which.
@click.argument(
    "backup_dirs", nargs=-1, required=True, metavar="BACKUP_DIR...", type=LocalPath(path_type=Path)
)
def restore_command(backup_dirs: tuple[Path, ...]) -> None:
    """Undo reindex or trim-tail --apply runs from their backup directories.

    Each BACKUP_DIR is a repair's backup directory, or a directory holding several (a backup
    root: the --backup-dir of a trim-tail of a log dir, or a log dir's <log dir>.kdump-backups).
    The manifest in each lists every step; they are undone newest first, and the backups newest
    first too, so every partition gets back its original files byte for byte. Refuses (exit 4)
    while a broker holds the log dir.

    \b
    Examples:
      kdump restore /var/lib/kafka/data.kdump-backups/kdump-backup-orders-0-20261121T230000Z
      kdump restore /var/lib/kafka/data.kdump-backups
    """
    backups: list[
        tuple[Path, Path, dict[str, Any]]
    ] = []  # (backup dir, the partition it restores, its manifest)
    for given in backup_dirs:
        found = _backups_in(given)
        if not found:
            click.echo(f"kdump: {given / MANIFEST} cannot be read: no repair's backup is there", err=True)
            sys.exit(ExitCode.UNREADABLE)
        for backup in found:
            try:
                manifest = read_manifest(backup / MANIFEST)
                root = Path(manifest["root"])
            except (OSError, ValueError, KeyError, TypeError) as exc:
                why = (
                    str(exc)
                    if isinstance(exc, KdumpError)
                    else exc.strerror
                    if isinstance(exc, OSError) and exc.strerror
                    else "not a kdump backup manifest"
                )
                click.echo(f"kdump: {backup / MANIFEST} cannot be read: {why}", err=True)
                sys.exit(ExitCode.UNREADABLE)
            if all(b != backup for b, _, _ in backups):
                backups.append((backup, root, manifest))
    # Newest first: a later repair of a partition is undone before the one it followed.
    backups.sort(key=lambda b: ((b[0] / MANIFEST).stat().st_mtime_ns, b[0].name), reverse=True)
    total = 0
    for backup, root, manifest in backups:
        target = discover(str(root))
        with log_dir_lock(target.log_dir_path):
            needs, files = restore_needs(backup, manifest)
            check_room("restore", needs, files)
            try:
                result = restore(backup)
            except OSError as exc:
                if isinstance(exc, LogDirLockedError):
                    raise
                # Restore is idempotent step by step: a second run skips what is back and finishes.
                raise RepairFaultError(
                    f"restore stopped part way: {describe_os_error(exc)}; some files of {root} are back "
                    f"and some not yet; once the cause is fixed, run it again to finish: "
                    f"{command_line(['kdump', 'restore', *backup_dirs])}",
                    undone=False,
                ) from exc
        for p in result.restored:
            click.echo(f"restored {p}")
        click.echo(f"restored {len(result.restored)} files from {backup}")
        total += len(result.restored)
    if len(backups) > 1:
        click.echo(f"restored {total} files from {len(backups)} backups")


def _backups_in(path: Path) -> list[Path]:
    """The backup directories at `path`: itself when it holds a manifest, else those under it (two
    levels: a backup root of backup roots, as a trim of several log dirs leaves)."""
    if (path / MANIFEST).is_file():
        return [path]
    out: list[Path] = []
    for child in _subdirs(path):
        out.extend(
            [child]
            if (child / MANIFEST).is_file()
            else (g for g in _subdirs(child) if (g / MANIFEST).is_file())
        )
    return out


def _subdirs(path: Path) -> list[Path]:
    try:
        return sorted(p for p in path.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []
