"""Ranges of message versions in Kafka's notation (`none`, `3`, `1-2`, `4+`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

MAX_VERSION: Final = 0x7FFF


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive range of message versions; `lo > hi` is the empty range."""

    lo: int
    hi: int

    @classmethod
    def parse(cls, spec: str) -> Versions:
        """Parse Kafka's version-range notation: `none`, `3`, `1-2`, `4+`."""
        spec = spec.strip()
        if spec == "none":
            return NO_VERSIONS
        if spec.endswith("+"):
            return cls(int(spec[:-1]), MAX_VERSION)
        lo, sep, hi = spec.partition("-")
        return cls(int(lo), int(hi) if sep else int(lo))

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version <= self.hi

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi == MAX_VERSION:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


NO_VERSIONS: Final = Versions(1, 0)
ALL_VERSIONS: Final = Versions(0, MAX_VERSION)
