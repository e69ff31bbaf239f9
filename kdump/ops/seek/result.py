"""One partition's `seek-by-time` answer, and its JSON object (documented in kdump-seek-by-time(1))."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kdump.findings import Finding
from kdump.store.hints import repair_command


@dataclass(frozen=True, slots=True)
class SeekResult:
    """One partition's answer. `offset` is None when there is none (not an error).

    `target` is "timestamp" (with `target_timestamp`), "earliest", "latest" or "max-timestamp".
    `segment` and `position` locate the batch holding the answer (for `latest`: the end of the
    valid log, where the next batch goes). `used_index` says the chosen segment's indexes gave the
    start position; `scan_fallback` that some index failed its checks and a scan replaced it;
    `used_mtime` that the chosen segment's largest timestamp is its file's modification time.
    """

    partition: str
    target: str
    target_timestamp: int | None
    offset: int | None
    timestamp: int | None
    leader_epoch: int | None
    segment: str | None
    position: int | None
    used_index: bool
    scan_fallback: bool
    used_mtime: bool
    segment_largest_timestamp: int | None
    log_start_offset: int | None
    log_end_offset: int | None
    high_watermark: int | None
    findings: tuple[Finding, ...] = ()
    # Tiered storage: whether the partition is tiered (None: unknown) and its local log start offset.
    tiered: bool | None = None
    local_log_start_offset: int | None = None
    notes: tuple[str, ...] = ()
    segments_examined: int = 0
    index_entries_read: int = 0
    batches_read: int = 0
    # A batch that may hold the answer could not be decompressed here (codec-unavailable): no answer.
    unknown: bool = False

    @property
    def answered(self) -> bool:
        """Whether there is an offset (a null answer is still an answer)."""
        return self.offset is not None

    def to_row(self) -> dict[str, Any]:
        """The JSON object of `kdump seek-by-time --format json` (documented in its man page)."""
        return {
            "type": "seek",
            "file": self.partition,
            "partition": self.partition,
            "target": self.target,
            "target_timestamp": self.target_timestamp,
            "offset": self.offset,
            "unknown": self.unknown,
            "timestamp": self.timestamp,
            "leader_epoch": self.leader_epoch,
            "segment": self.segment,
            "position": self.position,
            "used_index": self.used_index,
            "scan_fallback": self.scan_fallback,
            "used_mtime": self.used_mtime,
            "segment_largest_timestamp": self.segment_largest_timestamp,
            "log_start_offset": self.log_start_offset,
            "local_log_start_offset": self.local_log_start_offset,
            "tiered": self.tiered,
            "log_end_offset": self.log_end_offset,
            "high_watermark": self.high_watermark,
            "notes": list(self.notes),
            "findings": [
                {
                    "code": f.code,
                    "severity": f.severity.label,
                    "file": f.file,
                    "position": f.position,
                    "offset": f.offset,
                    "message": f.message,
                    "repair": repair_command(f),
                }
                for f in self.findings
            ],
            "cost": {
                "segments_examined": self.segments_examined,
                "index_entries_read": self.index_entries_read,
                "batches_read": self.batches_read,
            },
        }
