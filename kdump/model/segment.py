"""A segment: a `.log` file and the index files that share its base offset."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kdump.errors import KdumpError
from kdump.formats.batch import BatchHeader
from kdump.formats.records import Record
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
    # Its files were found regular by a listing's stat: opened without another look (`open_regular`).
    probed: bool = field(default=False, compare=False, repr=False)

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


def base_offset_from_content(path: Path) -> int | None:
    """The offset of a log's first entry, for a segment whose name does not give it.

    A v2 batch carries its base offset; a legacy wrapper carries its last inner offset, so the
    first record's offset is decoded instead. None when no entry decodes (the scan then reports why).
    """
    try:
        with open_buffer(path) as buf:
            for ev in scan_log(buf, file=str(path), resync=False):
                if isinstance(ev, BatchHeader):
                    if ev.base_offset is not None:
                        return ev.base_offset
                    break
            else:
                return None
            for ev in scan_log(buf, file=str(path), deep=True, resync=False):
                if isinstance(ev, Record):
                    return ev.offset
    except KdumpError:
        return None
    return None
