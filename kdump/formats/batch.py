"""Log entries: the v2 record batch header, legacy (v0/v1) message headers, and their checksums.

Every entry in a `.log` file starts the same way, whatever its format::

    position  size  field
    0         8     offset / baseOffset   int64
    8         4     length / batchLength  int32, bytes that follow this field (entry size = length + 12)
    16        1     magic                 int8, the same position in both layouts

v2 record batch (magic 2, `DefaultRecordBatch`), a 61-byte header::

    0   baseOffset            int64
    8   batchLength           int32
    12  partitionLeaderEpoch  int32   not covered by the CRC; -1 for none
    16  magic                 int8    = 2
    17  crc                   uint32  CRC-32C over position 21 .. end of batch
    21  attributes            int16   low byte: bits 0-2 codec, 3 timestamp type (1 = LogAppendTime),
                                      4 transactional, 5 control, 6 delete horizon present
    23  lastOffsetDelta       int32
    27  baseTimestamp         int64   (the delete horizon when bit 6 is set)
    35  maxTimestamp          int64
    43  producerId            int64
    51  producerEpoch         int16
    53  baseSequence          int32
    57  recordsCount          int32
    61  records               raw, or compressed with the codec

Legacy message (magic 0/1, `LegacyRecord`), after offset and length::

    12  crc         uint32  CRC32 (IEEE) over position 16 .. end of message
    16  magic       int8
    17  attributes  int8    bits 0-2 codec, bit 3 timestamp type (v1 only)
    18  timestamp   int64   v1 only
    ..  key length  int32 (-1 = null), key, value length int32 (-1 = null), value

A compressed legacy message is a "wrapper": its value holds the compressed inner messages and its
offset is the absolute offset of the last inner message.
"""

from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

from kdump.formats.checksums import crc32c as _crc32c_fn
from kdump.formats.constants import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    V2_ATTRIBUTES_POSITION,
    V2_HEADER_SIZE,
    TimestampType,
)

Buffer = bytes | bytearray | memoryview


# offset, length, [4 bytes: leader epoch or crc], magic
ENTRY_PREFIX = struct.Struct(">qi4xb")

V2_HEADER = struct.Struct(
    ">"
    "q"  # baseOffset
    "i"  # batchLength
    "i"  # partitionLeaderEpoch
    "b"  # magic
    "I"  # crc
    "h"  # attributes
    "i"  # lastOffsetDelta
    "q"  # baseTimestamp
    "q"  # maxTimestamp
    "q"  # producerId
    "h"  # producerEpoch
    "i"  # baseSequence
    "i"  # recordsCount
)
assert V2_HEADER.size == V2_HEADER_SIZE

LEGACY_HEADER_V0 = struct.Struct(
    ">"
    "q"  # offset
    "i"  # length
    "I"  # crc
    "b"  # magic
    "B"  # attributes
)
LEGACY_HEADER_V1 = struct.Struct(
    ">"
    "q"  # offset
    "i"  # length
    "I"  # crc
    "b"  # magic
    "B"  # attributes
    "q"  # timestamp
)


class BatchHeader(NamedTuple):
    """One log entry's header: a v2 batch, or a legacy (v0/v1) message or wrapper message.

    Fields use Kafka's names. `size` is the whole entry including the 12-byte log overhead.
    For legacy entries `base_offset` and `count` are None (they need decompression; Kafka's
    `countOrNull` is null), and the producer fields and leader epoch are -1.
    """

    position: int
    base_offset: int | None
    last_offset: int
    count: int | None  # type: ignore[assignment]  # Kafka's name; shadows tuple.count
    size: int
    magic: int
    crc: int
    crc_ok: bool
    computed_crc: int
    attributes: int
    compression: int
    timestamp_type: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    partition_leader_epoch: int
    is_transactional: bool
    is_control: bool
    has_delete_horizon: bool

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record (wraps past int32 max to 0), or -1."""
        if self.base_sequence < 0 or self.base_offset is None:
            return -1
        return (self.base_sequence + (self.last_offset - self.base_offset)) % (2**31)

    @property
    def delete_horizon_ms(self) -> int | None:
        """The delete horizon KIP-534 stores in baseTimestamp, when the bit is set."""
        return self.base_timestamp if self.has_delete_horizon else None


def v2_crc(buf: Buffer, position: int, size: int) -> int:
    """CRC-32C of a v2 batch: attributes through the end (the leader epoch is not covered)."""
    return int(_crc32c_fn(buf[position + V2_ATTRIBUTES_POSITION : position + size]))


def legacy_crc(buf: Buffer, position: int, size: int) -> int:
    """CRC32 (IEEE) of a legacy message: magic through the end."""
    return zlib.crc32(buf[position + 16 : position + size]) & 0xFFFFFFFF


_tuple_new = tuple.__new__
_unpack_v2 = V2_HEADER.unpack_from


def decode_v2_header(buf: Buffer, position: int, size: int) -> BatchHeader:
    """Decode the 61-byte header of the v2 batch at `position` whose whole size is `size`.

    The caller has checked that `size >= 61` bytes are in `buf`. The CRC is computed over the
    buffer in place, with no copy. (This runs once per batch: the tuple is built directly.)
    """
    (
        base_offset,
        _length,
        leader_epoch,
        magic,
        crc,
        attributes,
        last_delta,
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = _unpack_v2(buf, position)
    computed = _crc32c_fn(buf[position + V2_ATTRIBUTES_POSITION : position + size])
    return _tuple_new(
        BatchHeader,
        (
            position,
            base_offset,
            base_offset + last_delta,
            count,
            size,
            magic,
            crc,
            crc == computed,
            computed,
            attributes,
            attributes & COMPRESSION_MASK,
            (attributes & TIMESTAMP_TYPE_MASK) >> 3,
            base_ts,
            max_ts,
            producer_id,
            producer_epoch,
            base_sequence,
            leader_epoch,
            bool(attributes & TRANSACTIONAL_MASK),
            bool(attributes & CONTROL_MASK),
            bool(attributes & DELETE_HORIZON_MASK),
        ),
    )


def decode_legacy_header(buf: Buffer, position: int, size: int) -> BatchHeader:
    """Decode a v0/v1 message at `position` (whole size `size`, at least its header in `buf`)."""
    magic = buf[position + 16]
    if magic == 1:
        offset, _length, crc, magic, attributes, timestamp = LEGACY_HEADER_V1.unpack_from(buf, position)
        ts_type = (attributes & TIMESTAMP_TYPE_MASK) >> 3
    else:
        offset, _length, crc, magic, attributes = LEGACY_HEADER_V0.unpack_from(buf, position)
        timestamp = -1
        ts_type = TimestampType.NO_TIMESTAMP_TYPE
    computed = zlib.crc32(buf[position + 16 : position + size]) & 0xFFFFFFFF
    return BatchHeader(
        position,
        None,
        offset,
        None,
        size,
        magic,
        crc,
        crc == computed,
        computed,
        attributes,
        attributes & COMPRESSION_MASK,
        ts_type,
        timestamp,
        timestamp,
        -1,
        -1,
        -1,
        -1,
        False,
        False,
        False,
    )


def encode_v2_batch(
    *,
    base_offset: int,
    records_payload: bytes,
    count: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    attributes: int = 0,
    partition_leader_epoch: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """Assemble a v2 batch around an already encoded (and compressed) records payload."""
    length = V2_HEADER_SIZE - LOG_OVERHEAD + len(records_payload)
    header = bytearray(
        V2_HEADER.pack(
            base_offset,
            length,
            partition_leader_epoch,
            2,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        )
    )
    body = bytes(header[V2_ATTRIBUTES_POSITION:]) + records_payload
    struct.pack_into(">I", header, 17, _crc32c_fn(body))
    return bytes(header[:V2_ATTRIBUTES_POSITION]) + body


def encode_legacy_message(
    *,
    offset: int,
    magic: int,
    key: bytes | None,
    value: bytes | None,
    attributes: int = 0,
    timestamp: int = -1,
) -> bytes:
    """Assemble one v0/v1 message with its log overhead (offset and length)."""
    body = bytearray([magic, attributes])
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for part in (key, value):
        if part is None:
            body += struct.pack(">i", -1)
        else:
            body += struct.pack(">i", len(part)) + part
    crc = zlib.crc32(body) & 0xFFFFFFFF
    return struct.pack(">qiI", offset, len(body) + 4, crc) + bytes(body)
