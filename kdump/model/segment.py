"""A segment: a `.log` file and the index files that share its base offset."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kdump.scan.events import Event, ScanMode
from kdump.scan.log_scanner import scan_log
from kdump.scan.source import open_buffer


@dataclass(frozen=True, slots=True)
class Segment:
    """One segment of a partition. Paths are None where the file does not exist.

    `suffix` is "" for a live segment, or "deleted", "cleaned" or "swap" for a leftover.
    """

    base_offset: int
    log: Path | None
    index: Path | None = None
    timeindex: Path | None = None
    txnindex: Path | None = None
    suffix: str = ""

    @property
    def name(self) -> str:
        """The 20-digit base offset that names the segment's files."""
        return f"{self.base_offset:020d}"

    def scan(
        self,
        *,
        deep: bool = False,
        mode: ScanMode = ScanMode.FORENSIC,
        max_bytes: int | None = None,
        start: int = 0,
        label: str | None = None,
    ) -> Iterator[Event]:
        """Scan this segment's `.log` (which must exist)."""
        assert self.log is not None
        with open_buffer(self.log) as buf:
            yield from scan_log(
                buf,
                file=label or str(self.log),
                base_offset=self.base_offset,
                deep=deep,
                mode=mode,
                max_bytes=max_bytes,
                start=start,
            )
