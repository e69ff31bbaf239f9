"""Consumer impact as an on-call reads it: one line per hurt group and partition, and JSON rows."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from typing import Any

from kdump.ops.consumers import CommitTable, GroupPartitionImpact
from kdump.ops.consumers.elections import ElectionImpact


def impact_line(i: GroupPartitionImpact) -> str:
    """One group's fate in one partition, in a sentence."""
    where = f"{i.topic}-{i.partition}"
    head = f"group {i.group} ({i.group_type}) on {where}: committed {i.committed_offset}"
    if i.committed_leader_epoch >= 0:
        head += f" (epoch {i.committed_leader_epoch})"
    head += f", log will be {i.log_start_offset}..{i.log_end_offset}"
    parts: list[str] = []
    if i.group_type == "share":
        if i.out_of_range:
            parts.append(f"share-partition start offset is {i.out_of_range.replace('-', ' ')}")
    else:
        if i.out_of_range:
            parts.append(i.out_of_range.replace("-", " "))
        if i.epoch_check == "diverged":
            parts.append(
                f"leader epoch {i.committed_leader_epoch} invalidated: the consumer detects truncation "
                f"and moves to {i.epoch_end_offset} (auto.offset.reset=none: {i.fails_with_none})"
            )
        elif i.epoch_check == "undefined":
            parts.append(f"leader epoch {i.committed_leader_epoch} unknown to the leader: reset")
        estimate = "" if i.count_exact else " (offset span, estimate)"
        if i.resume_earliest == i.resume_latest:
            parts.append(f"resumes at {i.resume_earliest}")
        else:
            parts.append(
                f"earliest resumes at {i.resume_earliest} and re-reads {i.rereads_earliest} records{estimate}, "
                f"latest resumes at {i.resume_latest} and skips {i.skips_latest} records{estimate}"
            )
            if i.fails_with_none and i.epoch_check != "diverged":
                parts.append(f"auto.offset.reset=none: {i.fails_with_none}")
    if i.lost_unread:
        parts.append(f"{i.lost_unread} offsets it had not read are removed")
    if i.refill_skips and i.group_type == "share":
        parts.append(
            f"delivery waits at {i.committed_offset}: the next {i.refill_skips} records producers write "
            "are never delivered to the group"
        )
    elif i.refill_skips:
        parts.append(
            f"no epoch committed: if producers write {i.refill_skips} records before the group fetches, "
            "the commit is in range again and those records are skipped without an error"
        )
    return head + ("; " + "; ".join(parts) if parts else "; not affected")


def impact_lines(impacts: Sequence[GroupPartitionImpact], commits: CommitTable, *, asked: bool) -> list[str]:
    """The text block: the hurt groups, or a line saying none is; nothing when no commits were found
    unless their place was given (`asked`)."""
    if not commits.sources:
        return ["  consumer groups: no __consumer_offsets found where --commits points"] if asked else []
    hurt = [i for i in impacts if i.hurt]
    if not hurt:
        return [f"  consumer groups: none of {len({i.group for i in impacts})} with commits here is affected"]
    return ["  " + impact_line(i) for i in hurt]


def impact_rows(
    impacts: Iterable[GroupPartitionImpact], file: str | None = None, leader: str | None = None
) -> list[dict[str, Any]]:
    """The impacts as JSON objects (`file`: the partition directory; `leader`: the replica leading)."""
    return [i.to_row(file, leader) for i in impacts]


def election_lines(elections: Sequence[ElectionImpact], commits: CommitTable, *, asked: bool) -> list[str]:
    """Per replica as leader, the groups it hurts (nothing when no group has a commit here); `asked`:
    the commits' place was given, so finding none there is said."""
    out: list[str] = []
    for e in elections:
        hurt = [i for i in e.impacts if i.hurt]
        if not e.impacts:
            continue
        if not hurt:
            out.append(f"  if {e.leader} leads: no consumer group is affected")
            continue
        out.append(f"  if {e.leader} leads:")
        out.extend("    " + impact_line(i) for i in hurt)
    if asked and not commits.sources:
        out.append("  consumer groups: no __consumer_offsets found where --commits points")
    return out


def commit_problems(commits: CommitTable) -> list[str]:
    """What reading the commits found wrong (damage, records that do not decode), with the check to run:
    the impact is then computed from what could be read."""
    if not commits.findings:
        return []
    sources = " ".join(shlex.quote(str(p)) for p in commits.sources) or "."
    head = (
        f"{len(commits.findings)} problems reading the committed offsets; the consumer impact is computed "
        f"from what could be read (check with: kdump verify {sources})"
    )
    return [head, *(f"  {f.code}: {f.file}: {f.message}" for f in commits.findings[:5])]
