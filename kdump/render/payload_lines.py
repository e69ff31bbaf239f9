"""Record-level dump chunks with keys and values decoded (and `--where`), for `render.parallel`.

A worker decodes a chunk's records (the compiled record path where it applies), decodes their keys
and values with the decoder its process inherited (`ops.payloads.registered_decoder`), keeps the
records `--where` accepts, and renders them; its keys' and values' tally goes back to the main
process, which adds the chunks' tallies up and shows them, with the per-schema findings, before the
file's summary.
"""

from __future__ import annotations

import dataclasses
import gc
import io
from typing import Any

from kdump.findings import Finding
from kdump.formats.records import Record
from kdump.ops.dump import DumpOptions, expand_batches
from kdump.ops.files import FileStart
from kdump.ops.payloads import (
    PayloadRecord,
    PayloadTally,
    attach_payloads,
    count_findings,
    registered_decoder,
)
from kdump.scan.events import ScanSummary
from kdump.store.queries import as_path


def _render(events: list[Any], label: str, fmt: str, encoding: str) -> bytes:
    """Events of one file rendered as if it had just started, without the file's own line."""
    out = io.StringIO()
    context = [FileStart(label, "log", 0, None), *events]
    if fmt == "json":
        from kdump.render.jsonl import write_jsonl

        write_jsonl(context, out, encoding=encoding)
        text = out.getvalue()
        return text[text.find("\n") + 1 :].encode("utf-8")
    from kdump.render.text import write_text

    write_text(context, out, encoding=encoding)
    text = out.getvalue()
    return (text.split("\n", 1)[1] if "\n" in text else "").encode("utf-8")


def work_payloads(
    args: tuple[str, str, list[Any], DumpOptions, str, str, str | None],
) -> tuple[bytes, int, dict[int, int], PayloadTally | None]:
    """One chunk: (bytes, records shown, new findings by severity, the keys' and values' tally)."""
    path, label, events, options, fmt, encoding, _decoder = args
    payloads = options.payloads
    assert payloads is not None
    # Decoded values and records form no reference cycles, yet allocating millions of them sets off
    # the cyclic collector over and over: pause it for the chunk.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _work(path, label, events, options, fmt, encoding)
    finally:
        if collecting:
            gc.enable()


def _work(
    path: str, label: str, events: list[Any], options: DumpOptions, fmt: str, encoding: str
) -> tuple[bytes, int, dict[int, int], PayloadTally | None]:
    payloads = options.payloads
    assert payloads is not None
    expanded = expand_batches(as_path(path), events, options, label, None)
    counts: dict[int, int] = {}
    for e in events:
        if isinstance(e, Finding):
            counts[e.severity] = counts.get(e.severity, 0) - 1
    tally: PayloadTally | None = None
    shown: Any = expanded
    if payloads.decoding:
        decoder = registered_decoder(payloads)
        shown = list(attach_payloads(expanded, decoder, label))
        tally = decoder.take_tally(label)
    if payloads.where is not None:
        from kdump.ops.where import compile_where
        from kdump.render.where_filter import filter_where

        shown = list(filter_where(shown, compile_where(payloads.where), encoding, label))
    records = 0
    for e in shown:
        if isinstance(e, Finding):
            counts[e.severity] = counts.get(e.severity, 0) + 1
        elif type(e) is Record or type(e) is PayloadRecord:
            records += 1
    return _render(shown, label, fmt, encoding), records, counts, tally


def finish_payloads(
    summary: ScanSummary, tally: PayloadTally, options: DumpOptions, label: str
) -> tuple[ScanSummary, list[Any]]:
    """The file's summary counting the per-schema findings, and what comes before it: those
    findings and the tally."""
    assert options.payloads is not None
    decoder = registered_decoder(options.payloads)
    decoder.tally = dataclasses.replace(tally, file=label)
    tail = decoder.finish(label)
    return count_findings(summary, [f for f in tail if isinstance(f, Finding)]), tail
