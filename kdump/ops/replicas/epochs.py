"""Leader epochs: a replica's epoch cache, the OffsetsForLeaderEpoch answer, and follower truncation.

The rules are those of Kafka's `LeaderEpochFileCache.endOffsetFor` (the leader's answer) and
`AbstractFetcherThread.getOffsetTruncationState` (what the follower does with it):

- the leader answers a requested epoch with (the largest epoch it knows that is <= the requested
  one, the start offset of its first epoch above the requested one), or its log end offset when
  the requested epoch is its latest; with no epoch above it, or none requested, it does not know
  (undefined), and the follower falls back to its high watermark;
- the follower looks up the leader's epoch in its own cache: if it knows that exact epoch it
  truncates to the smaller of the two end offsets (and of its log end); if it does not, it
  truncates to the end of its largest epoch below it and asks again with its new latest epoch.

The cache a broker would hold is the `leader-epoch-checkpoint`, bounded by the log's start and
end as the log loader bounds it, plus the epochs recovery assigns from the batches it rescans
(past the recovery point after an unclean shutdown; `compare` cannot know the shutdown was clean
unless the log dir says so, so it assumes a rescan of every batch when the log dir is not there).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from kdump.findings import Finding, make_finding
from kdump.ops.replicas.replica import Replica

UNDEFINED = -1

EpochCache = list[tuple[int, int]]  # (epoch, start offset), epochs and offsets increasing


def epoch_cache(rep: Replica, *, rescan_from: int | None = 0) -> EpochCache:
    """The epoch cache the broker would load for this replica.

    `rescan_from`: recovery re-reads batches from this offset and assigns the epochs above the
    latest cached one (None: a clean shutdown, no rescan).
    """
    entries: EpochCache = list(rep.checkpoint or ())
    if rescan_from is not None:
        latest = entries[-1][0] if entries else -1
        for base, last, epoch in zip(rep.bases, rep.lasts, rep.epochs, strict=True):
            if last >= rescan_from and epoch > latest:
                entries.append((epoch, base))
                latest = epoch
    end = rep.log_end_offset
    entries = [e for e in entries if e[1] < end]
    start = rep.log_start_offset
    below = [e for e in entries if e[1] <= start]
    if below:
        entries = [(below[-1][0], start), *(e for e in entries if e[1] > start)]
    return entries


def end_offset_for(cache: Sequence[tuple[int, int]], requested: int, log_end_offset: int) -> tuple[int, int]:
    """`LeaderEpochFileCache.endOffsetFor`: (epoch, end offset), or (UNDEFINED, UNDEFINED)."""
    if requested == UNDEFINED or not cache:
        return UNDEFINED, UNDEFINED
    if cache[-1][0] == requested:
        return requested, log_end_offset
    epochs = [e for e, _ in cache]
    higher = bisect.bisect_right(epochs, requested)
    if higher == len(cache):
        return UNDEFINED, UNDEFINED
    if higher == 0:
        return requested, cache[0][1]
    return cache[higher - 1][0], cache[higher][1]


@dataclass(frozen=True, slots=True)
class Truncation:
    """Where a follower truncates to when it follows a leader, and how it got there."""

    truncate_to: int | None  # None: the high watermark it would fall back to is not known
    method: str  # "leader-epoch" | "high-watermark"
    requests: tuple[tuple[int, int, int], ...]  # (epoch asked, leader's epoch, leader's end offset)
    follower_epoch: int | None  # the follower's latest epoch before truncating


def truncation_point(
    follower: EpochCache,
    follower_leo: int,
    leader: EpochCache,
    leader_leo: int,
    high_watermark: int | None,
) -> Truncation:
    """Run the OffsetsForLeaderEpoch exchange to completion, as the follower's fetcher does."""
    cache = list(follower)
    leo = follower_leo
    requests: list[tuple[int, int, int]] = []
    first_epoch = cache[-1][0] if cache else None

    def by_high_watermark() -> Truncation:
        point = None if high_watermark is None else min(high_watermark, leo)
        return Truncation(point, "high-watermark", tuple(requests), first_epoch)

    # Each round either ends or drops the follower's latest epoch; the guard is belt and braces.
    for _ in range(len(cache) + 2):
        if not cache:
            return by_high_watermark()
        asked = cache[-1][0]
        leader_epoch, leader_end = end_offset_for(leader, asked, leader_leo)
        requests.append((asked, leader_epoch, leader_end))
        if leader_end == UNDEFINED:
            return by_high_watermark()
        own_epoch, own_end = end_offset_for(cache, leader_epoch, leo)
        if own_end == UNDEFINED:
            return Truncation(min(leader_end, leo), "leader-epoch", tuple(requests), first_epoch)
        if own_epoch != leader_epoch:
            leo = min(own_end, leo)
            cache = [e for e in cache if e[1] < leo]
            continue
        return Truncation(min(own_end, leader_end, leo), "leader-epoch", tuple(requests), first_epoch)
    return by_high_watermark()


def check_checkpoint(rep: Replica, checkpoint_file: str) -> list[Finding]:
    """Entries of the leader-epoch-checkpoint that the replica's own batches contradict.

    An epoch starts at a batch boundary, and no batch written after an epoch began carries an
    earlier epoch. So an entry (E, S) is contradicted when S falls inside a batch, or when the
    first batch at or after S carries an epoch below E. (A later epoch there is no contradiction:
    compaction may have removed every batch of epoch E.)
    """
    out: list[Finding] = []
    if rep.checkpoint is None or not rep.bases:
        return out
    for epoch, start in rep.checkpoint:
        if start >= rep.log_end_offset or start < rep.bases[0]:
            continue
        i = bisect.bisect_left(rep.lasts, start)
        if i == len(rep.lasts):
            continue
        base, last, batch_epoch = rep.bases[i], rep.lasts[i], rep.epochs[i]
        if base < start <= last:
            out.append(
                make_finding(
                    "leader-epoch-checkpoint-contradicted",
                    checkpoint_file,
                    f"the entry (epoch {epoch}, start offset {start}) starts inside the batch {base}..{last}, "
                    "but an epoch can only start at a batch",
                    offset=start,
                    epoch=epoch,
                    batch_file=rep.files[i],
                )
            )
        elif 0 <= batch_epoch < epoch:
            out.append(
                make_finding(
                    "leader-epoch-checkpoint-contradicted",
                    checkpoint_file,
                    f"the entry (epoch {epoch}, start offset {start}) is contradicted by the batch {base}..{last}, "
                    f"written under the earlier epoch {batch_epoch}",
                    offset=start,
                    epoch=epoch,
                    batch_epoch=batch_epoch,
                    batch_file=rep.files[i],
                )
            )
    return out
