"""The checks of a partition's offsets across its batches and segments, and the hints they change.

* Overlaps: a segment whose batches reach the next segment's base offset.
* Offset holes: offsets missing between batches (within a segment, or between one segment's last
  batch and the next segment's base offset). Healthy brokers leave them only in compacted topics
  (the cleaner removes records and merges segments); a topic whose `cleanup.policy` is `delete`
  never has one, since offsets are assigned one after another and a segment is rolled at the log
  end offset. Transaction markers take offsets of their own, so they are no hole; DeleteRecords and
  retention move the log start, never open a hole between batches; the first segment's own start is
  not judged (the log start offset may be anywhere), nor are legacy compressed wrappers, whose first
  offset the header does not give. The policy comes from the KRaft metadata log beside the partition
  (its newest snapshot and records), else from the log dir's `cleaner-offset-checkpoint` (the cleaner
  only cleans compacted logs), else from a batch with fewer records than offsets (only the cleaner
  writes one); the two internal compacted topics are known. Compacted: nothing new
  (the scanner's `offset-gap` info stays); delete: an error; unknown: a warning.
* Salvage first: when a trim would take valid data out of the log (valid batches after the recovery
  cut, or later segments), the repair hint of the damage names `kdump salvage` before trim-tail.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from kdump.errors import DecodeError, KdumpError
from kdump.findings import CATALOG, Finding, Severity, make_finding
from kdump.formats.filenames import parse_partition_dir_name
from kdump.model.partition import PartitionDir
from kdump.ops.checks.segment import SegmentResult
from kdump.ops.common.topic_config import find_metadata_log, topic_configs
from kdump.scan.source import read_small_file

# Kafka creates these with cleanup.policy=compact.
COMPACTED_INTERNAL = frozenset({"__consumer_offsets", "__transaction_state"})
TRIM_REPAIR = "kdump trim-tail --apply PARTITION"


def check_overlaps(results: Sequence[SegmentResult]) -> Iterator[Finding]:
    """A segment whose last offset reaches the next segment's base offset."""
    for a, b in itertools.pairwise(results):
        if a.summary is None or a.summary.last_offset is None:
            continue
        if a.summary.last_offset >= b.segment.base_offset:
            yield make_finding(
                "segment-overlap",
                str(a.segment.log),
                f"segment {a.segment.name} ends at offset {a.summary.last_offset}, at or above the next "
                f"segment's base offset {b.segment.base_offset}",
                offset=b.segment.base_offset,
                next_segment=str(b.segment.log),
            )


def _holes(results: Sequence[SegmentResult]) -> list[tuple[str, int, int, Path | None]]:
    """(file, first missing offset, how many, the segment before it when no segment holds the
    missing offsets at all: a segment gone from between two others) for every hole between valid
    batches."""
    holes: list[tuple[str, int, int, Path | None]] = []
    expected: int | None = None  # the offset after the last batch of a wholly valid segment
    before: Path | None = None
    for r in results:
        s = r.summary
        if s is None or s.partial:
            return holes  # not read to its end: what follows cannot be judged
        file = str(r.segment.log)
        if expected is not None and r.segment.base_offset > expected:
            holes.append((file, expected, r.segment.base_offset - expected, before))
        for f in r.findings:
            if f.code == "offset-gap" and f.offset is not None:
                holes.append((file, f.offset, int(f.details.get("gap", 1)), None))
            elif f.code == "segment-base-mismatch" and f.offset is not None and expected is not None:
                holes.append((file, r.segment.base_offset, f.offset - r.segment.base_offset, None))
        before = r.segment.log
        if s.valid_bytes < s.size:
            expected = None  # damage: its own findings say what is wrong; judge again from the next
        elif s.last_offset is not None:
            expected = s.last_offset + 1
        elif expected is not None:
            expected = max(expected, r.segment.base_offset)
    return holes


@lru_cache(maxsize=8)
def _metadata_configs(meta: Path, _stamp: float) -> dict[str, dict[str, str]]:
    return topic_configs(meta)


@lru_cache(maxsize=64)
def _cleaned_partitions(checkpoint: Path, _stamp: float) -> frozenset[tuple[str, int]]:
    from kdump.formats.checkpoints import decode_offset_checkpoint

    entries = decode_offset_checkpoint(read_small_file(checkpoint)).entries
    return frozenset((e.topic, e.partition) for e in entries)


def cleanup_policy(part: PartitionDir, results: Sequence[SegmentResult]) -> tuple[str | None, str]:
    """The partition's topic's cleanup policy ("compact", "delete" or None when unknown) and where
    that came from."""
    parsed = parse_partition_dir_name(part.path.name)
    if parsed is None:
        return None, "the directory name gives no topic"
    if parsed.topic in COMPACTED_INTERNAL:
        return "compact", f"{parsed.topic} is created compacted"
    meta = find_metadata_log(part.path.parent)
    if meta is not None:
        try:
            configs = _metadata_configs(meta, meta.stat().st_mtime)
        except (OSError, DecodeError, KdumpError):
            configs = None
        if configs is not None:
            policy = configs.get(parsed.topic, {}).get("cleanup.policy")
            if policy is not None:
                return ("compact" if "compact" in policy else "delete"), f"cleanup.policy={policy} in {meta}"
    checkpoint = part.path.parent / "cleaner-offset-checkpoint"
    try:
        cleaned = _cleaned_partitions(checkpoint, checkpoint.stat().st_mtime)
    except (OSError, DecodeError, KdumpError, ValueError):
        cleaned = frozenset()
    if (parsed.topic, parsed.partition) in cleaned:
        return "compact", f"the log cleaner has cleaned it ({checkpoint})"
    if meta is not None:
        return "delete", f"the topic sets no cleanup.policy in {meta}: the default, delete"
    sparse = _cleaned_segment(results)
    if sparse is not None:
        return (
            "compact",
            f"{sparse} holds a batch with fewer records than offsets, as only the log cleaner leaves",
        )
    return None, "no metadata log or cleaner checkpoint beside the partition"


def _cleaned_segment(results: Sequence[SegmentResult]) -> str | None:
    """A segment holding a batch with fewer records than its offset range, the log cleaner's mark (a
    produced batch has exactly one record per offset, `LogValidator.validateBatch`): found from the
    scan's own counts, without reading the log again (a stored log is fetched once). In a wholly
    valid segment the batches cover its first..last offsets except the gaps between them; fewer
    records than that is a batch the cleaner thinned."""
    for r in results:
        s = r.summary
        if s is None or s.partial or s.valid_bytes < s.size or s.uncounted_batches:
            continue
        if s.first_offset is None or s.last_offset is None or not s.first_offset_known:
            continue
        between = sum(int(f.details.get("gap", 1)) for f in r.findings if f.code == "offset-gap")
        if s.record_count < s.last_offset - s.first_offset + 1 - between:
            return str(r.segment.log)
    return None


def check_offset_holes(part: PartitionDir, results: Sequence[SegmentResult]) -> Iterator[Finding]:
    """Offsets missing between batches of a topic that is not compacted."""
    holes = _holes(results)
    if not holes:
        return
    policy, source = cleanup_policy(part, results)
    if policy == "compact":
        return
    for file, first, count, before in holes:
        last = first + count - 1
        if policy == "delete":
            text = f"offsets {first}..{last} are missing, and the topic is not compacted ({source}): no broker leaves a hole there"
        else:
            text = f"offsets {first}..{last} are missing: a hole unless the topic is compacted ({source})"
        if before is not None:
            if policy != "delete":
                text += "; if it is not compacted"
            text += missing_segment_text(before, Path(file), first, last)
        yield make_finding(
            "offset-hole",
            file,
            text,
            offset=first,
            severity=None if policy == "delete" else Severity.WARNING,
            gap=count,
            cleanup_policy=policy,
        )


def missing_segment_text(before: Path, after: Path, first: int, last: int) -> str:
    """What to do about a segment gone from between two others (deleted, or not copied): the
    broker does not notice. `LogLoader` loads each segment on its own and checks no continuity; a
    fetch at an offset in the hole finds the segment before it (`floorSegment`), whose
    `LogSegment.read` has no batch at or above the offset (null), and reads on from the next
    segment (`LocalLog.read`, `higherSegment`): consumers and followers go on at `last + 1`, the
    records lost without an error. No file repair brings the bytes back: they are on another
    replica, or gone."""
    import shlex  # only where a segment is gone (tests/test_import_cost.py)

    where = shlex.quote(str(after.parent))  # the partition as the user gave it
    missing = f"{first:020d}"
    return (
        f"; no segment holds them: {missing}.log (and its .index and .timeindex) is gone from between "
        f"{before.name} and {after.name}. The broker starts and serves the partition as it is: a fetch "
        f"at {first}..{last} returns the batches from {last + 1} on, so consumers skip those records "
        f"silently. With the broker stopped, copy {missing}.log, {missing}.index and {missing}.timeindex "
        f"from another replica's copy of this partition (check first that it holds those offsets: "
        f"kdump compare {where} OTHER_REPLICA); or, on a follower, make the broker fetch "
        f"{first} on again from the leader: kdump trim-tail --to-offset {first} --apply {where} (it "
        f"moves the later segments to its backup); on the only replica left, the records are lost"
    )


def salvage_first(findings: list[Finding], results: Sequence[SegmentResult]) -> list[Finding]:
    """Name `kdump salvage` in the trim-tail repair hints that would take valid data out of the log:
    a trim at damage with valid batches after the cut or later segments, and every `--to-offset`
    trim (the batches it cuts are valid)."""
    at_damage = False
    for i, r in enumerate(results):
        s = r.summary
        if s is None or s.valid_bytes >= s.size:
            continue
        later_data = any(x.summary is not None and x.summary.size > 0 for x in results[i + 1 :])
        at_damage = s.salvageable_batches > 0 or later_data
        break
    findings = _epoch_repairs(
        findings, any(r.summary is not None and r.summary.valid_bytes < r.summary.size for r in results)
    )
    out = []
    for f in findings:
        repair = CATALOG[f.code].repair if f.code in CATALOG else None
        if (repair == TRIM_REPAIR and at_damage) or (
            repair is not None and "trim-tail --to-offset" in repair
        ):
            f = replace(f, details={**f.details, "salvage_first": True})
        out.append(f)
    return out


def _epoch_repairs(findings: list[Finding], damaged: bool) -> list[Finding]:
    """A `leader-epoch-mismatch` carries the trim as its repair only where the trim fixes it: the
    partition has a tail to cut, and the mismatch lies past the cut (a checkpoint epoch past the
    log end, which the trim drops as `LeaderEpochFileCache.truncateFromEnd` does, or batches the cut
    takes out). Elsewhere the trim changes nothing there, and no repair is named."""
    cuts = [
        f.offset
        for f in findings
        if f.offset is not None
        and f.code in CATALOG
        and CATALOG[f.code].repair == TRIM_REPAIR
        and f.code != "leader-epoch-mismatch"
    ]
    cut = min(cuts, default=None)
    out = []
    for f in findings:
        if f.code == "leader-epoch-mismatch":
            fixed = damaged and (
                bool(f.details.get("past_log_end"))
                or (cut is not None and f.offset is not None and f.offset >= cut)
            )
            if not fixed:
                f = replace(f, details={**f.details, "repair": None})
        out.append(f)
    return out
