"""Decoding the non-log files for `dump`: indexes, aborted transactions, producer state, checkpoints."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kdump.errors import DecodeError, KdumpError
from kdump.findings import Finding, make_finding
from kdump.formats import checkpoints
from kdump.formats.offset_index import decode_offset_index
from kdump.formats.producer_snapshot import decode_producer_snapshot
from kdump.formats.time_index import decode_time_index
from kdump.formats.txn_index import ENTRY_SIZE as TXN_ENTRY_SIZE
from kdump.formats.txn_index import decode_txn_index
from kdump.model.entries import (
    STATE_FILE_KINDS,
    leftover_description,
    segment_base_offset,
    temp_file_base,
)
from kdump.ops.dump.files import Entry, FileStart
from kdump.scan.index_checks import check_index_slots
from kdump.scan.source import open_buffer, read_small_file

StateEvent = FileStart | Entry | Finding


def dump_state_file(path: Path, kind: str | None, name: str) -> Iterator[StateEvent]:
    """Decode one non-log file into entries; damage becomes findings."""
    if kind in ("index", "timeindex"):
        yield from _dump_index(path, kind, name)
        return
    data = read_small_file(path)
    yield FileStart(name, kind or "unknown", len(data), segment_base_offset(path))
    described = leftover_description(path, kind, len(data))
    if described is not None:
        yield Entry(name, "state", {"what": described})
        if kind != "temp-file" and (kind != "clean-shutdown" or not data):
            return
    if kind == "temp-file":
        yield from _temp_file(path, data, name)
        return
    try:
        yield from _decode_small(data, kind, name)
    except (DecodeError, KdumpError, ValueError) as exc:
        code = "snapshot-corrupt" if kind == "snapshot" else "checkpoint-corrupt"
        if kind == "txnindex":
            code = "index-size-invalid"
        yield make_finding(code, name, str(exc), position=None)


def _temp_file(path: Path, data: bytes, name: str) -> Iterator[StateEvent]:
    """A state file's `.tmp`, shown as the file it was being written as when it parses. A torn one
    is no finding: the broker never reads it."""
    base = temp_file_base(path.name)
    kind = STATE_FILE_KINDS.get(base or "")
    if kind is None:
        return
    try:
        entries = list(_decode_small(data, kind, name))
    except (DecodeError, KdumpError, ValueError) as exc:
        yield Entry(name, "state", {"what": f"does not parse as {base} ({exc}): its write was cut short"})
        return
    yield from entries


def _dump_index(path: Path, kind: str, name: str) -> Iterator[StateEvent]:
    base = segment_base_offset(path) or 0
    with open_buffer(path) as buf:
        yield FileStart(name, kind, len(buf), base)
        if kind == "index":
            contents: Any = decode_offset_index(buf, base)
            for e in contents.entries:
                yield Entry(name, "index-entry", {"offset": e.offset, "position": e.position})
            entry_size = 8
        else:
            contents = decode_time_index(buf, base)
            for t in contents.entries:
                yield Entry(name, "time-index-entry", {"timestamp": t.timestamp, "offset": t.offset})
            entry_size = 12
        # The same slot findings verify reports (trailing bytes, preallocated or broken tail).
        order_code = "index-not-monotonic" if kind == "index" else "time-index-out-of-order"
        yield from check_index_slots(contents, entry_size, name, order_code)


def _decode_small(data: bytes, kind: str | None, name: str) -> Iterator[StateEvent]:
    if kind == "txnindex":
        txn = decode_txn_index(data)
        for a in txn.entries:
            yield Entry(name, "aborted-txn", a._asdict())
        if txn.trailing_bytes:
            yield make_finding(
                "index-size-invalid",
                name,
                f"{txn.trailing_bytes} bytes after the last whole {TXN_ENTRY_SIZE}-byte entry",
                position=len(data) - txn.trailing_bytes,
            )
    elif kind == "snapshot":
        snap = decode_producer_snapshot(data)
        if not snap.crc_ok:
            yield make_finding(
                "snapshot-corrupt",
                name,
                f"stored crc {snap.stored_crc} differs from computed crc {snap.computed_crc}",
                position=2,
            )
        for s in snap.entries:
            fields = s._asdict()
            fields["first_sequence"] = s.first_sequence
            fields["first_offset"] = s.first_offset
            yield Entry(name, "producer-state", fields)
    elif kind == "leader-epoch-checkpoint":
        lec = checkpoints.decode_leader_epoch_checkpoint(data)
        for ep in lec.entries:
            yield Entry(name, "epoch-entry", {"epoch": ep.epoch, "start_offset": ep.start_offset})
    elif kind == "offset-checkpoint":
        oc = checkpoints.decode_offset_checkpoint(data)
        for topic, partition, offset in oc.entries:
            yield Entry(name, "checkpoint-entry", {"topic": topic, "partition": partition, "offset": offset})
    elif kind == "partition-metadata":
        pm = checkpoints.decode_partition_metadata(data)
        yield Entry(name, "property", {"key": "version", "value": str(pm.version)})
        yield Entry(name, "property", {"key": "topic_id", "value": pm.topic_id})
    elif kind == "meta-properties":
        for key, value in checkpoints.decode_meta_properties(data).items():
            yield Entry(name, "property", {"key": key, "value": value})
    elif kind in ("clean-shutdown", "quorum-state"):
        try:
            doc = json.loads(data)
        except ValueError as exc:
            raise DecodeError(f"not valid JSON: {exc}") from exc
        yield Entry(name, "state", {"document": doc})
    else:
        raise DecodeError(f"{name}: not a file kdump knows how to decode")
