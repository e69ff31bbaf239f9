"""Rich output for people at a terminal: tables and colour. rich is imported only here and in the CLI.

Markup and highlighting are off: topic names, keys and header values may contain `[`, and data is
never interpreted as styling.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from kdump.findings import Finding, Severity
from kdump.formats.batch import BatchHeader
from kdump.formats.records import Record
from kdump.ops.dump.files import Entry, FileStart
from kdump.ops.dump.internal import InternalRecord
from kdump.render import rows
from kdump.render.text import entry_line, finding_line, summary_line
from kdump.scan.events import ScanSummary

if TYPE_CHECKING:
    from rich.console import Console, JustifyMethod
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


def print_whole_lines(console: Console, renderable: Any) -> None:
    """Print without rich breaking a line: a finding's repair hint and its paths stay on one line,
    which the terminal wraps on screen and copies whole (a hint broken by a newline, pasted into a
    shell, runs half a command)."""
    console.print(renderable, soft_wrap=True, crop=False)


@dataclass(frozen=True, slots=True)
class Col:
    """A table column, and what may happen to it when the terminal is too narrow.

    `keep`: an identity, an offset or a timestamp: never cut and never dropped (folded onto more
    lines only when nothing else is left to give). `drop`: other columns, dropped in increasing
    order of this number until the table fits. `wraps`: free text (keys, values) that wraps, folded
    where it has no spaces, never cut.
    """

    name: str
    justify: JustifyMethod = "left"
    keep: bool = False
    drop: int = 0
    wraps: bool = False


# The width a wrapping column is counted at when deciding whether a table fits.
_WRAP_MIN = 12


def fitted_table(
    title: str,
    cols: Sequence[Col],
    rows: Sequence[tuple[Sequence[str], str | None]],
    width: int,
    *,
    fold_kept: bool = True,
) -> Table:
    """A rich table of `rows` that fits `width` without cutting a `keep` column.

    rich shrinks every column, cutting cells with an ellipsis, when a table is wider than the
    terminal: offsets, timestamps and the ends of partition names were lost that way. Here the
    optional columns are dropped first (least useful first), wrapping columns wrap, and the kept
    ones are folded onto a second line only when even they alone do not fit.
    """
    from rich.cells import cell_len
    from rich.table import Table

    def need(i: int) -> int:
        c = cols[i]
        content = max(
            [
                cell_len(c.name),
                *(cell_len(line) for cells, _ in rows for line in cells[i].splitlines() or [""]),
            ]
        )
        return min(content, _WRAP_MIN) if c.wraps else content

    shown = list(range(len(cols)))
    widths = {i: need(i) for i in shown}

    def total() -> int:
        # Each column: its text and one space of padding each side; one rule between and around.
        return sum(widths[i] + 3 for i in shown) + 1

    for i in sorted(
        (i for i, c in enumerate(cols) if not c.keep and not c.wraps), key=lambda i: cols[i].drop
    ):
        if total() <= width:
            break
        shown.remove(i)
    too_wide = total() > width
    # fold_kept False (paths an operator copies): the kept columns stay whole on one line each and
    # the table is as wide as they need; the caller prints it uncropped, the terminal wraps it.
    fold_kept = too_wide and fold_kept
    t = Table(title=title, title_justify="left", width=total() if too_wide and not fold_kept else None)
    for i in shown:
        c = cols[i]
        if c.wraps or (c.keep and fold_kept):
            t.add_column(c.name, justify=c.justify, overflow="fold")
        else:
            # min_width: rich must not squeeze it below its widest cell (it would cut it).
            t.add_column(c.name, justify=c.justify, no_wrap=True, min_width=widths[i])
    for cells, style in rows:
        t.add_row(*(cells[i] for i in shown), style=style)
    return t


# C0 controls and DEL, shown escaped in tables: raw, a terminal would act on them (and rich counts
# them as zero wide, so the table's lines would not line up).
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(32), 127)}


def printable(text: str) -> str:
    """Data for a table cell: control characters escaped as \\xNN (the utf8 encoding's own escape)."""
    return text.translate(_CONTROLS)


BATCH_COLS = (
    Col("position", "right", keep=True),
    Col("offsets", keep=True),
    Col("count", "right", drop=4),
    Col("size", "right", drop=2),
    Col("magic", drop=1),
    Col("codec", drop=5),
    Col("max timestamp", keep=True),
    Col("producer", drop=3),
    Col("flags", drop=6),
    Col("crc", keep=True),
)
RECORD_COLS = (
    Col("offset", keep=True),
    Col("timestamp", keep=True),
    Col("key", wraps=True),
    Col("value", wraps=True),
    Col("headers", wraps=True),
)


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


# Longest key, value or decoded value shown whole in a table cell unless --full-values is given.
CELL_LIMIT = 200


def cell(text: str, full: bool, limit: int = CELL_LIMIT) -> str:
    """`text` for a table cell: cut at `limit` characters with a mark saying how many bytes are left
    out and the option that shows them (never cut with `full`)."""
    if full or len(text) <= limit:
        return text
    rest = len(text[limit:].encode("utf-8", "surrogateescape"))
    return text[:limit] + f"\N{HORIZONTAL ELLIPSIS}(+{rest} bytes; --full-values)"


def _shown(data: bytes | None, encoding: str, full: bool) -> str:
    return "null" if data is None else printable(cell(str(rows.encode_bytes(data, encoding)), full))


def write_rich(
    events: Iterable[Any],
    out: IO[str],
    *,
    encoding: str = "utf8",
    console: Console | None = None,
    full_values: bool = False,
) -> None:
    """Print dump events as tables of at most a few hundred rows (so output still streams).

    Tables fit the console's width (`fitted_table`); `console` is for a given width (tests). Keys,
    values and header values longer than `CELL_LIMIT` are cut with a mark unless `full_values`;
    a null one is shown as null. The file's name heads its tables once, not again in their titles.
    """
    console = console or make_console(out)
    pending: list[tuple[Sequence[str], str | None]] = []
    cols: Sequence[Col] = BATCH_COLS

    def start(kind: Sequence[Col]) -> None:
        nonlocal cols
        if pending and (kind is not cols or len(pending) >= _CHUNK):
            flush()
        cols = kind

    def flush() -> None:
        if pending:
            console.print(fitted_table("", cols, pending, console.width))
        pending.clear()

    for ev in _with_lookahead(events):
        if isinstance(ev, FileStart):
            flush()
            console.print(f"{ev.file} ({ev.kind}, {ev.size} bytes)", style="bold")
        elif isinstance(ev, InternalRecord):
            start(RECORD_COLS)
            d = ev.decoded.to_dict()
            cells = [
                str(ev.record.offset),
                str(ev.record.timestamp),
                printable(cell(json.dumps(d.get("key"), separators=(",", ":")), full_values)),
                printable(
                    cell(json.dumps(d.get("value"), separators=(",", ":")), full_values, 2 * CELL_LIMIT)
                ),
                printable(str(d.get("record") or "")),
            ]
            pending.append((cells, None))
        elif isinstance(ev, Record):
            start(RECORD_COLS)
            headers = ", ".join(
                f"{printable(k.decode('utf-8', 'backslashreplace'))}={_shown(v, encoding, full_values)}"
                for k, v in ev.headers
            )
            cells = [
                str(ev.offset),
                str(ev.timestamp),
                _shown(ev.key, encoding, full_values),
                _shown(ev.value, encoding, full_values),
                headers,
            ]
            pending.append((cells, None))
        elif isinstance(ev, BatchHeader):
            start(BATCH_COLS)
            pending.append((_batch_cells(ev), None if ev.crc_ok else "bold red"))
        elif isinstance(ev, Finding):
            flush()
            print_whole_lines(console, finding_text(ev))
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


VERIFY_COLS = (
    Col("partition", keep=True),
    Col("segments", "right", drop=3),
    Col("batches", "right", drop=2),
    Col("records", "right", drop=4),
    Col("offsets", keep=True),
    Col("checked", "right", drop=5),
    Col("errors", "right", keep=True),
    Col("warnings", "right", keep=True),
    Col("info", "right", drop=1),
)


def common_root(labels: Sequence[str]) -> str | None:
    """The directory every label lies under, when there is one to leave out of them."""
    parents = [label.rpartition(os.sep)[0] for label in labels]
    if not parents or any(not p for p in parents):
        return None
    try:
        root = os.path.commonpath(parents)
    except ValueError:  # absolute and relative paths mixed
        return None
    return root or None


def relative_label(label: str, root: str | None) -> str:
    """`label` with `root` left out (a partition's name, or log dir and name)."""
    return label if root is None else os.path.relpath(label, root)


def rollup_label(label: str, kind: str, root: str | None) -> str:
    """A log dir's (or directory of log dirs') roll-up row: its name beside the partitions' names,
    and what it is (`kafka-3.8.0 (log dir)`)."""
    what = "log dir" if kind == "log-dir" else "log dirs"
    rel = label if root is None else os.path.relpath(label, root)
    if rel == ".":
        rel = Path(label).name or label
    elif rel.startswith(".."):
        rel = label
    return f"{rel} ({what})"


def verify_table(console: Console, reports: Any, exit_code: int) -> None:
    """A table of partitions with their finding counts, then the exit code.

    Partitions are named relative to the directory they all lie in (said in the title): the part
    of a path that tells partitions apart is its end, which a cut path loses first.
    """
    from kdump.findings import Severity

    reports = list(reports)
    root = common_root([r.label for r in reports if r.is_leaf])
    title = f"kdump verify: exit {exit_code}" + ("" if root is None else f" (partitions in {root})")
    rows: list[tuple[Sequence[str], str | None]] = []
    for r in reports:
        offsets = "" if r.first_offset is None or not r.is_leaf else f"{r.first_offset}..{r.last_offset}"
        if offsets and not r.first_offset_known:
            offsets = f"?..{r.last_offset}"  # the first lies in a wrapper its codec could not open here
        errors = r.total(Severity.ERROR)
        share = 100.0 if r.log_bytes == 0 else 100.0 * r.checked_bytes / r.log_bytes
        cells = [
            relative_label(r.label, root) if r.is_leaf else rollup_label(r.label, r.kind, root),
            str(r.segments),
            str(r.batches),
            str(r.records) if not r.uncounted else f"{r.records}+?",  # some batches were not decompressed
            offsets,
            f"{share:.0f}%",
            str(errors),
            str(r.total(Severity.WARNING)),
            str(r.total(Severity.INFO)),
        ]
        rows.append((cells, "bold red" if errors else None))
    # Partition names are paths an operator copies: never folded (the table grows wider instead).
    table = fitted_table(title, VERIFY_COLS, rows, console.width, fold_kept=False)
    console.print(table, crop=False)
