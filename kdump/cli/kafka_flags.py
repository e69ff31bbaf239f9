"""Kafka's own `kafka-dump-log.sh` flags on `kdump dump`, a drop-in for runbooks and muscle memory.

`kafka_flags` wraps the dump command: given any of Kafka's flags (`--files a,b`, `--deep-iteration`,
`--print-data-log`, a decoder, `--verify-index-only`, `--index-sanity-check`, `--skip-record-metadata`,
`--max-message-size`, `--kafka-version`), the command prints what Kafka's tool prints, line for line
(`kdump.render.kafka_tool`), on stdout and stderr, and exits as Kafka's tool does (1 where it dies with
an exception). Without them the command runs as before.
"""

from __future__ import annotations

import contextlib
import functools
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from kdump.cli.exit_codes import ExitCode
from kdump.render.kafka_decoded import NEWEST_KAFKA, kafka_release

F = TypeVar("F", bound=Callable[..., Any])
_API = "org.apache.kafka.tools.api."

# Kafka's decoder flags, in the order Kafka's tool gives them precedence, and kdump's decoder names.
DECODER_FLAGS = {
    "offsets_decoder": "offsets",
    "transaction_log_decoder": "transactions",
    "cluster_metadata_decoder": "metadata",
    "remote_log_metadata_decoder": "remote-log-metadata",
    "share_group_state_decoder": "share-group-state",
}
# Flags a release's tool does not have yet: joptsimple refuses them before anything is read.
_FLAG_SINCE = {"remote_log_metadata_decoder": (3, 9), "share_group_state_decoder": (4, 0)}
_SWITCHES = (
    "deep_iteration",
    "print_data_log",
    *DECODER_FLAGS,
    "verify_index_only",
    "index_sanity_check",
    "skip_record_metadata",
)
_VALUED = ("files", "max_message_size", "kafka_version", "key_decoder_class", "value_decoder_class")
_KAFKA_PARAMS = (*_SWITCHES, *_VALUED)
# kdump's own options that mean the same in Kafka's mode; any other one given is refused there.
_SHARED = {"paths", "max_bytes", "jobs"}


class _Version(click.ParamType):  # type: ignore[type-arg,unused-ignore]  # generic only in newer click
    name = "VERSION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if not re.fullmatch(r"\d+\.\d+(\.\d+)?", text):
            self.fail(f"{text!r} is not a Kafka release such as 3.8 or {NEWEST_KAFKA}", param, ctx)
        return text


def _flag(name: str, help: str) -> Callable[[F], F]:
    return click.option(name, is_flag=True, help=help)


def _decoder_class(name: str, what: str) -> Callable[[F], F]:
    return click.option(
        name,
        is_flag=False,
        flag_value=f"{_API}StringDecoder",
        metavar="[CLASS]",
        help=f"Kafka's flag: read {what} with Kafka's String, Integer or Long decoder class (default "
        "org.apache.kafka.tools.api.StringDecoder); implies --print-data-log.",
    )


def _decoder_class_name(value: str | None) -> str:
    """The class, checked: kdump reads bytes as Kafka's String, Integer and Long decoders do."""
    from kdump.render.kafka_tool import DECODER_CLASSES, OLD_DECODER_CLASSES

    name = value or f"{_API}StringDecoder"
    if name not in DECODER_CLASSES and name not in OLD_DECODER_CLASSES:
        raise click.UsageError(
            f"cannot run the Java class {name}: kdump reads keys and values as Kafka's StringDecoder, "
            "IntegerDecoder and LongDecoder (org.apache.kafka.tools.api) do."
        )
    return name


def kafka_flags(fn: F) -> F:
    """Add Kafka's flags to the dump command and answer in Kafka's text when one is given."""

    @functools.wraps(fn)
    def wrapper(**kwargs: Any) -> Any:
        kafka = {name: kwargs.pop(name) for name in _KAFKA_PARAMS}
        if not any(kafka[name] for name in _SWITCHES) and all(kafka[n] is None for n in _VALUED):
            if not kwargs["paths"]:
                raise click.UsageError("Missing argument 'PATHS...'.")
            return fn(**kwargs)
        _refuse_kdump_options(click.get_current_context())
        return run(kafka, kwargs["paths"], kwargs["max_bytes"])

    options = [
        click.option(
            "--files",
            metavar="FILE1,FILE2,...",
            help="Kafka's flag: dump these files (comma separated) the way kafka-dump-log.sh does.",
        ),
        _flag("--deep-iteration", "Kafka's flag: show every record (Kafka's text)."),
        _flag("--print-data-log", "Kafka's flag: show keys and payloads; implies --deep-iteration."),
        _flag("--offsets-decoder", "Kafka's flag: decode __consumer_offsets records."),
        _flag("--transaction-log-decoder", "Kafka's flag: decode __transaction_state records."),
        _flag("--cluster-metadata-decoder", "Kafka's flag: decode KRaft metadata records."),
        _flag("--remote-log-metadata-decoder", "Kafka's flag: decode __remote_log_metadata records."),
        _flag("--share-group-state-decoder", "Kafka's flag: decode __share_group_state records."),
        _flag("--verify-index-only", "Kafka's flag: check indexes against their log without printing them."),
        _flag("--index-sanity-check", "Kafka's flag: only the broker's start-up check of each index."),
        _flag("--skip-record-metadata", "Kafka's flag: record lines without offsets and sizes."),
        _decoder_class("--key-decoder-class", "keys"),
        _decoder_class("--value-decoder-class", "values"),
        click.option(
            "--max-message-size",
            type=click.IntRange(min=1),
            help="Kafka's flag: the largest batch an index entry may point to (default 5242880).",
        ),
        click.option(
            "--kafka-version",
            type=_Version(),
            help=f"With Kafka's flags: whose kafka-dump-log.sh text to print (default {NEWEST_KAFKA}).",
        ),
    ]
    decorated: Any = wrapper
    for option in reversed(options):
        decorated = option(decorated)
    return decorated  # type: ignore[no-any-return]


def kafka_flag_names() -> set[str]:
    """Every flag of Kafka's tool that `kdump dump` takes (`--files`, `--deep-iteration`, ...)."""
    return {"--" + name.replace("_", "-") for name in _KAFKA_PARAMS if name != "kafka_version"} | {
        "--max-bytes"
    }


def _refuse_kdump_options(ctx: click.Context) -> None:
    """kdump's own options have no place in Kafka's text: say which one, as a usage error."""
    for param in ctx.command.params:
        name = param.name
        if name is None or name in _SHARED or name in _KAFKA_PARAMS:
            continue
        source = ctx.get_parameter_source(name)
        if source in (click.core.ParameterSource.COMMANDLINE, click.core.ParameterSource.ENVIRONMENT):
            flag = param.opts[0] if param.opts else name
            raise click.UsageError(f"{flag} is kdump's own option and cannot be used with Kafka's flags.")


def _files(kafka: dict[str, Any], paths: tuple[str, ...]) -> list[str]:
    """`--files` entries (comma separated, as Kafka splits them), then the PATH arguments; a directory
    stands for its `.log` segments in offset order."""
    listed = kafka["files"].split(",") if kafka["files"] else []
    out: list[str] = []
    for arg in [*listed, *paths]:
        path = Path(arg)
        if path.is_dir():
            out += [str(p) for p in sorted(path.glob("*.log"), key=lambda p: p.name)]
        else:
            out.append(arg)
    return out


_WRITE_BYTES = 64 << 10


def run(kafka: dict[str, Any], paths: tuple[str, ...], max_bytes: int | None) -> None:
    """Print what kafka-dump-log.sh prints for these flags, then exit with its status."""
    from kdump.render.kafka_tool import (
        DEFAULT_MAX_MESSAGE_SIZE,
        INT_MAX,
        ToolAbort,
        ToolOptions,
        ToolReport,
    )
    from kdump.render.kafka_tool_files import dump_lines

    release = kafka["kafka_version"] or NEWEST_KAFKA
    for flag, since in _FLAG_SINCE.items():
        if kafka[flag] and kafka_release(release) < since:
            name = flag.replace("_", "-")
            click.echo(
                f'Exception in thread "main" joptsimple.UnrecognizedOptionException: {name} is not a recognized option',
                err=True,
            )
            sys.exit(1)
    decoder = next((name for flag, name in DECODER_FLAGS.items() if kafka[flag]), None)
    classes = kafka["key_decoder_class"] is not None or kafka["value_decoder_class"] is not None
    print_data = bool(kafka["print_data_log"] or decoder or classes)
    opts = ToolOptions(
        deep=bool(kafka["deep_iteration"] or print_data),
        print_data=print_data,
        decoder=decoder,
        key_class=_decoder_class_name(kafka["key_decoder_class"]),
        value_class=_decoder_class_name(kafka["value_decoder_class"]),
        skip_metadata=bool(kafka["skip_record_metadata"]),
        verify_only=bool(kafka["verify_index_only"]),
        sanity_only=bool(kafka["index_sanity_check"]),
        max_bytes=INT_MAX if max_bytes is None else max_bytes,
        max_message_size=kafka["max_message_size"] or DEFAULT_MAX_MESSAGE_SIZE,
        release=release,
    )
    files = _files(kafka, paths)
    if not files:
        raise click.UsageError("Missing --files (or PATH): the files to dump.")
    out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else None
    # Lines gather here and go out in writes of about _WRITE_BYTES: a shallow dump is one short
    # line per batch, and stdout may be unbuffered (PYTHONUNBUFFERED, `python -u`): a system call
    # per line was a fifth of the time of `--files` on a segment of 71,246 batches.
    pending: list[bytes] = []
    size = 0

    def write(line: str | bytes) -> None:
        nonlocal size
        if out is None:
            sys.stdout.write(line.decode("utf-8") if isinstance(line, bytes) else line + "\n")
            return
        # bytes: whole lines, already UTF-8 (the compiled record lines)
        data = line if isinstance(line, bytes) else (line + "\n").encode("utf-8", "surrogatepass")
        if len(data) >= _WRITE_BYTES:  # a large batch's record lines: written as they are, no copy
            drain()
            out.write(data)
            return
        pending.append(data)
        size += len(data)
        if size >= _WRITE_BYTES:
            drain()

    def drain() -> None:
        nonlocal size
        if out is not None and pending:
            out.write(b"".join(pending))
            pending.clear()
            size = 0

    def say(line: str) -> None:
        flush()
        click.echo(line, err=True)

    def flush() -> None:
        drain()
        (out or sys.stdout).flush()

    report = ToolReport(say=say)
    try:
        for arg in files:
            for line in dump_lines(arg, opts, report):
                write(line)
    except ToolAbort as exc:
        if out is not None:
            drain()
            out.write(exc.partial.encode("utf-8", "surrogatepass"))
        else:
            sys.stdout.write(exc.partial)
        flush()
        if not exc.java_class:
            click.echo(f"kdump: {exc.message}", err=True)
            sys.exit(1)
        message = f": {exc.message}" if exc.message else ""
        click.echo(f'Exception in thread "main" {exc.java_class}{message}', err=True)
        sys.exit(1)
    except BaseException:
        # What came before a failure is printed, as it was line by line.
        with contextlib.suppress(OSError):
            drain()
        raise
    flush()
    for line in report.summary_lines(opts):
        click.echo(line, err=True)
    sys.exit(ExitCode.OK)
