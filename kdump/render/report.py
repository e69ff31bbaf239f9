"""Rendering verify reports: text lines, JSON rows, JUnit XML."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kdump.findings import Finding, Severity
from kdump.ops.checks.report import PartitionReport, add_sums

# `render.rows` and `render.text` (record and payload rendering, the internal topics' decoders) are
# imported where a finding is rendered: a clean verify never loads them.


def report_summary_row(r: PartitionReport) -> dict[str, Any]:
    """One partition's verify summary as a JSON object."""
    return {
        "type": "summary",
        "file": r.label,
        "scope": r.kind,
        "segments": r.segments,
        "batches": r.batches,
        **records_fields(r.records, r.uncounted),
        "size": r.size,
        "valid_bytes": r.valid_bytes,
        # A wrapper's last offset is never shown as the first: the first is unknown, at most it.
        "first_offset": r.first_offset if r.first_offset_known else None,
        "first_offset_at_most": None if r.first_offset_known else r.first_offset,
        "last_offset": r.last_offset,
        **coverage_fields(r.log_bytes, r.checked_bytes, r.limited),
        "partitions": None if r.is_leaf else r.partitions,
        "taken_as": r.taken_as,
        **tiered_fields(r),
        "findings": {s.label: r.total(s) for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)},
    }


def records_fields(records: int, uncounted: int) -> dict[str, Any]:
    """The record count as JSON fields: null (unknown, never 0) when batches were left uncounted."""
    return {
        "records": records if not uncounted else None,
        "records_counted": records,
        "uncounted_batches": uncounted,
    }


def records_text(records: int, uncounted: int) -> str:
    """`51 records`, or where batches could not be decompressed, that the count is unknown."""
    if not uncounted:
        return f"{records} records"
    return f"unknown records ({records} counted, {uncounted} batches not decompressed)"


def offsets_text(r: PartitionReport) -> str:
    """`offsets 749..799`; a first offset known only as a wrapper's last offset is shown as a bound."""
    if r.first_offset is None:
        return "no offsets"
    if not r.first_offset_known:
        return f"offsets ?..{r.last_offset} (the first unknown, at most {r.first_offset})"
    return f"offsets {r.first_offset}..{r.last_offset}"


def status_text(r: PartitionReport) -> str:
    """ok, DAMAGED (errors), or UNCHECKED: no error, but what a codec missing here hid was not checked."""
    if r.total(Severity.ERROR):
        return "DAMAGED"
    return "UNCHECKED" if r.uncounted or any(f.code == "codec-unavailable" for f in r.findings) else "ok"


def tiered_fields(r: PartitionReport) -> dict[str, Any]:
    """A tiered partition's log starts (null but where its checkpoint is below its first local segment)."""
    t = r.tiered
    return {
        "tiered": t.tiered if t is not None else None,
        "log_start_offset": t.log_start_offset if t is not None else None,
        "local_log_start_offset": t.local_log_start_offset if t is not None else None,
    }


def tiered_text(r: PartitionReport) -> str:
    """`, log start offset 37 (37..279 in remote storage)` for a tiered partition."""
    if r.tiered is None or not r.tiered.tiered:
        return ""
    lso, local = r.tiered.log_start_offset, r.tiered.local_log_start_offset
    if lso is None or local is None:
        return ""
    held = f"{lso}..{local - 1} in remote storage" if lso < local else "nothing in remote storage"
    return f", log start offset {lso} ({held})"


def coverage_fields(log_bytes: int, checked_bytes: int, limited: bool) -> dict[str, Any]:
    """How much was checked of how much was there, as JSON fields."""
    return {"log_bytes": log_bytes, "checked_bytes": checked_bytes, "limited": limited}


def coverage_text(log_bytes: int, checked_bytes: int, limited: bool) -> str:
    """`checked 1024 of 2048 log bytes (50.0%, limited by --max-bytes)`."""
    share = 100.0 if log_bytes == 0 else 100.0 * checked_bytes / log_bytes
    why = ", limited by --max-bytes" if limited else ""
    return f"checked {checked_bytes} of {log_bytes} log bytes ({share:.1f}%{why})"


class Tally:
    """What the overall summary counts, added up as reports go by: a verify of 100,000 partitions
    need not keep their reports to say its total."""

    __slots__ = ("findings", "log_dirs", "sums")

    def __init__(self) -> None:
        self.log_dirs = 0
        self.findings = dict.fromkeys(Severity, 0)
        # Every partition's and file's counts; the findings are counted above, log dirs' own included.
        self.sums = PartitionReport("overall", "log-dirs")

    def add(self, r: PartitionReport) -> None:
        """Count one report in."""
        self.log_dirs += r.kind == "log-dir"
        for s in self.findings:
            self.findings[s] += r.count(s)
        if r.is_leaf:
            add_sums(self.sums, r)


def overall_row(reports: Sequence[PartitionReport] | Tally, exit_code: int) -> dict[str, Any]:
    """The overall verify summary as a JSON object (counts of partitions and files given alone;
    findings of every report, log dirs' own included)."""
    if isinstance(reports, Tally):
        t = reports
    else:
        t = Tally()
        for r in reports:
            t.add(r)
    s = t.sums
    return {
        "type": "summary",
        "file": None,
        "scope": "overall",
        "log_dirs": t.log_dirs,
        "partitions": s.partitions,
        "segments": s.segments,
        "batches": s.batches,
        **records_fields(s.records, s.uncounted),
        "size": s.size,
        **coverage_fields(s.log_bytes, s.checked_bytes, s.limited),
        "findings": {sev.label: t.findings[sev] for sev in (Severity.ERROR, Severity.WARNING, Severity.INFO)},
        "exit_code": exit_code,
    }


def worth_a_line(r: PartitionReport, floor: Severity) -> bool:
    """Whether a report is shown under a severity floor (`verify --show`): always at info; above it,
    where it has a finding at or above the floor, or is not plainly ok (unchecked records)."""
    if floor <= Severity.INFO:
        return True
    return any(r.total(s) for s in Severity if s >= floor) or status_text(r) != "ok"


def report_lines(r: PartitionReport, shown: Sequence[Finding] | None = None) -> list[str]:
    """Text lines: one per finding (those `shown`, by default all), then the partition's summary."""
    lines: list[str] = []
    listed = r.findings if shown is None else shown
    if listed:
        from kdump.render.text import finding_line

        lines = [finding_line(f) for f in listed]
    status = status_text(r)
    findings = f"{r.total(Severity.ERROR)} errors, {r.total(Severity.WARNING)} warnings, {r.total(Severity.INFO)} info"
    coverage = coverage_text(r.log_bytes, r.checked_bytes, r.limited)
    if r.is_leaf:
        records = records_text(r.records, r.uncounted)
        counts = f"{r.segments} segments, {r.batches} batches, {records}, {offsets_text(r)}{tiered_text(r)}"
    else:
        records = records_text(r.records, r.uncounted)
        counts = f"{r.partitions} partitions, {r.segments} segments, {r.batches} batches, {records}"
    taken = f" ({r.taken_as})" if r.taken_as is not None and not r.is_leaf else ""
    lines.append(f"{status}: {r.label}{taken}: {counts}; {findings}; {coverage}")
    return lines


def finding_rows(r: PartitionReport, shown: Sequence[Finding] | None = None) -> list[dict[str, Any]]:
    """JSON rows of a report's findings (those `shown`, by default all)."""
    findings = r.findings if shown is None else shown
    if not findings:
        return []
    from kdump.render.rows import finding_row

    return [finding_row(f) for f in findings]


def junit_xml(reports: Sequence[PartitionReport], fail_on: Severity) -> str:
    """JUnit XML: one test case per partition, failed when it has findings at or above `fail_on`."""
    # Imported here: the module pulls in urllib.request (ssl, sockets, email), ~20 ms at every start.
    from xml.sax.saxutils import escape, quoteattr

    from kdump.render.text import finding_line

    failures = sum(1 for r in reports if (r.worst() or 0) >= fail_on)
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<testsuites name="kdump verify" tests="{len(reports)}" failures="{failures}">',
        f'<testsuite name="kdump verify" tests="{len(reports)}" failures="{failures}" errors="0" skipped="0">',
    ]
    leaves = [r for r in reports if r.is_leaf]
    totals = coverage_fields(
        sum(r.log_bytes for r in leaves), sum(r.checked_bytes for r in leaves), any(r.limited for r in leaves)
    )
    out.append("<properties>")
    out.extend(f'<property name="{key}" value="{str(value).lower()}"/>' for key, value in totals.items())
    out.append("</properties>")
    for r in reports:
        if not r.is_leaf and not r.findings:
            continue  # a log dir is a test case of its own only for its own entries' findings
        out.append(f'<testcase classname="kdump.verify" name={quoteattr(r.label)}>')
        out.append("<properties>")
        for key, value in coverage_fields(r.log_bytes, r.checked_bytes, r.limited).items():
            out.append(f'<property name="{key}" value="{str(value).lower()}"/>')
        out.append("</properties>")
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
