"""Kafka's `kafka-dump-log.sh` text for index, time index, producer snapshot and transaction index files.

The companion of `kafka_tool` (which has the log files and the options): an index is printed entry by
entry up to its preallocated zero tail and checked against its segment's `.log` (Kafka's `Mismatches in`
and time index summaries), `--verify-index-only` checks without printing, `--index-sanity-check` runs the
broker's start-up check only and stops the whole run with Kafka's exception when it fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kdump.errors import DecodeError
from kdump.formats.batch import BatchHeader
from kdump.formats.offset_index import decode_offset_index, lookup_offset
from kdump.formats.producer_snapshot import decode_producer_snapshot
from kdump.formats.records import Record
from kdump.formats.time_index import decode_time_index
from kdump.formats.txn_index import decode_txn_index
from kdump.render.kafka_tool import (
    ToolAbort,
    ToolOptions,
    ToolReport,
    base_offset_of,
    first_batch_last_offset,
)
from kdump.scan import open_buffer, scan_log

_CORRUPT_INDEX = "org.apache.kafka.storage.internals.log.CorruptIndexException"
_NO_SUCH_FILE = "java.nio.file.NoSuchFileException"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ToolAbort(_NO_SUCH_FILE, str(path)) from None


def _log_of(path: Path) -> Path:
    """The segment's `.log`, beside the index, as Kafka finds it (from the absolute path)."""
    log = path.absolute().parent / (path.name.split(".")[0] + ".log")
    if not log.is_file():
        raise ToolAbort(_NO_SUCH_FILE, str(log))
    return log


def index_lines(path: Path, shown: str, opts: ToolOptions, report: ToolReport) -> Iterator[str]:
    """An offset index: its entries, each checked against the first batch at its position."""
    base = base_offset_of(path)
    log = _log_of(path)
    data = _read(path)
    contents = decode_offset_index(data, base)
    if contents.slot_count == 0:
        yield f"{shown} is empty."
        return
    if opts.sanity_only:
        last = contents.last_slot
        if last is not None and last.offset < base:
            raise ToolAbort(
                _CORRUPT_INDEX,
                f"Corrupt index found, index file {path.absolute()} has non-zero size but the last offset is "
                f"{last.offset} which is less than the base offset {base}",
            )
        if len(data) % 8:
            raise ToolAbort(
                _CORRUPT_INDEX,
                f"Index file {path.absolute()} is corrupt, found {len(data)} bytes which is neither positive "
                "nor a multiple of 8",
            )
        yield f"{shown} passed sanity check."
        return
    with open_buffer(log) as buf:
        for entry in contents.entries:
            last_offset = first_batch_last_offset(buf, entry.position, opts.max_message_size)
            if last_offset is None:
                raise ToolAbort("java.util.NoSuchElementException", "")
            if last_offset != entry.offset:
                report.index_mismatches.add(path, (entry.offset, last_offset))
            if not opts.verify_only:
                yield f"offset: {entry.offset} position: {entry.position}"


def _batches_with_max_timestamps(log: Path) -> list[tuple[int, int, int]]:
    """(position, last offset, largest record timestamp) of every batch of the log, in file order."""
    out: list[tuple[int, int, int]] = []
    batch: BatchHeader | None = None
    largest = -1
    with open_buffer(log) as buf:
        for ev in scan_log(buf, file=str(log), deep=True):
            if isinstance(ev, BatchHeader):
                if batch is not None:
                    out.append((batch.position, batch.last_offset, largest))
                batch, largest = ev, -1
            elif isinstance(ev, Record):
                largest = max(largest, ev.timestamp)
    if batch is not None:
        out.append((batch.position, batch.last_offset, largest))
    return out


def time_index_lines(path: Path, shown: str, opts: ToolOptions, report: ToolReport) -> Iterator[str]:
    """A time index: its entries, each checked against the batch its offset ends."""
    base = base_offset_of(path)
    log = _log_of(path)
    data = _read(path)
    contents = decode_time_index(data, base)
    if opts.sanity_only:
        last, first = contents.last_slot, contents.entries[0] if contents.entries else None
        found = (
            f"Corrupt time index found, time index file ({path.absolute()}) has non-zero size but the last"
        )
        if last is not None and first is not None and last.timestamp < first.timestamp:
            raise ToolAbort(
                _CORRUPT_INDEX,
                f"{found} timestamp is {last.timestamp} which is less than the first timestamp {first.timestamp}",
            )
        if last is not None and last.offset < base:
            raise ToolAbort(
                _CORRUPT_INDEX, f"{found} offset is {last.offset} which is less than the first offset {base}"
            )
        if len(data) % 12:
            raise ToolAbort(
                _CORRUPT_INDEX,
                f"Time index file {path.absolute()} is corrupt, found {len(data)} bytes which is neither "
                "positive nor a multiple of 12",
            )
        yield f"{shown} passed sanity check."
        return
    index_path = log.with_suffix(".index")
    offsets = decode_offset_index(index_path.read_bytes(), base).entries if index_path.is_file() else ()
    batches = _batches_with_max_timestamps(log) if contents.entries else []
    previous = -1
    for entry in contents.entries:
        indexed = lookup_offset(offsets, entry.offset)
        start = 0 if indexed is None else indexed.position
        match = next((b for b in batches if b[0] >= start and b[1] >= entry.offset), None)
        if match is None:
            report.offsets_not_found.add(path, (entry.offset, -1))
        elif match[1] != entry.offset:
            report.offsets_not_found.add(path, (entry.offset, match[1]))
        else:
            if match[2] != entry.timestamp:
                report.timestamp_mismatches.add(path, (entry.timestamp, match[2]))
            if previous >= entry.timestamp:
                report.out_of_order_timestamps.add(path, (entry.timestamp, previous))
        if not opts.verify_only:
            yield f"timestamp: {entry.timestamp} offset: {entry.offset}"
        previous = entry.timestamp


def snapshot_lines(path: Path, opts: ToolOptions, report: ToolReport) -> Iterator[str]:
    """A producer state snapshot: one line per producer (a corrupt one is said on stderr)."""
    try:
        snapshot = decode_producer_snapshot(_read(path))
    except DecodeError as exc:
        report.say(str(exc))
        return
    if not snapshot.crc_ok:
        report.say(
            "Snapshot is corrupt (CRC is no longer valid). Stored crc: "
            f"{snapshot.stored_crc}. Computed crc: {snapshot.computed_crc}"
        )
        return
    for e in snapshot.entries:
        txn = e.open_txn_first_offset
        line = (
            f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} coordinatorEpoch: "
            f"{e.coordinator_epoch} currentTxnFirstOffset: "
            f"{'OptionalLong.empty' if txn is None else f'OptionalLong[{txn}]'} lastTimestamp: {e.timestamp}"
        )
        # 3.x ends every entry's first part with a space; 4.x starts the batch part with one.
        line += "" if opts.java else " "
        if e.has_batch_metadata:
            line += (
                f"{' ' if opts.java else ''}firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} "
                f"lastOffset: {e.last_offset} offsetDelta: {e.offset_delta} timestamp: {e.timestamp}"
            )
        yield line


def txn_index_lines(path: Path) -> Iterator[str]:
    """A transaction index: one line per aborted transaction."""
    for t in decode_txn_index(_read(path)).entries:
        yield (
            f"version: {t.kafka_version} producerId: {t.producer_id} firstOffset: {t.first_offset} "
            f"lastOffset: {t.last_offset} lastStableOffset: {t.last_stable_offset}"
        )
