"""One `--files` entry of Kafka's `kafka-dump-log.sh`: which printer a file gets, by its suffix, as
DumpLogSegments chooses (logs and snapshots `kafka_tool`, indexes and producer snapshots
`kafka_tool_index`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kdump.render import kafka_tool_index as idx
from kdump.render.kafka_tool import ToolAbort, ToolOptions, ToolReport, log_lines, shown_path

__all__ = ["dump_lines"]


def dump_lines(arg: str, opts: ToolOptions, report: ToolReport) -> Iterator[str | bytes]:
    """Everything Kafka prints on stdout for one `--files` entry: lines as text without their line
    break, or blocks of newline-terminated UTF-8 lines as bytes (`kafka_tool.log_lines`)."""
    shown = shown_path(arg)
    path = Path(arg)
    yield f"Dumping {shown}"
    name = path.name
    dot = name.rfind(".")
    if dot < 0:
        raise ToolAbort(
            "java.lang.StringIndexOutOfBoundsException", f"begin -1, end {len(name)}, length {len(name)}"
        )
    suffix = name[dot:]
    if suffix in (".log", ".checkpoint"):
        yield from log_lines(path, shown, opts, report)
    elif suffix == ".index":
        yield from idx.index_lines(path, shown, opts, report)
    elif suffix == ".timeindex":
        yield from idx.time_index_lines(path, shown, opts, report)
    elif suffix == ".snapshot":
        yield from idx.snapshot_lines(path, opts, report)
    elif suffix == ".txnindex":
        yield from idx.txn_index_lines(path)
    else:
        report.say(f"Ignoring unknown file {shown}")
