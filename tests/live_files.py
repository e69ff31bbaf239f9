"""What the live-file tests share (tests/scan/test_live_files.py with the mapping guard,
tests/scan/test_live_files_unguarded.py without it): a segment to cut, the compiled and reference
paths in turn, and a segment check with a hook run between the scan's batches."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import SegmentBuilder, records

from kdump.formats import fast_records, fast_walk
from kdump.model.segment import Segment
from kdump.ops.checks import segment as segment_check


def segment(tmp_path: Path, batches: int = 400, per_batch: int = 20) -> Path:
    b = SegmentBuilder()
    for i in range(batches):
        b.add_v2(records(per_batch, start_ts=1_700_000_000_000 + i * 100, value_size=200))
    part = tmp_path / "orders-0"
    part.mkdir(parents=True)
    return b.write(part)


@pytest.fixture(params=["compiled", "reference"])
def path_kind(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "compiled" and fast_walk.compiled is None:
        pytest.skip("the compiled walk is not built here")
    saved = fast_walk.compiled, fast_records.compiled
    if request.param == "reference":
        fast_walk.compiled = fast_records.compiled = None
    try:
        yield request.param
    finally:
        fast_walk.compiled, fast_records.compiled = saved


def check_with_hook(log: Path, hook: object, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """check_segment, with `hook` run after the scan's second event (between batches)."""
    real = segment_check.scan_log

    def scan(*args: object, **kwargs: object) -> Iterator[object]:
        for i, ev in enumerate(real(*args, **kwargs)):  # type: ignore[arg-type]
            if i == 1:
                hook()  # type: ignore[operator]
            yield ev

    monkeypatch.setattr(segment_check, "scan_log", scan)
    seg = Segment(
        base_offset=0, log=log, index=log.with_suffix(".index"), timeindex=log.with_suffix(".timeindex")
    )
    return [f.code for f in segment_check.check_segment(seg, deep=True).findings]
