"""`kdump seek-by-time`: the offset a broker would answer for a time, read from the files."""

from __future__ import annotations

import json
import re
import sys
from contextlib import ExitStack
from pathlib import Path

import click

from kdump.cli.exit_codes import ExitCode
from kdump.cli.output import diag, discover_all, format_option, progress_bar, resolve_format, say_problems
from kdump.cli.timespec import parse_time_ms
from kdump.errors import KdumpError
from kdump.model.log_dir import looks_like_log_dir
from kdump.ops.common.topic_config import TopicConfigs
from kdump.ops.seek.by_time import (
    SPECIAL_TARGETS,
    LogDirCheckpoints,
    SeekResult,
    SeekTarget,
    load_log_dir_checkpoints,
    seek_partition,
)
from kdump.ops.tiered.partitions import TieredContext

# ListOffsets' sentinel timestamps (ListOffsetsRequest.LATEST_TIMESTAMP and friends, KIP-1005, KIP-1023).
_SENTINELS: dict[int, SeekTarget] = {
    -1: "latest",
    -2: "earliest",
    -3: "max-timestamp",
    -4: "earliest-local",
    -5: "latest-tiered",
    -6: "earliest-pending-upload",
}
# `-30m`, `-2h`, `-1`: times, not options.
_TIME_LIKE = re.compile(r"-\d+(?:\.\d+)?(?:ms|s|m|h|d|w)?")


class _SeekCommand(click.Command):
    """A command whose TIME may start with `-`.

    Click would read `-30m` as an unknown option and `-2h` as `-2` plus `-h` (help); a leading
    space keeps such a token positional, and `parse_time_ms` strips it. Tokens after `--` are left
    alone (they are positional already).
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        out: list[str] = []
        for i, a in enumerate(args):
            if a == "--":
                out.extend(args[i:])
                break
            out.append(f" {a}" if _TIME_LIKE.fullmatch(a) else a)
        return super().parse_args(ctx, out)


def parse_target(text: str) -> SeekTarget:
    """TIME as given: a special target's name, a ListOffsets sentinel, or a time in epoch ms.

    Raises:
        click.BadParameter: it is none of those, or a time before 1970.
    """
    s = text.strip()
    if s in SPECIAL_TARGETS:
        return s
    if re.fullmatch(r"-\d+", s):
        sentinel = _SENTINELS.get(int(s))
        if sentinel is None:
            raise click.BadParameter(
                f"{s} is not a time: -1 to -6 are ListOffsets' latest, earliest, max-timestamp, "
                f"earliest-local, latest-tiered and earliest-pending-upload; for a relative time give a unit "
                f"(-30m, -2h, -1d)",
                param_hint="TIME",
            )
        return sentinel
    try:
        ms = parse_time_ms(s)
    except ValueError as exc:
        raise click.BadParameter(f"{exc}; or one of {', '.join(SPECIAL_TARGETS)}", param_hint="TIME") from exc
    if ms < 0:
        raise click.BadParameter(f"{text.strip()!r} is before 1970 (epoch {ms} ms)", param_hint="TIME")
    return ms


@click.command("seek-by-time", cls=_SeekCommand)
@click.argument("time_text", metavar="TIME")
@click.argument("paths", metavar="PATH...", nargs=-1, required=True, type=click.Path(readable=False))
@click.option(
    "--log-dir",
    type=click.Path(file_okay=False),
    help="Read log-start-offset-checkpoint and replication-offset-checkpoint from this directory "
    "(default: the log dir holding each partition).",
)
@click.option(
    "--remote",
    "remote",
    metavar="STORE",
    help="The tiered-storage remote store (LocalTieredStorage's layout, a directory or a URL) to read "
    "remote segments from, for times in a tiered partition's remote part.",
)
@click.option(
    "--remote-log-metadata",
    "remote_log_metadata",
    multiple=True,
    type=click.Path(file_okay=False),
    help="A __remote_log_metadata-N directory, or a log dir holding them (repeatable; default: the log "
    "dir holding each partition).",
)
@click.option(
    "--metadata-log",
    type=click.Path(file_okay=False),
    help="The KRaft metadata log (__cluster_metadata-0) holding topic configs (default: the log dir's).",
)
@format_option
def seek_command(
    time_text: str,
    paths: tuple[str, ...],
    log_dir: str | None,
    remote: str | None,
    remote_log_metadata: tuple[str, ...],
    metadata_log: str | None,
    fmt: str | None,
) -> None:
    """Find the first offset at or after TIME in each partition, as a broker's ListOffsets would.

    TIME is epoch milliseconds, ISO-8601 with a zone (2026-11-21T14:05:00Z), a relative time (-30m,
    -2h, -1d; `--` before TIME also works), now, or one of earliest (log start offset), latest (log
    end offset and high watermark), max-timestamp, earliest-local (the local log start offset of a
    tiered partition), latest-tiered (the highest offset copied to remote storage) or
    earliest-pending-upload (the first not yet copied); -1 to -6 name them as ListOffsets does.
    PATH is a partition directory, several of them, or a whole log dir (one answer per partition).
    Tiered partitions are known by their topic's remote.storage.enable in the KRaft metadata log;
    what was copied by __remote_log_metadata; a time in the remote part is read from --remote. Indexes are checked against the log before they
    are trusted; a damaged or missing index falls back to scanning and is reported. Nothing is ever
    written. PATH may be an object store URL (s3://...) or lie in a tarball of a log dir.

    \b
    Exit codes: 0 every partition answered (none is an answer), 2 usage error, 3 a path could not be read,
    or a batch that may hold the answer could not be decompressed (codec-unavailable; offset: unknown).

    \b
    Examples:
      kdump seek-by-time 2026-11-21T14:05:00Z /var/lib/kafka/data/orders-0
      kdump seek-by-time -2h /var/lib/kafka/data/orders-*
      kdump seek-by-time --format json latest /var/lib/kafka/data | jq .offset
      kdump seek-by-time --remote s3://bucket/tiered -3d /var/lib/kafka/data/orders-0
    """
    target = parse_target(time_text)
    fmt = resolve_format(fmt)
    targets, unreadable = discover_all(paths)
    for found in targets:
        if found.kind == "file":
            raise click.BadParameter(
                f"{found.given} is a file: give its partition directory", param_hint="PATH"
            )
        if found.kind == "log-dir" and not looks_like_log_dir(found.path):
            raise click.BadParameter(
                f"{found.given} is neither a partition directory nor a log dir", param_hint="PATH"
            )
    problems = [f for t in targets for f in t.problems]
    problems += [f for t in targets for p in t.partitions() for f in p.problems]
    unreadable = say_problems(problems) or unreadable
    override = None if log_dir is None else Path(log_dir)
    tiered = _tiered_context(remote, remote_log_metadata, metadata_log)
    cache: dict[Path | None, LogDirCheckpoints] = {}
    results: list[SeekResult] = []
    console = None
    if fmt == "rich":
        from kdump.render.rich_tty import make_console

        console = make_console(sys.stdout)
    with ExitStack() as stack:
        bar = progress_bar(stack, targets, fmt, "seeking")
        for t in targets:
            ckpt_dir = override if override is not None else t.log_dir_path
            if ckpt_dir not in cache:
                cache[ckpt_dir] = load_log_dir_checkpoints(ckpt_dir)
            try:
                parts = t.partitions()
            except KdumpError as exc:
                diag(str(exc))
                unreadable = True
                continue
            if not parts:
                diag(f"{t.given}: no partition directories in this log dir")
            for part in parts:
                label = t.given if t.kind == "partition" else str(Path(t.given) / part.name)
                try:
                    r = seek_partition(
                        part,
                        target,
                        log_dir_path=ckpt_dir,
                        label=label,
                        log_dir_checkpoints=cache[ckpt_dir],
                        tiered=tiered,
                    )
                except KdumpError as exc:
                    diag(f"{label}: {exc}")
                    unreadable = True
                    continue
                # A file it could not read, or records it needed and could not decompress (no answer): exit 3.
                unreadable = unreadable or r.unknown or any(f.code == "unreadable-file" for f in r.findings)
                results.append(r)
                if console is None:
                    if bar is not None:
                        bar.clear()  # stdout may be the same terminal: never print onto the bar
                    _print(r, fmt)
                if bar is not None:
                    bar(part.log_bytes)
    if console is not None:
        from kdump.render.seek import seek_table

        seek_table(console, results)
    sys.exit(ExitCode.UNREADABLE if unreadable else ExitCode.OK)


def _tiered_context(remote: str | None, metadata: tuple[str, ...], metadata_log: str | None) -> TieredContext:
    """Where tiered answers read topic configs, remote log metadata and remote segments from."""
    store = None
    if remote is not None:
        from kdump.model.remote_store import RemoteStore
        from kdump.store.queries import as_path, exists

        if not exists(remote):
            raise click.BadParameter(f"{remote}: no such directory", param_hint="--remote")
        store = RemoteStore.load(as_path(remote))
        if not store.partitions:
            raise click.BadParameter(f"{remote} holds no remote partition directory", param_hint="--remote")
    configs = TopicConfigs(Path(metadata_log) if metadata_log is not None else None)
    return TieredContext(configs, tuple(Path(p) for p in metadata), store)


def _print(r: SeekResult, fmt: str) -> None:
    from kdump.render import seek as render

    if fmt == "json":
        sys.stdout.write(json.dumps(render.seek_row(r), separators=(",", ":")) + "\n")
    else:
        sys.stdout.write("\n".join(render.seek_lines(r)) + "\n")
    sys.stdout.flush()
