"""Decoding the records of Kafka's own topics while dumping, and which decoder a file gets.

The decoder is chosen by the partition directory's name, as an operator would expect:
`__consumer_offsets-N` (offset commits and group metadata), `__transaction_state-N` (the
transaction log), `__share_group_state-N` (share groups' delivery state), `__remote_log_metadata-N`
(tiered storage's remote segment states) and `__cluster_metadata-N`
plus KRaft snapshot `.checkpoint` files and `bootstrap.checkpoint` (metadata records); the table is
`kdump.formats.internal.TOPIC_DECODERS`. `--decode` overrides the choice. Records of control
batches are decoded as control records (transaction markers, KRaft leader change, snapshot
header and footer, KRaft version and voters). A record kdump cannot decode is shown raw with a
finding, never a crash; a record whose type or version kdump does not know, or that holds tagged
fields it does not know, is a finding that names them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from kdump.errors import DecodeError
from kdump.findings import Finding, make_finding
from kdump.formats.batch import BatchHeader
from kdump.formats.internal import DECODER_NAMES, TOPIC_DECODERS, DecodedRecord, decode_with
from kdump.formats.records import Record

DECODERS = ("auto", *DECODER_NAMES, "none")
"""The values of `--decode`."""
_BY_TOPIC = {topic: name for topic, (name, _) in TOPIC_DECODERS.items()}


class InternalRecord(NamedTuple):
    """A record of an internal topic with what its key and value decode to."""

    record: Record
    decoded: DecodedRecord


def choose_decoder(path: Path, requested: str) -> str | None:
    """The decoder for a log file: `requested` unless it is `auto`, else by directory and file name."""
    if requested != "auto":
        return None if requested == "none" else requested
    if path.name == "bootstrap.checkpoint" or path.name.endswith(".checkpoint"):
        return "metadata"
    topic = path.parent.name.rsplit("-", 1)[0]
    return _BY_TOPIC.get(topic)


def _decode(decoder: str, batch: BatchHeader, r: Record) -> DecodedRecord:
    return decode_with(decoder, r.key, r.value, is_control=batch.is_control)


def unknown_tags_text(decoded: DecodedRecord) -> str:
    """The tagged fields no table declares, named: `value tag 7 at /members/0 (3 bytes), ...`."""
    parts = [
        f"{side} tag {u.tag}{' at ' + u.path if u.path else ''} ({len(u.data)} bytes)"
        for side, fields in (
            ("key", decoded.key_unknown_tagged_fields),
            ("value", decoded.value_unknown_tagged_fields),
        )
        for u in fields
    ]
    return ", ".join(parts)


def attach_decoded(events: Iterable[Any], decoder: str | None, file: str) -> Iterator[Any]:
    """Replace each record by an `InternalRecord`; undecodable records stay raw, with a finding."""
    if decoder is None:
        yield from events
        return
    batch: BatchHeader | None = None
    for ev in events:
        if isinstance(ev, BatchHeader):
            batch = ev
        elif isinstance(ev, Record) and batch is not None:
            finding: Finding | None = None
            try:
                decoded = _decode(decoder, batch, ev)
            except DecodeError as exc:
                finding = make_finding(
                    "record-decode-failed",
                    file,
                    f"{decoder} record at offset {ev.offset} does not decode: {exc}",
                    position=batch.position,
                    offset=ev.offset,
                )
            else:
                if not decoded.known:
                    finding = make_finding(
                        "unknown-internal-record",
                        file,
                        f"{decoder} record at offset {ev.offset}: {decoded.reason or 'type or version not known'}",
                        position=batch.position,
                        offset=ev.offset,
                    )
                elif decoded.key_unknown_tagged_fields or decoded.value_unknown_tagged_fields:
                    version = decoded.value.get("version") if isinstance(decoded.value, dict) else None
                    finding = make_finding(
                        "unknown-tagged-field",
                        file,
                        f"{decoder} record at offset {ev.offset} ({decoded.record}"
                        f"{'' if version is None else f' version {version}'}) holds tagged fields kdump "
                        f"does not know: {unknown_tags_text(decoded)}",
                        position=batch.position,
                        offset=ev.offset,
                    )
                ev = InternalRecord(ev, decoded)
            if finding is not None:
                yield finding
        yield ev
