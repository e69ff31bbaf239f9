"""JSON Lines output: one object per event, the schema of `kdump.render.rows`.

Records are the bulk of a deep dump, so their lines are assembled directly from the record with
the C string encoder; a test holds them equal to `json.dumps(rows.record_row(...))`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import IO, Any

from kdump.findings import Finding
from kdump.formats.batch import BatchHeader
from kdump.formats.records import Record
from kdump.ops.dump.files import Entry, FileStart
from kdump.ops.dump.internal import InternalRecord
from kdump.ops.dump.payload_events import PayloadRecord
from kdump.render import rows
from kdump.scan.events import ScanSummary

_encode_string: Any = json.encoder.encode_basestring_ascii


def _dumps(row: Any) -> str:
    return json.dumps(row, separators=(",", ":"))


def _bytes_json(data: bytes | None, encoding: str) -> str:
    if data is None:
        return "null"
    if encoding == "utf8":
        return str(_encode_string(data.decode("utf-8", "backslashreplace")))
    return '"' + str(rows.encode_bytes(data, encoding)) + '"'


_HEADS: dict[str, str] = {}


def record_head(file_json: str) -> str:
    """The start of a record line up to its offset's name: type, file, topic and partition (the
    last two from the partition directory's name, null when it is not named as one)."""
    head = _HEADS.get(file_json)
    if head is None:
        topic, partition = rows.topic_partition(str(json.loads(file_json)))
        t = "null" if topic is None else _encode_string(topic)
        p = "null" if partition is None else partition
        head = _HEADS[file_json] = (
            f'{{"type":"record","file":{file_json},"topic":{t},"partition":{p},"offset":'
        )
    return head


def record_line(r: Record, batch: BatchHeader | None, file_json: str, encoding: str) -> str:
    """One record as a JSON line (without the newline); `file_json` is the file name already encoded."""
    if batch is None or batch.is_control or r.crc is not None:
        return _dumps(rows.record_row(r, batch, str(json.loads(file_json)), encoding))
    if r.headers:
        headers = (
            "["
            + ",".join(
                '{"key":' + _encode_string(k.decode("utf-8", "backslashreplace")) + ',"value":'
                f"{_bytes_json(v, encoding)}}}"
                for k, v in r.headers
            )
            + "]"
        )
    else:
        headers = "[]"
    key, value = r.key, r.value
    return (
        f'{record_head(file_json)}{r.offset},"position":{batch.position},'
        f'"timestamp":{r.timestamp},"timestamp_type":"{"LogAppendTime" if batch.timestamp_type == 1 else "CreateTime"}",'
        f'"key":{_bytes_json(key, encoding)},"value":{_bytes_json(value, encoding)},"headers":{headers},'
        f'"sequence":{r.sequence},"key_size":{-1 if key is None else len(key)},'
        f'"value_size":{-1 if value is None else len(value)}}}'
    )


_FORMAT_JSON: dict[str | None, str] = {None: "null"}


def _format_json(fmt: str | None) -> str:
    text = _FORMAT_JSON[fmt] = _encode_string(fmt)
    return str(text)


def payload_record_line(pr: PayloadRecord, batch: BatchHeader | None, file_json: str, encoding: str) -> str:
    """A record with decoded key and value as a JSON line: `rows.payload_record_row`, built directly
    (the decoded values are spliced in as the JSON text they were rendered to once)."""
    r, k, v = pr.record, pr.key, pr.value
    if batch is None or batch.is_control or r.crc is not None:
        return _dumps(rows.payload_record_row(pr, batch, str(json.loads(file_json)), encoding))
    key, value, headers = r.key, r.value, r.headers
    if headers:
        hs = (
            "["
            + ",".join(
                '{"key":' + _encode_string(hk.decode("utf-8", "backslashreplace")) + ',"value":'
                f"{_bytes_json(hv, encoding)}}}"
                for hk, hv in headers
            )
            + "]"
        )
    else:
        hs = "[]"
    kj = k.json.decode() if k.json is not None else _bytes_json(key, encoding)
    vj = v.json.decode() if v.json is not None else _bytes_json(value, encoding)
    kf = _FORMAT_JSON.get(k.format) or _format_json(k.format)
    vf = _FORMAT_JSON.get(v.format) or _format_json(v.format)
    return (
        f'{record_head(file_json)}{r.offset},"position":{batch.position},'
        f'"timestamp":{r.timestamp},"timestamp_type":"{"LogAppendTime" if batch.timestamp_type == 1 else "CreateTime"}",'
        f'"key":{kj},"value":{vj},"headers":{hs},"sequence":{r.sequence},'
        f'"key_size":{-1 if key is None else len(key)},"value_size":{-1 if value is None else len(value)},'
        f'"key_schema_id":{"null" if k.schema_id is None else k.schema_id},'
        f'"value_schema_id":{"null" if v.schema_id is None else v.schema_id},'
        f'"key_format":{kf},"value_format":{vf}}}'
    )


def _b(flag: bool) -> str:
    return "true" if flag else "false"


def batch_line(h: BatchHeader, file_json: str) -> str:
    """One batch as a JSON line, built directly (a test holds it equal to `rows.batch_row`)."""
    base = "null" if h.base_offset is None else h.base_offset
    count = "null" if h.count is None else h.count
    horizon = "null" if not h.has_delete_horizon else h.base_timestamp
    return (
        f'{{"type":"batch","file":{file_json},"position":{h.position},"base_offset":{base},'
        f'"last_offset":{h.last_offset},"count":{count},"size":{h.size},"magic":{h.magic},"crc":{h.crc},'
        f'"crc_ok":{_b(h.crc_ok)},"compression":"{rows.codec_label(h.compression)}",'
        f'"timestamp_type":"{rows.timestamp_type_label(h.timestamp_type)}","base_timestamp":{h.base_timestamp},'
        f'"max_timestamp":{h.max_timestamp},"producer_id":{h.producer_id},"producer_epoch":{h.producer_epoch},'
        f'"base_sequence":{h.base_sequence},"last_sequence":{h.last_sequence},'
        f'"partition_leader_epoch":{h.partition_leader_epoch},"is_transactional":{_b(h.is_transactional)},'
        f'"is_control":{_b(h.is_control)},"delete_horizon_ms":{horizon}}}'
    )


def write_jsonl(events: Iterable[Any], out: IO[str], *, encoding: str = "utf8") -> None:
    """Write dump events as JSON Lines, flushing per batch of lines (output streams)."""
    batch: BatchHeader | None = None
    file = ""
    file_json = '""'
    buf: list[str] = []
    append = buf.append
    enc = _encode_string
    fast = encoding == "utf8"
    prefix = position = ts_type = ""
    plain_batch = False
    for ev in events:
        if type(ev) is Record:
            if fast and plain_batch and ev.crc is None:
                # The bulk of a deep dump: the same line as record_line, built inline.
                key, value, headers = ev.key, ev.value, ev.headers
                k = "null" if key is None else enc(key.decode("utf-8", "backslashreplace"))
                v = "null" if value is None else enc(value.decode("utf-8", "backslashreplace"))
                h = (
                    "["
                    + ",".join(
                        '{"key":'
                        + enc(hk.decode("utf-8", "backslashreplace"))
                        + ',"value":'
                        + ("null" if hv is None else enc(hv.decode("utf-8", "backslashreplace")))
                        + "}"
                        for hk, hv in headers
                    )
                    + "]"
                    if headers
                    else "[]"
                )
                append(
                    f'{prefix}{ev.offset},{position}"timestamp":{ev.timestamp},{ts_type}"key":{k},"value":{v},'
                    f'"headers":{h},"sequence":{ev.sequence},"key_size":{-1 if key is None else len(key)},'
                    f'"value_size":{-1 if value is None else len(value)}}}'
                )
            else:
                append(record_line(ev, batch, file_json, encoding))
            continue
        if isinstance(ev, BatchHeader):
            batch = ev
            plain_batch = not ev.is_control and ev.magic == 2
            prefix = record_head(file_json)
            tt = "LogAppendTime" if ev.timestamp_type == 1 else "CreateTime"
            position = f'"position":{ev.position},'
            ts_type = f'"timestamp_type":"{tt}",'
            if len(buf) > 512:
                buf.append("")
                out.write("\n".join(buf))
                buf.clear()
            append(batch_line(ev, file_json))
        elif type(ev) is PayloadRecord:
            append(payload_record_line(ev, batch, file_json, encoding))
        elif isinstance(ev, InternalRecord):
            append(_dumps(rows.internal_record_row(ev, batch, file, encoding)))
        elif isinstance(ev, FileStart):
            file = ev.file
            file_json = _dumps(file)
            batch = None
            append(_dumps(rows.file_row(ev)))
        else:
            append(_dumps(row_of(ev)))
    if buf:
        buf.append("")
        out.write("\n".join(buf))
    out.flush()


def row_of(ev: Any) -> dict[str, Any]:
    """The JSON row of any non-record event."""
    if isinstance(ev, Finding):
        return rows.finding_row(ev)
    if isinstance(ev, ScanSummary):
        return rows.summary_row(ev)
    if isinstance(ev, Entry):
        return rows.entry_row(ev)
    if isinstance(ev, FileStart):
        return rows.file_row(ev)
    if isinstance(ev, BatchHeader):
        return rows.batch_row(ev, "")
    if hasattr(ev, "to_row"):
        return dict(ev.to_row())
    raise TypeError(f"no JSON row for {type(ev).__name__}")
