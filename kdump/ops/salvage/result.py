"""A finished salvage: the clean partition written, the records and the report (`output` writes it,
`report` and `kdump.render.salvage` read it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kdump.findings import Finding, Severity
from kdump.ops.checks.verify import PartitionReport
from kdump.ops.salvage.plan import SalvagePlan

__all__ = ["RECORDS_MISSING", "CleanPartition", "SalvageResult"]

RECORDS_MISSING = ("record-decode-failed", "decompression-failed", "codec-unavailable")


@dataclass(slots=True)
class CleanPartition:
    """What the clean partition directory holds."""

    path: Path
    segments: list[str] = field(default_factory=list)
    log_bytes: int = 0
    batches: int = 0
    index_files: list[str] = field(default_factory=list)
    copied: list[str] = field(default_factory=list)
    omitted: dict[str, str] = field(default_factory=dict)  # file -> why it is not there
    verify: PartitionReport | None = None


@dataclass(slots=True)
class SalvageResult:
    """A finished salvage: the plan, what was written, and the report."""

    plan: SalvagePlan
    out: Path
    clean: CleanPartition
    records: int = 0
    control_records: int = 0
    partial_records: int = 0
    partial_dropped: int = 0
    partial_by_batch: dict[tuple[str, int], int] = field(default_factory=dict)
    # Findings of kept batches' records (`--deep` checks): the ones that lose records fail the salvage.
    record_findings: list[Finding] = field(default_factory=list)
    parquet: bool = False
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """The clean partition verified without errors and every kept batch's records decoded."""
        v = self.clean.verify
        return v is not None and v.count(Severity.ERROR) == 0 and not self.decode_failures

    @property
    def decode_failures(self) -> list[Finding]:
        """Record findings that mean records of a kept batch are missing."""
        return [f for f in self.record_findings if f.code in RECORDS_MISSING]
