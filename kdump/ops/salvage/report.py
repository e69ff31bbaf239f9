"""The salvage report (`report.json`): per damaged region, what was lost and what was recovered.

Offsets lost are the gap between the kept batches either side of a region: exact, since every
kept batch verified. Offsets, counts and timestamps read from headers that failed their checksum
are given as `claimed_*`: they are probably right (damage is usually elsewhere in the batch) but
nothing proves it. The text report (`kdump.render.salvage`) is built from this same dictionary.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from kdump.formats.constants import CODEC_LABELS
from kdump.ops.salvage.kept import HOW, KeptBatch
from kdump.ops.salvage.plan import DamagedRegion

if TYPE_CHECKING:
    from kdump.ops.salvage.result import SalvageResult

REPORT_VERSION = 1

SPARK_REPLAY = """\
from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()  # with --packages org.apache.spark:spark-sql-kafka-0-10_2.13:<spark version>
records = spark.read.parquet("{out}/records.parquet").where("NOT isControl")
(records.select("key", "value", "headers", "topic", "partition")  # topic: replace to write elsewhere
    .repartition(1).sortWithinPartitions("offset")  # one writer, in offset order
    .write.format("kafka")
    .option("kafka.bootstrap.servers", "BROKER:9092")
    .option("kafka.enable.idempotence", "true")
    .save())"""


def _kept_row(k: KeptBatch) -> dict[str, Any]:
    h = k.header
    return {
        "position": h.position,
        "size": h.size,
        "base_offset": k.low,
        "last_offset": h.last_offset,
        "count": h.count,
        "how": k.how,
        "broker_keeps": k.broker_keeps,
    }


def _region_row(r: DamagedRegion, partial: dict[tuple[str, int], int]) -> dict[str, Any]:
    lost = r.lost_offsets
    claimed = r.claimed_timestamps
    same_segment = [k for k in r.recovered if k.segment is r.segment]
    later = len(r.recovered) - len(same_segment)
    recovered = r.recovered
    return {
        "segment": str(r.segment.log),
        "start": r.start,
        "end": r.end,
        "size": r.end - r.start,
        "findings": [
            {"code": f.code, "position": f.position, "offset": f.offset, "message": f.message}
            for f in r.findings
        ],
        "damaged_entries": [
            {
                "position": e.header.position,
                "size": e.header.size,
                "magic": e.header.magic,
                "compression": CODEC_LABELS.get(e.header.compression, f"unknown({e.header.compression})"),
                "crc_ok": e.header.crc_ok,
                "claimed_base_offset": e.header.base_offset,
                "claimed_last_offset": e.header.last_offset,
                "claimed_count": e.header.count,
                "reason": e.reason,
                "partial_records": partial.get((str(r.segment.log), e.header.position), 0),
            }
            for e in r.entries
        ],
        "lost_offsets": None
        if lost is None
        else {
            "first": lost[0],
            "last": lost[1],
            "count": lost[1] - lost[0] + 1,
            "exact": r.after is not None,
        },
        "lost_time": {
            "after": None if r.before is None else r.before.header.max_timestamp,
            "claimed_min": None if claimed is None else claimed[0],
            "claimed_max": None if claimed is None else claimed[1],
        },
        "recovered_after": {
            "first_offset": recovered[0].low if recovered else None,
            "last_offset": recovered[-1].header.last_offset if recovered else None,
            "batches": len(recovered),
            "records": sum(k.header.count or 1 for k in recovered),
            "how": dict(Counter(k.how for k in recovered)),
            "in_later_segments": later,
        },
        # The batches of this segment past the damage: the ones the broker's recovery throws away.
        "batches_recovered": [_kept_row(k) for k in same_segment],
    }


def build_report(result: SalvageResult, interval_bytes: int, interval_source: str) -> dict[str, Any]:
    """The whole report as a JSON-ready dictionary."""
    plan = result.plan
    part = plan.partition
    # Two fields of each kept batch, read from the plan's packed slots: no object per batch.
    kept = Counter(pair for sp in plan.segments for pair in sp.kept.hows())  # (how, broker_keeps)
    hows: dict[str, int] = {}  # in the order they first come, as the batches are
    for (how, _), n in kept.items():
        hows[how] = hows.get(how, 0) + n
    clean = result.clean
    v = clean.verify
    regions = [_region_row(r, result.partial_by_batch) for r in plan.regions]
    return {
        "type": "salvage-report",
        "version": REPORT_VERSION,
        "partition": str(part.path),
        "topic": part.topic,
        "partition_number": part.partition,
        "out": str(result.out),
        "segments": [
            {
                "file": str(sp.segment.log),
                "size": None if sp.summary is None else sp.summary.size,
                "valid_bytes": None if sp.summary is None else sp.summary.valid_bytes,
                "kept_batches": len(sp.kept),
                "kept_bytes": sum(size for _, size in sp.kept.spans()),
                "regions": len(sp.regions),
                "unreadable": sp.unreadable,
            }
            for sp in plan.segments
        ],
        "regions": regions,
        "lost_offsets": [{"first": a, "last": b} for a, b in plan.lost_offsets],
        "not_read": plan.not_read,
        "batches": {
            "kept": sum(kept.values()),
            "broker_keeps": sum(n for (_, keeps), n in kept.items() if keeps),
            "past_the_recovery_point": sum(n for (_, keeps), n in kept.items() if not keeps),
            "how": hows,
            "how_explained": HOW,
        },
        "records": {
            "file": "records.jsonl",
            "parquet": "records.parquet" if result.parquet else None,
            "count": result.records,
            "control": result.control_records,
            "decode_failures": [
                {"code": f.code, "file": f.file, "position": f.position, "message": f.message}
                for f in result.decode_failures
            ],
            "findings": [
                {"code": f.code, "file": f.file, "position": f.position, "message": f.message}
                for f in result.record_findings
                if f not in result.decode_failures
            ],
        },
        "partial": {
            "file": "partial-unverified.jsonl",
            "records": result.partial_records,
            "left_out_outside_lost_offsets": result.partial_dropped,
            "note": "decoded from batches whose checksum fails, before the damage: unverified",
        },
        "clean_partition": {
            "path": str(clean.path),
            "segments": clean.segments,
            "batches": clean.batches,
            "log_bytes": clean.log_bytes,
            "index_files": clean.index_files,
            "index_interval_bytes": interval_bytes,
            "index_interval_source": interval_source,
            "copied": clean.copied,
            "omitted": clean.omitted,
            "verify": None
            if v is None
            else {
                "errors": _count(v, "error"),
                "warnings": _count(v, "warning"),
                "info": _count(v, "info"),
                "findings": [
                    {"code": f.code, "severity": f.severity.label, "file": f.file, "message": f.message}
                    for f in v.findings
                ],
            },
        },
        "ok": result.ok,
        "replay": {"spark": SPARK_REPLAY.format(out=result.out)},
    }


def _count(report: Any, label: str) -> int:
    return sum(1 for f in report.findings if f.severity.label == label)
