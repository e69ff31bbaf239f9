"""The result of decoding one record of an internal topic, and its two renderings.

Every decoder in this package (`consumer_offsets`, `transaction_log`, `cluster_metadata`) returns a
`DecodedRecord`. It renders two ways:

* `oracle_suffix(offset, release)`: the exact text `kafka-dump-log.sh --deep-iteration --print-data-log`
  of Kafka `release` (`(3, 8)` by default: the 3.x tool) prints with the matching decoder option after a
  record's `headerKeys: [...]`, for example
  `' key: {"type":"1",...} payload: {"version":"3",...}'`, `' payload: {"type":"TOPIC_RECORD",...}'` or, for a
  control record, `' endTxnMarker: COMMIT coordinatorEpoch: 0'`. `oracle_key_payload(offset)` gives the two
  parts separately. Where Kafka's decoder would throw and abort the whole dump, these raise
  `CorruptFieldError` saying so.
* `to_dict()`: a JSON-able dict for kdump's JSON Lines output::

    {
      "decoder": "consumer_offsets" | "transaction_log" | "cluster_metadata" | "control",
      "status": "ok" | "tombstone" | "unknown",
      "record": <record type name or null>,       # "OffsetCommit", "TransactionLog", "TOPIC_RECORD", "COMMIT"
      "key": <dict or null>,                      # decoder-specific, documented in each decoder module
      "value": <dict or null>,                    # null for a tombstone or an unknown record
      # only when they apply:
      "reason": <str>,                            # why the status is "unknown"
      "rawKey": <base64>, "rawValue": <base64>,   # the undecoded bytes of an unknown record
      "unknownTaggedFields": [                    # tags no table declares, kept raw
        {"in": "key" | "value", "path": <JSON pointer>, "tag": <int>, "data": <base64>}, ...
      ],
      "trailingBytes": {"key": <int>, "value": <int>},   # bytes after the message that Kafka ignores
      "layout": <str>,                            # the Kafka releases whose early-access layout decoded it
    }

`status` is "ok" for a decoded record, "tombstone" for a known key with a null value, and "unknown" for a
record type or version no Kafka up to 4.4 defines (the raw bytes are then kept). Bytes that do not decode as
the type they claim raise a `DecodeError` instead; no result is built.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from kdump.errors import CorruptFieldError
from kdump.formats.internal.release_view import has_newer_fields, payload_known_to
from kdump.formats.internal.releases import NEWEST_RELEASE, KafkaRelease
from kdump.formats.internal.schema import MessageType, UnknownTaggedField

KAFKA3: Final[KafkaRelease] = (3, 8)
"""The release the oracle texts default to: Kafka 3.x's Scala tool, as the 3.8 corpus shows it."""

Decoder = Literal[
    "consumer_offsets",
    "transaction_log",
    "share_group_state",
    "cluster_metadata",
    "control",
    "remote_log_metadata",
]
Status = Literal["ok", "tombstone", "unknown"]


def b64(data: bytes | None) -> str | None:
    """Standard base64 with padding, or None."""
    return None if data is None else base64.b64encode(data).decode("ascii")


@dataclass(frozen=True, slots=True)
class OracleText:
    """What DumpLogSegments prints for a record, as parts; `{offset}` templates need the record's offset.

    `control` replaces the key/payload parts for control records. `aborts` is set when Kafka's decoder
    throws an exception that stops the whole dump (the message says why).
    """

    key: str | None = None
    payload: str | None = None
    key_template: str | None = None
    payload_template: str | None = None
    control: str | None = None
    aborts: str | None = None


@dataclass(frozen=True, slots=True)
class DecodedRecord:
    """One decoded record of an internal topic (see the module docstring for the dict form)."""

    decoder: Decoder
    status: Status
    record: str | None
    key: dict[str, Any] | None
    value: dict[str, Any] | None
    oracle: OracleText
    reason: str | None = None
    oracle4: OracleText | None = None
    """What Kafka 4.x's tool prints, where it differs from `oracle` (None: the same)."""
    oracle40: OracleText | None = None
    """What Kafka 4.1's to 4.3's tool prints, where it differs from `oracle4` (None: the same)."""
    older: tuple[tuple[KafkaRelease, KafkaRelease, OracleText], ...] = ()
    """(low, high, text): what the tools of releases from `low` up to, not including, `high` print
    instead: a record type, version or layout they read otherwise."""
    value_type: MessageType | None = None
    """The value's message, whose tagged fields added later an older tool does not print."""
    layout: str | None = None
    """Set when the value decoded only with an early-access layout (the Kafka releases that wrote it)."""
    raw_key: bytes | None = None
    raw_value: bytes | None = None
    key_unknown_tagged_fields: tuple[UnknownTaggedField, ...] = ()
    value_unknown_tagged_fields: tuple[UnknownTaggedField, ...] = ()
    key_trailing_bytes: int = 0
    value_trailing_bytes: int = 0

    @property
    def known(self) -> bool:
        return self.status != "unknown"

    def oracle_of(self, release: KafkaRelease = KAFKA3) -> OracleText:
        """The oracle parts for the tool of Kafka `release` (`(major, minor)`)."""
        for low, high, text in self.older:
            if low <= release < high:
                return text
        if release < (4, 0) or (release < (4, 1) and self.decoder in ("transaction_log", "control")):
            base = self.oracle  # 4.0's Java tool still printed 3.x's text for these two
        elif release < (4, 4) and self.oracle40 is not None:
            base = self.oracle40
        else:
            base = self.oracle4 if self.oracle4 is not None else self.oracle
        msg = self.value_type
        if msg is None or release >= NEWEST_RELEASE or base.payload is None or not has_newer_fields(msg):
            return base
        payload = payload_known_to(base.payload, msg, release)
        return base if payload is base.payload else replace(base, payload=payload)

    def oracle_key_payload(
        self, offset: int = -1, release: KafkaRelease = KAFKA3
    ) -> tuple[str | None, str | None]:
        """The `key:` and `payload:` texts Kafka's tool prints (None where it prints no such part)."""
        o = self.oracle_of(release)
        if o.aborts is not None:
            raise CorruptFieldError(f"kafka-dump-log.sh ({_name(release)}) aborts on this record: {o.aborts}")
        key = o.key_template.format(offset=offset) if o.key_template is not None else o.key
        payload = o.payload_template.format(offset=offset) if o.payload_template is not None else o.payload
        return key, payload

    def oracle_suffix(self, offset: int = -1, release: KafkaRelease = KAFKA3) -> str:
        """The text after `headerKeys: [...]` on the record's line of a Kafka deep dump."""
        o = self.oracle_of(release)
        if o.control is not None:
            if o.aborts is not None:
                raise CorruptFieldError(
                    f"kafka-dump-log.sh ({_name(release)}) aborts on this record: {o.aborts}"
                )
            return o.control
        key, payload = self.oracle_key_payload(offset, release)
        text = ""
        if key is not None:
            text += f" key: {key}"
        if payload is not None:
            text += f" payload: {payload}"
        return text

    def to_dict(self) -> dict[str, Any]:
        """The JSON-able form (see the module docstring)."""
        out: dict[str, Any] = {
            "decoder": self.decoder,
            "status": self.status,
            "record": self.record,
            "key": self.key,
            "value": self.value,
        }
        if self.reason is not None:
            out["reason"] = self.reason
        if self.status == "unknown":
            out["rawKey"] = b64(self.raw_key)
            out["rawValue"] = b64(self.raw_value)
        unknown = [{"in": "key", **u.to_dict()} for u in self.key_unknown_tagged_fields]
        unknown += [{"in": "value", **u.to_dict()} for u in self.value_unknown_tagged_fields]
        if unknown:
            out["unknownTaggedFields"] = unknown
        if self.layout is not None:
            out["layout"] = self.layout
        if self.key_trailing_bytes or self.value_trailing_bytes:
            out["trailingBytes"] = {"key": self.key_trailing_bytes, "value": self.value_trailing_bytes}
        return out


def _name(release: KafkaRelease) -> str:
    return "3.x" if release < (4, 0) else "4.x"


def escape_template(text: str) -> str:
    """Escape braces so `text` survives `str.format` in an `OracleText` template."""
    return text.replace("{", "{{").replace("}", "}}")
