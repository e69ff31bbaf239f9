"""Replica sets built from the corpus's real segments, as brokers leave them after trouble.

Every batch written here is a real broker batch. Only the two header fields the checksum does not
cover are ever changed: `baseOffset` (to move batches, as a leader appending them at another offset
would) and `partitionLeaderEpoch` (to say which leader wrote them). So each replica still verifies.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

from corruptions import LogEntry, log_entries

from kdump.formats.checkpoints import encode_leader_epoch_checkpoint


def copy_partition(src: Path, dst: Path) -> Path:
    """A writable copy of a partition directory (the corpus is read-only)."""
    shutil.copytree(src, dst)
    for p in [dst, *dst.iterdir()]:
        p.chmod(p.stat().st_mode | 0o200)
    return dst


def segment_logs(part: Path) -> list[Path]:
    """The live `.log` files, in offset order."""
    return sorted(part.glob("*.log"))


def batches(part: Path) -> list[tuple[Path, LogEntry]]:
    """Every batch of a partition, with its file, in offset order."""
    return [(log, e) for log in segment_logs(part) for e in log_entries(log.read_bytes())]


def cut_at_batch(part: Path, index: int) -> int:
    """Remove the partition's batches from the `index`-th on (as a truncation does); return the new
    log end offset. Later segments go entirely; their indexes are left stale, as a crash leaves them."""
    every = batches(part)
    log, entry = every[index]
    with log.open("r+b") as f:
        f.truncate(entry.position)
    for later in segment_logs(part):
        if later.name > log.name:
            for sibling in part.glob(later.name.split(".")[0] + ".*"):
                sibling.unlink()
    # An uncompressed legacy message has no base offset: its own offset is its only one.
    return entry.base_offset if entry.base_offset is not None else entry.last_offset


def set_epochs(part: Path, from_offset: int, epoch: int) -> None:
    """Stamp `epoch` on every v2 batch at or after `from_offset` (the field is not checksummed)."""
    for log in segment_logs(part):
        data = bytearray(log.read_bytes())
        for e in log_entries(data):
            if e.magic == 2 and e.base_offset is not None and e.base_offset >= from_offset:
                struct.pack_into(">i", data, e.position + 12, epoch)
        log.write_bytes(bytes(data))


def append_foreign(part: Path, source: Path, count: int, epoch: int) -> tuple[int, int, int]:
    """Append `count` real batches of another partition to `part`'s last segment, moved to follow
    its log end offset and stamped with `epoch`: what another leader would have written there.
    Returns (first offset, last offset, records) appended."""
    log = segment_logs(part)[-1]
    entries = log_entries(log.read_bytes())
    next_offset = entries[-1].last_offset + 1 if entries else int(log.name.split(".")[0])
    first = next_offset
    records = 0
    out = bytearray()
    src = [(s, e) for s, e in batches(source) if e.magic == 2][:count]
    assert len(src) == count, f"{source} has fewer than {count} v2 batches"
    for s_log, e in src:
        raw = bytearray(s_log.read_bytes()[e.position : e.end])
        assert e.base_offset is not None
        struct.pack_into(">q", raw, 0, next_offset)
        struct.pack_into(">i", raw, 12, epoch)
        records += struct.unpack_from(">i", raw, 57)[0]
        next_offset += e.last_offset - e.base_offset + 1
        out += raw
    with log.open("ab") as f:
        f.write(out)
    return first, next_offset - 1, records


def write_epochs(part: Path, entries: list[tuple[int, int]]) -> None:
    """Replace the partition's leader-epoch-checkpoint."""
    (part / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint(entries))


def drop_head(part: Path, keep_from: int) -> int:
    """Retention on this replica only: the first segment loses its batches before the
    `keep_from`-th and is renamed to start where they end, as a broker's log start moves on.
    Returns the new log start offset. The segment's indexes go (the broker rebuilds them)."""
    log = segment_logs(part)[0]
    entries = log_entries(log.read_bytes())
    entry = entries[keep_from]
    start = entry.base_offset if entry.base_offset is not None else entry.last_offset
    data = log.read_bytes()[entry.position :]
    for sibling in part.glob(log.name.split(".")[0] + ".*"):
        sibling.unlink()
    (part / f"{start:020d}.log").write_bytes(data)
    return start
