"""Rich output for people at a terminal: tables and colour. rich is imported only here and in the CLI.

Markup and highlighting are off: topic names, keys and header values may contain `[`, and data is
never interpreted as styling.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any

from kdump.findings import Finding, Severity
from kdump.formats.batch import BatchHeader
from kdump.formats.records import Record
from kdump.ops.files import Entry, FileStart
from kdump.ops.internal import InternalRecord
from kdump.render import rows
from kdump.render.text import entry_line, finding_line, summary_line
from kdump.scan.events import ScanSummary

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
_CHUNK = 200


def make_console(out: IO[str], *, stderr: bool = False) -> Console:
    """A console bound to `out`, with markup and highlighting off."""
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich's own handling exits with 1; kdump's entry point chooses the exit code.
            raise BrokenPipeError

    return _Console(file=out, markup=False, highlight=False, emoji=False, stderr=stderr, soft_wrap=False)


def finding_text(f: Finding) -> Any:
    """A finding as styled text."""
    from rich.text import Text

    return Text(finding_line(f), style=SEVERITY_STYLE[f.severity])


def _batch_table(title: str) -> Table:
    from rich.table import Table

    t = Table(title=title, title_justify="left", show_lines=False, pad_edge=False)
    for col in (
        "position",
        "offsets",
        "count",
        "size",
        "magic",
        "codec",
        "max timestamp",
        "producer",
        "flags",
        "crc",
    ):
        t.add_column(col, justify="right" if col in ("position", "count", "size") else "left", no_wrap=True)
    return t


def _record_table(title: str) -> Table:
    from rich.table import Table

    t = Table(title=title, title_justify="left", pad_edge=False)
    for col in ("offset", "timestamp", "key", "value", "headers"):
        t.add_column(
            col, no_wrap=col != "value", overflow="ellipsis", max_width=None if col == "value" else 40
        )
    return t


def _batch_cells(h: BatchHeader) -> list[str]:
    flags = ",".join(
        n
        for n, on in (("txn", h.is_transactional), ("control", h.is_control), ("lat", h.timestamp_type == 1))
        if on
    )
    offsets = f"{h.last_offset}" if h.base_offset is None else f"{h.base_offset}..{h.last_offset}"
    producer = "" if h.producer_id < 0 else f"{h.producer_id}/{h.producer_epoch}"
    return [
        str(h.position),
        offsets,
        "" if h.count is None else str(h.count),
        str(h.size),
        str(h.magic),
        rows.codec_label(h.compression),
        str(h.max_timestamp),
        producer,
        flags,
        "ok" if h.crc_ok else "BAD",
    ]


def write_rich(events: Iterable[Any], out: IO[str], *, encoding: str = "utf8") -> None:
    """Print dump events as tables of at most a few hundred rows (so output still streams)."""
    console = make_console(out)
    table: Table | None = None
    rows_in_table = 0
    current = ""
    records_mode = False

    def flush() -> None:
        nonlocal table, rows_in_table
        if table is not None and rows_in_table:
            console.print(table)
        table = None
        rows_in_table = 0

    for ev in _with_lookahead(events):
        if isinstance(ev, FileStart):
            flush()
            current = ev.file
            console.print(f"{ev.file} ({ev.kind}, {ev.size} bytes)", style="bold")
        elif isinstance(ev, InternalRecord):
            if table is None or not records_mode or rows_in_table >= _CHUNK:
                flush()
                table = _record_table(current)
                records_mode = True
            d = ev.decoded.to_dict()
            table.add_row(
                str(ev.record.offset),
                str(ev.record.timestamp),
                json.dumps(d.get("key"), separators=(",", ":"))[:200],
                json.dumps(d.get("value"), separators=(",", ":"))[:400],
                str(d.get("record") or ""),
            )
            rows_in_table += 1
        elif isinstance(ev, Record):
            if table is None or not records_mode or rows_in_table >= _CHUNK:
                flush()
                table = _record_table(current)
                records_mode = True
            headers = ", ".join(
                f"{k.decode('utf-8', 'backslashreplace')}={rows.encode_bytes(v, encoding)}"
                for k, v in ev.headers
            )
            table.add_row(
                str(ev.offset),
                str(ev.timestamp),
                "null" if ev.key is None else str(rows.encode_bytes(ev.key, encoding)),
                "null" if ev.value is None else str(rows.encode_bytes(ev.value, encoding))[:200],
                headers,
            )
            rows_in_table += 1
        elif isinstance(ev, BatchHeader):
            if table is None or records_mode or rows_in_table >= _CHUNK:
                flush()
                table = _batch_table(current)
                records_mode = False
            table.add_row(*_batch_cells(ev), style=None if ev.crc_ok else "bold red")
            rows_in_table += 1
        elif isinstance(ev, Finding):
            flush()
            console.print(finding_text(ev))
        elif isinstance(ev, ScanSummary):
            flush()
            console.print(summary_line(ev), style="bold green" if ev.findings_error == 0 else "bold red")
        elif isinstance(ev, Entry):
            console.print(entry_line(ev))
    flush()


def _with_lookahead(events: Iterable[Any]) -> Iterator[Any]:
    # In records mode each batch is shown as a record table; batch headers are skipped there.
    pending: BatchHeader | None = None
    for ev in events:
        if isinstance(ev, BatchHeader):
            if pending is not None:
                yield pending
            pending = ev
            continue
        if isinstance(ev, Record | InternalRecord):
            pending = None
        elif pending is not None:
            yield pending
            pending = None
        yield ev
    if pending is not None:
        yield pending


def verify_table(console: Console, reports: Any, exit_code: int) -> None:
    """A table of partitions with their finding counts, then the exit code."""
    from rich.table import Table

    from kdump.findings import Severity

    t = Table(title=f"kdump verify: exit {exit_code}", title_justify="left")
    for col in ("partition", "segments", "batches", "records", "offsets", "errors", "warnings", "info"):
        t.add_column(col, justify="left" if col in ("partition", "offsets") else "right")
    for r in reports:
        offsets = "" if r.first_offset is None else f"{r.first_offset}..{r.last_offset}"
        errors = r.count(Severity.ERROR)
        t.add_row(
            r.label,
            str(r.segments),
            str(r.batches),
            str(r.records),
            offsets,
            str(errors),
            str(r.count(Severity.WARNING)),
            str(r.count(Severity.INFO)),
            style="bold red" if errors else None,
        )
    console.print(t)
