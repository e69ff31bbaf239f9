"""`compare`: the replicas of one partition side by side, where they diverge, what truncation loses.

Replicas are walked together by offset, batch by batch. Two batches are the same batch when their
base and last offsets, partition leader epoch and checksum agree (the checksum covers every other
header field: producer id, epoch and sequence, attributes, timestamps, count, and the records).
Where the walks part, the differing batches of both sides up to the next batch they share again
(or the end) are one divergent range:

- **lag**: at the end, one side has batches the other does not have at all (a prefix);
- **conflict**: both sides have different batches at the same offsets; data only one side has;
- **gap**: one side lacks batches the other has in the middle of the log, or below its log start
  offset (retention), or holds the compacted form of the other's batches (same offsets, epoch and
  producer, fewer records): compaction or retention removed records on one side only.

Offsets a replica could not read (damage) are masked on both sides and reported as uncomparable,
never as agreement or divergence. Only batch headers are read; records are never decoded.
"""

from __future__ import annotations

import bisect
import itertools
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kdump.findings import Finding, Severity, make_finding
from kdump.model.log_dir import Target
from kdump.model.partition import PartitionDir
from kdump.ops.replicas.epochs import Truncation, check_checkpoint, epoch_cache, truncation_point
from kdump.ops.replicas.replica import Hole, Replica, load_replica
from kdump.ops.tiered.partitions import TieredContext

LAG, CONFLICT, GAP = "lag", "conflict", "gap"


@dataclass(frozen=True, slots=True)
class Side:
    """One replica's batches in a divergent range."""

    replica: str
    first_offset: int | None
    last_offset: int | None
    batches: int
    records: int
    epochs: tuple[int, ...]
    first_timestamp: int | None
    last_timestamp: int | None
    producer_ids: tuple[int, ...]
    transactional_batches: int
    control_batches: int

    def to_row(self) -> dict[str, Any]:
        """The JSON object of this side."""
        return {
            "replica": self.replica,
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "batches": self.batches,
            "records": self.records,
            "leader_epochs": list(self.epochs),
            "first_timestamp": self.first_timestamp,
            "last_timestamp": self.last_timestamp,
            "producer_ids": list(self.producer_ids),
            "transactional_batches": self.transactional_batches,
            "control_batches": self.control_batches,
        }


def side_of(rep: Replica, idx: Sequence[int]) -> Side:
    """Summarise the batches `idx` of a replica."""
    if not idx:
        return Side(rep.label, None, None, 0, 0, (), None, None, (), 0, 0)
    firsts = [rep.first_timestamps[i] for i in idx if rep.first_timestamps[i] >= 0]
    maxes = [rep.max_timestamps[i] for i in idx if rep.max_timestamps[i] >= 0]
    return Side(
        rep.label,
        rep.bases[idx[0]],
        rep.lasts[idx[-1]],
        len(idx),
        sum(rep.counts[i] for i in idx),
        tuple(sorted({rep.epochs[i] for i in idx})),
        min(firsts) if firsts else None,
        max(maxes) if maxes else None,
        tuple(sorted({rep.producer_ids[i] for i in idx if rep.producer_ids[i] >= 0})),
        sum(1 for i in idx if rep.flags[i] == 1),
        sum(1 for i in idx if rep.flags[i] & 2),
    )


@dataclass(frozen=True, slots=True)
class Divergence:
    """One divergent offset range between two replicas."""

    kind: str
    first_offset: int
    last_offset: int
    sides: tuple[Side, Side]
    reason: str


@dataclass(frozen=True, slots=True)
class Uncomparable:
    """Offsets of a replica that could not be read, so could not be compared with the others."""

    replica: str
    first_offset: int
    last_offset: int | None
    file: str
    reason: str


@dataclass(slots=True)
class PairResult:
    """Two replicas compared: their common prefix and every divergent range."""

    a: str
    b: str
    common_last_offset: int | None = None
    common_epoch: int | None = None
    agreed_batches: int = 0
    divergences: list[Divergence] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TruncationResult:
    """What the broker would do to a follower of `leader`: the truncation point and what it removes."""

    leader: str
    replica: str
    truncation: Truncation
    batches_removed: int
    records_removed: int | None
    first_removed_offset: int | None
    last_removed_offset: int | None
    epochs_removed: tuple[int, ...]
    dump_command: str | None


@dataclass(slots=True)
class PartitionComparison:
    """Every replica of one partition, compared pairwise."""

    name: str
    replicas: list[Replica]
    pairs: list[PairResult] = field(default_factory=list)
    uncomparable: list[Uncomparable] = field(default_factory=list)
    truncations: list[TruncationResult] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    # The replicas name different topic ids: not replicas of one partition, so not compared.
    refused: bool = False

    @property
    def divergences(self) -> list[Divergence]:
        """Every divergent range of every pair."""
        return [d for p in self.pairs for d in p.divergences]

    @property
    def incomplete(self) -> bool:
        """Some replica, or part of one, could not be read."""
        return bool(self.uncomparable) or any(r.unreadable for r in self.replicas)

    @property
    def failing_findings(self) -> list[Finding]:
        """Findings that fail the run: errors, and checkpoints their batches contradict."""
        return [
            f
            for f in self.findings
            if f.severity >= Severity.ERROR or f.code == "leader-epoch-checkpoint-contradicted"
        ]

    @property
    def agree(self) -> bool:
        """All replicas were read whole and hold the same batches."""
        return not self.refused and not self.divergences and not self.incomplete


# --- the walk --------------------------------------------------------------------------------------


def _masked(rep: Replica, holes: Sequence[Hole]) -> list[int]:
    """Indices of the batches that no unreadable range (of either replica) touches."""
    if not holes:
        return list(range(len(rep)))
    spans = sorted((h.first_offset, h.last_offset if h.last_offset is not None else 2**63) for h in holes)
    starts = [s for s, _ in spans]
    keep = []
    for i in range(len(rep)):
        base, last = rep.bases[i], rep.lasts[i]
        j = bisect.bisect_right(starts, last)
        if any(spans[k][1] >= base for k in range(j)):
            continue
        keep.append(i)
    return keep


def _compacted_form(small: Replica, si: Sequence[int], big: Replica, bi: Sequence[int]) -> bool:
    """Are `small`'s batches what the cleaner would leave of `big`'s (same offsets, epoch, producer)?"""
    if len(si) > len(bi):
        return False
    by_range = {
        (big.bases[i], big.lasts[i]): (
            big.epochs[i],
            big.producer_ids[i],
            big.producer_epochs[i],
            big.counts[i],
        )
        for i in bi
    }
    for i in si:
        other = by_range.get((small.bases[i], small.lasts[i]))
        if other is None:
            return False
        epoch, pid, pepoch, count = other
        if (small.epochs[i], small.producer_ids[i], small.producer_epochs[i]) != (epoch, pid, pepoch):
            return False
        if small.counts[i] > count:
            return False
    return sum(small.counts[i] for i in si) < sum(big.counts[i] for i in bi)


def _chunks(a: Replica, ia: list[int], b: Replica, ib: list[int], pair: PairResult) -> None:
    """Walk two replicas' batches; record agreement and the divergent chunks."""
    all_a, all_b = a.keys(), b.keys()
    ka = all_a if len(ia) == len(a) else [all_a[i] for i in ia]
    kb = all_b if len(ib) == len(b) else [all_b[j] for j in ib]
    if ka == kb:
        # Replicas that agree (the common case) cost one comparison of two lists.
        pair.agreed_batches = len(ka)
        if ia:
            pair.common_last_offset, pair.common_epoch = a.lasts[ia[-1]], a.epochs[ia[-1]]
        return
    b_at = {k: n for n, k in enumerate(kb)}
    p = q = 0
    prefix_open = True
    while p < len(ia) and q < len(ib):
        if ka[p] == kb[q]:
            pair.agreed_batches += 1
            if prefix_open:
                pair.common_last_offset = a.lasts[ia[p]]
                pair.common_epoch = a.epochs[ia[p]]
            p += 1
            q += 1
            continue
        # The next batch both hold: the one with the smallest offset, found from either side.
        resync = next(((p2, b_at[ka[p2]]) for p2 in range(p, len(ia)) if b_at.get(ka[p2], -1) >= q), None)
        if resync is None:
            break
        p2, q2 = resync
        for d in _classify(a, ia[p:p2], b, ib[q:q2], tail=False):
            pair.divergences.append(d)
            prefix_open = prefix_open and d.kind == GAP
        p, q = p2, q2
    if p < len(ia) or q < len(ib):
        pair.divergences.extend(_classify(a, ia[p:], b, ib[q:], tail=True))


def _classify(a: Replica, xa: list[int], b: Replica, xb: list[int], *, tail: bool) -> list[Divergence]:
    if xa and xb:
        compacted = _compacted_form(a, xa, b, xb) or _compacted_form(b, xb, a, xa)
        kind = GAP if compacted else CONFLICT
        reason = (
            "one side holds the compacted form of the other's batches (same offsets, epochs and producers, "
            "fewer records)"
            if compacted
            else "different batches at the same offsets: each side has data the other does not"
        )
        return [_divergence(kind, a, xa, b, xb, reason)]
    empty, full, xfull = (a, b, xb) if not xa else (b, a, xa)
    # Below the empty side's local log start offset, retention removed them there (or, on a tiered
    # partition, they are in remote storage).
    cut = bisect.bisect_left([full.lasts[i] for i in xfull], empty.local_log_start_offset)
    out = []
    if cut:
        why = (
            f"below {empty.label}'s local log start offset {empty.local_log_start_offset}: in remote storage "
            f"from its log start offset {empty.log_start_offset}"
            if empty.tiered and empty.log_start_offset < empty.local_log_start_offset
            else f"below {empty.label}'s log start offset {empty.log_start_offset}: retention removed them there"
        )
        out.append(_pair_order(GAP, full, xfull[:cut], empty, why, a))
    if xfull[cut:]:
        if tail:
            reason = (
                f"{empty.label} ends at offset {empty.log_end_offset}: it lags (a prefix of {full.label})"
            )
            out.append(_pair_order(LAG, full, xfull[cut:], empty, reason, a))
        else:
            reason = f"{empty.label} lacks whole batches inside its log (compaction or deleted records)"
            out.append(_pair_order(GAP, full, xfull[cut:], empty, reason, a))
    return out


def _pair_order(
    kind: str, full: Replica, xf: list[int], empty: Replica, reason: str, a: Replica
) -> Divergence:
    if full is a:
        return _divergence(kind, full, xf, empty, [], reason)
    return _divergence(kind, empty, [], full, xf, reason)


def _divergence(kind: str, a: Replica, xa: list[int], b: Replica, xb: list[int], reason: str) -> Divergence:
    sa, sb = side_of(a, xa), side_of(b, xb)
    firsts = [s.first_offset for s in (sa, sb) if s.first_offset is not None]
    lasts = [s.last_offset for s in (sa, sb) if s.last_offset is not None]
    return Divergence(kind, min(firsts), max(lasts), (sa, sb), reason)


def compare_pair(a: Replica, b: Replica) -> PairResult:
    """Compare two replicas of one partition."""
    holes = [*a.holes, *b.holes]
    pair = PairResult(a.label, b.label)
    _chunks(a, _masked(a, holes), b, _masked(b, holes), pair)
    return pair


# --- truncation ------------------------------------------------------------------------------------


def next_leader_epoch(replicas: Iterable[Replica]) -> int:
    """An epoch above every epoch any of the replicas knows (what the next leader is given)."""
    known = [e for r in replicas for e, _ in broker_cache(r)]
    known += [e for r in replicas for e in r.epochs]
    return max(known, default=-1) + 1


def broker_cache(rep: Replica) -> list[tuple[int, int]]:
    """The epoch cache the broker would load: recovery rescans from the recovery point unless the
    log dir says the broker shut down cleanly."""
    if rep.cache_memo is None:
        rescan = None if rep.clean_shutdown else (rep.recovery_point or 0)
        rep.cache_memo = epoch_cache(rep, rescan_from=rescan)
    return list(rep.cache_memo)


def leader_cache(leader: Replica, new_epoch: int) -> list[tuple[int, int]]:
    """The leader's cache once it leads: becoming leader under a new epoch (above every epoch the
    replicas have seen) assigns that epoch at its log end offset (`Partition.makeLeader`)."""
    cache = broker_cache(leader)
    if not cache or new_epoch > cache[-1][0]:
        cache.append((new_epoch, leader.log_end_offset))
    return cache


def truncate_follower(leader: Replica, follower: Replica, new_epoch: int | None = None) -> TruncationResult:
    """Where `follower` truncates when `leader` leads, and exactly which batches that removes."""
    if new_epoch is None:
        new_epoch = next_leader_epoch([leader, follower])
    t = truncation_point(
        broker_cache(follower),
        follower.log_end_offset,
        leader_cache(leader, new_epoch),
        leader.log_end_offset,
        follower.high_watermark,
    )
    if t.truncate_to is None:
        return TruncationResult(leader.label, follower.label, t, 0, None, None, None, (), None)
    # Truncation cuts at the batch holding the offset (`LogSegment.truncateTo`).
    start = bisect.bisect_left(follower.lasts, t.truncate_to)
    removed = range(start, len(follower))
    if not removed:
        return TruncationResult(leader.label, follower.label, t, 0, 0, None, None, (), None)
    first, last = follower.bases[start], follower.lasts[-1]
    return TruncationResult(
        leader.label,
        follower.label,
        t,
        len(removed),
        sum(follower.counts[i] for i in removed),
        first,
        last,
        tuple(sorted({follower.epochs[i] for i in removed})),
        f"kdump dump --records --from-offset {first} --to-offset {last} {shlex.quote(follower.label)}",
    )


# --- a partition -----------------------------------------------------------------------------------


def compare_replicas(
    name: str, replicas: Sequence[Replica], leader: str | None = None
) -> PartitionComparison:
    """Compare loaded replicas pairwise; with `leader` (a replica's label), truncate the others to it,
    without it, every replica in turn leads."""
    result = PartitionComparison(name, list(replicas))
    mismatch = topic_id_mismatches(replicas)
    if mismatch:
        result.findings.extend(mismatch)
        result.refused = True
        return result
    for rep in replicas:
        result.findings.extend(rep.findings)
        checkpoint = rep.path / "leader-epoch-checkpoint"
        result.findings.extend(check_checkpoint(rep, str(checkpoint)))
        result.uncomparable.extend(
            Uncomparable(rep.label, h.first_offset, h.last_offset, h.file, h.reason) for h in rep.holes
        )
    for a, b in itertools.combinations(replicas, 2):
        result.pairs.append(compare_pair(a, b))
    leaders = [r for r in replicas if r.label == leader] if leader is not None else list(replicas)
    new_epoch = next_leader_epoch(replicas)
    for lead in leaders:
        for follower in replicas:
            if follower is not lead:
                result.truncations.append(truncate_follower(lead, follower, new_epoch))
    return result


def topic_id_mismatches(replicas: Sequence[Replica]) -> list[Finding]:
    """A `topic-id-mismatch` finding for each replica whose partition.metadata names another topic id
    than the first replica that has one (replicas without the file cannot tell, and are not refused)."""
    known = [r for r in replicas if r.topic_id is not None]
    if not known:
        return []
    first = known[0]
    return [
        make_finding(
            "topic-id-mismatch",
            str(r.path / "partition.metadata"),
            f"topic id {r.topic_id} differs from {first.topic_id} in {first.path / 'partition.metadata'}: "
            f"{r.label} and {first.label} are partitions of different topics, not replicas of one; "
            "they were not compared",
            replica=r.label,
            topic_id=r.topic_id,
            other_replica=first.label,
            other_topic_id=first.topic_id,
        )
        for r in known[1:]
        if r.topic_id != first.topic_id
    ]


def compare_partition(
    dirs: Sequence[PartitionDir], labels: Sequence[str] | None = None, leader: str | None = None
) -> PartitionComparison:
    """Load and compare the replicas of one partition (`labels` name them; default their paths).

    Replicas are read one after the other in this process: each read is one pass over its logs,
    and handing 70,000 batches' columns back from a worker costs about what the second core
    saves on a busy 2-core machine (measured with tests/bench/bench_compare.py).
    """
    names = list(labels) if labels is not None else [str(d.path) for d in dirs]
    tiered = TieredContext()
    replicas = [load_replica(d, label, tiered) for d, label in zip(dirs, names, strict=True)]
    return compare_replicas(dirs[0].name if dirs else "", replicas, leader)


def exit_code(results: Iterable[PartitionComparison], unreadable: bool = False) -> int:
    """3 when a replica (or part of one) could not be read, 1 when replicas diverge or a failing
    finding was made, else 0."""
    results = list(results)
    if unreadable or any(r.incomplete for r in results):
        return 3
    if any(r.divergences or r.failing_findings for r in results):
        return 1
    return 0


def group_replicas(targets: Sequence[Target]) -> tuple[list[tuple[str, list[PartitionDir]]], list[str]]:
    """The replica sets to compare, and notes on what was left out.

    Partition directories given directly are the replicas of one partition, whatever their names
    (copies are often renamed). Log dirs are matched by partition directory name: each name held
    by two or more of them is one replica set; a name only one holds has nothing to compare with.
    """
    notes: list[str] = []
    if not targets:  # none of the paths could be read: nothing to group (the caller exits 3)
        return [], notes
    if all(t.kind == "partition" for t in targets):
        dirs = [t.partitions()[0] for t in targets]  # as discovered: listed once
        if len({d.name for d in dirs}) > 1:
            notes.append("the partition directories have different names; comparing them as one partition")
        return [(dirs[0].name, dirs)], notes
    groups: dict[str, list[PartitionDir]] = {}
    for t in targets:
        if t.kind == "file":
            notes.append(f"{t.given}: a file, not a partition directory or log dir; skipped")
            continue
        for part in t.partitions():
            groups.setdefault(part.name, []).append(part)
    out = []
    alone = [name for name in sorted(groups) if len(groups[name]) < 2]
    for name in sorted(groups):
        if len(groups[name]) >= 2:
            out.append((name, groups[name]))
    if len(alone) == 1:
        notes.append(f"{groups[alone[0]][0].path}: no other replica of {alone[0]} was given; not compared")
    elif alone:
        # One line for them all: a log dir's partitions that no other log dir given holds are many.
        shown = ", ".join(alone[:5]) + (f" and {len(alone) - 5} more" if len(alone) > 5 else "")
        notes.append(f"{len(alone)} partitions not compared, no other replica of them was given: {shown}")
    return out, notes
