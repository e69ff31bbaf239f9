"""Reading the kept batches of a salvage plan: in partition order, with their records, in flat memory.

`kept_batches` walks the mapped segments and hands back the pages it has passed (`PageRelease`);
`batch_records` decodes a kept batch the reference way, its findings going to a list.
"""

from __future__ import annotations

import contextlib
import mmap
from collections.abc import Iterator
from dataclasses import dataclass

from kdump.findings import Finding
from kdump.formats.batch import BatchHeader
from kdump.formats.records import Record
from kdump.model.segment import Segment
from kdump.ops.salvage.plan import SalvagePlan
from kdump.scan.batch_checks import decode_batch_records
from kdump.scan.source import open_buffer


class PageRelease:
    """Hands back the mapped pages of a segment already read, every 2 MiB, so that resident
    memory stays flat however big the segment (the pages stay in the page cache). Salvage holds
    pyarrow and a row group besides: 16 MiB of passed pages was a tenth of its peak."""

    EVERY = 2 << 20

    def __init__(self, buf: memoryview) -> None:
        mm = buf.obj
        self._mm = mm if isinstance(mm, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED") else None
        self._done = 0

    def __call__(self, position: int) -> None:
        upto = position - position % mmap.PAGESIZE
        if self._mm is None or upto - self._done < self.EVERY:
            return
        with contextlib.suppress(OSError, ValueError):
            self._mm.madvise(mmap.MADV_DONTNEED, self._done, upto - self._done)
        self._done = upto


@dataclass(frozen=True, slots=True)
class RecoveredRecord:
    """A record of a kept batch."""

    segment: Segment
    batch: BatchHeader
    record: Record


def kept_batches(plan: SalvagePlan) -> Iterator[tuple[Segment, memoryview, BatchHeader]]:
    """Every kept batch with the mapped segment it is in, in partition order; the pages of what
    was passed are handed back as it goes (memory stays flat)."""
    for sp in plan.segments:
        if not sp.kept:
            continue
        seg = sp.segment
        assert seg.log is not None
        with open_buffer(seg.log) as buf:
            release = PageRelease(buf)
            for h in sp.kept.headers():
                yield seg, buf, h
                release(h.position + h.size)


def batch_records(
    seg: Segment, buf: memoryview, h: BatchHeader, failures: list[Finding] | None = None
) -> list[Record]:
    """A kept batch's records the reference way; what keeps some from decoding (a codec library
    missing, a payload that does not decompress) goes to `failures`."""
    records, findings = decode_batch_records(buf, h, str(seg.log))
    if failures is not None:
        failures.extend(f for f in findings if f.severity.label != "info")
    return records


def recovered_batches(
    plan: SalvagePlan, failures: list[Finding] | None = None
) -> Iterator[tuple[Segment, BatchHeader, list[Record]]]:
    """Every kept batch with its records, in partition order (control records included).

    A checksum-valid batch whose records still do not decode (a codec library missing, a
    payload that does not decompress) yields what decodes; its findings go to `failures`.
    """
    for seg, buf, h in kept_batches(plan):
        yield seg, h, batch_records(seg, buf, h, failures)


def recovered_records(plan: SalvagePlan, failures: list[Finding] | None = None) -> Iterator[RecoveredRecord]:
    """Every record of every kept batch, in partition order (see `recovered_batches`)."""
    for seg, header, records in recovered_batches(plan, failures):
        for r in records:
            yield RecoveredRecord(seg, header, r)
