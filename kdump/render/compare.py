"""`compare` output: JSON Lines objects and a short text table per partition."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from kdump.findings import Severity
from kdump.ops.replicas.compare import (
    Divergence,
    PartitionComparison,
    Side,
    TruncationResult,
    Uncomparable,
    broker_cache,
)
from kdump.ops.replicas.replica import Replica
from kdump.render.rows import finding_row
from kdump.render.text import finding_line

KINDS = ("lag", "conflict", "gap")


def replica_row(part: str, rep: Replica) -> dict[str, Any]:
    """One replica: its bounds, its epoch cache, its size, its findings."""
    counts = Counter(f.severity for f in rep.findings)
    return {
        "type": "replica",
        "file": str(rep.path),
        "partition": part,
        "replica": rep.label,
        "log_start_offset": rep.log_start_offset,
        "local_log_start_offset": rep.local_log_start_offset,
        "tiered": rep.tiered,
        "log_end_offset": rep.log_end_offset,
        "high_watermark": rep.high_watermark,
        "leader_epochs": [list(e) for e in broker_cache(rep)],
        "checkpoint": None if rep.checkpoint is None else [list(e) for e in rep.checkpoint],
        "segments": rep.segments,
        "batches": len(rep),
        "records": None if rep.records_unknown else sum(rep.counts),
        "findings": {s.label: counts.get(s, 0) for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)},
    }


def divergence_row(part: str, d: Divergence) -> dict[str, Any]:
    """One divergent range between two replicas."""
    return {
        "type": "divergence",
        "file": d.sides[0].replica,
        "partition": part,
        "kind": d.kind,
        "first_offset": d.first_offset,
        "last_offset": d.last_offset,
        "replicas": [s.replica for s in d.sides],
        "reason": d.reason,
        "sides": [s.to_row() for s in d.sides],
    }


def uncomparable_row(part: str, u: Uncomparable) -> dict[str, Any]:
    """Offsets of a replica that could not be read."""
    return {
        "type": "uncomparable",
        "file": u.file,
        "partition": part,
        "replica": u.replica,
        "first_offset": u.first_offset,
        "last_offset": u.last_offset,
        "reason": u.reason,
    }


def truncation_row(part: str, t: TruncationResult) -> dict[str, Any]:
    """What the broker would do to one follower."""
    return {
        "type": "truncation",
        "file": t.replica,
        "partition": part,
        "leader": t.leader,
        "replica": t.replica,
        "truncate_to": t.truncation.truncate_to,
        "method": t.truncation.method,
        "follower_epoch": t.truncation.follower_epoch,
        "requests": [
            {"requested_epoch": r, "leader_epoch": e, "end_offset": o} for r, e, o in t.truncation.requests
        ],
        "batches_removed": t.batches_removed,
        "records_removed": t.records_removed,
        "first_removed_offset": t.first_removed_offset,
        "last_removed_offset": t.last_removed_offset,
        "leader_epochs_removed": list(t.epochs_removed),
        "dump_command": t.dump_command,
    }


def partition_summary_row(c: PartitionComparison) -> dict[str, Any]:
    """The end of one partition's objects."""
    kinds = Counter(d.kind for d in c.divergences)
    prefixes = [p.common_last_offset for p in c.pairs]
    known = [p for p in prefixes if p is not None]
    epochs = [p.common_epoch for p in c.pairs if p.common_epoch is not None]
    counts = Counter(f.severity for f in c.findings)
    return {
        "type": "summary",
        "file": None,
        "scope": "partition",
        "partition": c.name,
        "replicas": [r.label for r in c.replicas],
        "agree": c.agree,
        "refused": c.refused,
        "common_last_offset": min(known) if known and len(known) == len(prefixes) else None,
        "common_epoch": min(epochs) if epochs and len(epochs) == len(prefixes) else None,
        "divergences": {k: kinds.get(k, 0) for k in KINDS},
        "uncomparable": len(c.uncomparable),
        "findings": {s.label: counts.get(s, 0) for s in (Severity.ERROR, Severity.WARNING, Severity.INFO)},
    }


def overall_row(results: Sequence[PartitionComparison], exit_code: int) -> dict[str, Any]:
    """The last object of a run."""
    return {
        "type": "summary",
        "file": None,
        "scope": "overall",
        "partitions": len(results),
        "agree": sum(1 for c in results if c.agree),
        "diverge": sum(1 for c in results if c.divergences),
        "incomplete": sum(1 for c in results if c.incomplete),
        "refused": sum(1 for c in results if c.refused),
        "exit_code": exit_code,
    }


def partition_rows(c: PartitionComparison) -> list[dict[str, Any]]:
    """Every object of one partition, in order."""
    out = [replica_row(c.name, r) for r in c.replicas]
    out += [finding_row(f) for f in c.findings]
    out += [uncomparable_row(c.name, u) for u in c.uncomparable]
    out += [divergence_row(c.name, d) for d in c.divergences]
    out += [truncation_row(c.name, t) for t in c.truncations]
    out.append(partition_summary_row(c))
    return out


# --- text ------------------------------------------------------------------------------------------


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [indent + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


def _range(first: int | None, last: int | None) -> str:
    if first is None:
        return "-"
    return f"{first}..{'end' if last is None else last}"


def _side_text(s: Side) -> str:
    if not s.batches:
        return "none"
    epochs = ",".join(str(e) for e in s.epochs)
    pids = f" producers {','.join(str(p) for p in s.producer_ids)}" if s.producer_ids else ""
    txn = f" txn {s.transactional_batches}" if s.transactional_batches else ""
    return (
        f"{_range(s.first_offset, s.last_offset)} epoch {epochs}, {s.records} records, "
        f"{s.batches} batches, time {s.first_timestamp}..{s.last_timestamp}{pids}{txn}"
    )


def truncation_line(t: TruncationResult) -> str:
    """One follower's truncation, in a sentence."""
    tr = t.truncation
    head = f"if {t.leader} leads: {t.replica}"
    if tr.truncate_to is None:
        return f"{head} truncates to its high watermark, which is not known here (no replication-offset-checkpoint)"
    how = "" if tr.method == "leader-epoch" else " (its high watermark: no leader epoch to ask with)"
    if not t.batches_removed:
        return f"{head} truncates to {tr.truncate_to}{how}: removes nothing"
    epochs = ",".join(str(e) for e in t.epochs_removed)
    return (
        f"{head} truncates to {tr.truncate_to}{how}: removes {t.records_removed} records in "
        f"{t.batches_removed} batches, offsets {t.first_removed_offset}..{t.last_removed_offset}, "
        f"epoch {epochs} ({t.dump_command})"
    )


def log_start_text(r: Replica) -> str:
    """The log start offset, and a tiered replica's local log start offset beside it."""
    if r.tiered and r.log_start_offset < r.local_log_start_offset:
        return f"{r.log_start_offset} (local {r.local_log_start_offset})"
    return str(r.log_start_offset)


def partition_lines(c: PartitionComparison) -> list[str]:
    """A short table per partition: the replicas, each divergent range, each truncation."""
    lines = [f"partition {c.name}: {len(c.replicas)} replicas"]
    rows = [["replica", "log start", "log end", "epochs (start)", "batches", "records", "errors"]]
    for r in c.replicas:
        epochs = " ".join(f"{e}@{s}" for e, s in broker_cache(r)) or "-"
        errors = sum(1 for f in r.findings if f.severity >= Severity.ERROR)
        rows.append(
            [
                r.label,
                log_start_text(r),
                str(r.log_end_offset),
                epochs,
                str(len(r)),
                "?" if r.records_unknown else str(sum(r.counts)),
                str(errors),
            ]
        )
    lines += _table(rows)
    lines += ["  " + finding_line(f) for f in c.findings if f.severity > Severity.INFO]
    for u in c.uncomparable:
        lines.append(
            f"  uncomparable: {u.replica} offsets {_range(u.first_offset, u.last_offset)} "
            f"could not be read ({u.reason} in {u.file}); not compared with any replica"
        )
    for p in c.pairs:
        prefix = (
            f"agree up to offset {p.common_last_offset} (epoch {p.common_epoch})"
            if p.common_last_offset is not None
            else "no common prefix"
        )
        count = len(p.divergences)
        lines.append(f"  {p.a} vs {p.b}: {prefix}; {count} divergent range{'' if count == 1 else 's'}")
        if p.divergences:
            drows = [["kind", "offsets", p.a, p.b]]
            for d in p.divergences:
                drows.append(
                    [d.kind, _range(d.first_offset, d.last_offset), *(_side_text(s) for s in d.sides)]
                )
            lines += _table(drows, "    ")
    lines += ["  " + truncation_line(t) for t in c.truncations]
    lines.append(f"  replicas {verdict_text(c)}")
    return lines


def verdict_text(c: PartitionComparison) -> str:
    """What the comparison found, in a few words after "replicas"."""
    if c.refused:
        return "not compared: they name different topic ids (partitions of different topics)"
    return "agree" if c.agree else ("could not all be read" if c.incomplete else "diverge")


def total_line(results: Sequence[PartitionComparison], exit_code: int) -> str:
    """The last line of a text run."""
    row = overall_row(results, exit_code)
    refused = f", {row['refused']} not compared (different topic ids)" if row["refused"] else ""
    return (
        f"Total: {row['partitions']} partitions: {row['agree']} agree, {row['diverge']} diverge, "
        f"{row['incomplete']} incomplete{refused}; exit {exit_code}"
    )


# --- rich ------------------------------------------------------------------------------------------


def write_rich(console: Any, c: PartitionComparison) -> None:
    """The same content as the text table, as rich tables (markup off: names may hold `[`)."""
    from rich.table import Table
    from rich.text import Text

    from kdump.render.rich_tty import finding_text, print_whole_lines

    replicas = Table(title=f"partition {c.name}", title_justify="left")
    for name in ("replica", "log start", "log end", "epochs (start)", "batches", "records", "errors"):
        replicas.add_column(name, justify="right" if name in ("batches", "records", "errors") else "left")
    for r in c.replicas:
        errors = sum(1 for f in r.findings if f.severity >= Severity.ERROR)
        epochs = " ".join(f"{e}@{s}" for e, s in broker_cache(r)) or "-"
        replicas.add_row(
            r.label,
            log_start_text(r),
            str(r.log_end_offset),
            epochs,
            str(len(r)),
            str(sum(r.counts)),
            str(errors),
        )
    console.print(replicas)
    for f in c.findings:
        if f.severity > Severity.INFO:
            print_whole_lines(console, finding_text(f))
    for u in c.uncomparable:
        console.print(
            Text(
                f"uncomparable: {u.replica} offsets {_range(u.first_offset, u.last_offset)} ({u.reason})",
                "yellow",
            )
        )
    for p in c.pairs:
        prefix = f"agree up to offset {p.common_last_offset} (epoch {p.common_epoch})"
        if p.common_last_offset is None:
            prefix = "no common prefix"
        table = Table(title=f"{p.a} vs {p.b}: {prefix}", title_justify="left")
        for name in ("kind", "offsets", p.a, p.b):
            table.add_column(name)
        for d in p.divergences:
            style = "bold red" if d.kind == "conflict" else "yellow"
            table.add_row(
                Text(d.kind, style), _range(d.first_offset, d.last_offset), *(_side_text(s) for s in d.sides)
            )
        console.print(table)
    for t in c.truncations:
        console.print(truncation_line(t))
    if c.refused:
        console.print(Text(f"replicas {verdict_text(c)}", "bold red"))
