"""A scan that reads part of a log judges only the bytes it read."""

from __future__ import annotations

from builders import SegmentBuilder, records
from hypothesis import given, settings
from hypothesis import strategies as st

from kdump.findings import Finding
from kdump.formats.batch import BatchHeader
from kdump.scan.events import ScanSummary
from kdump.scan.log_scanner import scan_log


def _log(base: int, first: int) -> tuple[bytes, list[int]]:
    """Five batches of offsets first.. in a segment named `base`."""
    seg = SegmentBuilder(base_offset=base, next_offset=first)
    for _ in range(5):
        seg.add_v2(records(3))
    data = bytes(seg.data)
    positions = [ev.position for ev in scan_log(data, base_offset=base) if isinstance(ev, BatchHeader)]
    return data, positions


def test_segment_base_mismatch_only_from_the_files_start() -> None:
    data, positions = _log(base=100, first=110)
    whole = [ev.code for ev in scan_log(data, base_offset=100) if isinstance(ev, Finding)]
    assert whole == ["segment-base-mismatch"]
    later = list(scan_log(data, base_offset=100, start=positions[2]))
    assert [ev for ev in later if isinstance(ev, Finding)] == []
    summary = later[-1]
    assert isinstance(summary, ScanSummary)
    assert summary.partial
    assert summary.start == positions[2]
    assert summary.scanned_bytes == len(data)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 4), st.integers(0, 4), st.booleans())
def test_a_partial_reads_findings_lie_inside_its_range(start_batch: int, end_batch: int, gap: bool) -> None:
    data, positions = _log(base=0, first=7 if gap else 0)
    start = positions[start_batch]
    limit = max(0, positions[end_batch] - start) + 1
    events = list(scan_log(data, base_offset=0, start=start, max_bytes=limit))
    summary = events[-1]
    assert isinstance(summary, ScanSummary)
    assert summary.partial == (start > 0 or summary.stop_reason == "limit")
    for ev in events:
        if isinstance(ev, Finding):
            assert ev.position is not None
            assert summary.start <= ev.position <= summary.scanned_bytes
            assert ev.code != "segment-base-mismatch" or start == 0
