"""`kdump forecast`'s output: a text an on-call reads in ten seconds, or JSON Lines with every fact."""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from kdump.ops.consumers import GroupPartitionImpact
from kdump.ops.forecast import Forecast, PartitionForecast, Verdict
from kdump.render.consumers import impact_rows

_HEADLINE = {
    Verdict.CLEAN: "STARTS CLEAN",
    Verdict.RECOVERS: "STARTS AFTER RECOVERY, nothing lost",
    Verdict.LOSES: "STARTS, BUT LOSES OR DELETES DATA",
    Verdict.NO_START: "DOES NOT START",
}


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


SHOWN = 5  # lines of one kind the text shows; --format json lists every partition


def _capped(lines: Iterable[str]) -> Iterator[str]:
    items = list(lines)
    yield from items[:SHOWN]
    if len(items) > SHOWN:
        yield f"  ... and {len(items) - SHOWN} more (--format json lists every partition)"


def _pinned(p: PartitionForecast) -> str:
    """A partition whose last stable offset an open transaction holds back."""
    t = p.open_transactions[0]
    more = f" (and {len(p.open_transactions) - 1} more open)" if len(p.open_transactions) > 1 else ""
    if t.hangs:
        why = (
            f"the coordinator's log says {t.coordinator_state}"
            if t.coordinator_state
            else "the coordinator's log (all on this broker) holds nothing of it"
        )
        fate = f"HANGS ({why}): no marker will come; abort it: kafka-transactions.sh abort"
    else:
        known = t.coordinator_state or "not in these log dirs"
        fate = f"the coordinator ({known}) ends it or aborts it at the producer's transaction.timeout.ms"
    return (
        f"  LSO pinned: {p.dir} at {p.last_stable_offset} (log end {p.log_end_offset}): producer "
        f"{t.producer_id}'s transaction from offset {t.first_offset} is open{more}; {fate}"
    )


def forecast_lines(fc: Forecast, groups: Sequence[str] = ()) -> Iterator[str]:
    """The short text: verdict, work and time, what is lost, what to do first."""
    node = "?" if fc.node_id is None else fc.node_id
    written = f", metadata written by Kafka {fc.written_by}+" if fc.written_by else ""
    yield f"broker {node} (Kafka {fc.kafka_version}{written}): {_HEADLINE[fc.verdict]}"
    for reason in fc.summary()["refuses_start"]:
        yield f"  refuses: {reason}"
    for d in fc.log_dirs:
        for reason in d.offline:
            yield f"  log dir {d.path} OFFLINE: {reason}"
    rec = [p for p in fc.partitions if p.action == "recover"]
    yield (
        f"  start-up: {len(fc.partitions)} partitions, {len(rec)} recovered, {_size(fc.reread_bytes)} re-read, "
        f"about {fc.estimated_seconds:.1f} s"
    )
    lost = [p for p in fc.partitions if p.loses and p.action != "create-empty"]
    yield from _capped(
        f"  loses: {p.dir} ({p.action}) "
        + (f"offsets {p.removed[0]}-{p.removed[1]}" if p.removed else "its data")
        + f": {p.reason}"
        for p in lost
    )
    created = [p for p in fc.partitions if p.action == "create-empty"]
    if created:
        only = sum(1 for p in created if p.only_replica)
        names = ", ".join(p.dir for p in created[:SHOWN])
        more = f" and {len(created) - SHOWN} more" if len(created) > SHOWN else ""
        yield (
            f"  created empty: {names}{more} (assigned here, missing on disk"
            + (f"; this broker was the only replica of {only}: their records are gone)" if only else ")")
        )
    yield from _capped(f"  not loaded: {p.dir}: {p.reason}" for p in fc.partitions if p.action == "offline")
    yield from _capped(_pinned(p) for p in fc.partitions if p.served and p.open_transactions)
    yield from groups
    for note in fc.unknown:
        yield f"  unknown: {note}"
    first = [p for p in lost if p.action == "recover"][:SHOWN]
    if first:
        yield "  first: keep what recovery would cut, before the broker starts:"
        for p in first:
            path = shlex.quote(str(p.log_dir.rstrip("/") + "/" + p.dir))
            # No --out: salvage's own new directory beside the log dir, whatever the cwd.
            yield f"    kdump salvage {path}"
    elif lost:
        yield "  first: copy the directories named above before starting the broker"


def forecast_records(fc: Forecast, impacts: Sequence[GroupPartitionImpact] = ()) -> Iterator[dict[str, Any]]:
    """Every fact, one JSON object a line: the summary, each log dir, each partition, each group's
    commit on a partition the start-up changes."""
    yield fc.summary()
    for d in fc.log_dirs:
        yield d.to_dict()
    for p in fc.partitions:
        yield p.to_dict()
    yield from impact_rows(impacts)


def forecast_json_lines(fc: Forecast, impacts: Sequence[GroupPartitionImpact] = ()) -> Iterator[str]:
    for rec in forecast_records(fc, impacts):
        yield json.dumps(rec, sort_keys=False)
