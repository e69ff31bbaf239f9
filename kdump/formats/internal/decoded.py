"""The result of decoding one record of an internal topic, and its two renderings.

Every decoder in this package (`consumer_offsets`, `transaction_log`, `cluster_metadata`) returns a
`DecodedRecord`. It renders two ways:

* `oracle_suffix(offset)`: the exact text `kafka-dump-log.sh --deep-iteration --print-data-log` of Kafka 3.8
  prints with the matching decoder option after a record's `headerKeys: [...]`, for example
  `' key: {"type":"1",...} payload: {"version":"3",...}'`, `' payload: {"type":"TOPIC_RECORD",...}'` or, for a
  control record, `' endTxnMarker: COMMIT coordinatorEpoch: 0'`. `oracle_key_payload(offset)` gives the two
  parts separately. Where Kafka 3.8's decoder would throw and abort the whole dump, these raise
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
    }

`status` is "ok" for a decoded record, "tombstone" for a known key with a null value, and "unknown" for a
record type or version Kafka 3.8 does not define (the raw bytes are then kept). Bytes that do not decode as
the type they claim raise a `DecodeError` instead; no result is built.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, Literal

from kdump.errors import CorruptFieldError
from kdump.formats.internal.schema import UnknownTaggedField

Decoder = Literal["consumer_offsets", "transaction_log", "cluster_metadata", "remote_log_metadata", "control"]
Status = Literal["ok", "tombstone", "unknown"]


def b64(data: bytes | None) -> str | None:
    """Standard base64 with padding, or None."""
    return None if data is None else base64.b64encode(data).decode("ascii")


@dataclass(frozen=True, slots=True)
class OracleText:
    """What DumpLogSegments prints for a record, as parts; `{offset}` templates need the record's offset.

    `control` replaces the key/payload parts for control records. `aborts` is set when Kafka 3.8's decoder
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
    raw_key: bytes | None = None
    raw_value: bytes | None = None
    key_unknown_tagged_fields: tuple[UnknownTaggedField, ...] = ()
    value_unknown_tagged_fields: tuple[UnknownTaggedField, ...] = ()
    key_trailing_bytes: int = 0
    value_trailing_bytes: int = 0

    @property
    def known(self) -> bool:
        return self.status != "unknown"

    def oracle_key_payload(self, offset: int = -1) -> tuple[str | None, str | None]:
        """The `key:` and `payload:` texts Kafka 3.8 prints (None where it prints no such part)."""
        o = self.oracle
        if o.aborts is not None:
            raise CorruptFieldError(f"kafka-dump-log.sh (3.8) aborts on this record: {o.aborts}")
        key = o.key_template.format(offset=offset) if o.key_template is not None else o.key
        payload = o.payload_template.format(offset=offset) if o.payload_template is not None else o.payload
        return key, payload

    def oracle_suffix(self, offset: int = -1) -> str:
        """The text after `headerKeys: [...]` on the record's line of a Kafka 3.8 deep dump."""
        if self.oracle.control is not None:
            if self.oracle.aborts is not None:
                raise CorruptFieldError(
                    f"kafka-dump-log.sh (3.8) aborts on this record: {self.oracle.aborts}"
                )
            return self.oracle.control
        key, payload = self.oracle_key_payload(offset)
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
        if self.key_trailing_bytes or self.value_trailing_bytes:
            out["trailingBytes"] = {"key": self.key_trailing_bytes, "value": self.value_trailing_bytes}
        return out


def escape_template(text: str) -> str:
    """Escape braces so `text` survives `str.format` in an `OracleText` template."""
    return text.replace("{", "{{").replace("}", "}}")
