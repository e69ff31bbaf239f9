"""The one streaming scanner: batches, records, findings and a summary, in position order."""

from __future__ import annotations

from kdump.scan.events import Event, ScanMode, ScanSummary, StopReason
from kdump.scan.log_scanner import scan_log
from kdump.scan.source import open_buffer

__all__ = ["Event", "ScanMode", "ScanSummary", "StopReason", "open_buffer", "scan_log"]
