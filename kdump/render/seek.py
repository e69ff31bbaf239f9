"""Rendering `seek-by-time` answers: a text line per partition, a rich table, a JSON object."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kdump.ops.seek.by_time import SeekResult

if TYPE_CHECKING:
    from rich.console import Console

_WHAT = {"earliest": "log start offset", "latest": "log end offset"}


def seek_row(r: SeekResult) -> dict[str, Any]:
    """The JSON object of one partition's answer (the schema lives with `SeekResult.to_row`)."""
    return r.to_row()


def iso_ms(timestamp: int | None) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds; empty for None or out of range."""
    if timestamp is None or timestamp < 0:
        return ""
    try:
        dt = datetime.fromtimestamp(timestamp / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return ""
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{timestamp % 1000:03d}Z"


def target_text(r: SeekResult) -> str:
    """What was asked: the time (with its ISO form) or the special target's name."""
    if r.target_timestamp is None:
        return r.target
    return f"{r.target_timestamp} ({iso_ms(r.target_timestamp)})"


def via_text(r: SeekResult) -> str:
    """How the answer was found: `index`, `scan` (an index failed its checks) or `mtime`."""
    parts = ["scan" if r.scan_fallback else "index"]
    if r.used_mtime:
        parts.append("mtime")
    return "+".join(parts)


def seek_line(r: SeekResult) -> str:
    """One partition's answer as `key: value` pairs (grep- and awk-friendly)."""
    if r.unknown:
        offset = "offset: unknown"
    elif r.offset is None:
        offset = "offset: none"
    elif r.target in _WHAT:
        offset = f"offset: {r.offset} ({_WHAT[r.target]})"
    else:
        offset = f"offset: {r.offset}"
    parts = [f"partition: {r.partition}", f"target: {target_text(r)}", offset]
    if r.timestamp is not None:
        parts.append(f"timestamp: {r.timestamp} ({iso_ms(r.timestamp)})")
    if r.target == "latest" and r.high_watermark is not None:
        parts.append(f"high-watermark: {r.high_watermark}")
    if r.segment is not None:
        parts.append(f"segment: {r.segment}")
    if r.position is not None:
        parts.append(f"position: {r.position}")
    if r.used_mtime and r.segment_largest_timestamp is not None:
        parts.append(f"segment-largest-timestamp: {r.segment_largest_timestamp} (mtime)")
    parts.append(f"via: {via_text(r)}")
    return " ".join(parts)


def seek_lines(r: SeekResult) -> list[str]:
    """The answer's line, then its notes and the findings met, indented."""
    lines = [seek_line(r)]
    lines.extend(f"  note: {n}" for n in r.notes)
    if r.findings:
        # Imported only when needed: kdump.render.text pulls in the internal-topic decoders.
        from kdump.render.text import finding_line

        lines.extend(f"  {finding_line(f)}" for f in r.findings)
    return lines


def seek_table(console: Console, results: Sequence[SeekResult]) -> None:
    """A table of answers, one row per partition, then each partition's notes and findings."""
    from rich.text import Text

    from kdump.render.rich_tty import (
        Col,
        common_root,
        finding_text,
        fitted_table,
        print_whole_lines,
        relative_label,
    )

    # One invocation asks one TIME: it goes in the title, leaving the width to the partitions, which
    # are named relative to the directory they all lie in (their ends tell them apart).
    root = common_root([r.partition for r in results])
    title = "kdump seek-by-time" + (f": {target_text(results[0])}" if results else "")
    title += "" if root is None else f" (partitions in {root})"
    cols = (
        Col("partition", keep=True),
        Col("offset", "right", keep=True),
        Col("timestamp", keep=True),
        Col("segment", drop=2),
        Col("position", "right", drop=1),
        Col("via", wraps=True),
        Col("findings", "right", keep=True),
    )
    rows: list[tuple[Sequence[str], str | None]] = []
    for r in results:
        ts = "" if r.timestamp is None else f"{r.timestamp}\n{iso_ms(r.timestamp)}"
        segment = "" if r.segment is None else r.segment.rsplit("/", 1)[-1]
        cells = [
            relative_label(r.partition, root),
            "unknown" if r.unknown else "none" if r.offset is None else str(r.offset),
            ts,
            segment,
            "" if r.position is None else str(r.position),
            via_text(r),
            str(len(r.findings)),
        ]
        rows.append((cells, "yellow" if r.scan_fallback else None))
    t = fitted_table(title, cols, rows, console.width)
    console.print(t)
    for r in results:
        if not (r.notes or r.findings):
            continue
        console.print(Text(r.partition, style="bold"))
        for n in r.notes:
            console.print(Text(f"  note: {n}"))
        for f in r.findings:
            line = finding_text(f)
            line.pad_left(2)
            print_whole_lines(console, line)
