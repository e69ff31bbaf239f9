"""Decoders of the records of Kafka's internal topics, as Kafka 3.8 writes and kafka-dump-log.sh prints them.

* `consumer_offsets`: `__consumer_offsets` (offset commits, classic and KIP-848 group metadata);
* `transaction_log`: `__transaction_state` (transactional ids and their partitions);
* `cluster_metadata`: `__cluster_metadata` (KRaft metadata records) and the control records of any partition
  (transaction markers, KRaft leader change, snapshot header/footer, kraft version, voters);
* `remote_log_metadata`: `__remote_log_metadata` (tiered storage: remote segments' copy and delete states);
* `schema`: the engine for Kafka's generated-message wire format that the three decoders share, with field
  tables written in Python; `decoded`: the `DecodedRecord` they all return.

Pure functions over bytes: no I/O. Every decoder returns a `DecodedRecord` (status "ok", "tombstone" or
"unknown") or raises a `kdump.errors.DecodeError` for bytes that do not decode as what they claim to be.
"""

from __future__ import annotations

from kdump.formats.internal.cluster_metadata import decode_control_record, decode_metadata_record
from kdump.formats.internal.consumer_offsets import decode_offsets_record
from kdump.formats.internal.decoded import DecodedRecord
from kdump.formats.internal.remote_log_metadata import decode_remote_log_metadata_record
from kdump.formats.internal.schema import Buffer
from kdump.formats.internal.transaction_log import decode_transaction_log_record

__all__ = [
    "INTERNAL_TOPICS",
    "DecodedRecord",
    "decode_control_record",
    "decode_internal_record",
    "decode_metadata_record",
    "decode_offsets_record",
    "decode_remote_log_metadata_record",
    "decode_transaction_log_record",
]

INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__cluster_metadata", "__remote_log_metadata")
"""Topics whose data records `decode_internal_record` decodes."""


def decode_internal_record(
    topic: str, key: Buffer | None, value: Buffer | None, *, is_control: bool = False
) -> DecodedRecord | None:
    """Decode a record of an internal topic (None for any other topic's data records).

    A record of a control batch is decoded as a control record whatever its topic.
    """
    if is_control:
        return decode_control_record(key, value)
    if topic == "__consumer_offsets":
        return decode_offsets_record(key, value)
    if topic == "__transaction_state":
        return decode_transaction_log_record(key, value)
    if topic == "__cluster_metadata":
        return decode_metadata_record(value)
    if topic == "__remote_log_metadata":
        return decode_remote_log_metadata_record(value)
    return None
