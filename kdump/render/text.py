"""Plain text output, close to what kafka-dump-log users know.

Batch and record lines carry Kafka's field names in Kafka's order (`baseOffset: 0 lastOffset: 8
count: 9 ...`), so existing grep habits keep working; kdump adds what Kafka leaves out (header
values, control markers decoded, findings in place, a summary per file).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import IO, TYPE_CHECKING, Any

from kdump.errors import DecodeError
from kdump.findings import Finding
from kdump.formats.batch import BatchHeader
from kdump.formats.records import Record
from kdump.ops.dump.files import Entry, FileStart
from kdump.ops.dump.payload_events import PayloadRecord, PayloadTally
from kdump.render import rows
from kdump.render.kafka_decoded import NEWEST_KAFKA, kafka_decoded_text
from kdump.scan.events import ScanSummary
from kdump.store.hints import repair_command

if TYPE_CHECKING:
    # Only for annotations: the internal-topic decoders cost ~10 ms to import at every start.
    from kdump.ops.dump.internal import InternalRecord


_SNAPSHOT_NAME = re.compile(r"(\d{20})-(\d{10})\.checkpoint")


def append_snapshot_id(file: str, append: Callable[[str], None]) -> None:
    """The line Kafka's tool prints under a KRaft snapshot's name: its id (end offset and epoch), from
    the name `<offset>-<epoch>.checkpoint`, or that it is the bootstrap snapshot."""
    name = file.replace("\\", "/").rsplit("/", 1)[-1]
    if name == "bootstrap.checkpoint":
        append("KRaft bootstrap snapshot")
    elif match := _SNAPSHOT_NAME.fullmatch(name):
        append(f"Snapshot end offset: {int(match[1])}, epoch: {int(match[2])}")


def _b(flag: bool) -> str:
    return "true" if flag else "false"


def batch_line(h: BatchHeader) -> str:
    """One batch in kafka-dump-log's field order."""
    ts = f"{rows.timestamp_type_label(h.timestamp_type)}: {h.max_timestamp}"
    tail = (
        f"position: {h.position} {ts} size: {h.size} magic: {h.magic} "
        f"compresscodec: {rows.codec_label(h.compression)} crc: {h.crc} isvalid: {_b(h.crc_ok)}"
    )
    if h.magic < 2:
        return f"offset: {h.last_offset} {tail}"
    horizon = "OptionalLong.empty" if h.delete_horizon_ms is None else f"OptionalLong[{h.delete_horizon_ms}]"
    return (
        f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.count} "
        f"baseSequence: {h.base_sequence} lastSequence: {h.last_sequence} producerId: {h.producer_id} "
        f"producerEpoch: {h.producer_epoch} partitionLeaderEpoch: {h.partition_leader_epoch} "
        f"isTransactional: {_b(h.is_transactional)} isControl: {_b(h.is_control)} "
        f"deleteHorizonMs: {horizon} {tail}"
    )


def _record_metadata(r: Record, batch: BatchHeader | None) -> list[str]:
    """Kafka's metadata fields of a record line (what precedes key and payload)."""
    ts_label = rows.timestamp_type_label(batch.timestamp_type) if batch is not None else "CreateTime"
    key_size = -1 if r.key is None else len(r.key)
    value_size = -1 if r.value is None else len(r.value)
    parts = [f"| offset: {r.offset} {ts_label}: {r.timestamp} keySize: {key_size} valueSize: {value_size}"]
    if r.crc is not None:
        parts.append(f"isValid: {_b(bool(r.crc_ok))} crc: {r.crc}")
    else:
        keys = ",".join(k.decode("utf-8", "backslashreplace") for k, _ in r.headers)
        parts.append(f"sequence: {r.sequence} headerKeys: [{keys}]")
    return parts


def internal_record_line(ir: InternalRecord, batch: BatchHeader | None, *, kafka: str = NEWEST_KAFKA) -> str:
    """A record of an internal topic: Kafka's metadata fields, then its decoder's key and payload text.

    The text after the metadata is what kafka-dump-log's own decoder of Kafka `kafka` prints
    (`kafka_decoded.kafka_decoded_text`); where Kafka's tool would abort, kdump prints its JSON
    decoding instead. Tagged fields no table declares, which Kafka's tool drops, follow as
    `unknownTaggedFields: [...]`.
    """
    line = " ".join(_record_metadata(ir.record, batch))
    decoded = ir.decoded
    try:
        line += kafka_decoded_text(decoded, ir.record.offset, kafka=kafka)
    except DecodeError:
        return f"{line} decoded: {json.dumps(decoded.to_dict(), separators=(',', ':'))}"
    if decoded.key_unknown_tagged_fields or decoded.value_unknown_tagged_fields:
        unknown = decoded.to_dict()["unknownTaggedFields"]
        line += f" unknownTaggedFields: {json.dumps(unknown, separators=(',', ':'))}"
    return line


def record_line(r: Record, batch: BatchHeader | None, encoding: str) -> str:
    """One record: Kafka's metadata fields, then key, payload and headers with their values."""
    parts = _record_metadata(r, batch)
    if batch is not None and batch.is_control:
        control = rows.control_fields(r)
        if control is None:
            parts.append("controlType: INVALID")
        elif "coordinator_epoch" in control:
            parts.append(f"endTxnMarker: {control['type']} coordinatorEpoch: {control['coordinator_epoch']}")
        else:
            parts.append(f"controlType: {control['type']}")
        return " ".join(parts)
    if r.key is not None:
        parts.append(f"key: {rows.encode_bytes(r.key, encoding)}")
    if r.value is not None:
        parts.append(f"payload: {rows.encode_bytes(r.value, encoding)}")
    if r.headers:
        parts.append(headers_text(r, encoding))
    return " ".join(parts)


def payload_record_line(pr: PayloadRecord, batch: BatchHeader | None, encoding: str) -> str:
    """A record with decoded key and value: Kafka's metadata fields, then each side's schema id (when
    it names one) and its decoded value as compact JSON (raw, as `record_line` shows it, when it did
    not decode), then the headers."""
    r = pr.record
    parts = _record_metadata(r, batch)
    for label, data, decoded in (("key", r.key, pr.key), ("payload", r.value, pr.value)):
        if decoded.schema_id is not None:
            parts.append(f"{'keySchemaId' if label == 'key' else 'valueSchemaId'}: {decoded.schema_id}")
        if decoded.json is not None:
            parts.append(f"{label}: {decoded.json.decode()}")
        elif data is not None:
            parts.append(f"{label}: {rows.encode_bytes(data, encoding)}")
    if r.headers:
        parts.append(headers_text(r, encoding))
    return " ".join(parts)


def payload_tally_line(t: PayloadTally) -> str:
    """What a file's keys and values decoded to, before its summary."""
    decoded = ", ".join(f"{fmt} {n}" for fmt, n in sorted(t.decoded.items())) or "none"
    line = (
        f"Payloads: decoded {sum(t.decoded.values())} ({decoded}), failed {t.failed}, "
        f"unknown schema {t.unknown_schema}, deleted schema {t.deleted_schema}, no schema id {t.not_framed}"
    )
    if t.unknown:
        line += f"; unknown: {', '.join(sorted(t.unknown))}"
    if t.deleted:
        line += f"; deleted: {', '.join(sorted(t.deleted))}"
    return line


def headers_text(r: Record, encoding: str) -> str:
    """`headers: [k=v, ...]`, values in `encoding` (null for a null value)."""
    shown = ", ".join(
        f"{k.decode('utf-8', 'backslashreplace')}={'null' if v is None else rows.encode_bytes(v, encoding)}"
        for k, v in r.headers
    )
    return f"headers: [{shown}]"


def finding_line(f: Finding) -> str:
    """One finding: severity, code, file:position, offset, message, repair."""
    where = f.file if f.position is None else f"{f.file}:{f.position}"
    offset = "" if f.offset is None else f" offset {f.offset}"
    repair = f" (repair: {repair_command(f)})" if repair_command(f) else ""
    return f"{f.severity.label.upper()} {f.code} at {where}{offset}: {f.message}{repair}"


def summary_line(s: ScanSummary) -> str:
    """The end of a log file."""
    if s.first_offset is None:
        offsets = "no offsets"
    elif not s.first_offset_known:
        offsets = f"offsets ?..{s.last_offset} (the first unknown, at most {s.first_offset})"
    else:
        offsets = f"offsets {s.first_offset}..{s.last_offset}"
    records = f"{s.record_count} records"
    if s.uncounted_batches:
        records = (
            f"unknown records ({s.record_count} counted, {s.uncounted_batches} batches not decompressed)"
        )
    # A partial read says which positions it covered: it judged nothing outside them.
    covered = (
        f"partial read of positions {s.start}..{s.scanned_bytes} of {s.size} (nothing else checked), "
        f"valid to position {s.valid_bytes}"
        if s.partial
        else f"valid bytes {s.valid_bytes} of {s.size}"
    )
    shown = ""
    if s.shown is not None:
        # A filtered dump: what it showed first, then the file's own counts.
        sh = s.shown
        what = f"{sh.batches} batches" + ("" if sh.records is None else f", {sh.records} records")
        where = "" if sh.first_offset is None else f", offsets {sh.first_offset}..{sh.last_offset}"
        shown = f"shown {what}{where}; of "
    return (
        f"Summary: {shown}{s.batch_count} batches, {records}, {offsets}, "
        f"{covered}, stopped: {s.stop_reason}, "
        f"findings: {s.findings_error} errors, {s.findings_warning} warnings, {s.findings_info} info"
    )


def entry_line(e: Entry) -> str:
    """An entry of an index, snapshot or checkpoint, as `key: value` pairs."""
    return " ".join(f"{k}: {field_text(v)}" for k, v in e.fields.items())


def field_text(value: Any) -> str:
    """A field's value as text: documents and lists as JSON (never a Python repr such as
    `{'version': 0}`), everything else as it prints."""
    if isinstance(value, (dict, list, tuple)):
        import json

        return json.dumps(value, separators=(", ", ": "), default=str, ensure_ascii=False)
    return str(value)


def write_text(events: Iterable[Any], out: IO[str], *, encoding: str = "utf8") -> None:
    """Write dump events as text lines."""
    from kdump.ops.dump.internal import InternalRecord

    batch: BatchHeader | None = None
    buf: list[str] = []
    append = buf.append
    for ev in events:
        if type(ev) is Record:
            append(record_line(ev, batch, encoding))
            continue
        if isinstance(ev, BatchHeader):
            batch = ev
            if len(buf) > 512:
                buf.append("")
                out.write("\n".join(buf))
                buf.clear()
            append(batch_line(ev))
        elif isinstance(ev, FileStart):
            batch = None
            append(f"Dumping {ev.file}")
            if ev.kind == "log" and ev.base_offset is not None:
                append(f"Log starting offset: {ev.base_offset}")
            elif ev.kind == "log":
                append_snapshot_id(ev.file, append)
        elif isinstance(ev, Finding):
            append(finding_line(ev))
        elif isinstance(ev, ScanSummary):
            append(summary_line(ev))
        elif isinstance(ev, Entry):
            append(entry_line(ev))
        elif type(ev) is PayloadRecord:
            append(payload_record_line(ev, batch, encoding))
        elif isinstance(ev, PayloadTally):
            append(payload_tally_line(ev))
        elif isinstance(ev, InternalRecord):
            append(internal_record_line(ev, batch))
    if buf:
        buf.append("")
        out.write("\n".join(buf))
    out.flush()
