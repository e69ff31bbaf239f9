"""Decoders of the records of Kafka's internal topics, as Kafka 3.0-4.4 write them and kafka-dump-log prints them.

* `consumer_offsets`: `__consumer_offsets` (offset commits; classic, KIP-848 consumer, share and streams
  groups), tables in `offsets_tables` and `share_streams_tables`;
* `transaction_log`: `__transaction_state` (transactional ids, their partitions, transactions v2 fields);
* `share_group_state`: `__share_group_state` (share groups' delivery state, KIP-932);
* `cluster_metadata`: `__cluster_metadata` (KRaft metadata records and snapshots), tables in
  `metadata_tables`;
* `control_records`: the control records of any partition (transaction markers, KRaft leader change,
  snapshot header/footer, kraft version, voters);
* `remote_log_metadata`: `__remote_log_metadata` (tiered storage: remote segments' copy and delete states);
* `schema`: the engine for Kafka's generated-message wire format that the decoders share, with field
  tables written in Python; `java_text`: Java's UTF-8 and Jackson's JSON text; `decoded`: the
  `DecodedRecord` they all return.

Pure functions over bytes: no I/O. Every decoder returns a `DecodedRecord` (status "ok", "tombstone" or
"unknown") or raises a `kdump.errors.DecodeError` for bytes that do not decode as what they claim to be.

`TOPIC_DECODERS` is the one dispatch table: topic -> (decoder name, function of key and value). A decoder
for another internal topic is added there (and only there): `--decode auto` then picks it by topic and
`--decode NAME` by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kdump.formats.internal.cluster_metadata import decode_metadata_record
from kdump.formats.internal.consumer_offsets import decode_offsets_record
from kdump.formats.internal.control_records import decode_control_record
from kdump.formats.internal.decoded import DecodedRecord
from kdump.formats.internal.remote_log_metadata import decode_remote_log_metadata_record
from kdump.formats.internal.schema import Buffer
from kdump.formats.internal.share_group_state import decode_share_group_state_record
from kdump.formats.internal.transaction_log import decode_transaction_log_record

__all__ = [
    "DECODER_NAMES",
    "INTERNAL_TOPICS",
    "TOPIC_DECODERS",
    "DecodedRecord",
    "RecordDecoder",
    "decode_control_record",
    "decode_internal_record",
    "decode_metadata_record",
    "decode_offsets_record",
    "decode_remote_log_metadata_record",
    "decode_share_group_state_record",
    "decode_transaction_log_record",
    "decode_with",
]

RecordDecoder = Callable[[Buffer | None, Buffer | None], DecodedRecord]
"""Decodes a data record of an internal topic from its key and value (None: null)."""


def _metadata(key: Buffer | None, value: Buffer | None) -> DecodedRecord:
    return decode_metadata_record(value)


def _remote_log_metadata(key: Buffer | None, value: Buffer | None) -> DecodedRecord:
    return decode_remote_log_metadata_record(value)


TOPIC_DECODERS: Final[dict[str, tuple[str, RecordDecoder]]] = {
    "__consumer_offsets": ("offsets", decode_offsets_record),
    "__transaction_state": ("transactions", decode_transaction_log_record),
    "__share_group_state": ("share-group-state", decode_share_group_state_record),
    "__cluster_metadata": ("metadata", _metadata),
    "__remote_log_metadata": ("remote-log-metadata", _remote_log_metadata),
}
"""Internal topic -> (decoder name for `--decode`, decoder of its data records)."""

INTERNAL_TOPICS: Final = tuple(TOPIC_DECODERS)
"""Topics whose data records `decode_internal_record` decodes."""

DECODER_NAMES: Final[dict[str, RecordDecoder]] = dict(TOPIC_DECODERS.values())
"""Decoder name -> decoder."""


def decode_with(
    name: str, key: Buffer | None, value: Buffer | None, *, is_control: bool = False
) -> DecodedRecord:
    """Decode a record with the decoder called `name`; a record of a control batch as a control record."""
    if is_control:
        return decode_control_record(key, value)
    return DECODER_NAMES[name](key, value)


def decode_internal_record(
    topic: str, key: Buffer | None, value: Buffer | None, *, is_control: bool = False
) -> DecodedRecord | None:
    """Decode a record of an internal topic (None for any other topic's data records).

    A record of a control batch is decoded as a control record whatever its topic.
    """
    if is_control:
        return decode_control_record(key, value)
    entry = TOPIC_DECODERS.get(topic)
    return None if entry is None else entry[1](key, value)
