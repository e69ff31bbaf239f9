"""What the scanner yields: batches (`BatchHeader`), records (`Record`), findings and one summary.

The event types of the stream are the formats' own `BatchHeader` and `Record` named tuples (cheap
to build, and `_asdict()` serves JSON), the catalog's `Finding`, and a final `ScanSummary`, always
last and exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kdump.findings import Finding
from kdump.formats.batch import BatchHeader
from kdump.formats.records import Record


class ScanMode(StrEnum):
    """How far the scanner goes past damage."""

    # Keep going past a bad batch while framing holds; resync after framing is lost.
    FORENSIC = "forensic"
    # Stop exactly where the broker's LogSegment.recover stops.
    RECOVERY = "recovery"


class StopReason(StrEnum):
    """Why the scan ended."""

    END = "end"
    LIMIT = "limit"
    PARTIAL_TRAILING_BATCH = "partial-trailing-batch"
    ZERO_FILLED_TAIL = "zero-filled-tail"
    FRAMING_LOST = "framing-lost"
    CORRUPT_BATCH = "corrupt-batch"


@dataclass(frozen=True, slots=True)
class Shown:
    """What a filtered dump showed of one file: batches, records (None where the batches' records
    were not read and a legacy wrapper gives no count), and their offsets."""

    batches: int
    records: int | None
    first_offset: int | None
    last_offset: int | None


@dataclass(frozen=True, slots=True)
class ScanSummary:
    """The end of one file's scan.

    `valid_bytes` is the broker's recovery count: the end of the last batch before the first one
    that fails `ensureValid()` (size or checksum) or is incomplete; the same in both modes. The
    offsets and timestamps describe that valid prefix, as the broker would see it.
    `salvageable_batches` counts checksum-valid batches found after it (forensic mode).
    `start` and `scanned_bytes` are the positions the scan began and ended at.
    """

    file: str
    size: int
    start: int
    valid_bytes: int
    scanned_bytes: int
    batch_count: int
    valid_batch_count: int
    record_count: int
    first_offset: int | None
    last_offset: int | None
    max_timestamp: int
    offset_of_max_timestamp: int | None
    stop_reason: StopReason
    salvageable_batches: int
    findings_info: int
    findings_warning: int
    findings_error: int
    deep: bool
    # Batches whose records were needed (a legacy wrapper's always, any batch's when `deep`) but not
    # decompressed, their codec's library missing here: their records are not in `record_count`. And whether `first_offset` is the first
    # offset, or only the last offset of such a wrapper (the first is then unknown, at most that).
    uncounted_batches: int = 0
    first_offset_known: bool = True
    # A filtered dump (`--from-offset`, `--key`, ...): what it showed of the file, else None.
    shown: Shown | None = None

    @property
    def next_offset(self) -> int | None:
        """The offset after the last valid one (the log end offset if this is the last segment)."""
        return None if self.last_offset is None else self.last_offset + 1

    @property
    def checked_bytes(self) -> int:
        """Bytes from `start` the scan accounted for: walked as batches, or named by a finding (a
        damaged stretch, a torn or zero-filled tail). Short of the file's end only where a limit
        (`max_bytes`) or recovery mode's stop at the first corrupt batch ended the scan."""
        if self.stop_reason in (StopReason.LIMIT, StopReason.CORRUPT_BATCH):
            return self.scanned_bytes - self.start
        return self.size - self.start

    @property
    def partial(self) -> bool:
        """Whether the scan covered less than the whole file: it started after position 0 (at an
        index entry) or stopped at a `max_bytes` limit. It read positions `start`..`scanned_bytes`
        only, and its findings and counts judge nothing outside them."""
        return self.start > 0 or self.stop_reason == StopReason.LIMIT

    @property
    def invalid_bytes(self) -> int:
        """Bytes the broker's recovery would truncate."""
        return self.size - self.valid_bytes


Event = BatchHeader | Record | Finding | ScanSummary
