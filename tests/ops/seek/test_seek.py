"""`seek_partition` against a brute-force oracle: the broker's ListOffsets rules over every record.

The oracle reads every record of every segment and applies `UnifiedLog.fetchOffsetByTimestamp`
literally, with no index: the first segment (offset order) whose largest timestamp (the largest
batch maxTimestamp, or the `.log` file's modification time when no batch carries one) is >= t, and
in that segment only, the first record in offset order of a batch whose maxTimestamp >= t with
timestamp >= t and offset >= the log start offset. `seek_partition` must give the same answer with
the indexes, intact or damaged, and report the damage it met.

Synthetic partitions are built here from `build_v2_batch`/`build_legacy_entry` with indexes laid
out by the broker's recovery rule, so everything is proved without the corpus; the real-broker
corpus (`../shared/corpus`) adds every partition Kafka 3.8.0 wrote, skipped when it is absent.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from corpus import CORPUS_ROOT

from kdump.formats.batch import BatchHeader
from kdump.formats.constants import Codec, ControlType
from kdump.formats.control import encode_control_key, encode_end_txn_marker
from kdump.formats.offset_index import (
    encode_offset_index,
    offset_index_entry_at,
    offset_index_entry_count,
)
from kdump.formats.records import NewRecord, Record, build_legacy_entry, build_v2_batch
from kdump.formats.time_index import encode_time_index, time_index_entry_at, time_index_entry_count
from kdump.model.partition import PartitionDir
from kdump.ops.seek.by_time import SeekResult, load_log_dir_checkpoints, seek_partition
from kdump.scan.events import ScanMode
from kdump.scan.log_scanner import scan_log
from kdump.scan.source import open_buffer

CORPUS = CORPUS_ROOT  # ../shared/corpus beside the checkout, or $KDUMP_CORPUS
CORPUS_DIRS = ("kafka-3.8.0", "kafka-3.8.0-zk-legacy", "kafka-3.8.0-running-copy")
NO_CORPUS = f"the real-broker corpus is not at {CORPUS} (it sits beside the checkout as ../shared/corpus)"

T0 = 1_700_000_000_000
INDEX_CODES = ("index-", "time-index-")


# --- building partitions ------------------------------------------------------------------------


@dataclass
class Batch:
    """A batch to write: v2 (default), or legacy magic 0/1 (one entry per record uncompressed)."""

    timestamps: Sequence[int]
    magic: int = 2
    codec: int = Codec.NONE
    log_append_time: int | None = None
    control: bool = False


@dataclass
class SegmentSpec:
    batches: list[Batch] = field(default_factory=list)
    # The final time index entry a closed segment (or a clean shutdown) writes.
    final_entry: bool = True
    # segment.index.bytes of an active segment: both index files preallocated to it (rounded down to
    # their entry size) and zero after the real entries, as on a running broker. 0: trimmed.
    prealloc_bytes: int = 0
    # Offsets skipped before this segment (records the cleaner removed).
    base_gap: int = 0


def _entries(base: int, b: Batch) -> list[tuple[bytes, int, int]]:
    """The log entries of a batch: (bytes, last offset, maxTimestamp)."""
    recs = [NewRecord(f"k{base + i}".encode(), b"v" * (i % 7), ts) for i, ts in enumerate(b.timestamps)]
    if b.control:
        recs = [NewRecord(encode_control_key(ControlType.COMMIT), encode_end_txn_marker(0), b.timestamps[0])]
        data = build_v2_batch(
            base,
            recs,
            control=True,
            transactional=True,
            producer_id=7,
            producer_epoch=0,
            partition_leader_epoch=3,
        )
        return [(data, base, b.timestamps[0])]
    if b.magic == 2:
        data = build_v2_batch(
            base, recs, codec=b.codec, log_append_time=b.log_append_time, partition_leader_epoch=3
        )
        max_ts = b.log_append_time if b.log_append_time is not None else max(b.timestamps)
        return [(data, base + len(recs) - 1, max_ts)]
    lat = b.log_append_time if b.magic == 1 else None
    data = build_legacy_entry(base, recs, magic=b.magic, codec=b.codec, log_append_time=lat)
    if b.codec != Codec.NONE:
        max_ts = -1 if b.magic == 0 else (lat if lat is not None else max(b.timestamps))
        return [(data, base + len(recs) - 1, max_ts)]
    out, pos = [], 0
    for i, r in enumerate(recs):
        size = 12 + struct.unpack_from(">i", data, pos + 8)[0]
        ts = -1 if b.magic == 0 else (lat if lat is not None else r.timestamp)
        out.append((data[pos : pos + size], base + i, ts))
        pos += size
    return out


def write_partition(
    path: Path, specs: Sequence[SegmentSpec], *, interval_bytes: int = 300, first_offset: int = 0
) -> PartitionDir:
    """Write segments with `.index`/`.timeindex` built by `LogSegment.recover`'s rule."""
    path.mkdir(parents=True, exist_ok=True)
    offset = first_offset
    for spec in specs:
        offset += spec.base_gap
        base = offset
        log = bytearray()
        offsets: list[tuple[int, int]] = []
        times: list[tuple[int, int]] = []
        last_index_entry = 0
        max_ts, offset_of_max = -1, base

        def maybe_append(ts: int, off: int, times: list[tuple[int, int]] = times) -> None:
            # TimeIndex.maybeAppend: only a larger timestamp makes an entry.
            if ts > (times[-1][0] if times else -1):
                times.append((ts, off))

        for b in spec.batches:
            for data, last, bmax in _entries(offset, b):
                if bmax > max_ts:
                    max_ts, offset_of_max = bmax, last
                if len(log) - last_index_entry > interval_bytes:
                    offsets.append((last, len(log)))
                    maybe_append(max_ts, offset_of_max)
                    last_index_entry = len(log)
                log += data
                offset = last + 1
        if spec.final_entry:
            maybe_append(max_ts, offset_of_max)
        name = f"{base:020d}"
        (path / f"{name}.log").write_bytes(bytes(log))
        index = encode_offset_index(offsets, base)
        tindex = encode_time_index(times, base)
        if spec.prealloc_bytes:
            m = spec.prealloc_bytes
            index += bytes(m - m % 8 - len(index))
            tindex += bytes(m - m % 12 - len(tindex))
        (path / f"{name}.index").write_bytes(index)
        (path / f"{name}.timeindex").write_bytes(tindex)
    return PartitionDir.load(path)


def v2(*ts: int, **kw: object) -> Batch:
    return Batch(list(ts), **kw)  # type: ignore[arg-type]


def synthetic_specs() -> list[SegmentSpec]:
    """Six segments: rising times, out-of-order records and batches, LogAppendTime, compression,
    a control batch, equal timestamps, and an active last segment with preallocated indexes whose
    newest batches are not indexed yet."""
    rng = random.Random(7)
    specs: list[SegmentSpec] = []
    ts = T0
    # 0: rising, several records per batch, values big enough for many index entries.
    seg = SegmentSpec()
    for _ in range(25):
        seg.batches.append(v2(*(ts + i * 10 for i in range(4))))
        ts += 100
    specs.append(seg)
    # 1: out of order inside batches and across batches (old timestamps in later batches).
    seg = SegmentSpec()
    for i in range(25):
        batch = [ts + rng.randint(-500, 500) for _ in range(5)]
        if i % 6 == 3:
            batch = [T0 - 86_400_000 + i for _ in range(3)]  # a day old, like `timestamps-0`
        seg.batches.append(v2(*batch, codec=Codec.GZIP if i % 2 else Codec.NONE))
        ts += 100
    specs.append(seg)
    # 2: LogAppendTime batches (every record carries the batch's time), with a control batch.
    seg = SegmentSpec()
    for i in range(20):
        seg.batches.append(v2(*(ts - 5000 + j for j in range(6)), log_append_time=ts, codec=Codec.LZ4))
        if i == 10:
            seg.batches.append(Batch([ts + 1], control=True))
        ts += 100
    specs.append(seg)
    # 3: equal timestamps across batches, and a drop back in time.
    seg = SegmentSpec()
    for i in range(20):
        seg.batches.append(v2(ts, ts, ts + 1))
        if i % 5 != 4:
            ts += 50
        if i == 12:
            ts -= 3000
    specs.append(seg)
    # 4: big batches (few records, long values would be nicer; many records do the same job).
    seg = SegmentSpec()
    for _ in range(15):
        seg.batches.append(v2(*(ts + j for j in range(12)), codec=Codec.SNAPPY))
        ts += 200
    specs.append(seg)
    # 5: the active segment of a running broker: no final entry, preallocated zero tails.
    seg = SegmentSpec(final_entry=False, prealloc_bytes=1003)
    for _ in range(18):
        seg.batches.append(v2(*(ts + j * 3 for j in range(3))))
        ts += 100
    specs.append(seg)
    return specs


def legacy_specs() -> list[SegmentSpec]:
    """v0 segments (no timestamps), then v1 (CreateTime and LogAppendTime), then v2."""
    return [
        SegmentSpec([Batch([-1] * 3, magic=0) for _ in range(10)]),
        SegmentSpec([Batch([-1] * 4, magic=0, codec=Codec.GZIP) for _ in range(8)]),
        SegmentSpec(
            [Batch([T0 + i * 10 + j for j in range(3)], magic=1) for i in range(8)]
            + [Batch([T0 + 200 + i * 10 + j for j in range(3)], magic=1, codec=Codec.GZIP) for i in range(8)]
        ),
        SegmentSpec(
            [
                Batch([T0 + 900 - j for j in range(3)], magic=1, log_append_time=T0 + 1000 + i)
                for i in range(6)
            ]
        ),
        SegmentSpec([v2(*(T0 + 2000 + i * 10 + j for j in range(4))) for i in range(10)]),
    ]


# --- the oracle ---------------------------------------------------------------------------------


@dataclass
class OracleSegment:
    base: int
    log: Path
    mtime_ms: int
    max_timestamp: int
    batches: list[tuple[BatchHeader, list[Record]]]


def load_oracle(part: PartitionDir) -> list[OracleSegment]:
    """Every batch and record of the partition's valid log, read without any index."""
    out = []
    for seg in part.segments:
        assert seg.log is not None
        batches: list[tuple[BatchHeader, list[Record]]] = []
        with open_buffer(seg.log) as buf:
            for ev in scan_log(buf, base_offset=seg.base_offset, deep=True, mode=ScanMode.RECOVERY):
                if isinstance(ev, BatchHeader):
                    batches.append((ev, []))
                elif isinstance(ev, Record):
                    batches[-1][1].append(ev)
        max_ts = max((h.max_timestamp for h, _ in batches), default=-1)
        out.append(
            OracleSegment(seg.base_offset, seg.log, seg.log.stat().st_mtime_ns // 1_000_000, max_ts, batches)
        )
    return out


def oracle_time(segs: Sequence[OracleSegment], t: int, lso: int) -> tuple[int, int] | None:
    for s in segs:
        largest = s.max_timestamp if s.max_timestamp >= 0 else s.mtime_ms
        if largest < t:
            continue
        for h, recs in s.batches:
            if h.max_timestamp >= t:
                for r in recs:
                    if r.timestamp >= t and r.offset >= lso:
                        return r.offset, r.timestamp
        return None  # the broker searches one segment only
    return None


def oracle_max_timestamp(segs: Sequence[OracleSegment]) -> tuple[int, int] | None:
    if not segs:
        return None
    best = max(s.max_timestamp for s in segs)
    if best < 0:
        return None
    seg = next(s for s in segs if s.max_timestamp == best)
    _h, recs = next((h, r) for h, r in seg.batches if h.max_timestamp == best)
    return next(((r.offset, r.timestamp) for r in recs if r.timestamp == best), None)


def oracle_latest(segs: Sequence[OracleSegment]) -> int | None:
    if not segs:
        return None
    last = segs[-1]
    return last.batches[-1][0].last_offset + 1 if last.batches else last.base


def oracle_earliest(part: PartitionDir, checkpoint: int | None) -> int | None:
    if not part.segments:
        return None
    first = part.segments[0].base_offset
    return first if checkpoint is None else max(first, checkpoint)


def probe_times(segs: Sequence[OracleSegment], *, limit: int = 80, seed: int = 1) -> list[int]:
    """Times before, at, between and after the records, around out-of-order ones and the mtimes."""
    stamps = sorted({r.timestamp for s in segs for _h, recs in s.batches for r in recs if r.timestamp >= 0})
    picks: set[int] = {0, 1}
    if stamps:
        sample = stamps if len(stamps) <= limit else random.Random(seed).sample(stamps, limit)
        sample += stamps[:3] + stamps[-3:]
        # Out-of-order records: timestamps below the largest one before them.
        running, ooo = -1, []
        for s in segs:
            for _h, recs in s.batches:
                for r in recs:
                    if r.timestamp < running:
                        ooo.append(r.timestamp)
                    running = max(running, r.timestamp)
        sample += ooo[:: max(1, len(ooo) // 20)]
        for ts in sample:
            picks.update((ts - 1, ts, ts + 1))
        picks.update((stamps[-1] + 1, stamps[-1] + 86_400_000))
    for s in segs:
        picks.update((s.mtime_ms - 1, s.mtime_ms, s.mtime_ms + 1))
    return sorted(p for p in picks if p >= 0)


def assert_matches_oracle(
    part: PartitionDir,
    times: Iterable[int],
    *,
    log_dir: Path | None = None,
    checkpoint_lso: int | None = None,
    expect_clean: bool = True,
) -> list[SeekResult]:
    segs = load_oracle(part)
    lso = oracle_earliest(part, checkpoint_lso)
    results = []
    for t in times:
        got = seek_partition(part, t, log_dir_path=log_dir)
        want = None if lso is None else oracle_time(segs, t, lso)
        assert (got.offset, got.timestamp) == (want if want else (None, None)), (part.path, t, got)
        if expect_clean:
            bad = [f for f in got.findings if f.code != "index-preallocated-tail"]
            assert not bad, (t, bad)
            assert not got.scan_fallback
        results.append(got)
    return results


# --- synthetic partitions -----------------------------------------------------------------------


@pytest.fixture
def synthetic(tmp_path: Path) -> PartitionDir:
    return write_partition(tmp_path / "events-0", synthetic_specs())


def test_synthetic_partition_matches_brute_force(synthetic: PartitionDir) -> None:
    segs = load_oracle(synthetic)
    times = probe_times(segs, limit=400)
    results = assert_matches_oracle(synthetic, times)
    assert any(r.offset is None for r in results)
    assert sum(r.offset is not None for r in results) > 300
    assert all(r.used_index for r in results if r.offset is not None)


def test_log_append_time_records_carry_the_batch_time(synthetic: PartitionDir) -> None:
    segs = load_oracle(synthetic)
    h, recs = segs[2].batches[8]
    assert h.timestamp_type == 1
    t = h.max_timestamp - 50
    # The records' CreateTimes are 5 s before t, but with LogAppendTime each carries the batch's.
    assert all(r.timestamp == h.max_timestamp for r in recs)
    r = seek_partition(synthetic, t)
    assert (r.offset, r.timestamp) == (recs[0].offset, h.max_timestamp)
    assert (r.segment, r.position) == (str(synthetic.segments[2].log), h.position)
    assert (r.offset, r.timestamp) == oracle_time(segs, t, 0)


def test_first_record_in_offset_order_not_the_closest_time(synthetic: PartitionDir) -> None:
    segs = load_oracle(synthetic)
    # In segment 1 a day-old batch sits between recent ones: a time just above it must still
    # answer with the first record in offset order at or after the time, not the day-old one.
    old = next(h for h, _ in segs[1].batches if h.max_timestamp < T0)
    r = seek_partition(synthetic, old.max_timestamp)
    assert r.offset is not None
    assert r.offset <= old.last_offset
    assert (r.offset, r.timestamp) == oracle_time(segs, old.max_timestamp, 0)


def test_log_start_offset_from_the_checkpoint(tmp_path: Path) -> None:
    log_dir = tmp_path / "data"
    part = write_partition(log_dir / "events-0", synthetic_specs())
    lso = part.segments[1].base_offset + 17
    (log_dir / "log-start-offset-checkpoint").write_text(f"0\n2\nother 0 5\nevents 0 {lso}\n")
    (log_dir / "replication-offset-checkpoint").write_text("0\n1\nevents 0 100\n")
    segs = load_oracle(part)
    times = probe_times(segs, limit=150)
    assert_matches_oracle(part, times, log_dir=log_dir, checkpoint_lso=lso)
    early = seek_partition(part, T0, log_dir_path=log_dir)
    assert early.offset is None  # segment 0 is chosen, and all of it is below the log start offset
    assert early.log_start_offset == lso
    e = seek_partition(part, "earliest", log_dir_path=log_dir)
    assert (e.offset, e.segment) == (lso, str(part.segments[1].log))
    assert e.timestamp is None
    late = seek_partition(part, "latest", log_dir_path=log_dir)
    assert late.high_watermark == 100
    assert late.offset == late.log_end_offset == oracle_latest(segs)
    # Offsets past the checkpointed high watermark are flagged: a broker hides them from consumers.
    r = seek_partition(part, segs[3].max_timestamp, log_dir_path=log_dir)
    assert r.offset is not None
    assert r.offset >= 100
    assert any("high watermark" in n for n in r.notes)


def test_checkpoint_below_the_first_segment_is_raised_to_it(tmp_path: Path) -> None:
    log_dir = tmp_path / "data"
    part = write_partition(log_dir / "events-0", synthetic_specs()[:2], first_offset=500)
    (log_dir / "log-start-offset-checkpoint").write_text("0\n1\nevents 0 3\n")
    assert seek_partition(part, "earliest", log_dir_path=log_dir).offset == 500


def test_corrupt_checkpoint_is_a_finding(tmp_path: Path) -> None:
    log_dir = tmp_path / "data"
    part = write_partition(log_dir / "events-0", synthetic_specs()[:1])
    (log_dir / "log-start-offset-checkpoint").write_text("0\n3\nevents 0\n")
    r = seek_partition(part, "earliest", log_dir_path=log_dir)
    assert r.offset == 0
    assert [f.code for f in r.findings] == ["checkpoint-corrupt"]
    assert load_log_dir_checkpoints(None).log_start_offsets == {}


def test_special_targets_on_synthetic(synthetic: PartitionDir) -> None:
    segs = load_oracle(synthetic)
    assert seek_partition(synthetic, "earliest").offset == 0
    latest = seek_partition(synthetic, "latest")
    assert latest.offset == oracle_latest(segs)
    assert latest.position == synthetic.segments[-1].log.stat().st_size  # type: ignore[union-attr]
    mx = seek_partition(synthetic, "max-timestamp")
    assert (mx.offset, mx.timestamp) == oracle_max_timestamp(segs)
    assert mx.used_index


def test_active_segment_newest_batches_are_not_indexed_yet(synthetic: PartitionDir) -> None:
    segs = load_oracle(synthetic)
    last = segs[-1]
    newest = last.batches[-1][0].max_timestamp
    # The time index of the active segment stops before its newest batches; the broker's
    # running maxTimestampSoFar still covers them, and so does kdump.
    tindex = synthetic.segments[-1].timeindex
    assert tindex is not None
    with open_buffer(tindex) as buf:
        n = time_index_entry_count(buf)
        assert time_index_entry_at(buf, n - 1, last.base).timestamp < newest
    r = seek_partition(synthetic, newest)
    assert (r.offset, r.timestamp) == oracle_time(segs, newest, 0)
    assert [f.code for f in r.findings] == ["index-preallocated-tail"] * 2


def test_legacy_v0_then_v1_partition(tmp_path: Path) -> None:
    part = write_partition(tmp_path / "legacy-0", legacy_specs())
    segs = load_oracle(part)
    # The v0 segments have no timestamps: their mtime decides, as on a broker. Put them in the past
    # so the v1 and v2 segments are searched, then in the future so they swallow every query.
    for mtime_s in (T0 // 1000 - 1_000_000, 4_000_000_000):
        for s in part.segments[:2]:
            assert s.log is not None
            os.utime(s.log, (mtime_s, mtime_s))
        segs = load_oracle(part)
        assert_matches_oracle(part, probe_times(segs, limit=200))
    r = seek_partition(part, T0)
    assert r.offset is None
    assert r.used_mtime
    assert any("v0" in n for n in r.notes)
    mx = seek_partition(part, "max-timestamp")
    assert (mx.offset, mx.timestamp) == oracle_max_timestamp(segs)


def test_many_tiny_messages_after_the_last_index_entry(tmp_path: Path) -> None:
    # ~38-byte v1 messages: 102 of them follow the last entry of a 4096-byte index interval.
    specs = [SegmentSpec([Batch([T0 + s * 1000 + i], magic=1) for i in range(430)]) for s in range(3)]
    part = write_partition(tmp_path / "tiny-0", specs, interval_bytes=4096)
    index = part.segments[0].index
    assert index is not None
    with open_buffer(index) as buf:
        last_indexed = offset_index_entry_at(buf, offset_index_entry_count(buf) - 1, 0).offset
    assert 429 - last_indexed > 100
    segs = load_oracle(part)
    assert_matches_oracle(part, probe_times(segs, limit=120))
    latest = seek_partition(part, "latest")
    assert (latest.offset, latest.findings) == (oracle_latest(segs), ())


def test_v0_only_partition_says_there_are_no_timestamps(tmp_path: Path) -> None:
    part = write_partition(tmp_path / "old-0", legacy_specs()[:2])
    for target in (0, T0, "max-timestamp"):
        r = seek_partition(part, target)
        assert r.offset is None
        assert any("v0" in n and "no timestamps" in n for n in r.notes), r.notes
    assert seek_partition(part, "latest").offset == oracle_latest(load_oracle(part))


def test_empty_segment_mtime_chooses_it_and_nothing_else_is_searched(tmp_path: Path) -> None:
    specs = synthetic_specs()[:3]
    specs.insert(1, SegmentSpec([]))
    specs[2].base_gap = 50
    part = write_partition(tmp_path / "cleaned-0", specs)
    empty = part.segments[1]
    assert empty.log is not None
    assert empty.log.stat().st_size == 0
    later = load_oracle(part)[2].max_timestamp
    os.utime(empty.log, ((later + 10_000) // 1000, (later + 10_000) // 1000))
    r = seek_partition(part, later)
    assert r.offset is None
    assert r.used_mtime
    assert r.segment == str(empty.log)
    assert any("modification time" in n for n in r.notes)
    assert_matches_oracle(part, probe_times(load_oracle(part), limit=100))


def test_no_segments(tmp_path: Path) -> None:
    (tmp_path / "t-0").mkdir()
    part = PartitionDir.load(tmp_path / "t-0")
    for target in (5, "earliest", "latest", "max-timestamp"):
        r = seek_partition(part, target)
        assert r.offset is None
        assert r.notes


def test_bad_targets(synthetic: PartitionDir) -> None:
    with pytest.raises(ValueError, match=">= 0"):
        seek_partition(synthetic, -5)
    with pytest.raises(ValueError, match="unknown"):
        seek_partition(synthetic, "oldest")  # type: ignore[arg-type]


def test_to_row(synthetic: PartitionDir) -> None:
    r = seek_partition(synthetic, T0 + 505, label="events-0")
    row = r.to_row()
    assert row["type"] == "seek"
    assert row["partition"] == "events-0"
    assert row["target"] == "timestamp"
    assert row["target_timestamp"] == T0 + 505
    assert (row["offset"], row["timestamp"]) == (r.offset, r.timestamp)
    assert row["segment"] == str(synthetic.segments[0].log)
    assert isinstance(row["position"], int)
    assert (row["used_index"], row["scan_fallback"], row["used_mtime"]) == (True, False, False)
    assert row["leader_epoch"] == 3
    assert set(row["cost"]) == {"segments_examined", "index_entries_read", "batches_read"}
    none = seek_partition(synthetic, T0 + 10**12).to_row()
    assert (none["offset"], none["timestamp"], none["position"]) == (None, None, None)


# --- damaged indexes ----------------------------------------------------------------------------


def _rewrite(path: Path, data: bytes) -> None:
    path.chmod(0o644)
    path.write_bytes(data)


def _slots(path: Path, size: int) -> list[bytes]:
    data = path.read_bytes()
    return [data[i : i + size] for i in range(0, len(data) - len(data) % size, size)]


def shuffle_time_index(path: Path, seed: int) -> None:
    slots = _slots(path, 12)
    rng = random.Random(seed)
    original = list(slots)
    while slots == original:
        rng.shuffle(slots)
    _rewrite(path, b"".join(slots))


def reverse_index(path: Path, size: int) -> None:
    _rewrite(path, b"".join(reversed(_slots(path, size))))


def shift_positions(path: Path, delta: int) -> None:
    out = bytearray()
    for slot in _slots(path, 8):
        rel, pos = struct.unpack(">ii", slot)
        out += struct.pack(">ii", rel, pos + delta)
    _rewrite(path, bytes(out))


def shift_timestamps(path: Path, delta: int) -> None:
    out = bytearray()
    for slot in _slots(path, 12):
        ts, rel = struct.unpack(">qi", slot)
        out += struct.pack(">qi", ts + delta, rel)
    _rewrite(path, bytes(out))


def truncate_log(path: Path, keep_batches: int) -> None:
    """Drop the log's last batches but keep the indexes: indexes stale after a truncation."""
    with open_buffer(path) as buf:
        ends = [h.position + h.size for h in scan_log(buf) if isinstance(h, BatchHeader)]
    _rewrite(path, path.read_bytes()[: ends[keep_batches - 1]])


DAMAGES = {
    # name: (how, finding codes of which at least one must be reported)
    "time-index-shuffled": (lambda seg: shuffle_time_index(seg.timeindex, 3), {"time-index-out-of-order"}),
    "time-index-reversed": (lambda seg: reverse_index(seg.timeindex, 12), {"time-index-out-of-order"}),
    "offset-index-reversed": (lambda seg: reverse_index(seg.index, 8), {"index-not-monotonic"}),
    "offset-index-shifted": (lambda seg: shift_positions(seg.index, 5), {"index-offset-mismatch"}),
    "offset-index-past-log": (lambda seg: shift_positions(seg.index, 10**6), {"index-entry-beyond-log"}),
    "time-index-stale-times": (
        lambda seg: shift_timestamps(seg.timeindex, -40),
        {"time-index-mismatch", "time-index-out-of-order"},
    ),
    "log-truncated-indexes-stale": (
        lambda seg: truncate_log(seg.log, 6),
        {"time-index-offset-not-found", "index-entry-beyond-log", "time-index-mismatch"},
    ),
    "time-index-missing": (lambda seg: seg.timeindex.unlink(), {"time-index-missing"}),
    "offset-index-missing": (lambda seg: seg.index.unlink(), {"index-missing"}),
    "time-index-emptied": (lambda seg: _rewrite(seg.timeindex, b""), {"time-index-mismatch"}),
    "time-index-torn": (
        lambda seg: _rewrite(seg.timeindex, seg.timeindex.read_bytes()[:-5]),
        {"index-size-invalid"},
    ),
    "offset-index-torn": (
        lambda seg: _rewrite(seg.index, seg.index.read_bytes()[:-3]),
        {"index-size-invalid"},
    ),
}


WHOLE_INDEX_UNUSABLE = {
    "time-index-shuffled",
    "time-index-reversed",
    "offset-index-reversed",
    "time-index-missing",
    "offset-index-missing",
    "time-index-torn",
    "offset-index-torn",
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
@pytest.mark.parametrize("segment", [1, 3])
def test_damaged_index_still_answers_right_with_findings(tmp_path: Path, damage: str, segment: int) -> None:
    part = write_partition(tmp_path / "events-0", synthetic_specs())
    how, codes = DAMAGES[damage]
    how(part.segments[segment])
    part = PartitionDir.load(part.path)
    segs = load_oracle(part)
    times = probe_times([segs[segment]], limit=60)
    results = assert_matches_oracle(part, times, expect_clean=False)
    # Every query that reached the damaged segment reported the damage and fell back to scanning.
    reached = [r for r in results if r.segments_examined > segment]
    assert reached
    for r in reached:
        found = {f.code for f in r.findings}
        assert found & codes, (r.target_timestamp, found)
        assert r.scan_fallback
    # Where the whole index is unusable, an answer from that segment cannot claim to use it.
    if damage in WHOLE_INDEX_UNUSABLE:
        damaged_log = str(part.segments[segment].log)
        answered_there = [r for r in results if r.segment == damaged_log]
        assert answered_there
        assert not any(r.used_index for r in answered_there)
    mx = seek_partition(part, "max-timestamp")
    assert (mx.offset, mx.timestamp) == oracle_max_timestamp(segs)
    assert seek_partition(part, "latest").offset == oracle_latest(segs)
    assert seek_partition(part, "earliest").offset == 0


@pytest.mark.parametrize("damage", ["offset-index-shifted", "offset-index-reversed", "time-index-missing"])
def test_damaged_active_segment_latest_and_max(tmp_path: Path, damage: str) -> None:
    part = write_partition(tmp_path / "events-0", synthetic_specs())
    DAMAGES[damage][0](part.segments[-1])
    part = PartitionDir.load(part.path)
    segs = load_oracle(part)
    assert seek_partition(part, "latest").offset == oracle_latest(segs)
    mx = seek_partition(part, "max-timestamp")
    assert (mx.offset, mx.timestamp) == oracle_max_timestamp(segs)
    assert mx.scan_fallback
    assert_matches_oracle(part, probe_times([segs[-1]], limit=40), expect_clean=False)


def test_time_entry_naming_a_later_batch_with_the_same_time_is_caught(tmp_path: Path) -> None:
    # Two batches reach the same maxTimestamp; the broker's entry names the first. An entry naming
    # the second (a flipped offset) carries a real timestamp, but starting there would skip the first.
    specs = [SegmentSpec([v2(T0, T0 + 5), v2(T0 + 1, T0 + 5), v2(T0 + 6, T0 + 7)]), SegmentSpec([v2(T0 + 9)])]
    part = write_partition(tmp_path / "same-0", specs, interval_bytes=10**6)
    seg = part.segments[0]
    assert seg.timeindex is not None
    _rewrite(seg.timeindex, encode_time_index([(T0 + 5, 3), (T0 + 7, 5)], 0))
    r = seek_partition(part, T0 + 5)
    assert (r.offset, r.timestamp) == (1, T0 + 5)
    assert "time-index-mismatch" in {f.code for f in r.findings}
    assert r.scan_fallback


def test_random_index_garbage_never_raises_and_never_misleads(tmp_path: Path) -> None:
    clean = write_partition(tmp_path / "clean" / "events-0", synthetic_specs())
    rng = random.Random(2024)
    for round_no in range(30):
        part_dir = tmp_path / f"r{round_no}" / "events-0"
        shutil.copytree(clean.path, part_dir)
        part = PartitionDir.load(part_dir)
        for _ in range(rng.randint(1, 3)):
            seg = rng.choice(part.segments)
            path = rng.choice([seg.index, seg.timeindex])
            assert path is not None
            data = bytearray(path.read_bytes())
            how = rng.choice(["overwrite", "zero", "truncate", "garbage"])
            if how == "overwrite" and data:
                at = rng.randrange(len(data))
                data[at : at + 8] = rng.randbytes(min(8, len(data) - at))
            elif how == "zero" and data:
                at = rng.randrange(len(data))
                data[at : at + 24] = bytes(min(24, len(data) - at))
            elif how == "truncate":
                del data[rng.randrange(len(data) + 1) :]
            else:
                data = bytearray(rng.randbytes(rng.randrange(1, 200)))
            _rewrite(path, bytes(data))
        part = PartitionDir.load(part_dir)
        segs = load_oracle(part)
        times = rng.sample(probe_times(segs, limit=100), 25)
        assert_matches_oracle(part, times, expect_clean=False)
        for target in ("latest", "max-timestamp"):
            r = seek_partition(part, target)
            want = oracle_latest(segs) if target == "latest" else oracle_max_timestamp(segs)
            got = r.offset if target == "latest" else (r.offset, r.timestamp)
            assert got == want, (round_no, target, r)


# --- cost follows the indexes -------------------------------------------------------------------


def test_cost_follows_the_indexes_not_the_partition(tmp_path: Path) -> None:
    specs = [
        SegmentSpec([v2(*(T0 + (s * 40 + b) * 1000 + j for j in range(10))) for b in range(40)])
        for s in range(100)
    ]
    part = write_partition(tmp_path / "big-0", specs, interval_bytes=400)
    segs = load_oracle(part)
    first = seek_partition(part, T0 + 12_345)
    assert (first.offset, first.timestamp) == oracle_time(segs, T0 + 12_345, 0)
    assert first.segments_examined == 1
    assert first.batches_read <= 8
    assert first.index_entries_read <= 40
    last_t = T0 + (99 * 40 + 20) * 1000 + 5
    last = seek_partition(part, last_t)
    assert (last.offset, last.timestamp) == oracle_time(segs, last_t, 0)
    # The broker's linear walk over segments: a few slots and batches for each, never a scan.
    assert last.segments_examined == 100
    assert last.batches_read <= 100 * 6
    assert last.index_entries_read <= 100 * 40
    total_batches = sum(len(s.batches) for s in segs)
    assert last.batches_read < total_batches // 5


# --- the new in-place index readers ---------------------------------------------------------------


def test_in_place_index_readers_stop_at_the_preallocated_tail() -> None:
    offsets = encode_offset_index([(100, 0), (105, 80), (109, 170)], 100)
    for tail in (0, 1, 2, 7, 1000):
        buf = offsets + bytes(8 * tail)
        assert offset_index_entry_count(buf) == 3
        assert offset_index_entry_at(buf, 2, 100) == (109, 170)
    assert offset_index_entry_count(b"") == 0
    assert offset_index_entry_count(bytes(8)) == 1  # a lone zero slot is an entry, as Kafka's dump reads it
    # Zeros from the first byte, two slots or more: a preallocated file with no entry yet (the
    # broker never indexes the batch at position 0).
    assert offset_index_entry_count(bytes(8 * 5)) == 0
    times = encode_time_index([(T0, 100), (T0 + 5, 104)], 100)
    for tail in (0, 1, 3, 999):
        buf = times + bytes(12 * tail)
        assert time_index_entry_count(buf) == 2
        assert time_index_entry_at(buf, 1, 100) == (T0 + 5, 104)
    assert time_index_entry_count(bytes(12 * 5)) == 0
    assert time_index_entry_count(bytes(12)) == 1


# --- the real broker corpus -----------------------------------------------------------------------


def corpus_partitions() -> list[object]:
    if not all((CORPUS / d).is_dir() for d in CORPUS_DIRS):
        return [pytest.param(None, marks=pytest.mark.skip(reason=NO_CORPUS), id="no-corpus")]
    out = []
    for d in CORPUS_DIRS:
        for p in sorted((CORPUS / d).iterdir()):
            if p.is_dir() and not p.name.startswith(("_", "expected")):
                out.append(pytest.param(p, id=f"{d}/{p.name}"))
    return out


def _corpus_log_dir(path: Path) -> Path | None:
    files = path.parent / "_logdir-files"
    return files if files.is_dir() else None


def _checkpoint_lso(log_dir: Path | None, part: PartitionDir) -> int | None:
    if log_dir is None or not (log_dir / "log-start-offset-checkpoint").is_file():
        return None
    for line in (log_dir / "log-start-offset-checkpoint").read_text().splitlines()[2:]:
        topic, partition, offset = line.split()
        if (topic, int(partition)) == (part.topic, part.partition):
            return int(offset)
    return None


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_partitions())
def test_corpus_matches_brute_force(path: Path) -> None:
    part = PartitionDir.load(path)
    log_dir = _corpus_log_dir(path)
    segs = load_oracle(part)
    lso_ckpt = _checkpoint_lso(log_dir, part)
    assert_matches_oracle(part, probe_times(segs, limit=120), log_dir=log_dir, checkpoint_lso=lso_ckpt)
    earliest = seek_partition(part, "earliest", log_dir_path=log_dir)
    assert earliest.offset == oracle_earliest(part, lso_ckpt)
    latest = seek_partition(part, "latest", log_dir_path=log_dir)
    assert latest.offset == oracle_latest(segs)
    mx = seek_partition(part, "max-timestamp", log_dir_path=log_dir)
    assert (mx.offset, mx.timestamp) == (oracle_max_timestamp(segs) or (None, None))
    for r in (earliest, latest, mx):
        assert not [f for f in r.findings if f.code != "index-preallocated-tail"]


@pytest.mark.corpus
def test_corpus_special_cases() -> None:
    if not CORPUS.is_dir():
        pytest.skip(NO_CORPUS)
    v38 = CORPUS / "kafka-3.8.0"
    logdir = v38 / "_logdir-files"
    # timestamps-0: records from 2001 sit among 2023 ones; the answer is the first in offset order.
    ts = PartitionDir.load(v38 / "timestamps-0")
    r = seek_partition(ts, 978_307_200_000, log_dir_path=logdir)
    assert (r.offset, r.timestamp) == (0, 1_700_000_000_000)
    r = seek_partition(ts, 1_700_000_000_001, log_dir_path=logdir)
    assert (r.offset, r.timestamp) == (1, 1_700_000_001_000)
    # The high watermark comes from replication-offset-checkpoint.
    latest = seek_partition(ts, "latest", log_dir_path=logdir)
    assert (latest.offset, latest.high_watermark) == (1200, 1200)
    # compacted-0: the cleaner left empty first segments; their mtime picks the first one for
    # any time before it, and like the broker nothing later is searched.
    compacted = PartitionDir.load(v38 / "compacted-0")
    r = seek_partition(compacted, 0, log_dir_path=logdir)
    assert r.offset is None
    assert r.used_mtime
    assert seek_partition(compacted, "earliest", log_dir_path=logdir).offset == 0
    # The running copy: preallocated zero tails are normal, not damage.
    live = PartitionDir.load(CORPUS / "kafka-3.8.0-running-copy" / "live-0")
    r = seek_partition(live, "latest")
    assert r.offset == 10496
    assert {f.code for f in r.findings} == {"index-preallocated-tail"}
    assert not r.scan_fallback


@pytest.mark.corpus
def test_corpus_mixed_formats_once_the_v0_segments_are_old(tmp_path: Path) -> None:
    # The v0 segments come first and their mtime (the copy's) is after every record: any time picks
    # the first of them and finds nothing, like a broker. Ageing them exposes the v1 and v2 data.
    src = CORPUS / "kafka-3.8.0-zk-legacy" / "mixed-formats-0"
    if not src.is_dir():
        pytest.skip(NO_CORPUS)
    assert seek_partition(PartitionDir.load(src), 0).offset is None
    dst = tmp_path / "mixed-formats-0"
    shutil.copytree(src, dst)
    part = PartitionDir.load(dst)
    for seg in part.segments:
        assert seg.log is not None
        if seg.base_offset < 600:
            os.utime(seg.log, (946_684_800, 946_684_800))  # 2000-01-01
    segs = load_oracle(part)
    results = assert_matches_oracle(part, probe_times(segs, limit=150))
    assert {r.segment for r in results if r.offset is not None} >= {str(s.log) for s in part.segments[5:9]}


@pytest.mark.corpus
@pytest.mark.parametrize("damage", ["time-index-shuffled", "offset-index-shifted", "time-index-missing"])
def test_corpus_damaged_copy(tmp_path: Path, damage: str) -> None:
    src = CORPUS / "kafka-3.8.0" / "timestamps-0"
    if not src.is_dir():
        pytest.skip(NO_CORPUS)
    dst = tmp_path / "timestamps-0"
    shutil.copytree(src, dst)
    part = PartitionDir.load(dst)
    DAMAGES[damage][0](part.segments[4])
    part = PartitionDir.load(dst)
    segs = load_oracle(part)
    results = assert_matches_oracle(part, probe_times([segs[4]], limit=50), expect_clean=False)
    assert any(r.scan_fallback for r in results)
