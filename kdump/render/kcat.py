"""`--format kcat`: each record as the JSON object `kcat -C -J` prints for it, one per line.

kcat's keys, in its order: `topic`, `partition`, `offset`, then `tstype` ("create", "logappend"
or "unknown") and `ts` (both left out for v0 messages, which have no timestamp, as kcat leaves
them out when the client has none), `broker` (always -1: no broker served these records),
`headers` as a flat list `[k1, v1, k2, v2, ...]` (a null value as null; the key left out for a
record without headers, as kcat does), `key`, `key_schema_id` (only when the key was decoded from
Schema Registry's wire format), `payload`, `value_schema_id` (likewise). A decoded key or value is
the JSON it decoded to, as kcat's `-s avro` prints it; otherwise the bytes in `--encoding`, JSON
strings with non-ASCII characters written as they are (kcat does not escape them).

Only records are written: control records, which a consumer never sees, are left out, and so are
batches, file starts and summaries. Findings are said on stderr as diagnostics, never
mixed into the records. Topic and partition come from the partition directory's name (null when
it is not named as one).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import IO, Any

from kdump.findings import Finding
from kdump.formats.batch import BatchHeader
from kdump.formats.records import Record
from kdump.ops.dump.files import FileStart
from kdump.ops.dump.internal import InternalRecord
from kdump.ops.dump.payload_events import PayloadRecord
from kdump.render import rows
from kdump.render.text import finding_line

_TSTYPES = {0: "create", 1: "logappend"}


def _string(data: bytes | None, encoding: str) -> str:
    if data is None:
        return "null"
    return json.dumps(rows.encode_bytes(data, encoding), ensure_ascii=False)


def kcat_line(
    r: Record, batch: BatchHeader | None, head: str, encoding: str, pr: PayloadRecord | None = None
) -> str:
    """One record as kcat's JSON object (no newline); `head` is `kcat_head`'s for its file."""
    parts = [f"{head}{r.offset}"]
    magic = 2 if batch is None else batch.magic
    if magic > 0:
        tstype = _TSTYPES.get(batch.timestamp_type, "unknown") if batch is not None else "unknown"
        parts.append(f',"tstype":"{tstype}","ts":{r.timestamp}')
    parts.append(',"broker":-1')
    if r.headers:
        flat = ",".join(
            f"{json.dumps(k.decode('utf-8', 'backslashreplace'), ensure_ascii=False)},{_string(v, encoding)}"
            for k, v in r.headers
        )
        parts.append(f',"headers":[{flat}]')
    for name, id_name, data, decoded in (
        ("key", "key_schema_id", r.key, None if pr is None else pr.key),
        ("payload", "value_schema_id", r.value, None if pr is None else pr.value),
    ):
        if decoded is not None and decoded.json is not None:
            parts.append(f',"{name}":{decoded.json.decode()}')
        else:
            parts.append(f',"{name}":{_string(data, encoding)}')
        if decoded is not None and decoded.schema_id is not None:
            parts.append(f',"{id_name}":{decoded.schema_id}')
    parts.append("}")
    return "".join(parts)


def kcat_head(file: str) -> str:
    """`{"topic":...,"partition":...,"offset":` for the records of `file`."""
    topic, partition = rows.topic_partition(file)
    t = "null" if topic is None else json.dumps(topic, ensure_ascii=False)
    p = "null" if partition is None else str(partition)
    return f'{{"topic":{t},"partition":{p},"offset":'


def write_kcat(
    events: Iterable[Any], out: IO[str], say: Callable[[str], None], *, encoding: str = "utf8"
) -> None:
    """Write the records of dump events as kcat's JSON lines; each finding's text line is given to
    `say` (the CLI says it on stderr), after the records before it are written."""
    batch: BatchHeader | None = None
    head = '{"topic":null,"partition":null,"offset":'
    buf: list[str] = []
    for ev in events:
        t = type(ev)
        if t is Record or t is PayloadRecord or t is InternalRecord:
            record = ev if t is Record else ev.record
            if batch is not None and batch.is_control:
                continue
            buf.append(kcat_line(record, batch, head, encoding, ev if t is PayloadRecord else None))
        elif isinstance(ev, BatchHeader):
            batch = ev
            if len(buf) > 512:
                out.write("\n".join(buf) + "\n")
                buf.clear()
        elif isinstance(ev, FileStart):
            batch = None
            head = kcat_head(ev.file)
        elif isinstance(ev, Finding):
            if buf:
                out.write("\n".join(buf) + "\n")
                buf.clear()
                out.flush()
            say(finding_line(ev))
    if buf:
        out.write("\n".join(buf) + "\n")
    out.flush()
