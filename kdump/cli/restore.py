"""`kdump restore`: put back what reindex or trim-tail removed or replaced."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kdump.cli.exit_codes import ExitCode
from kdump.cli.repair import LocalPath
from kdump.errors import KdumpError, LogDirLockedError, RepairFaultError
from kdump.model.log_dir import discover
from kdump.ops.preflight import check_room, read_manifest, restore_needs
from kdump.ops.repair_faults import command_line, describe_os_error
from kdump.ops.safety import MANIFEST, log_dir_lock, restore


@click.command("restore")
# Not `exists=True`: a missing or unreadable backup is a path that cannot be read (exit 3), not a usage
# error (2); reading its manifest below says which.
@click.argument("backup_dir", type=LocalPath(path_type=Path))
def restore_command(backup_dir: Path) -> None:
    """Undo a reindex or trim-tail --apply from its backup directory.

    The manifest in BACKUP_DIR lists every step; they are undone newest first, so the partition
    gets back its original files byte for byte. Refuses (exit 4) while a broker holds the log dir.

    \b
    Example:
      kdump restore /var/lib/kafka/data.kdump-backups/kdump-backup-orders-0-20261121T230000Z
    """
    try:
        manifest = read_manifest(backup_dir / MANIFEST)
        root = Path(manifest["root"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        why = (
            str(exc)
            if isinstance(exc, KdumpError)
            else exc.strerror
            if isinstance(exc, OSError) and exc.strerror
            else "not a kdump backup manifest"
        )
        click.echo(f"kdump: {backup_dir / MANIFEST} cannot be read: {why}", err=True)
        sys.exit(ExitCode.UNREADABLE)
    target = discover(str(root))
    with log_dir_lock(target.log_dir_path):
        needs, files = restore_needs(backup_dir, manifest)
        check_room("restore", needs, files)
        try:
            result = restore(backup_dir)
        except OSError as exc:
            if isinstance(exc, LogDirLockedError):
                raise
            # Restore is idempotent step by step: a second run skips what is back and finishes.
            raise RepairFaultError(
                f"restore stopped part way: {describe_os_error(exc)}; some files of {root} are back and "
                f"some not yet; once the cause is fixed, run it again to finish: "
                f"{command_line(['kdump', 'restore', backup_dir])}",
                undone=False,
            ) from exc
    for p in result.restored:
        click.echo(f"restored {p}")
    click.echo(f"restored {len(result.restored)} files from {backup_dir}")
