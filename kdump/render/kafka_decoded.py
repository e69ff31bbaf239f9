"""What Kafka's own kafka-dump-log prints for a decoded record of an internal topic: the one place.

`kafka_decoded_text(decoded, offset, kafka=...)` is the text a record's line carries after its metadata
(`| offset: ... headerKeys: [...]`) when Kafka's DumpLogSegments runs with the decoder for its topic
(`--offsets-decoder`, `--transaction-log-decoder`, `--share-group-state-decoder`,
`--cluster-metadata-decoder`; control records are printed whatever the decoder). It depends on the
Kafka release whose tool is imitated:

* Kafka 3.x (the Scala tool) and 4.0: offsets and metadata as JSON, the transaction log as
  `transaction_metadata::transactionalId=...` text, a leader change as `controlType: LEADER_CHANGE(2)`
  (4.0 adds share group state, read with its early-access layout);
* Kafka 4.1 and later: every coordinator record as `key: {"type":..,"data":..} payload: {"version":..,
  "data":..}` (the transaction log too, its `transactionStatus` a number up to 4.3 and by name from 4.4),
  a leader change as `LeaderChange: {...}`.

Each release prints only what it knows: the tagged fields and record versions added after it are left
out or refused as that release's tool does (`formats.internal.release_view`), so a dump of a newer
broker's log as an older tool prints it is exact too.

kdump's text mode prints the newest release's text (`NEWEST_KAFKA`); a Kafka-compatible mode asks for the
release it imitates. Where Kafka's tool would abort the whole dump on a record, `DecodeError` is raised
and the caller prints kdump's own decoding instead.
"""

from __future__ import annotations

from typing import Final

from kdump.formats.internal.decoded import DecodedRecord
from kdump.formats.internal.releases import KafkaRelease, parse_release

NEWEST_KAFKA: Final = "4.4"
"""The newest Kafka release kdump's decoded text imitates, and its default."""


def kafka_release(kafka: str) -> KafkaRelease:
    """`"4.2"`, `"4.2.1"`, `"3"` as `(major, minor)`."""
    return parse_release(kafka)


def kafka_decoded_text(decoded: DecodedRecord, offset: int, *, kafka: str = NEWEST_KAFKA) -> str:
    """The text Kafka `kafka`'s tool prints after the record's metadata: ` key: ... payload: ...`, or for a
    control record ` endTxnMarker: ...`, ` SnapshotHeader {...}`, ...

    Raises `DecodeError` where that tool aborts its dump on this record.
    """
    return decoded.oracle_suffix(offset, kafka_release(kafka))


def kafka_decoded_key_payload(
    decoded: DecodedRecord, offset: int, *, kafka: str = NEWEST_KAFKA
) -> tuple[str | None, str | None]:
    """The `key:` and `payload:` parts on their own (None where the tool prints no such part)."""
    return decoded.oracle_key_payload(offset, kafka_release(kafka))
