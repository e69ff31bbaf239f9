"""Records decoded from batches that fail their checksum, before the damage: offered, unverified.

A batch whose checksum fails is lost as a batch; but when its header still frames it and its
codec frame decompresses up to the damage (`kdump.formats.codec_prefix`), the records that decode
before it are what the producer wrote, most probably. Nothing proves it, so they go to their own
output, marked unverified, and never into the clean partition or the verified records.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from kdump.formats.batch import BatchHeader
from kdump.formats.constants import V2_HEADER_SIZE
from kdump.formats.records import Record, decode_v2_records
from kdump.model.segment import Segment
from kdump.ops.salvage.plan import SalvagePlan
from kdump.scan.source import open_buffer


@dataclass(frozen=True, slots=True)
class PartialBatch:
    """Records decoded from a batch that failed its checksum, before the damage. Unverified."""

    segment: Segment
    batch: BatchHeader
    records: tuple[Record, ...]
    stopped: str | None  # why decoding stopped (None: every record the header counts decoded)
    dropped: int  # records decoded with offsets outside the lost range, left out


def partial_batches(plan: SalvagePlan) -> Iterator[PartialBatch]:
    """For each v2 batch in a damaged region that failed its checksum, the records that decode.

    Only records whose offsets lie in the region's lost offsets are offered: nothing shadows a
    verified record.
    """
    from kdump.formats.codec_prefix import decompress_prefix

    for sp in plan.segments:
        seg = sp.segment
        todo = [
            (r, e.header)
            for r in sp.regions
            for e in r.entries
            if not e.header.crc_ok and e.header.magic == 2 and e.header.size > V2_HEADER_SIZE
        ]
        if not todo:
            continue
        assert seg.log is not None
        with open_buffer(seg.log) as buf:
            for region, h in todo:
                lost = region.lost_offsets
                if lost is None:
                    continue
                payload = buf[h.position + V2_HEADER_SIZE : h.position + h.size]
                data, codec_error = decompress_prefix(h.compression, payload)
                records, error = decode_v2_records(data, h)
                keep = tuple(r for r in records if lost[0] <= r.offset <= lost[1])
                stopped = codec_error or (None if error is None else str(error))
                yield PartialBatch(seg, h, keep, stopped, len(records) - len(keep))
