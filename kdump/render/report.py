"""Rendering verify reports: text lines, JSON rows, JUnit XML."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from kdump.findings import Severity
from kdump.ops.verify import PartitionReport
from kdump.render.rows import finding_row
from kdump.render.text import finding_line


def report_summary_row(r: PartitionReport) -> dict[str, Any]:
    """One partition's verify summary as a JSON object."""
    return {
        "type": "summary",
        "file": r.label,
        "scope": r.kind,
        "segments": r.segments,
        "batches": r.batches,
        "records": r.records,
        "size": r.size,
        "valid_bytes": r.valid_bytes,
        "first_offset": r.first_offset,
        "last_offset": r.last_offset,
        "findings": {s.label: r.count(s) for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)},
    }


def overall_row(reports: Sequence[PartitionReport], exit_code: int) -> dict[str, Any]:
    """The overall verify summary as a JSON object."""
    return {
        "type": "summary",
        "file": None,
        "scope": "overall",
        "partitions": len(reports),
        "segments": sum(r.segments for r in reports),
        "batches": sum(r.batches for r in reports),
        "records": sum(r.records for r in reports),
        "size": sum(r.size for r in reports),
        "findings": {
            s.label: sum(r.count(s) for r in reports)
            for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)
        },
        "exit_code": exit_code,
    }


def report_lines(r: PartitionReport) -> list[str]:
    """Text lines: one per finding, then the partition's summary."""
    lines = [finding_line(f) for f in r.findings]
    offsets = "no offsets" if r.first_offset is None else f"offsets {r.first_offset}..{r.last_offset}"
    status = "ok" if r.count(Severity.ERROR) == 0 else "DAMAGED"
    lines.append(
        f"{status}: {r.label}: {r.segments} segments, {r.batches} batches, {r.records} records, {offsets}; "
        f"{r.count(Severity.ERROR)} errors, {r.count(Severity.WARNING)} warnings, {r.count(Severity.INFO)} info"
    )
    return lines


def finding_rows(r: PartitionReport) -> list[dict[str, Any]]:
    """JSON rows of a report's findings."""
    return [finding_row(f) for f in r.findings]


def junit_xml(reports: Sequence[PartitionReport], fail_on: Severity) -> str:
    """JUnit XML: one test case per partition, failed when it has findings at or above `fail_on`."""
    failures = sum(1 for r in reports if (r.worst() or 0) >= fail_on)
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<testsuites name="kdump verify" tests="{len(reports)}" failures="{failures}">',
        f'<testsuite name="kdump verify" tests="{len(reports)}" failures="{failures}" errors="0" skipped="0">',
    ]
    for r in reports:
        out.append(f'<testcase classname="kdump.verify" name={quoteattr(r.label)}>')
        bad = [f for f in r.findings if f.severity >= fail_on]
        if bad:
            message = f"{len(bad)} findings at or above {fail_on.label}"
            body = "\n".join(finding_line(f) for f in bad)
            out.append(f'<failure message={quoteattr(message)} type="{bad[0].code}">{escape(body)}</failure>')
        others = [f for f in r.findings if f.severity < fail_on]
        if others:
            out.append(f"<system-out>{escape(chr(10).join(finding_line(f) for f in others))}</system-out>")
        out.append("</testcase>")
    out.append("</testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"
