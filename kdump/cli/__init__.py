"""The command line: thin click commands over `kdump.ops`, one module per command."""

from __future__ import annotations

import importlib
import os
import sys

import click

from kdump import __version__
from kdump.cli.exit_codes import ExitCode
from kdump.errors import KdumpError, LogDirLockedError, RefusedError

# Commands are imported only when used, so `kdump seek-by-time` does not pay for verify's imports.
COMMANDS = {
    "dump": ("kdump.cli.dump", "dump_command"),
    "verify": ("kdump.cli.verify", "verify_command"),
    "reindex": ("kdump.cli.reindex", "reindex_command"),
    "seek-by-time": ("kdump.cli.seek", "seek_command"),
    "trim-tail": ("kdump.cli.trim", "trim_command"),
    "restore": ("kdump.cli.restore", "restore_command"),
    "salvage": ("kdump.cli.salvage", "salvage_command"),
    "compare": ("kdump.cli.compare", "compare_command"),
}


class LazyGroup(click.Group):
    """A click group that imports a command's module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command, in a fixed order."""
        return [name for name in COMMANDS if self.get_command(ctx, name) is not None]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """Import and return the command, or None for an unknown name."""
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module_name, attr = entry
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            return None
        command: click.Command = getattr(module, attr)
        self.commands[cmd_name] = command
        return command


@click.group(
    cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, "--version", prog_name="kdump")
def cli() -> None:
    """Forensic dump, verify and repair for Apache Kafka's on-disk logs.

    Exit codes: 0 ok, 1 findings at or above --fail-on (verify), changes pending (dry run) or
    replicas that diverge (compare),
    2 usage error, 3 a path could not be read or written, 4 repair refused (broker lock held),
    70 internal error (a bug: KDUMP_DEBUG=1 shows the traceback).

    \b
    Shell completion:
      eval "$(_KDUMP_COMPLETE=bash_source kdump)"     # bash, in ~/.bashrc
      eval "$(_KDUMP_COMPLETE=zsh_source kdump)"      # zsh, in ~/.zshrc
      _KDUMP_COMPLETE=fish_source kdump | source      # fish
    """


def main() -> None:
    """Entry point: run the CLI, mapping kdump's errors to exit codes and hiding tracebacks."""
    try:
        cli.main(standalone_mode=True)
    except BrokenPipeError:
        # The reader went away (`kdump dump ... | head`): not an error worth a traceback.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(ExitCode.OK)
    except LogDirLockedError as exc:
        click.echo(f"kdump: refused: {exc}", err=True)
        sys.exit(ExitCode.REFUSED)
    except RefusedError as exc:
        click.echo(f"kdump: refused: {exc}", err=True)
        sys.exit(ExitCode.REFUSED)
    except KdumpError as exc:
        click.echo(f"kdump: {exc}", err=True)
        sys.exit(ExitCode.UNREADABLE)
    except Exception as exc:  # a bug: say so briefly; the traceback only on request
        if os.environ.get("KDUMP_DEBUG"):
            raise
        click.echo(
            f"kdump: internal error: {type(exc).__name__}: {exc} (set KDUMP_DEBUG=1 for a traceback)",
            err=True,
        )
        sys.exit(ExitCode.INTERNAL)
