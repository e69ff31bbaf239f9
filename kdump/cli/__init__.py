"""The command line: thin click commands over `kdump.ops`, one module per command."""

from __future__ import annotations

import contextlib
import gc
import importlib
import os
import sys
from typing import NoReturn

import click

from kdump import __version__
from kdump.cli.exit_codes import SHOW_COMMANDS, ExitCode
from kdump.errors import CannotRepairError, KdumpError, LogDirLockedError, RefusedError, missing_module

# Commands are imported only when used, so `kdump seek-by-time` does not pay for verify's imports.
COMMANDS = {
    "dump": ("kdump.cli.dump", "dump_command"),
    "verify": ("kdump.cli.verify", "verify_command"),
    "reindex": ("kdump.cli.reindex", "reindex_command"),
    "seek-by-time": ("kdump.cli.seek", "seek_command"),
    "trim-tail": ("kdump.cli.trim", "trim_command"),
    "quarantine": ("kdump.cli.quarantine", "quarantine_command"),
    "restore": ("kdump.cli.restore", "restore_command"),
    "salvage": ("kdump.cli.salvage", "salvage_command"),
    "compare": ("kdump.cli.compare", "compare_command"),
    "schemas": ("kdump.cli.schemas", "schemas_command"),
    "forecast": ("kdump.cli.forecast", "forecast_command"),
    "man": ("kdump.cli.man", "man_command"),
}


def version_text() -> str:
    """`kdump --version`: the version, which record paths run compiled, the C library it runs on, and
    how this copy was built when it is the one-file build (its build script leaves `_build.json` in
    the package)."""
    from pathlib import Path

    from kdump.formats.fast_records import load_compiled

    lines = [f"kdump, version {__version__}"]
    compiled = {"records": "_fastrecords", "batch walk": "_fastwalk", "Avro to JSON": "_avrojson"}
    found = [name for name, module in compiled.items() if load_compiled(module) is not None]
    lines.append(f"compiled paths: {', '.join(found) if found else 'none (the pure-Python reference path)'}")
    from kdump.cli.c_library import c_library

    lines.append(f"C library: {c_library()}")
    build = Path(__file__).resolve().parents[1] / "_build.json"
    if build.exists():
        import json

        info = json.loads(build.read_text(encoding="utf-8"))
        lines += [info["built_with"], f"built on {info['built_on']}, {info['date']}, from {info['commit']}"]
    else:
        import platform

        lines.append(
            f"build: Python package on {platform.python_implementation()} {platform.python_version()}"
        )
    return "\n".join(lines)


def _show_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(version_text())
        ctx.exit()


class _OutputClosed(Exception):
    """The reader of stdout went away while a command was writing."""


class _Interrupted(Exception):
    """Ctrl-C: a KeyboardInterrupt, carried past click (which would say "Aborted!" and exit 1)."""


class LazyGroup(click.Group):
    """A click group that imports a command's module on first use."""

    invoked: str | None = None  # the command being run, for the exit code of a closed pipe

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """Find the command, and remember its name; an unknown name gets the close matches."""
        typed = args[0] if args else ""
        if typed and not typed.startswith("-") and typed not in COMMANDS and typed.lower() in COMMANDS:
            # Commands are printed in lower case; `kdump VERIFY` means verify.
            args = [typed.lower(), *args[1:]]
        try:
            name, command, rest = super().resolve_command(ctx, args)
        except click.UsageError as exc:
            close = close_commands(typed)
            if not close or typed.startswith("-"):
                raise
            raise click.UsageError(f"{exc.message} Did you mean {_either(close)}?", ctx) from None
        self.invoked = name
        return name, command, rest

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Parse; Kafka's kafka-dump-log.sh flags given to kdump itself are pointed to `kdump dump`."""
        given = list(args)
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            from kdump.cli.kafka_flags import kafka_flag_names

            if exc.option_name in kafka_flag_names():
                raise click.UsageError(
                    f"{exc.option_name} is a flag of Kafka's kafka-dump-log.sh: kdump takes it after 'dump' "
                    f"(kdump dump {' '.join(given)}).",
                    ctx,
                ) from None
            raise

    def invoke(self, ctx: click.Context) -> object:
        """Run the command; a closed stdout and Ctrl-C leave click's handling for `main`'s."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            raise _OutputClosed() from exc
        except KeyboardInterrupt as exc:
            raise _Interrupted() from exc

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
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help="Show the version, the compiled paths, and how this copy was built, and exit.",
)
def cli() -> None:
    """Forensic dump, verify and repair for Apache Kafka's on-disk logs.

    Exit codes: 0 ok, 1 findings at or above --fail-on (verify), changes pending (dry run),
    replicas that diverge (compare) or where Kafka's tool would die (dump with Kafka's flags),
    2 usage error, 3 a path could not be read or written (or an optional dependency is missing),
    4 repair refused (broker lock held), 5 a repair cannot be done here and nothing was touched (no
    room, read-only or unwritable, not a partition),
    70 internal error (a bug: KDUMP_DEBUG=1 shows the traceback), 130 interrupted (Ctrl-C),
    141 output closed before verify or a repair finished (a dump whose reader stops exits 0).

    \b
    Shell completion:
      eval "$(_KDUMP_COMPLETE=bash_source kdump)"     # bash, in ~/.bashrc
      eval "$(_KDUMP_COMPLETE=zsh_source kdump)"      # zsh, in ~/.zshrc
      _KDUMP_COMPLETE=fish_source kdump | source      # fish
    """


def close_commands(typed: str) -> list[str]:
    """The commands a mistyped name may have meant: close spellings, then names it begins."""
    import difflib

    names = list(COMMANDS)
    close = difflib.get_close_matches(typed.lower(), names, n=3, cutoff=0.6)
    close += [n for n in names if typed and n.startswith(typed.lower()) and n not in close]
    return close


def _either(names: list[str]) -> str:
    quoted = [f"'{n}'" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + f" or {quoted[-1]}"


def entry() -> None:
    """The program's entry point (the console script, `python -m kdump`, the one-file build):
    `main`, then the end of the process.

    A worker pool stopped on the way (an error or an early stop inside it) cannot be left to the
    interpreter's exit: see `kdump.ops.common.workers.pools_abandoned`; the process then ends by
    `os._exit` with the same status. Only here: `main` run inside another program (a test) raises
    its SystemExit as always, and never ends that program.
    """
    try:
        main()
    except SystemExit as exc:
        # Looked up, not imported: a command that never made a pool does not pay for the module.
        workers = sys.modules.get("kdump.ops.common.workers")
        if workers is not None and workers.pools_abandoned():
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            if exc.code is None or isinstance(exc.code, int):
                _end(exc.code or 0)
            _say(str(exc.code))
            _end(1)
        raise


def main() -> None:
    """Run the CLI, mapping kdump's errors to exit codes and hiding tracebacks (raises SystemExit)."""
    code: int | str | None = 0
    # What the interpreter, click and this module made so far lives as long as the process: the
    # collector need not walk it again at every full pass while the command's modules load.
    gc.freeze()
    if sys.stdout is None:
        # Started with stdout closed (`kdump verify DIR >&-`): the output goes nowhere, as asked,
        # and the exit status still says what was found.
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (kept open until exit)
    try:
        try:
            cli.main(standalone_mode=True)
        except SystemExit as exc:
            code = exc.code
        # Output still buffered is written now, while a closed pipe can still be told apart.
        sys.stdout.flush()
    except (_OutputClosed, BrokenPipeError):
        # The reader went away (`kdump dump ... | head`): no traceback, and stdout now goes nowhere
        # so nothing fails again at exit. A failure already decided stands; a verdict of 0 that
        # was not delivered in full is no verdict (exit_codes.SHOW_COMMANDS).
        _silence_stdout()
        if code:
            _end(int(code) if isinstance(code, int) else ExitCode.INTERNAL)
        _end(ExitCode.OK if cli.invoked in SHOW_COMMANDS else ExitCode.OUTPUT_CLOSED)
    except (_Interrupted, KeyboardInterrupt):
        # Worker pools were stopped on the way out (kdump.ops.common.workers); say so in one line.
        _silence_stdout()
        _say("interrupted")
        _end(ExitCode.INTERRUPTED)
    except LogDirLockedError as exc:
        click.echo(f"kdump: refused: {exc}", err=True)
        sys.exit(ExitCode.REFUSED)
    except RefusedError as exc:
        click.echo(f"kdump: refused: {exc}", err=True)
        sys.exit(ExitCode.REFUSED)
    except CannotRepairError as exc:
        click.echo(f"kdump: cannot repair: {exc}", err=True)
        sys.exit(ExitCode.CANNOT_REPAIR)
    except KdumpError as exc:
        click.echo(f"kdump: {exc}", err=True)
        sys.exit(ExitCode.UNREADABLE)
    except ImportError as exc:
        # An optional package (the spark extra's) missing where no check named it first: still one
        # sentence with the install command, and exit 3, as for a path that cannot be read.
        missing = missing_module(exc, cli.invoked or "this command")
        if missing is None:
            _internal_error(exc)
        click.echo(f"kdump: {missing}", err=True)
        sys.exit(ExitCode.UNREADABLE)
    except Exception as exc:  # a bug: say so briefly; the traceback only on request
        _internal_error(exc)
    # The process ends here. The collector's passes at exit would walk every object the imports made
    # (about 8 ms after a verify, half the time of its walk over a 135 MB segment) and find nothing the
    # operating system does not take back anyway; frozen, they are left to the interpreter's teardown.
    # Files and the atexit handlers are closed and run as before.
    gc.freeze()
    sys.exit(code)


def _internal_error(exc: Exception) -> NoReturn:
    if os.environ.get("KDUMP_DEBUG"):
        raise exc
    click.echo(
        f"kdump: internal error: {type(exc).__name__}: {exc} (set KDUMP_DEBUG=1 for a traceback)",
        err=True,
    )
    sys.exit(ExitCode.INTERNAL)


def _end(code: int) -> NoReturn:
    """Exit at once, after a closed pipe or Ctrl-C.

    A worker pool stopped on the way here (kdump.ops.common.workers) may leave its manager thread blocked
    reading a result that a terminated worker had half written; the interpreter joins that thread
    at exit and would wait forever. Nothing else is left to do: files were closed and temporary
    files removed as the stack unwound, and a log dir lock goes with the process.
    """
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    os._exit(code)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout already closed or not a real file
        pass


def _say(message: str) -> None:
    with contextlib.suppress(OSError):  # stderr may be gone too
        click.echo(f"kdump: {message}", err=True)
