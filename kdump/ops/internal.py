"""Decoding the records of Kafka's own topics while dumping, and which decoder a file gets.

The decoder is chosen by the partition directory's name, as an operator would expect:
`__consumer_offsets-N` (offset commits and group metadata), `__transaction_state-N` (the
transaction log), `__remote_log_metadata-N` (tiered storage's remote segment states) and `__cluster_metadata-N` plus KRaft snapshot `.checkpoint` files and
`bootstrap.checkpoint` (metadata records). `--decode` overrides the choice. Records of control
batches are decoded as control records (transaction markers, KRaft leader change, snapshot
header and footer, KRaft version and voters). A record kdump cannot decode is shown raw with a
finding, never a crash.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from kdump.errors import DecodeError
from kdump.findings import Finding, make_finding
from kdump.formats.batch import BatchHeader
from kdump.formats.internal import (
    DecodedRecord,
    decode_control_record,
    decode_metadata_record,
    decode_offsets_record,
    decode_remote_log_metadata_record,
    decode_transaction_log_record,
)
from kdump.formats.records import Record

DECODERS = ("auto", "offsets", "transactions", "metadata", "remote-log-metadata", "none")
_BY_TOPIC = {
    "__consumer_offsets": "offsets",
    "__transaction_state": "transactions",
    "__cluster_metadata": "metadata",
    "__remote_log_metadata": "remote-log-metadata",
}


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
    if batch.is_control:
        return decode_control_record(r.key, r.value)
    if decoder == "offsets":
        return decode_offsets_record(r.key, r.value)
    if decoder == "transactions":
        return decode_transaction_log_record(r.key, r.value)
    if decoder == "remote-log-metadata":
        return decode_remote_log_metadata_record(r.value)
    return decode_metadata_record(r.value)


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
                ev = InternalRecord(ev, decoded)
            if finding is not None:
                yield finding
        yield ev
