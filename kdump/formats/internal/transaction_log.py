"""Records of `__transaction_state`, the transaction coordinator's log, as Kafka 3.0-4.4 write and print them.

One record per update of a transactional id's state:

* key: `int16` key version (only 0 exists), then TransactionLogKey: `transactionalId` (string);
* value: `int16` value version (0, or 1 which is flexible: compact strings and arrays, tagged fields), then
  TransactionLogValue: `producerId` (int64), `producerEpoch` (int16), `transactionTimeoutMs` (int32),
  `transactionStatus` (int8), `transactionPartitions` (nullable array of `{topic, partitionIds: [int32]}`),
  `transactionLastUpdateTimestampMs` (int64), `transactionStartTimestampMs` (int64); version 1 also
  carries the tagged fields of transactions v2 (KIP-890, Kafka 4.0+): `previousProducerId` (tag 0),
  `nextProducerId` (1), `clientTransactionVersion` (2), `nextProducerEpoch` (3);
* a null value is a tombstone (the transactional id expired).

`transactionStatus` is Kafka's TransactionState id: 0 Empty, 1 Ongoing, 2 PrepareCommit, 3 PrepareAbort,
4 CompleteCommit, 5 CompleteAbort, 6 Dead, 7 PrepareEpochFence.

Decoded form (`decode_transaction_log_record`, see `decoded.DecodedRecord` for the envelope), shaped like the
JSON Kafka 4.0's `--transaction-log-decoder` prints (KAFKA-18207), plus the state's name:

* `key`: `{"type": "<key version>", "data": {"transactionalId": <str>}}`;
* `value`: `{"version": "<value version>", "data": {<the TransactionLogValue fields above, camelCase>},
  "state": "<state name>" | null}`, or null for a tombstone.

Kafka 4.x's tool prints JSON like the offsets decoder (`key: {"type":"0","data":{...}}`, `payload:
{"version":"1","data":{...}}` with `transactionStatus` replaced by the state's name; `<DELETE>` for a
tombstone; `Unknown record type N at offset O, skipping.` for a key version other than 0; `Error at offset
O, skipping. ...` for an unknown value version). The 3.x oracle text is what Kafka 3.8/3.9 print (Scala
`TransactionLog.formatRecordKeyAndValue`), not JSON:

* key ` transaction_metadata::transactionalId=<id>`;
* payload `producerId:<p>,producerEpoch:<e>,state=<State>,partitions=[<topic>-<partition>,...],
  txnLastUpdateTimestamp=<ms>,txnTimeoutMs=<ms>`, or `<DELETE>` for a tombstone;
* an unknown key version prints key `unknown::version=<n>` and no payload.

Quirks of that text reproduced here: the partitions of an Empty transaction are never printed (`[]`), and the
partition list comes out in the iteration order of the Scala 2.13 `mutable.HashSet` Kafka collects them in (by
the bucket of `TopicPartition.hashCode`), not in the order of the record. Kafka 3.8 aborts the whole dump on a
missing key, a truncated version, an unknown value version or state id, and on null partitions of a non-Empty
transaction; `oracle_suffix` then raises `CorruptFieldError`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any, Final

from kdump.errors import CorruptFieldError, DecodeError, TruncatedError
from kdump.formats.internal.decoded import DecodedRecord, OracleText
from kdump.formats.internal.schema import (
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    ArrayOf,
    Buffer,
    DecodedMessage,
    MessageType,
    decode_message,
    fld,
    kafka_json,
    message,
    struct_of,
)

_I16 = struct.Struct(">h")

TRANSACTION_LOG_KEY: Final = message("TransactionLogKey", "0", "none", fld("transactionalId", STRING, "0"))

TRANSACTION_LOG_VALUE: Final = message(
    "TransactionLogValue",
    "0-1",
    "1+",
    fld("producerId", INT64),
    fld("previousProducerId", INT64, "1+", tagged="1+", tag=0, default=-1, since="4.0"),
    fld("nextProducerId", INT64, "1+", tagged="1+", tag=1, default=-1, since="4.0"),
    fld("producerEpoch", INT16),
    fld("nextProducerEpoch", INT16, "1+", tagged="1+", tag=3, default=-1, since="4.1"),
    fld("transactionTimeoutMs", INT32),
    fld("transactionStatus", INT8),
    fld(
        "transactionPartitions",
        ArrayOf(struct_of("PartitionsSchema", fld("topic", STRING), fld("partitionIds", ArrayOf(INT32)))),
        nullable="0+",
    ),
    fld("transactionLastUpdateTimestampMs", INT64),
    fld("transactionStartTimestampMs", INT64),
    fld("clientTransactionVersion", INT16, "1+", tagged="1+", tag=2, default=0, since="4.0"),
)
"""Transactions v2 (KIP-890, Kafka 4.0+) add the tagged producer ids, next epoch and client version."""

TRANSACTION_STATES: Final[dict[int, str]] = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}
"""TransactionState ids and the names Kafka prints."""


# --------------------------------------------------------------------------- Scala HashSet iteration order

_M32 = 0xFFFFFFFF


def java_string_hash(text: str) -> int:
    """Java's `String.hashCode()` (over UTF-16 code units), as an unsigned 32-bit value."""
    h = 0
    data = text.encode("utf-16-be", errors="surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & _M32
    return h


def topic_partition_hash(topic: str, partition: int) -> int:
    """Kafka's `TopicPartition.hashCode()`, as an unsigned 32-bit value."""
    result = (31 + partition) & _M32
    return (31 * result + java_string_hash(topic)) & _M32


def _table_size_for(capacity: int) -> int:
    highest = 1 << (max(capacity - 1, 4).bit_length() - 1)
    return min(highest * 2, 1 << 30)


def scala_hash_set_order(groups: Iterable[Sequence[tuple[str, int]]]) -> list[tuple[str, int]]:
    """The iteration order of a Scala 2.13 `mutable.HashSet[TopicPartition]` filled by one `++=` per group.

    This is how Kafka 3.8 collects a transaction's partitions (`TransactionMetadata.addPartitions`, one call
    per topic, each with an immutable Set). Iteration walks the buckets (improved hash & (table size - 1)); a
    bucket is sorted by the improved hash (signed), ties in insertion order. Only the table size depends on
    the sequence of additions: `++=` first sizes the table for the added set alone, then a set of up to four
    elements is added one by one (doubling the table when size + 1 reaches 3/4 of it), a larger one without
    further growth.
    """
    table_len = 16
    threshold = 12
    members: dict[tuple[str, int], tuple[int, int]] = {}
    for group in groups:
        distinct = list(dict.fromkeys(group))
        target = _table_size_for(int((len(distinct) + 1) / 0.75))
        if target > table_len:
            table_len, threshold = target, int(target * 0.75)
        for tp in distinct:
            if len(distinct) <= 4 and len(members) + 1 >= threshold:
                table_len *= 2
                threshold = int(table_len * 0.75)
            if tp not in members:
                h = topic_partition_hash(*tp)
                members[tp] = (h ^ (h >> 16), len(members))

    def sort_key(tp: tuple[str, int]) -> tuple[int, int, int]:
        improved, seq = members[tp]
        signed = improved - (1 << 32) if improved & 0x8000_0000 else improved
        return improved & (table_len - 1), signed, seq

    return sorted(members, key=sort_key)


# ------------------------------------------------------------------------------------------------ decoding


def _read_version(buf: bytes, name: str) -> int:
    if len(buf) < 2:
        raise TruncatedError(f"__transaction_state {name} of {len(buf)} byte(s) has no int16 version")
    version: int = _I16.unpack_from(buf, 0)[0]
    return version


def _decode(msg: MessageType, buf: bytes, version: int, name: str) -> DecodedMessage:
    try:
        return decode_message(msg, buf, version, pos=2)
    except DecodeError as exc:
        raise type(exc)(f"__transaction_state {name} ({msg.name} version {version}): {exc}") from exc


def format_payload(data: dict[str, Any]) -> str:
    """Kafka 3.8's text for a TransactionLogValue (raises `CorruptFieldError` where Kafka throws)."""
    status = data["transactionStatus"]
    state = TRANSACTION_STATES.get(status)
    if state is None:
        raise CorruptFieldError(f"Unknown transaction state id {status} from the transaction status message")
    partitions = data["transactionPartitions"]
    if state == "Empty":
        ordered: list[tuple[str, int]] = []
    elif partitions is None:
        raise CorruptFieldError(
            "null transactionPartitions in a non-Empty transaction (NullPointerException)"
        )
    else:
        ordered = scala_hash_set_order([(p["topic"], pid) for pid in p["partitionIds"]] for p in partitions)
    listed = ",".join(f"{topic}-{partition}" for topic, partition in ordered)
    return (
        f"producerId:{data['producerId']},producerEpoch:{data['producerEpoch']},state={state},"
        f"partitions=[{listed}],txnLastUpdateTimestamp={data['transactionLastUpdateTimestampMs']},"
        f"txnTimeoutMs={data['transactionTimeoutMs']}"
    )


def decode_transaction_log_record(key: Buffer | None, value: Buffer | None) -> DecodedRecord:
    """Decode one `__transaction_state` record from its key and value bytes (None: null).

    An unknown key or value version or transaction state gives status "unknown" with the raw bytes; bytes that
    do not decode raise `DecodeError` (a missing key: `CorruptFieldError`).
    """
    if key is None:
        raise CorruptFieldError("a __transaction_state record without a key")
    key_bytes = bytes(key)
    value_bytes = None if value is None else bytes(value)
    key_version = _read_version(key_bytes, "key")
    if key_version not in TRANSACTION_LOG_KEY.valid:
        return DecodedRecord(
            decoder="transaction_log",
            status="unknown",
            record=None,
            key=None,
            value=None,
            oracle=OracleText(key=f"unknown::version={key_version}"),
            oracle4=OracleText(
                key_template=f"Unknown record type {key_version} at offset {{offset}}, skipping."
            ),
            reason=f"TransactionLogKey version {key_version} is not one Kafka 3.0-4.4 knows",
            raw_key=key_bytes,
            raw_value=value_bytes,
        )
    decoded_key = _decode(TRANSACTION_LOG_KEY, key_bytes, key_version, "key")
    transactional_id = decoded_key.data["transactionalId"]
    common: dict[str, Any] = {
        "decoder": "transaction_log",
        "record": "TransactionLog",
        "key": {"type": str(key_version), "data": decoded_key.data},
        "key_unknown_tagged_fields": decoded_key.unknown_tagged_fields,
        "key_trailing_bytes": len(key_bytes) - decoded_key.end,
    }
    key_text = f"transaction_metadata::transactionalId={transactional_id}"
    key_json = kafka_json(common["key"])
    if value_bytes is None:
        return DecodedRecord(
            status="tombstone",
            value=None,
            oracle=OracleText(key=key_text, payload="<DELETE>"),
            oracle4=OracleText(key=key_json, payload="<DELETE>"),
            **common,
        )
    version = _read_version(value_bytes, "value")
    if version not in TRANSACTION_LOG_VALUE.valid:
        return DecodedRecord(
            status="unknown",
            value=None,
            oracle=OracleText(aborts=f"Unknown version {version} from the transaction log message value"),
            oracle4=OracleText(
                key_template="Error at offset {offset}, skipping. "
                f"Found an unknown record version {version} for {key_version} type"
            ),
            reason=f"TransactionLogValue version {version} is not one Kafka 3.0-4.4 knows",
            raw_key=key_bytes,
            raw_value=value_bytes,
            **common,
        )
    decoded = _decode(TRANSACTION_LOG_VALUE, value_bytes, version, "value")
    status = decoded.data["transactionStatus"]
    state = TRANSACTION_STATES.get(status)
    kafka4_data = dict(decoded.data)
    kafka4_data["transactionStatus"] = state if state is not None else str(status)
    oracle4 = OracleText(key=key_json, payload=kafka_json({"version": str(version), "data": kafka4_data}))
    # Kafka 4.1's to 4.3's tool printed the status as its number (4.4 prints the name; 4.0 the 3.x text).
    oracle40 = OracleText(key=key_json, payload=kafka_json({"version": str(version), "data": decoded.data}))
    value_dict: dict[str, Any] = {"version": str(version), "data": decoded.data, "state": state}
    try:
        oracle = OracleText(key=key_text, payload=format_payload(decoded.data))
    except CorruptFieldError as exc:
        oracle = OracleText(aborts=str(exc))
    unknown_state: dict[str, Any] = {}
    if state is None:
        unknown_state = {
            "status": "unknown",
            "reason": f"transaction state id {status} is not one Kafka 3.0-4.4 defines",
            "raw_key": key_bytes,
            "raw_value": value_bytes,
        }
    return DecodedRecord(
        **({"status": "ok"} | unknown_state),
        value=value_dict,
        oracle=oracle,
        oracle4=oracle4,
        oracle40=oracle40,
        value_type=TRANSACTION_LOG_VALUE,
        value_unknown_tagged_fields=decoded.unknown_tagged_fields,
        value_trailing_bytes=len(value_bytes) - decoded.end,
        **common,
    )
