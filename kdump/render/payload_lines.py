"""Record-level dump chunks with keys and values decoded (and `--where`), for `render.parallel`.

A worker decodes a chunk's records (the compiled record path where it applies), decodes their keys
and values with the decoder its process inherited (`ops.payloads.decode.registered_decoder`), keeps the
records `--where` accepts, and renders them; its keys' and values' tally goes back to the main
process, which adds the chunks' tallies up and shows them, with the per-schema findings, before the
file's summary.
"""

from __future__ import annotations

import dataclasses
import gc
import io
import json
from typing import Any

from kdump.findings import Finding
from kdump.formats.batch import BatchHeader
from kdump.formats.records import Record
from kdump.ops.dump.files import CONTEXT, FileStart
from kdump.ops.dump.payload_events import PayloadRecord, PayloadTally
from kdump.ops.dump.stream import DumpOptions, batches_span, count_finding, decode_expanded, expand_batches
from kdump.ops.payloads.decode import PayloadDecoder, attach_payloads, count_findings, registered_decoder
from kdump.render import rows
from kdump.scan.events import ScanSummary
from kdump.scan.source import open_buffer
from kdump.store.queries import as_path


def _render(events: list[Any], label: str, fmt: str, encoding: str) -> bytes:
    """Events of one file rendered as if it had just started, without the file's own line."""
    out = io.StringIO()
    context = [FileStart(label, CONTEXT, 0, None), *events]
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


# Whether a chunk with nothing but decoding to do takes the direct loop (`_direct`); tests turn it
# off to hold the two ways byte-identical.
DIRECT = True


def _work(
    path: str, label: str, events: list[Any], options: DumpOptions, fmt: str, encoding: str
) -> tuple[bytes, int, dict[int, int], PayloadTally | None]:
    payloads = options.payloads
    assert payloads is not None
    if DIRECT and payloads.decoding and payloads.where is None and not options.filter.active:
        return _direct(path, label, events, fmt, encoding, registered_decoder(payloads))
    expanded = expand_batches(as_path(path), events, options, label, None)
    counts: dict[int, int] = {}
    for e in events:
        if isinstance(e, Finding):
            count_finding(counts, e, -1)
    tally: PayloadTally | None = None
    shown: Any = expanded
    if payloads.decoding:
        decoder = registered_decoder(payloads)
        shown = list(attach_payloads(expanded, decoder, label))
        tally = decoder.take_tally(label)
    if payloads.where is not None:
        from kdump.ops.payloads.where import compile_where
        from kdump.render.where_filter import filter_where

        shown = list(filter_where(shown, compile_where(payloads.where), encoding, label))
    records = 0
    for e in shown:
        if isinstance(e, Finding):
            count_finding(counts, e)
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


def _direct(
    path: str, label: str, events: list[Any], fmt: str, encoding: str, decoder: PayloadDecoder
) -> tuple[bytes, int, dict[int, int], PayloadTally | None]:
    """`_work` for a chunk whose records are all shown: each batch's records decoded and their lines
    written in one loop, in the order the general way writes them (batch, the findings of its
    records, then each record after the findings of its key and value)."""
    from kdump.render import jsonl, text

    file_json = json.dumps(label)
    parts: list[str] = []
    counts: dict[int, int] = {}
    records = 0
    decoder.take_tally(label)
    decode = decoder.decode
    if fmt == "json":

        def batch_line(h: BatchHeader) -> str:
            return jsonl.batch_line(h, file_json)

        def plain(r: Record, h: BatchHeader) -> str:
            return jsonl.record_line(r, h, file_json, encoding)

        def decoded(pr: PayloadRecord, h: BatchHeader) -> str:
            return jsonl.payload_record_line(pr, h, file_json, encoding)

        def finding(f: Finding) -> str:
            return json.dumps(rows.finding_row(f), separators=(",", ":"))
    else:
        batch_line = text.batch_line

        def plain(r: Record, h: BatchHeader) -> str:
            return text.record_line(r, h, encoding)

        def decoded(pr: PayloadRecord, h: BatchHeader) -> str:
            return text.payload_record_line(pr, h, encoding)

        finding = text.finding_line
    append = parts.append
    fast = _fast_json(decoder, file_json, encoding) if fmt == "json" else None
    with open_buffer(as_path(path), span=batches_span(events)) as buf:
        for ev in events:
            if not isinstance(ev, BatchHeader):
                append(
                    finding(ev)
                    if isinstance(ev, Finding)
                    else _render([ev], label, fmt, encoding).decode()[:-1]
                )
                continue
            recs, found = decode_expanded(buf, ev, label)
            append(batch_line(ev))
            for f in found:
                count_finding(counts, f)
                append(finding(f))
            records += len(recs)
            if ev.is_control:
                for r in recs:
                    append(plain(r, ev))
                continue
            if fast is not None:
                recs = fast(recs, ev, append)
            for r in recs:
                pr, fs = decode(r, ev, label)
                for f in fs:
                    count_finding(counts, f)
                    append(finding(f))
                append(decoded(pr, ev))
    if parts:
        parts.append("")
    return "\n".join(parts).encode("utf-8"), records, counts, decoder.take_tally(label)


def _fast_json(decoder: PayloadDecoder, file_json: str, encoding: str) -> Any:
    """The JSON lines of a batch's records, as long as each takes the decoder's common case (a raw
    or int key, a value of a known live schema): `jsonl.payload_record_line`'s line, built without
    the record's event. Returns the records from the first one that does not (for the general way)."""
    from kdump.render.jsonl import _bytes_json, record_head

    key_kind = decoder.options.key_type
    key_format = "null" if key_kind == "raw" else f'"{key_kind}"'
    key_len = {"int32": 4, "int64": 8}.get(key_kind, -1)
    fast_value = decoder.fast_value
    tally = decoder.tally

    def lines(recs: list[Record], h: BatchHeader, append: Any) -> list[Record]:
        head = (
            record_head(file_json),
            f',"position":{h.position},"timestamp":',
            f',"timestamp_type":"{"LogAppendTime" if h.timestamp_type == 1 else "CreateTime"}","key":',
        )
        decoded = tally.decoded
        keys = 0
        # The value's common case inlined: the prefix, compiled decoder, schema id and format that
        # fast_value took last (values of one schema follow each other), counted here in `same`.
        common = decoder.last_common()
        same = 0
        try:
            for i, r in enumerate(recs):
                k, v = r.key, r.value
                if r.headers or v is None or r.crc is not None:
                    return recs[i:]
                if key_len < 0:
                    kj = _bytes_json(k, encoding)
                elif k is not None and len(k) == key_len:
                    kj = str(int.from_bytes(k, "big", signed=True))
                else:
                    return recs[i:]
                text = None
                if common is not None and v.startswith(common[0]):
                    text = common[1](v)
                    if text is not None:
                        same += 1
                        sid, fmt = common[2], common[3]
                if text is None:
                    got = fast_value(v)
                    if got is None:
                        return recs[i:]
                    text, sid, fmt = got
                    if common is not None and same:
                        decoded[common[3]] += same
                        same = 0
                    common = decoder.last_common()
                keys += 1
                append(
                    f'{head[0]}{r.offset}{head[1]}{r.timestamp}{head[2]}{kj},"value":{text.decode()},"headers":[],'
                    f'"sequence":{r.sequence},"key_size":{-1 if k is None else len(k)},"value_size":{len(v)},'
                    f'"key_schema_id":null,"value_schema_id":{"null" if sid is None else sid},'
                    f'"key_format":{key_format},"value_format":"{fmt}"}}'
                )
            return []
        finally:
            if common is not None and same:
                decoded[common[3]] += same
            if key_len > 0 and keys:
                decoded[key_kind] += keys

    return lines
