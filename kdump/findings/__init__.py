"""The catalog of findings: every kind of damage or oddity kdump can report, in one place.

A finding is bad (or merely notable) bytes on disk, never an exception. Each code is a stable
kebab-case identifier, part of kdump's public interface like its exit codes: codes are added,
never renamed. Each carries the broker's consequence (what an Apache Kafka broker does when it meets
the condition), its severity, which follows from that consequence by one rule (`SEVERITY_OF`), and
the kdump command that repairs it. `man/kdump-findings.7` is generated from this table (a test keeps
them in step).

What a code means is `kinds`; the catalog itself is `segment_kinds` (a segment's log, records and
indexes) then `partition_kinds` (partitions, log dirs, what kdump could not check, tiered storage,
tarballs, payloads), in the man page's order. `kdump.store.hints` fills a finding's repair command in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kdump.findings.kinds import SEVERITY_OF, Consequence, FindingKind, Severity
from kdump.findings.partition_kinds import PARTITION_KINDS
from kdump.findings.segment_kinds import SEGMENT_KINDS

__all__ = ["CATALOG", "SEVERITY_OF", "Consequence", "Finding", "FindingKind", "Severity", "make_finding"]

CATALOG: dict[str, FindingKind] = {k.code: k for k in [*SEGMENT_KINDS, *PARTITION_KINDS]}


@dataclass(frozen=True, slots=True)
class Finding:
    """One finding at one place: code, severity, file, byte position, Kafka offset, message."""

    code: str
    severity: Severity
    file: str
    position: int | None
    offset: int | None
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> FindingKind:
        """The catalog entry of this finding's code."""
        return CATALOG[self.code]


def make_finding(
    code: str,
    file: str,
    message: str,
    *,
    position: int | None = None,
    offset: int | None = None,
    severity: Severity | None = None,
    **details: Any,
) -> Finding:
    """Build a finding of a catalogued code (its severity comes from the catalog)."""
    kind = CATALOG[code]
    return Finding(code, severity or kind.severity, file, position, offset, message, details)
