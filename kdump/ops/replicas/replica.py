"""One replica of a partition as `compare` sees it: its batches' identities, damage and state files.

A replica is read batch header by batch header (the shallow scan every command shares); records
are never decoded. Damage is kept apart from the data: the offsets a damaged stretch of the log
would have held are an *uncomparable* range of that replica, and the scanner's findings are
kept, so that `compare` never calls damage a divergence and never calls it agreement either.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kdump.errors import DecodeError, KdumpError
from kdump.findings import Finding, Severity, make_finding
from kdump.formats import checkpoints
from kdump.formats.batch import BatchHeader
from kdump.model.partition import PartitionDir
from kdump.ops.tiered.partitions import TieredContext, broker_log_starts, partition_topic_id, tiering
from kdump.scan.batch_checks import decode_batch_records
from kdump.scan.events import Event, ScanSummary
from kdump.scan.log_scanner import scan_log
from kdump.scan.source import open_buffer, read_small_file

# Findings after which the offsets up to the next readable batch are unknown on this replica. A
# zero-filled tail is not among them: zeros hold no batch, so nothing is hidden there.
LOSS_CODES = frozenset(
    {"crc-mismatch", "partial-trailing-batch", "invalid-batch-length", "unsupported-magic", "skipped-bytes"}
)


@dataclass(frozen=True, slots=True)
class Hole:
    """Offsets a replica could not read: `last_offset` None means up to wherever the log would end."""

    first_offset: int
    last_offset: int | None
    file: str
    reason: str


@dataclass(slots=True)
class Replica:
    """The batches of one replica (checksum-valid ones, in offset order) as parallel columns.

    Columns rather than a tuple per batch: a 135 MB segment of small batches has 70,000 of them.
    """

    path: Path
    label: str
    log_dir: Path | None
    bases: list[int] = field(default_factory=list)
    lasts: list[int] = field(default_factory=list)
    epochs: list[int] = field(default_factory=list)
    crcs: list[int] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    # Some legacy wrapper's messages could not be read (its codec's library is missing here): the
    # record count is unknown, never the count of what could be read.
    records_unknown: bool = False
    producer_ids: list[int] = field(default_factory=list)
    producer_epochs: list[int] = field(default_factory=list)
    base_sequences: list[int] = field(default_factory=list)
    first_timestamps: list[int] = field(default_factory=list)
    max_timestamps: list[int] = field(default_factory=list)
    # bit 0 transactional, bit 1 control
    flags: list[int] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    holes: list[Hole] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    segments: int = 0
    size: int = 0
    checkpoint: tuple[tuple[int, int], ...] | None = None  # leader-epoch-checkpoint entries
    log_start_checkpoint: int | None = None
    first_segment_base: int | None = None
    high_watermark: int | None = None
    recovery_point: int | None = None
    clean_shutdown: bool = False
    unreadable: bool = False
    # The broker's epoch cache, once computed (`kdump.ops.replicas.compare.broker_cache`).
    cache_memo: list[tuple[int, int]] | None = None
    # Tiered storage (its topic's remote.storage.enable): the log start offset stays at the checkpoint,
    # below the first local segment, and the offsets between are in remote storage.
    tiered: bool = False
    # The topic id of its partition.metadata (None when absent or unreadable): replicas of one
    # partition share it; a topic deleted and re-created under the same name has another.
    topic_id: str | None = None

    def __len__(self) -> int:
        return len(self.bases)

    @property
    def log_start_offset(self) -> int:
        """As the broker loads it: the log-start-offset checkpoint, raised to the first segment's base
        unless the partition is tiered."""
        start, _ = broker_log_starts(self.log_start_checkpoint, self.first_segment_base, self.tiered)
        return start if start is not None else 0

    @property
    def local_log_start_offset(self) -> int:
        """Where the local log starts: the log start offset, or a tiered partition's first local segment."""
        _, local = broker_log_starts(self.log_start_checkpoint, self.first_segment_base, self.tiered)
        return local if local is not None else 0

    @property
    def log_end_offset(self) -> int:
        """The offset after the last readable batch (the local log start offset when there is none)."""
        return self.lasts[-1] + 1 if self.lasts else self.local_log_start_offset

    def key(self, i: int) -> tuple[int, int, int, int]:
        """What makes two batches the same batch: offsets, epoch, and the checksum over the rest."""
        return (self.bases[i], self.lasts[i], self.epochs[i], self.crcs[i])

    def keys(self) -> list[tuple[int, int, int, int]]:
        """`key` of every batch, built in one pass."""
        return list(zip(self.bases, self.lasts, self.epochs, self.crcs, strict=True))

    def epoch_starts(self) -> list[tuple[int, int]]:
        """(epoch, first offset) each time the batches' leader epoch rises, as recovery assigns them."""
        out: list[tuple[int, int]] = []
        latest = -1
        for base, epoch in zip(self.bases, self.epochs, strict=True):
            if epoch > latest:
                out.append((epoch, base))
                latest = epoch
        return out


def _add_all(rep: Replica, headers: list[BatchHeader], file: str) -> None:
    """Append a segment's batches to the columns: one transposition, not twelve appends a batch."""
    if not headers:
        return
    cols = list(zip(*headers, strict=True))
    f = BatchHeader._fields
    lasts = cols[f.index("last_offset")]
    bases = cols[f.index("base_offset")]
    if None in bases:  # legacy entries: the base offset needs decompression; the last stands in
        bases = tuple(b if b is not None else last for b, last in zip(bases, lasts, strict=True))
    counts = cols[f.index("count")]
    if None in counts:
        counts = tuple(1 if c is None else c for c in counts)
    rep.bases += bases
    rep.lasts += lasts
    rep.epochs += cols[f.index("partition_leader_epoch")]
    rep.crcs += cols[f.index("crc")]
    rep.counts += counts
    rep.producer_ids += cols[f.index("producer_id")]
    rep.producer_epochs += cols[f.index("producer_epoch")]
    rep.base_sequences += cols[f.index("base_sequence")]
    rep.first_timestamps += cols[f.index("base_timestamp")]
    rep.max_timestamps += cols[f.index("max_timestamp")]
    rep.flags += [
        int(t) | (int(c) << 1)
        for t, c in zip(cols[f.index("is_transactional")], cols[f.index("is_control")], strict=True)
    ]
    rep.files += [file] * len(headers)


def load_replica(
    part: PartitionDir, label: str | None = None, tiered: TieredContext | None = None
) -> Replica:
    """Read a replica's batch headers, damage and state files. Never raises for bad bytes.

    `tiered`: where its topic's config is read when its log-start checkpoint is below its first segment
    (default: the metadata log of its log dir)."""
    log_dir = part.path.resolve().parent
    rep = Replica(part.path, label or str(part.path), log_dir)
    rep.topic_id = partition_topic_id(part)
    _read_log_dir_state(rep, part)
    _read_checkpoint(rep, part)
    if part.segments:
        rep.first_segment_base = part.segments[0].base_offset
        below = rep.log_start_checkpoint is not None and rep.log_start_checkpoint < rep.first_segment_base
        if below:
            ctx = tiered if tiered is not None else TieredContext()
            rep.tiered = tiering(part, log_dir, ctx.configs).tiered is True
    for n, seg in enumerate(part.segments):
        assert seg.log is not None
        file = str(seg.log)
        next_base = part.segments[n + 1].base_offset if n + 1 < len(part.segments) else None
        rep.segments += 1
        hole_from: int | None = None
        hole_reason = ""
        prev_last: int | None = None
        headers: list[BatchHeader] = []
        try:
            for ev, buf in _scan_with_buffer(seg.log, file, seg.base_offset):
                if isinstance(ev, BatchHeader):
                    if not ev.crc_ok:
                        continue
                    if ev.count is None and ev.magic < 2 and ev.compression:
                        # A legacy wrapper: its records are the messages inside it, counted as
                        # verify counts them (the scanner decoded it too, for its first offset).
                        inner, trouble = decode_batch_records(buf, ev, file)
                        ev = ev._replace(count=len(inner))
                        if any(f.code == "codec-unavailable" for f in trouble):
                            rep.records_unknown = True
                    if hole_from is not None:
                        base = ev.base_offset if ev.base_offset is not None else ev.last_offset
                        if base > hole_from:
                            rep.holes.append(Hole(hole_from, base - 1, file, hole_reason))
                        hole_from = None
                    headers.append(ev)
                    prev_last = ev.last_offset
                elif isinstance(ev, Finding):
                    rep.findings.append(ev)
                    if ev.code in LOSS_CODES and hole_from is None:
                        hole_from = seg.base_offset if prev_last is None else prev_last + 1
                        hole_reason = ev.code
                elif isinstance(ev, ScanSummary):
                    rep.size += ev.size
        except KdumpError as exc:
            _add_all(rep, headers, file)
            headers = []
            rep.findings.append(make_finding("unreadable-file", file, str(exc)))
            rep.unreadable = True
            hole_from = seg.base_offset if prev_last is None else prev_last + 1
            hole_reason = "unreadable-file"
        _add_all(rep, headers, file)
        if hole_from is not None:
            end = None if next_base is None else next_base - 1
            if end is None or end >= hole_from:
                rep.holes.append(Hole(hole_from, end, file, hole_reason))
    _sort_if_needed(rep)
    return rep


def _scan_with_buffer(log: Path, file: str, base_offset: int) -> Iterator[tuple[Event, memoryview]]:
    """The segment's shallow scan events, each with the buffer it was read from."""
    with open_buffer(log) as buf:
        for ev in scan_log(buf, file=file, base_offset=base_offset):
            yield ev, buf


def _sort_if_needed(rep: Replica) -> None:
    """Put batches in offset order (a damaged log may not be; the scanner has said so already)."""
    if all(a < b for a, b in zip(rep.bases, rep.bases[1:], strict=False)):
        return
    order = sorted(range(len(rep.bases)), key=lambda i: (rep.bases[i], rep.lasts[i]))
    for name in (
        "bases",
        "lasts",
        "epochs",
        "crcs",
        "counts",
        "producer_ids",
        "producer_epochs",
        "base_sequences",
        "first_timestamps",
        "max_timestamps",
        "flags",
        "files",
    ):
        column = getattr(rep, name)
        setattr(rep, name, [column[i] for i in order])


def _read_checkpoint(rep: Replica, part: PartitionDir) -> None:
    path = part.leader_epoch_checkpoint
    if path is None:
        return
    try:
        decoded = checkpoints.decode_leader_epoch_checkpoint(read_small_file(path))
    except (DecodeError, ValueError) as exc:
        rep.findings.append(make_finding("checkpoint-corrupt", str(path), str(exc)))
        return
    except KdumpError as exc:
        rep.findings.append(make_finding("unreadable-file", str(path), str(exc)))
        rep.unreadable = True
        return
    rep.checkpoint = tuple((e.epoch, e.start_offset) for e in decoded.entries)


def _read_log_dir_state(rep: Replica, part: PartitionDir) -> None:
    """The log start offset and high watermark the log dir's checkpoints hold for this partition."""
    if part.topic is None or part.partition is None or rep.log_dir is None:
        return
    rep.clean_shutdown = (rep.log_dir / ".kafka_cleanshutdown").is_file()
    for name in (
        "log-start-offset-checkpoint",
        "replication-offset-checkpoint",
        "recovery-point-offset-checkpoint",
    ):
        path = rep.log_dir / name
        if not path.is_file():
            continue
        try:
            decoded = checkpoints.decode_offset_checkpoint(read_small_file(path))
        except (KdumpError, ValueError):
            # Not this partition's file to judge: `kdump verify` of the log dir reports it.
            continue
        for e in decoded.entries:
            if e.topic == part.topic and e.partition == part.partition:
                if name == "log-start-offset-checkpoint":
                    rep.log_start_checkpoint = e.offset
                elif name == "replication-offset-checkpoint":
                    rep.high_watermark = e.offset
                else:
                    rep.recovery_point = e.offset


def damage_count(rep: Replica) -> int:
    """Error findings of the replica (what makes verify fail)."""
    return sum(1 for f in rep.findings if f.severity >= Severity.ERROR)
