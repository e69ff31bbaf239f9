"""Whom an event hurts: each group's committed offset joined with the partition's log after the event.

Where a consumer resumes follows Kafka's Java consumer (the reference client):

1. It takes the committed offset as its position. When the commit names a leader epoch, it first validates
   the position (`SubscriptionState.maybeValidatePositionForCurrentLeader`, OffsetsForLeaderEpoch): the
   leader answers with the end offset of that epoch (`LeaderEpochFileCache.endOffsetFor`, over the cache
   the partition holds, plus the epoch it is led in, which the new leader adds at its log end offset).
   If that end offset is below the position, the consumer has seen records the log no longer has
   ("truncation detected"): with auto.offset.reset earliest or latest it moves to that end offset
   (`seekValidated`), with none it fails with LogTruncationException. An undefined answer resets it by
   auto.offset.reset.
2. It fetches from the position. Below the log start or above the log end the fetch is out of range
   (OFFSET_OUT_OF_RANGE) and auto.offset.reset moves it to the log start (earliest) or the log end
   (latest); none fails with OffsetOutOfRangeException.

A commit without an epoch (clients that do not send one) skips step 1: above the new log end it is out of
range only until producers write past it; after that it is in range and the records written in between
are skipped without any error (`refill_skips`).

Counts of records come from the data where `PartitionBounds.batches` holds it (control batches are not
counted: consumers never receive their records); a batch cut by the count's boundary, or no data, gives
an offset-span estimate, and the impact says so (`count_exact`).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kdump.ops.consumers.bounds import BatchSpan, PartitionBounds
from kdump.ops.consumers.commits import Commit, CommitTable, ShareState
from kdump.ops.replicas.epochs import end_offset_for  # the broker's endOffsetFor, as compare uses it

UNDEFINED = -1

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class GroupPartitionImpact:
    """What the event does to one group's position in one partition."""

    group: str
    group_type: str  # "classic" | "consumer" | "share" | "streams" | "unknown"
    topic: str
    partition: int
    committed_offset: int  # a share group's: its start offset
    committed_leader_epoch: int  # -1: none
    log_start_offset: int
    log_end_offset: int
    out_of_range: str | None  # "past-log-end" | "before-log-start" | None
    epoch_check: str  # "none" (no epoch committed) | "valid" | "diverged" | "undefined" | "not-applicable"
    epoch_end_offset: int | None  # the leader's answer to OffsetsForLeaderEpoch for the committed epoch
    resume_earliest: int  # where a consumer with auto.offset.reset=earliest fetches first
    resume_latest: int  # ... with latest
    fails_with_none: str | None  # the exception a consumer with auto.offset.reset=none gets
    rereads_earliest: int  # records the group had consumed that it reads again (earliest)
    skips_latest: int  # records in the log the group had not consumed that it skips (latest)
    lost_unread: int  # offsets the event removes that the group had not consumed (gone for it)
    refill_skips: int  # commit past the end without an epoch: records later written below it, skipped
    count_exact: bool
    count_note: str | None
    hurt: bool  # the group re-reads, skips or loses records, or fails, because of the event

    def to_row(self, file: str | None = None, leader: str | None = None) -> dict[str, Any]:
        """The impact as a JSON object: `file` the partition directory, `leader` the replica that leads."""
        fields = {f: getattr(self, f) for f in self.__slots__}
        return {"type": "group-impact", "file": file, "leader": leader, **fields}


def impact(
    commits: CommitTable, bounds: Mapping[TopicPartition, PartitionBounds]
) -> list[GroupPartitionImpact]:
    """Per group and partition of `bounds`, what the partition's new bounds do to the group's commit.

    `bounds` is keyed by (topic, partition); share-group state (which names topic ids) joins through
    `PartitionBounds.topic_id`. The result is sorted by topic, partition and group.
    """
    out: list[GroupPartitionImpact] = []
    by_id = {b.topic_id: tp for tp, b in bounds.items() if b.topic_id is not None}
    for (topic, partition), b in bounds.items():
        for c in commits.of_partition(topic, partition):
            out.append(_commit_impact(c, commits.group_type(c.group), b))
    for state in commits.share.values():
        tp = by_id.get(state.topic_id)
        if tp is not None and tp[1] == state.partition:
            out.append(_share_impact(state, tp[0], bounds[tp]))
    out.sort(key=lambda i: (i.topic, i.partition, i.group))
    return out


def leader_cache(b: PartitionBounds, committed_epoch: int) -> list[tuple[int, int]]:
    """The epoch cache the leader answers from: the partition's, plus the epoch it is led in at its end."""
    cache = sorted(b.epoch_start_offsets.items())
    latest = cache[-1][0] if cache else UNDEFINED
    epoch = b.leader_epoch if b.leader_epoch is not None else max(latest, committed_epoch) + 1
    if epoch > latest:
        cache.append((epoch, b.log_end_offset))
    return cache


def count_records(b: PartitionBounds, low: int, high: int) -> tuple[int, bool]:
    """Records a consumer receives at offsets [low, high) of the log after the event, and whether the
    count is exact (read from the batches) or an offset span."""
    low, high = max(low, b.log_start_offset), min(high, b.log_end_offset)
    if high <= low:
        return 0, True
    if b.batches is None:
        return high - low, False
    total, exact = 0, True
    for s in _overlapping(b.batches, low, high):
        if s.control:
            continue
        if low <= s.base_offset and s.last_offset < high:
            total += s.records
        else:
            # The boundary cuts the batch: its records' offsets are not read here, so prorate.
            span = s.last_offset - s.base_offset + 1
            inside = min(high, s.last_offset + 1) - max(low, s.base_offset)
            total += min(inside, round(s.records * inside / span))
            exact = exact and s.records == span
    return total, exact


def _overlapping(batches: Sequence[BatchSpan], low: int, high: int) -> list[BatchSpan]:
    i = bisect.bisect_left([s.last_offset for s in batches], low)
    out = []
    for s in batches[i:]:
        if s.base_offset >= high:
            break
        out.append(s)
    return out


def _commit_impact(c: Commit, group_type: str, b: PartitionBounds) -> GroupPartitionImpact:
    start, end = b.log_start_offset, b.log_end_offset
    position, epoch_check, epoch_end = c.offset, "none", None
    fails: str | None = None
    reset = False
    if c.leader_epoch >= 0:
        found_epoch, found_end = end_offset_for(leader_cache(b, c.leader_epoch), c.leader_epoch, end)
        if found_end == UNDEFINED or found_epoch == UNDEFINED:
            epoch_check, reset, fails = "undefined", True, "LogTruncationException"
        else:
            epoch_end = found_end
            if found_end < position:
                epoch_check, position, fails = "diverged", found_end, "LogTruncationException"
            else:
                epoch_check = "valid"
    out_of_range = None
    if c.offset > end:
        out_of_range = "past-log-end"
    elif c.offset < start:
        out_of_range = "before-log-start"
    if not reset and (position < start or position > end):
        reset = True
        fails = fails or "OffsetOutOfRangeException"
    resume_earliest = start if reset else position
    resume_latest = end if reset else position
    rereads, exact1 = count_records(b, resume_earliest, min(c.offset, end))
    skips, exact2 = count_records(b, max(c.offset, start), resume_latest)
    lost = 0
    if b.removed is not None:
        lost = max(0, b.removed[1] + 1 - max(b.removed[0], c.offset))
    refill = c.offset - end if c.offset > end and c.leader_epoch < 0 else 0
    exact = exact1 and exact2
    note = None
    if not exact:
        note = (
            "offset span: the data was not read"
            if b.batches is None
            else "offset span where a batch is cut: compaction or control records may leave fewer records"
        )
    hurt = bool(rereads or skips or lost or refill or fails or out_of_range or epoch_check == "diverged")
    return GroupPartitionImpact(
        group=c.group,
        group_type=group_type,
        topic=c.topic,
        partition=c.partition,
        committed_offset=c.offset,
        committed_leader_epoch=c.leader_epoch,
        log_start_offset=start,
        log_end_offset=end,
        out_of_range=out_of_range,
        epoch_check=epoch_check,
        epoch_end_offset=epoch_end,
        resume_earliest=resume_earliest,
        resume_latest=resume_latest,
        fails_with_none=fails if (reset or epoch_check == "diverged") else None,
        rereads_earliest=rereads,
        skips_latest=skips,
        lost_unread=lost,
        refill_skips=refill,
        count_exact=exact,
        count_note=note,
        hurt=hurt,
    )


def _share_impact(s: ShareState, topic: str, b: PartitionBounds) -> GroupPartitionImpact:
    """A share partition's next offset (its start offset moved over the batches already acknowledged or
    archived) against the new bounds, and the offsets removed it had not finished with.

    Past the new end, the share-partition leader keeps delivering from that offset (a Kafka 4.4 broker
    on a cut copy does): the records producers write below it are never delivered (`refill_skips`).
    Below the log start it is assumed to go on at the log start, which is not yet checked against a
    broker (`count_note` says so)."""
    start, end = b.log_start_offset, b.log_end_offset
    position = s.next_offset
    out_of_range = "past-log-end" if position > end else "before-log-start" if 0 <= position < start else None
    lost = 0
    if b.removed is not None:
        lost = max(0, b.removed[1] + 1 - max(b.removed[0], position))
    resume = max(position, start)
    return GroupPartitionImpact(
        group=s.group,
        group_type="share",
        topic=topic,
        partition=s.partition,
        committed_offset=position,
        committed_leader_epoch=s.leader_epoch,
        log_start_offset=start,
        log_end_offset=end,
        out_of_range=out_of_range,
        epoch_check="not-applicable",
        epoch_end_offset=None,
        resume_earliest=resume,
        resume_latest=resume,
        fails_with_none=None,
        rereads_earliest=0,
        skips_latest=0,
        lost_unread=lost,
        refill_skips=position - end if position > end else 0,
        count_exact=True,
        count_note="share partition below the log start: assumed to go on at the log start (not checked "
        "against a broker)"
        if out_of_range == "before-log-start"
        else None,
        hurt=bool(out_of_range or lost),
    )
