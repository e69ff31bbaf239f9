"""What a finding code means: its broker consequence, the severity that follows from it by one rule,
and the command that repairs it (`PARTITION` and `OFFSET` filled in per finding)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntEnum

__all__ = ["REINDEX", "SEVERITY_OF", "TRIM_TAIL", "Consequence", "FindingKind", "Severity"]


class Severity(IntEnum):
    """How bad a finding is; ordered so `--fail-on` can compare."""

    INFO = 10
    WARNING = 20
    ERROR = 30

    @property
    def label(self) -> str:
        """Lower-case name used in text and JSON output."""
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        """Parse `info`, `warning` or `error`."""
        return cls[text.upper()]


class Consequence(Enum):
    """What a broker does when it meets a finding's condition: the one thing its severity follows.

    kdump is a gate: its verdict must be the broker's. The value is the label the man page shows.
    """

    REFUSES = "refuses"  # refuses to start, to load the partition, or takes its log dir offline
    SERVES_WRONG = "serves-wrong"  # serves wrong records or none, or answers a lookup with a wrong offset
    LOSES = "loses"  # records are lost: recovery truncates them, a follower drops them, or they are gone
    UNCHECKED = "unchecked"  # kdump could not check what it was given: a gate that did not look must not pass
    REPAIRS = "repairs"  # repairs it or sets it aside (at start-up or later) with no effect on the data
    OUTSIDE = "outside"  # not the broker's matter: clients, a schema registry, or kdump's own environment
    LEGAL = "legal"  # what a healthy broker writes or leaves


# The one rule: a finding is an error when the broker loses, refuses or mis-serves data (or kdump
# could not look), a warning when the broker copes without a data effect, info when it is legal.
SEVERITY_OF: dict[Consequence, Severity] = {
    Consequence.REFUSES: Severity.ERROR,
    Consequence.SERVES_WRONG: Severity.ERROR,
    Consequence.LOSES: Severity.ERROR,
    Consequence.UNCHECKED: Severity.ERROR,
    Consequence.REPAIRS: Severity.WARNING,
    Consequence.OUTSIDE: Severity.WARNING,
    Consequence.LEGAL: Severity.INFO,
}


@dataclass(frozen=True, slots=True)
class FindingKind:
    """What one finding code means; its severity is derived from its consequence, never set."""

    code: str
    consequence: Consequence
    where: str
    meaning: str
    broker: str
    repair: str | None

    @property
    def severity(self) -> Severity:
        """The severity the consequence gives (`SEVERITY_OF`)."""
        return SEVERITY_OF[self.consequence]


TRIM_TAIL = "kdump trim-tail --apply PARTITION"
REINDEX = "kdump reindex --apply PARTITION"
