"""Numbers that Kafka's on-disk formats fix: sizes, attribute bits, codec ids.

Mirrors `org.apache.kafka.common.record.Records`, `DefaultRecordBatch`, `LegacyRecord` and
`CompressionType`.
"""

from __future__ import annotations

from enum import IntEnum

# Every log entry starts with baseOffset int64 and a length int32 (LOG_OVERHEAD).
LOG_OVERHEAD = 12
# Bytes needed before the magic byte can be read (Records.HEADER_SIZE_UP_TO_MAGIC).
HEADER_SIZE_UP_TO_MAGIC = 17
MAGIC_POSITION = 16
# Smallest length field the file reader accepts (LegacyRecord.RECORD_OVERHEAD_V0).
MIN_BATCH_LENGTH = 14

# v2 record batch (DefaultRecordBatch).
V2_HEADER_SIZE = 61
V2_MIN_BATCH_SIZE = V2_HEADER_SIZE  # sizeInBytes >= 61 for isValid
V2_CRC_POSITION = 17
V2_ATTRIBUTES_POSITION = 21  # the CRC covers attributes .. end of batch
NO_PRODUCER_ID = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1

# Legacy (v0/v1) message header sizes after the log overhead: crc, magic, attributes[, timestamp].
V0_HEADER_SIZE = 6
V1_HEADER_SIZE = 14
V0_RECORD_OVERHEAD = 14  # header + key length + value length
V1_RECORD_OVERHEAD = 22

# Attribute bits (v2 reads the low byte of the int16; legacy has one byte).
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

# The broker's largest relative offset in an index entry (int32).
MAX_RELATIVE_OFFSET = 2**31 - 1


class Magic(IntEnum):
    """Message format version, the byte at position 16 of every entry."""

    V0 = 0
    V1 = 1
    V2 = 2


class Codec(IntEnum):
    """Compression codec ids of the attributes' low three bits."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def label(self) -> str:
        """Kafka's lower-case name (`compresscodec:` in kafka-dump-log)."""
        return self.name.lower()


CODEC_LABELS = {c.value: c.label for c in Codec}


class TimestampType(IntEnum):
    """Timestamp type; v0 messages have none."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def label(self) -> str:
        """Kafka's name for it (`CreateTime`, `LogAppendTime`, `NoTimestampType`)."""
        return {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}[self.value]


class ControlType(IntEnum):
    """Control record types (ControlRecordType)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6
