"""The checks of one checksum-valid entry: its offsets, count and codec against the entries before it
and the segment's base offset, and its records decoded the reference way, damage as findings."""

from __future__ import annotations

from collections.abc import Iterator

from kdump.errors import (
    CodecError,
    CodecUnavailableError,
    MessageTooShortError,
    TruncatedError,
    WrapperOffsetError,
)
from kdump.findings import Finding, make_finding
from kdump.formats import fast_records
from kdump.formats.batch import (
    BatchHeader,
)
from kdump.formats.codecs import decompress
from kdump.formats.constants import (
    MAX_RELATIVE_OFFSET,
    V2_HEADER_SIZE,
    ControlType,
    TimestampType,
)
from kdump.formats.control import decode_control_key, decode_end_txn_marker
from kdump.formats.records import Record, decode_legacy_message, decode_legacy_records, decode_v2_records
from kdump.scan.pages import Buffer


def check_offsets(
    h: BatchHeader,
    file: str,
    base_offset: int | None,
    prev_last: int | None,
    prev_epoch: int,
    first: bool,
) -> Iterator[Finding]:
    """Offset, count and codec checks of a checksum-valid entry."""
    pos = h.position
    low = h.base_offset if h.base_offset is not None else h.last_offset
    if base_offset is not None:
        # The last offset too: a v0 wrapper's own offset (its last) is not covered by its checksum and
        # can fall below the segment while its inner, absolute offsets do not; the broker's recovery
        # rejects a batch whose last offset is not a relative offset. (Found by tests/matrix.)
        below = min(low, h.last_offset)
        if below < base_offset:
            yield make_finding(
                "offset-below-base",
                file,
                f"offset {below} is below the segment's base offset {base_offset}",
                position=pos,
                offset=below,
            )
        elif h.last_offset - base_offset > MAX_RELATIVE_OFFSET:
            yield make_finding(
                "offset-overflow",
                file,
                f"last offset {h.last_offset} is more than 2^31-1 above the base offset {base_offset}",
                position=pos,
                offset=h.last_offset,
            )
        elif first and h.base_offset is not None and h.base_offset > base_offset:
            yield make_finding(
                "segment-base-mismatch",
                file,
                f"first batch starts at offset {h.base_offset}, above the file name's {base_offset}",
                position=pos,
                offset=h.base_offset,
            )
    if prev_last is not None:
        if low <= prev_last:
            yield make_finding(
                "offset-regression",
                file,
                f"batch starts at offset {low}, not above the previous batch's last offset {prev_last}",
                position=pos,
                offset=low,
                previous_last_offset=prev_last,
            )
        elif h.base_offset is not None and h.base_offset > prev_last + 1:
            yield make_finding(
                "offset-gap",
                file,
                f"offsets {prev_last + 1}..{h.base_offset - 1} are absent",
                position=pos,
                offset=prev_last + 1,
                gap=h.base_offset - prev_last - 1,
            )
    if h.magic == 2:
        count = h.count or 0
        if count < 0 or (h.base_offset is not None and count > h.last_offset - h.base_offset + 1):
            yield make_finding(
                "record-count-mismatch",
                file,
                f"record count {count} does not fit offsets {h.base_offset}..{h.last_offset}",
                position=pos,
                offset=h.base_offset,
            )
        if 0 <= h.partition_leader_epoch < prev_epoch:
            yield make_finding(
                "leader-epoch-regression",
                file,
                f"partition leader epoch {h.partition_leader_epoch} is below the earlier {prev_epoch}",
                position=pos,
                offset=h.base_offset,
            )
    if h.compression > 4 or (h.magic < 2 and h.compression > 3):
        yield make_finding(
            "unknown-codec",
            file,
            f"compression type id {h.compression} is not defined for magic {h.magic}",
            position=pos,
            offset=low,
        )


# Findings of a legacy wrapper's offsets, which every scan reports (the wrapper is always decoded).
WRAPPER_OFFSET_CODES = frozenset({"wrapper-offset-mismatch", "inner-message-too-short"})


def whole_record_count(data: bytes, h: BatchHeader) -> int | None:
    """How many records `data` holds when they decode cleanly to its very end, whatever the header's
    count says; None when they do not (a record is damaged, or garbage follows them)."""
    # Every record takes at least 7 bytes, so asking for more than len(data) reads up to the end.
    whole, error = decode_v2_records(data, h._replace(count=len(data) + 1))
    if isinstance(error, TruncatedError) and str(error).startswith(
        "Incorrect declared batch size, premature EOF"
    ):
        return len(whole)
    return None


def codec_unavailable(findings: list[Finding]) -> bool:
    return any(f.code == "codec-unavailable" for f in findings)


def decode_batch_records(buf: Buffer, h: BatchHeader, file: str) -> tuple[list[Record], list[Finding]]:
    """Decompress and decode one entry's records; damage becomes findings."""
    pos = h.position
    findings: list[Finding] = []
    offset = h.base_offset if h.base_offset is not None else h.last_offset
    if h.compression > 4 or (h.magic < 2 and h.compression > 3):
        # An undefined codec for the format (zstd in v0/v1 included) is reported once, as
        # unknown-codec by the header checks; there is nothing to decompress.
        return [], findings
    data = b""
    try:
        if h.magic == 2:
            payload = buf[pos + V2_HEADER_SIZE : pos + h.size]
            data = decompress(h.compression, payload, magic=2) if h.compression else bytes(payload)
            fast = fast_records.decode_v2(data, h) if h.crc_ok else None
            if fast is not None:
                # The compiled path decoded every record cleanly and, when it says so, checked what
                # the loops below check: nothing to report for a data batch.
                records, clean = fast
                if clean and not h.is_control:
                    return records, findings
                error = None
            else:
                records, error = decode_v2_records(data, h)
        else:
            entry = bytes(buf[pos : pos + h.size])
            inner = None
            if h.compression:
                value = decode_legacy_message(entry, 0)[6]
                if value is None:
                    raise CodecError("compressed wrapper message has a null value")
                inner = decompress(h.compression, value, magic=h.magic)
            records, error = decode_legacy_records(entry, h, inner)
    except CodecUnavailableError as exc:
        if h.magic == 2:
            what = f"its {h.count} records (offsets {h.base_offset}..{h.last_offset}, as its header says) were not checked"
        else:
            what = (
                f"its inner messages were not read: the last offset is {h.last_offset}, the first is unknown"
            )
        message = f"{exc}; {what}"
        findings.append(make_finding("codec-unavailable", file, message, position=pos, offset=offset))
        return [], findings
    except CodecError as exc:
        findings.append(make_finding("decompression-failed", file, str(exc), position=pos, offset=offset))
        return [], findings
    except MemoryError:
        # Millions of tiny records in one batch (a few KiB compressed) outgrow a memory limit; the
        # batch is reported, not the process killed. (Found by tests/test_memory_bound.py.)
        message = f"the {h.count} records the batch claims do not fit in the memory available"
        findings.append(make_finding("record-decode-failed", file, message, position=pos, offset=offset))
        return [], findings
    except Exception as exc:  # a DecodeError of the wrapper itself
        findings.append(make_finding("record-decode-failed", file, str(exc), position=pos, offset=offset))
        return [], findings
    held = whole_record_count(data, h) if error is not None and h.magic == 2 else None
    if held is not None and held != h.count:
        # The records decode cleanly to the end of the batch; only their number differs from the
        # header's (Kafka: "Incorrect declared batch size"). A count outside the offset range was
        # already reported by the header checks of a checksum-valid batch.
        count = h.count or 0
        if not (
            h.crc_ok and h.base_offset is not None and not 0 <= count <= h.last_offset - h.base_offset + 1
        ):
            findings.append(
                make_finding(
                    "record-count-mismatch",
                    file,
                    f"header record count {count} differs from the {held} records the batch holds",
                    position=pos,
                    offset=h.base_offset,
                )
            )
    elif isinstance(error, WrapperOffsetError):
        findings.append(
            make_finding(
                "wrapper-offset-mismatch",
                file,
                str(error),
                position=pos,
                offset=error.wrapper_offset,
                last_inner_offset=error.last_inner_offset,
            )
        )
    elif isinstance(error, MessageTooShortError):
        findings.append(
            make_finding(
                "inner-message-too-short",
                file,
                f"inside the wrapper, {error}",
                position=pos,
                offset=error.offset,
            )
        )
    elif error is not None:
        at = records[-1].offset + 1 if records else offset
        findings.append(
            make_finding(
                "record-decode-failed",
                file,
                f"record {len(records)} of the batch does not decode: {error}",
                position=pos,
                offset=at,
            )
        )
    # A wrapper whose offset is wrong was reported as such; its records are where they say they are.
    last = h.last_offset
    if records and isinstance(error, WrapperOffsetError):
        last = max(last, records[-1].offset)
    prev = None
    for r in records:
        if (h.base_offset is not None and not h.base_offset <= r.offset <= last) or (
            prev is not None and r.offset <= prev
        ):
            findings.append(
                make_finding(
                    "record-offset-invalid",
                    file,
                    f"record offset {r.offset} is outside {h.base_offset}..{h.last_offset} or out of order",
                    position=pos,
                    offset=r.offset,
                )
            )
            break
        prev = r.offset
    if h.magic < 2:
        for r in records:
            if r.crc_ok is False:
                findings.append(
                    make_finding(
                        "crc-mismatch",
                        file,
                        f"inner message at offset {r.offset} has a wrong crc {r.crc}",
                        position=pos,
                        offset=r.offset,
                    )
                )
        return records, findings
    if (
        error is None
        and records
        and h.timestamp_type == TimestampType.CREATE_TIME
        and not h.is_control
        and max(r.timestamp for r in records) != h.max_timestamp
    ):
        findings.append(
            make_finding(
                "max-timestamp-mismatch",
                file,
                f"header maxTimestamp {h.max_timestamp} differs from the records' largest "
                f"{max(r.timestamp for r in records)}",
                position=pos,
                offset=h.base_offset,
            )
        )
    if h.is_control:
        for r in records:
            try:
                key = decode_control_key(r.key)
                if key.type in (ControlType.ABORT, ControlType.COMMIT):
                    decode_end_txn_marker(r.value)
            except Exception as exc:
                findings.append(
                    make_finding(
                        "record-decode-failed",
                        file,
                        f"control record at offset {r.offset} is invalid: {exc}",
                        position=pos,
                        offset=r.offset,
                    )
                )
    return records, findings


# A segment holds at most this many offsets past its base: the index stores them as an int32.
_SEGMENT_OFFSET_SPAN = 1 << 31


def checked_offset(offset: int | None, last_valid: int | None, base_offset: int | None) -> int | None:
    """The offset a batch header that failed its check (or could not be checked) names, when it can be
    told apart from garbage: at or past the next offset (the last valid batch's, else the segment's
    base), within the span a segment can hold. None otherwise: an offset read from random bytes
    (9075011579598524882) is never reported as where the damage is."""
    floor = last_valid + 1 if last_valid is not None else base_offset
    if offset is None or floor is None:
        return None
    return offset if floor <= offset < floor + _SEGMENT_OFFSET_SPAN else None
