"""What Kafka's own kafka-dump-log prints for a decoded record of an internal topic: the one place.

`kafka_decoded_text(decoded, offset, kafka=...)` is the text a record's line carries after its metadata
(`| offset: ... headerKeys: [...]`) when Kafka's DumpLogSegments runs with the decoder for its topic
(`--offsets-decoder`, `--transaction-log-decoder`, `--share-group-state-decoder`,
`--cluster-metadata-decoder`; control records are printed whatever the decoder). It depends on the
Kafka release whose tool is imitated:

* Kafka 3.x (the Scala tool): offsets and metadata as JSON, the transaction log as
  `transaction_metadata::transactionalId=...` text, a leader change as `controlType: LEADER_CHANGE(2)`;
* Kafka 4.x: every coordinator record as `key: {"type":..,"data":..} payload: {"version":..,"data":..}`
  (the transaction log too, its `transactionStatus` by name), share group state, a leader change as
  `LeaderChange: {...}`.

kdump's text mode prints the newest release's text (`NEWEST_KAFKA`); a Kafka-compatible mode asks for the
release it imitates. Where Kafka's tool would abort the whole dump on a record, `DecodeError` is raised
and the caller prints kdump's own decoding instead.
"""

from __future__ import annotations

from typing import Final

from kdump.formats.internal.decoded import DecodedRecord, Style

NEWEST_KAFKA: Final = "4.4"
"""The newest Kafka release kdump's decoded text imitates, and its default."""


def kafka_style(kafka: str) -> Style:
    """Which tool a Kafka release ships: "3" for 3.x (and older), "4.0" for 4.0 and 4.1, "4" later."""
    parts = kafka.split(".")
    major = int(parts[0]) if parts[0].isdigit() else 0
    minor = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
    if major < 4:
        return "3"
    return "4.0" if (major, minor) < (4, 2) else "4"


def kafka_decoded_text(decoded: DecodedRecord, offset: int, *, kafka: str = NEWEST_KAFKA) -> str:
    """The text Kafka `kafka`'s tool prints after the record's metadata: ` key: ... payload: ...`, or for a
    control record ` endTxnMarker: ...`, ` SnapshotHeader {...}`, ...

    Raises `DecodeError` where that tool aborts its dump on this record.
    """
    return decoded.oracle_suffix(offset, kafka_style(kafka))


def kafka_decoded_key_payload(
    decoded: DecodedRecord, offset: int, *, kafka: str = NEWEST_KAFKA
) -> tuple[str | None, str | None]:
    """The `key:` and `payload:` parts on their own (None where the tool prints no such part)."""
    return decoded.oracle_key_payload(offset, kafka_style(kafka))
