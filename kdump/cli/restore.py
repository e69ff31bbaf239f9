"""`kdump restore`: put back what reindex or trim-tail removed or replaced."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from kdump.cli.exit_codes import ExitCode
from kdump.cli.repair import LocalPath
from kdump.model.log_dir import discover
from kdump.ops.repair.safety import MANIFEST, log_dir_lock, restore


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
        root = Path(json.loads((backup_dir / MANIFEST).read_text())["root"])
    except (OSError, ValueError, KeyError) as exc:
        click.echo(f"kdump: {backup_dir / MANIFEST} cannot be read: {exc}", err=True)
        sys.exit(ExitCode.UNREADABLE)
    target = discover(str(root))
    with log_dir_lock(target.log_dir_path):
        result = restore(backup_dir)
    for p in result.restored:
        click.echo(f"restored {p}")
    click.echo(f"restored {len(result.restored)} files from {backup_dir}")
