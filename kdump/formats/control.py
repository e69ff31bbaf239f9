"""Control records: transaction markers and KRaft control records.

A control batch has attribute bit 5 set and normally holds one record (`ControlRecordType`)::

    key    int16 version (0), int16 type      0 ABORT, 1 COMMIT, 2 LEADER_CHANGE, 3 SNAPSHOT_HEADER,
                                              4 SNAPSHOT_FOOTER, 5 KRAFT_VERSION, 6 KRAFT_VOTERS
    value  ABORT/COMMIT (`EndTransactionMarker`): int16 version (0), int32 coordinatorEpoch
           KRaft types: a version-prefixed generated message (decoded in `formats.internal`)

A key shorter than 4 bytes or with a negative version is invalid; a higher version is read as
version 0, as Kafka does.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from kdump.errors import CorruptFieldError
from kdump.formats.constants import ControlType

_KEY = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")


class ControlKey(NamedTuple):
    """The key of a control record."""

    version: int
    type: int

    @property
    def type_name(self) -> str:
        """Kafka's name for the type, UNKNOWN for types it does not define."""
        try:
            return ControlType(self.type).name
        except ValueError:
            return "UNKNOWN"


class EndTxnMarker(NamedTuple):
    """The value of a COMMIT or ABORT marker."""

    version: int
    coordinator_epoch: int


def decode_control_key(key: bytes | None) -> ControlKey:
    """Decode a control record key (raises CorruptFieldError when invalid)."""
    if key is None or len(key) < _KEY.size:
        raise CorruptFieldError(f"Invalid control record key: {0 if key is None else len(key)} bytes, need 4")
    version, ctype = _KEY.unpack_from(key, 0)
    if version < 0:
        raise CorruptFieldError(f"Invalid version found for control record: {version}")
    return ControlKey(version, ctype)


def decode_end_txn_marker(value: bytes | None) -> EndTxnMarker:
    """Decode a COMMIT/ABORT marker value (raises CorruptFieldError when invalid)."""
    if value is None or len(value) < _MARKER.size:
        raise CorruptFieldError("Invalid end transaction marker value: fewer than 6 bytes")
    version, epoch = _MARKER.unpack_from(value, 0)
    if version < 0:
        raise CorruptFieldError(f"Invalid version found for end transaction marker: {version}")
    return EndTxnMarker(version, epoch)


def encode_control_key(ctype: int, version: int = 0) -> bytes:
    """Encode a control record key."""
    return _KEY.pack(version, ctype)


def encode_end_txn_marker(coordinator_epoch: int, version: int = 0) -> bytes:
    """Encode a COMMIT/ABORT marker value."""
    return _MARKER.pack(version, coordinator_epoch)
