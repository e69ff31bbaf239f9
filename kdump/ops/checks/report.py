"""What `verify` reports per partition, file, log dir and directory of log dirs, and how it was asked.

(Beside `verify`, which yields them: the streamed verify of a broker's log dir builds them too.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kdump.findings import Finding, Severity
from kdump.ops.tiered.partitions import TieredFacts


@dataclass(frozen=True, slots=True)
class VerifyOptions:
    """How to verify."""

    deep: bool = False
    max_bytes: int | None = None
    jobs: int = 0  # 0: all cores
    # Accept a given path whose segments hold no byte (a new broker's empty partitions).
    allow_empty: bool = False


@dataclass(slots=True)
class PartitionReport:
    """Everything verify found in one partition directory or file given alone; a log dir ("log-dir") and a
    directory of log dirs ("log-dirs") get one too: their own entries' findings, their partitions' counts.
    `log_bytes` is what the `.log` files held when listed, `checked_bytes` what the scans covered: they
    differ only where `--max-bytes` asked for less (`limited`) or a finding says why."""

    label: str
    kind: str  # "partition" | "file" | "log-dir" | "log-dirs"
    findings: list[Finding] = field(default_factory=list)
    segments: int = 0
    batches: int = 0
    records: int = 0
    uncounted: int = 0  # batches whose records are not in `records` (their codec is missing here)
    size: int = 0
    valid_bytes: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    first_offset_known: bool = True  # else `first_offset` is a wrapper's last offset: the first is at most it
    log_bytes: int = 0
    checked_bytes: int = 0
    limited: bool = False
    partitions: int = 0  # log-dir and log-dirs reports: how many partitions they hold
    # It holds a file a broker writes (a segment file, even empty, a state file, meta.properties):
    # what a broker keeps, however little, as opposed to a path with nothing of Kafka's in it.
    recognised: bool = False
    taken_as: str | None = None  # for a path as given: what kdump took it to be
    # Where the log-start-offset checkpoint is below the first segment: tiered or not, both log starts.
    tiered: TieredFacts | None = None

    # Log dirs and directories of log dirs: findings by severity under them, their own included.
    under: dict[Severity, int] = field(default_factory=dict)

    def count(self, severity: Severity) -> int:
        """How many of this report's own findings have this severity."""
        if not self.findings:
            return 0  # most partitions: asked seven times each by the owner of a log dir's verify
        return sum(1 for f in self.findings if f.severity == severity)

    def total(self, severity: Severity) -> int:
        """How many findings of this severity it stands for: its own, and for a log dir (or a
        directory of log dirs) every one of the partitions under it."""
        return self.count(severity) if self.is_leaf else self.under.get(severity, 0)

    def worst(self) -> Severity | None:
        """The highest severity found, or None when clean."""
        return max((f.severity for f in self.findings), default=None)

    @property
    def is_leaf(self) -> bool:
        """A partition or a file: the reports whose counts the totals add up."""
        return self.kind in ("partition", "file")


def add_sums(report: PartitionReport, r: PartitionReport) -> None:
    """Add one report's counts (a partition or file as one partition) to a roll-up's: a log dir's of
    its partitions, and the overall summary's of every partition and file."""
    report.partitions += r.partitions if not r.is_leaf else 1
    report.segments += r.segments
    report.batches += r.batches
    report.records += r.records
    report.uncounted += r.uncounted
    report.size += r.size
    report.log_bytes += r.log_bytes
    report.checked_bytes += r.checked_bytes
    report.limited = report.limited or r.limited
