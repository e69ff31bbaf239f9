"""Records inside a batch: v2 records (varint-framed) and legacy v0/v1 inner messages.

v2 record (`DefaultRecord`)::

    length             varint   bytes that follow this field
    attributes         int8     unused (0)
    timestampDelta     varlong  from the batch's baseTimestamp
    offsetDelta        varint   from the batch's baseOffset
    keyLength          varint   -1 (any negative) = null key
    key                bytes
    valueLength        varint   -1 (any negative) = null value
    value              bytes
    headerCount        varint   >= 0
    headers            headerCount x (keyLength varint >= 0, key UTF-8 bytes,
                                      valueLength varint (-1 = null), value bytes)

With LogAppendTime every record's timestamp is the batch's maxTimestamp (the deltas are ignored).
A record's sequence is baseSequence + offsetDelta, wrapping past int32 max to 0 (-1 when the batch
has none).

Legacy v0/v1: an uncompressed message is its own single record. A compressed "wrapper" message's
value decompresses to a run of inner messages, each with its own offset, length, CRC32, magic and
attributes (inner messages must not be compressed). v0 inner offsets are absolute; v1 inner offsets
are relative (KIP-31): absolute = wrapper offset - last inner offset + inner offset, except that a
wrapper offset of 0 leaves them as they are. A v1 LogAppendTime wrapper gives every inner message
its own timestamp (`AbstractLegacyRecordBatch`).

Decoders return the records decoded so far together with the first error, so a forensic caller keeps
everything readable up to the damage.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from typing import NamedTuple

from kdump.errors import (
    CorruptFieldError,
    DecodeError,
    MessageTooShortError,
    TruncatedError,
    WrapperOffsetError,
)
from kdump.formats.batch import BatchHeader, encode_legacy_message, encode_v2_batch
from kdump.formats.codecs import compress
from kdump.formats.constants import COMPRESSION_MASK, TIMESTAMP_TYPE_MASK, Codec, TimestampType
from kdump.formats.varint import decode_varint, encode_varint

Header = tuple[bytes, bytes | None]


class Record(NamedTuple):
    """One record. `headers` holds (key, value) byte pairs (v2 only); `crc` is for legacy messages."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    sequence: int
    crc: int | None = None
    crc_ok: bool | None = None


def decode_v2_records(data: bytes, header: BatchHeader) -> tuple[list[Record], DecodeError | None]:
    """Decode the (decompressed) records of a v2 batch.

    Mirrors `DefaultRecord.readFrom` and the batch iterator's end checks: a record longer than
    what remains, a record whose fields do not use exactly its length, a bad varint, fewer records
    than `recordsCount` (premature end) or bytes left after them are errors.

    Returns:
        The records decoded before any error, and the error or None.
    """
    records: list[Record] = []
    append = records.append
    end = len(data)
    pos = 0
    base_offset = header.base_offset or 0
    base_ts = header.base_timestamp
    log_append = header.timestamp_type == TimestampType.LOG_APPEND_TIME
    max_ts = header.max_timestamp
    base_seq = header.base_sequence
    count = header.count or 0
    varint = decode_varint
    new_tuple = tuple.__new__
    i = 0
    try:
        # A hot loop: one-byte varints, by far the common case, are decoded inline.
        while i < count:
            if pos >= end:
                raise TruncatedError(
                    f"Incorrect declared batch size, premature EOF reached after {i} of {count} records"
                )
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                raw = (b & 0x7F) | (data[pos + 1] << 7)
                length = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                length, pos = varint(data, pos)
            rec_end = pos + length
            if length < 0 or rec_end > end:
                raise CorruptFieldError(
                    f"Invalid record size: expected {length} bytes in record payload, "
                    f"but the buffer has only {end - pos} remaining bytes"
                )
            pos += 1  # attributes: unused
            b = data[pos]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                ts_delta, pos = varint(data, pos, 10)
            b = data[pos]
            if b < 0x80:
                offset_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                offset_delta, pos = varint(data, pos)
            b = data[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                raw = (b & 0x7F) | (data[pos + 1] << 7)
                n = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                n, pos = varint(data, pos)
            if n < 0:
                key = None
            else:
                key = data[pos : pos + n]
                pos += n
            b = data[pos]
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                pos += 1
            elif data[pos + 1] < 0x80:
                raw = (b & 0x7F) | (data[pos + 1] << 7)
                n = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                n, pos = varint(data, pos)
            if n < 0:
                value = None
            else:
                value = data[pos : pos + n]
                pos += n
            b = data[pos]
            if b == 0:
                headers: tuple[Header, ...] = ()
                pos += 1
            else:
                headers, pos = _decode_headers(data, pos, rec_end)
            if pos != rec_end:
                raise CorruptFieldError(
                    f"Invalid record size: expected to read {length} bytes in record payload, "
                    f"but instead read {pos - rec_end + length}"
                )
            append(
                new_tuple(
                    Record,
                    (
                        base_offset + offset_delta,
                        max_ts if log_append else base_ts + ts_delta,
                        key,
                        value,
                        headers,
                        (base_seq + offset_delta) % 2147483648 if base_seq >= 0 else -1,
                        None,
                        None,
                    ),
                )
            )
            i += 1
        if pos != end:
            raise CorruptFieldError("Incorrect declared batch size, records still remaining in file")
    except DecodeError as exc:
        return records, exc
    except IndexError:
        return records, TruncatedError(f"Found invalid record structure in record {i}: buffer underflow")
    return records, None


def _decode_headers(data: bytes, pos: int, rec_end: int) -> tuple[tuple[Header, ...], int]:
    count, pos = decode_varint(data, pos)
    if count < 0 or count > rec_end - pos:
        raise CorruptFieldError(f"Found invalid number of record headers {count}")
    headers = []
    for _ in range(count):
        n, pos = decode_varint(data, pos)
        if n < 0:
            raise CorruptFieldError(f"Invalid negative header key size {n}")
        key = data[pos : pos + n]
        pos += n
        n, pos = decode_varint(data, pos)
        if n < 0:
            value = None
        else:
            value = data[pos : pos + n]
            pos += n
        if pos > rec_end:
            raise CorruptFieldError("Found invalid record structure: header runs past the record")
        headers.append((key, value))
    return tuple(headers), pos


_LEGACY_PREFIX = struct.Struct(">qiIbB")  # offset, length, crc, magic, attributes
_LEGACY_PREFIX_LENGTH = struct.Struct(">qi")  # offset, length
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")


def _legacy_key_value(data: bytes, pos: int, end: int) -> tuple[bytes | None, bytes | None]:
    values: list[bytes | None] = []
    for _ in range(2):
        if pos + 4 > end:
            raise TruncatedError("legacy message ends inside its key or value length")
        (n,) = _INT32.unpack_from(data, pos)
        pos += 4
        if n < 0:
            values.append(None)
            continue
        if pos + n > end:
            raise CorruptFieldError(f"legacy message field of {n} bytes runs past the message end")
        values.append(data[pos : pos + n])
        pos += n
    if pos != end:
        raise CorruptFieldError("legacy message has bytes after its value")
    return values[0], values[1]


def decode_legacy_message(
    data: bytes, pos: int
) -> tuple[int, int, int, int, int, bytes | None, bytes | None, int]:
    """Decode a whole legacy message (offset, length, crc, magic, attributes, [timestamp], key, value).

    Returns:
        (offset, crc, magic, attributes, timestamp, key, value, position after the message).
    """
    if pos + 12 <= len(data):
        # The length is judged before the rest of the header is read: a message shorter than the
        # minimum is that, not a header that runs past the end (Kafka's DataLogInputStream checks
        # it first too; v1's minimum needs the magic byte, when it is there).
        offset, length = _LEGACY_PREFIX_LENGTH.unpack_from(data, pos)
        magic_at = pos + 16
        minimum = 22 if magic_at < len(data) and data[magic_at] == 1 and length >= 14 else 14
        if 0 <= length < minimum:
            raise MessageTooShortError(
                f"legacy message at offset {offset} has length {length}, below the minimum {minimum}",
                offset,
            )
    if pos + 18 > len(data):
        raise TruncatedError("legacy message header runs past the end of the buffer")
    offset, length, crc, magic, attributes = _LEGACY_PREFIX.unpack_from(data, pos)
    end = pos + 12 + length
    if length < 14 or end > len(data):
        raise CorruptFieldError(f"legacy message length {length} is invalid here")
    body = pos + 18
    timestamp = -1
    if magic == 1:
        if body + 8 > end:
            raise TruncatedError("v1 message ends inside its timestamp")
        (timestamp,) = _INT64.unpack_from(data, body)
        body += 8
    elif magic != 0:
        raise CorruptFieldError(f"inner message has magic {magic}")
    key, value = _legacy_key_value(data, body, end)
    return offset, crc, magic, attributes, timestamp, key, value, end


def decode_legacy_records(
    entry: bytes, header: BatchHeader, inner: bytes | None
) -> tuple[list[Record], DecodeError | None]:
    """Decode the records of a legacy entry.

    Args:
        entry: the whole entry's bytes (log overhead included).
        header: its decoded header.
        inner: for a wrapper, its decompressed value; None for an uncompressed message.
    """
    ts_is_log_append = header.timestamp_type == TimestampType.LOG_APPEND_TIME
    if inner is None:
        try:
            offset, crc, _m, _a, timestamp, key, value, _end = decode_legacy_message(entry, 0)
        except DecodeError as exc:
            return [], exc
        return [Record(offset, timestamp, key, value, (), -1, crc, header.crc_ok)], None
    raw: list[tuple[int, int, bool, int, bytes | None, bytes | None]] = []
    error: DecodeError | None = None
    pos = 0
    # The offset field of the last inner entry framed, a message or not: v1's offsets are counted
    # back from it, so a damaged last message must not make the one before it the last.
    last_entry_offset: int | None = None
    try:
        while pos < len(inner):
            start = pos
            try:
                offset, crc, magic, attributes, timestamp, key, value, pos = decode_legacy_message(inner, pos)
            except MessageTooShortError as exc:
                # Its length still frames it: step over it, so the messages after it (and the last
                # inner offset) are still known.
                error = error or exc
                last_entry_offset = exc.offset
                pos = start + 12 + _INT32.unpack_from(inner, start + 8)[0]
                continue
            last_entry_offset = offset
            if attributes & COMPRESSION_MASK:
                raise CorruptFieldError("Inner messages must not be compressed")
            if magic != header.magic:
                raise CorruptFieldError(
                    f"inner message magic {magic} differs from the wrapper's {header.magic}"
                )
            crc_ok = crc == zlib.crc32(inner[start + 16 : pos]) & 0xFFFFFFFF
            if ts_is_log_append or (magic == 1 and attributes & TIMESTAMP_TYPE_MASK):
                timestamp = header.max_timestamp
            raw.append((offset, crc, crc_ok, timestamp, key, value))
    except DecodeError as exc:
        error = error or exc
        last_entry_offset = None  # framing lost: the last inner offset is not known
    if not raw and error is None:
        error = CorruptFieldError("compressed wrapper message holds no inner messages")
    shift = 0
    wrapper_offset = header.last_offset
    if header.magic == 1 and raw:
        last_inner = raw[-1][0] if last_entry_offset is None else last_entry_offset
        if wrapper_offset != 0:
            if wrapper_offset < last_inner:
                return [], WrapperOffsetError(
                    f"wrapper offset {wrapper_offset} is below its last inner offset {last_inner}",
                    wrapper_offset,
                    last_inner,
                )
            shift = wrapper_offset - last_inner
    elif header.magic == 0 and last_entry_offset is not None and last_entry_offset != wrapper_offset:
        # v0 inner offsets are absolute, and the wrapper's offset is its last inner message's
        # (the broker sets both when it assigns offsets); the wrapper's offset is outside its
        # checksum, so nothing else catches a damaged one.
        error = error or WrapperOffsetError(
            f"wrapper offset {wrapper_offset} is not its last inner message's offset {last_entry_offset}",
            wrapper_offset,
            last_entry_offset,
        )
    if isinstance(error, MessageTooShortError) and header.magic == 1 and wrapper_offset != 0:
        error.offset += shift  # made absolute, as the records' offsets are
    records = [Record(o + shift, ts, k, v, (), -1, c, ok) for (o, c, ok, ts, k, v) in raw]
    return records, error


def encode_v2_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[Header] = (),
) -> bytes:
    """Encode one v2 record, length prefix included."""
    body = bytearray(b"\x00")
    body += encode_varint(timestamp_delta)
    body += encode_varint(offset_delta)
    for part in (key, value):
        if part is None:
            body += encode_varint(-1)
        else:
            body += encode_varint(len(part)) + part
    body += encode_varint(len(headers))
    for hkey, hvalue in headers:
        body += encode_varint(len(hkey)) + hkey
        if hvalue is None:
            body += encode_varint(-1)
        else:
            body += encode_varint(len(hvalue)) + hvalue
    return encode_varint(len(body)) + bytes(body)


class NewRecord(NamedTuple):
    """A record to write: what a producer supplies."""

    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[Header, ...] = ()


def build_v2_batch(
    base_offset: int,
    records: Sequence[NewRecord],
    *,
    codec: int = Codec.NONE,
    log_append_time: int | None = None,
    offset_deltas: Sequence[int] | None = None,
    last_offset_delta: int | None = None,
    transactional: bool = False,
    control: bool = False,
    partition_leader_epoch: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """Build a whole v2 batch the way a producer and broker would write it."""
    if records:
        base_ts = records[0].timestamp
        max_ts = max(r.timestamp for r in records)
    else:
        base_ts = max_ts = -1
    deltas = list(offset_deltas) if offset_deltas is not None else list(range(len(records)))
    payload = b"".join(
        encode_v2_record(d, r.timestamp - base_ts, r.key, r.value, r.headers)
        for d, r in zip(deltas, records, strict=True)
    )
    attributes = codec | (0x10 if transactional else 0) | (0x20 if control else 0)
    if log_append_time is not None:
        attributes |= TIMESTAMP_TYPE_MASK
        max_ts = log_append_time
    return encode_v2_batch(
        base_offset=base_offset,
        records_payload=compress(codec, payload),
        count=len(records),
        last_offset_delta=last_offset_delta
        if last_offset_delta is not None
        else (deltas[-1] if deltas else 0),
        base_timestamp=base_ts,
        max_timestamp=max_ts,
        attributes=attributes,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )


def build_legacy_entry(
    base_offset: int,
    records: Sequence[NewRecord],
    *,
    magic: int,
    codec: int = Codec.NONE,
    log_append_time: int | None = None,
) -> bytes:
    """Build legacy entries: one message per record, or one compressed wrapper holding them all."""
    lat_bit = TIMESTAMP_TYPE_MASK if (log_append_time is not None and magic == 1) else 0
    append_ts = log_append_time if log_append_time is not None else -1
    if codec == Codec.NONE:
        return b"".join(
            encode_legacy_message(
                offset=base_offset + i,
                magic=magic,
                key=r.key,
                value=r.value,
                attributes=lat_bit,
                timestamp=(append_ts if lat_bit else r.timestamp) if magic == 1 else -1,
            )
            for i, r in enumerate(records)
        )
    inner = b"".join(
        encode_legacy_message(
            offset=(base_offset + i) if magic == 0 else i,
            magic=magic,
            key=r.key,
            value=r.value,
            timestamp=r.timestamp if magic == 1 else -1,
        )
        for i, r in enumerate(records)
    )
    wrapper_ts = -1
    if magic == 1:
        wrapper_ts = append_ts if lat_bit else max(r.timestamp for r in records)
    return encode_legacy_message(
        offset=base_offset + len(records) - 1,
        magic=magic,
        key=None,
        value=compress(codec, inner, magic=magic),
        attributes=codec | lat_bit,
        timestamp=wrapper_ts,
    )


def encode_int64(value: int) -> bytes:
    """Big-endian int64 (a helper for writers of offsets)."""
    return _INT64.pack(value)
