"""The salvage report as text, and the record lines of `records.jsonl`.

Record lines are `dump --records --format json` record lines (`kdump.render.jsonl.record_line`);
the text report is read off the report dictionary `kdump.ops.salvage.report` builds, so the two
reports cannot disagree.
"""

from __future__ import annotations

import json
from typing import Any

from kdump.formats.batch import BatchHeader
from kdump.formats.records import Record
from kdump.ops.salvage.output import BatchLines, RecordLine
from kdump.render.fast_lines import LineRenderer
from kdump.render.jsonl import record_line


def batch_lines(encoding: str = "utf8") -> BatchLines:
    """The function salvage writes a clean batch's records with, from its decompressed records:
    the same lines as `record_lines`, rendered by the compiled record path (None to go record by
    record)."""
    renderers: dict[str, LineRenderer] = {}

    def lines(data: Any, batch: BatchHeader, file: str) -> bytes | None:
        renderer = renderers.get(file)
        if renderer is None:
            renderer = renderers[file] = LineRenderer(json.dumps(file), "json", encoding)
        return renderer.record_lines(data, batch)

    return lines


def record_lines(encoding: str = "utf8") -> RecordLine:
    """The function salvage writes each record with: a `dump --format json` record line."""

    encoded: dict[str, str] = {}

    def line(r: Record, batch: BatchHeader, file: str) -> str:
        file_json = encoded.get(file)
        if file_json is None:
            file_json = encoded[file] = json.dumps(file)
        return record_line(r, batch, file_json, encoding)

    return line


def _offsets(first: Any, last: Any) -> str:
    if first is None:
        return "none"
    return str(first) if first == last else f"{first}..{last}"


def _how(counts: dict[str, int]) -> str:
    order = ("intact", "framing", "resync")
    parts = [f"{counts[h]} {'intact' if h == 'intact' else 'by ' + h}" for h in order if counts.get(h)]
    return ", ".join(parts) or "none"


def text_report(report: dict[str, Any]) -> list[str]:
    """The report, one line per fact, as the command prints it."""
    out = [f"salvage of {report['partition']} into {report['out']}"]
    for i, r in enumerate(report["regions"], 1):
        first = r["findings"][0] if r["findings"] else None
        why = (
            f"{first['code']}: {first['message']}"
            if first
            else "checksum-valid batches with inconsistent offsets"
        )
        out.append(
            f"damaged region {i}: {r['segment']} bytes {r['start']}..{r['end']} ({r['size']} bytes): {why}"
        )
        for e in r["damaged_entries"]:
            out.append(
                f"  damaged entry at {e['position']} ({e['size']} bytes, {e['compression']}): {e['reason']}; "
                f"its header claims offsets {_offsets(e['claimed_base_offset'], e['claimed_last_offset'])}"
                + (f"; {e['partial_records']} unverified records decoded" if e["partial_records"] else "")
            )
        lost = r["lost_offsets"]
        t = r["lost_time"]
        if lost is None:
            out.append("  lost offsets: none")
        else:
            exact = "" if lost["exact"] else " (the end is what the damaged headers claim)"
            out.append(f"  lost offsets: {lost['first']}..{lost['last']} ({lost['count']} offsets){exact}")
        if t["claimed_min"] is not None:
            out.append(
                f"  lost time: after {t['after']}; the damaged headers claim {t['claimed_min']}..{t['claimed_max']}"
                " (unverified)"
            )
        ra = r["recovered_after"]
        if ra["batches"]:
            later = (
                f", {ra['in_later_segments']} of them in later segments" if ra["in_later_segments"] else ""
            )
            out.append(
                f"  recovered after it: offsets {_offsets(ra['first_offset'], ra['last_offset'])}, "
                f"{ra['batches']} batches ({_how(ra['how'])}){later}"
            )
        else:
            out.append("  recovered after it: nothing")
    lost_all = report["lost_offsets"]
    out.append(
        "lost for good: "
        + (", ".join(_offsets(x["first"], x["last"]) for x in lost_all) if lost_all else "no offsets")
    )
    for name in report["not_read"]:
        out.append(
            f"not read: {name}: a .deleted, .cleaned or .swap leftover (salvage reads live segments only)"
        )
    b = report["batches"]
    out.append(
        f"batches: {b['kept']} kept: {b['broker_keeps']} the broker's recovery keeps, "
        f"{b['past_the_recovery_point']} past its recovery point ({_how(b['how'])})"
    )
    rec = report["records"]
    files = rec["file"] + (f", {rec['parquet']}" if rec["parquet"] else "")
    out.append(f"records: {rec['count']} recovered ({rec['control']} control) -> {files}")
    for f in rec["decode_failures"]:
        out.append(f"  ERROR {f['code']} at {f['file']}:{f['position']}: {f['message']}")
    for f in rec["findings"]:
        out.append(f"  {f['code']} at {f['file']}:{f['position']}: {f['message']}")
    p = report["partial"]
    out.append(
        f"partial: {p['records']} unverified records from batches that fail their checksum -> {p['file']}"
    )
    c = report["clean_partition"]
    v = c["verify"]
    out.append(
        f"clean partition: {c['path']}: {len(c['segments'])} segments, {c['batches']} batches, "
        f"{c['log_bytes']} bytes; indexes by the reindex rule (index.interval.bytes {c['index_interval_bytes']}, "
        f"{c['index_interval_source']})"
    )
    if v is not None:
        out.append(f"  verify: {v['errors']} errors, {v['warnings']} warnings, {v['info']} info")
        out.extend(
            f"  {f['code']}: {f['file']}: {f['message']}" for f in v["findings"] if f["severity"] != "info"
        )
    for name, why in c["omitted"].items():
        out.append(f"  not copied: {name}: {why}")
    out.append("replay with Spark's kafka sink:")
    out.extend("  " + line if line else "" for line in report["replay"]["spark"].splitlines())
    return out
