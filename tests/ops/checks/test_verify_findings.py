"""One test (at least) per verify finding code that the scanner does not produce.

Each test damages a real corpus segment (a copy) or a built one with the named damages of
`corruptions.py`, runs `verify`, and asserts the code, severity, file, byte position and Kafka
offset of what it reports. The scanner's own codes (crc-mismatch, partial-trailing-batch, ...) are
covered in tests/scan/test_scanner_findings.py; tests/test_findings_catalog.py checks the two
`COVERED_CODES` sets together cover the whole catalog.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from builders import BASE_TS, SegmentBuilder, build_partition, records
from corruptions import (
    append_garbage,
    append_zeros,
    copy_tree,
    flip_crc_byte,
    index_entries,
    log_entries,
    make_log_dir,
    set_index_entry,
    shuffle_index_entries,
    stale_index,
    truncate_at,
    truncate_index,
)

from kdump.findings import CATALOG, Finding, Severity
from kdump.formats.checkpoints import encode_leader_epoch_checkpoint
from kdump.formats.time_index import encode_time_index
from kdump.formats.txn_index import AbortedTxn, encode_txn_index
from kdump.model.log_dir import discover
from kdump.ops.checks.verify import VerifyOptions, verify_targets
from kdump.store.hints import repair_command

COVERED_CODES = {
    "index-missing",
    "index-size-invalid",
    "index-not-monotonic",
    "index-offset-mismatch",
    "index-entry-beyond-log",
    "index-preallocated-tail",
    "time-index-missing",
    "time-index-out-of-order",
    "time-index-mismatch",
    "time-index-offset-not-found",
    "txn-index-mismatch",
    "segment-overlap",
    "leftover-file",
    "orphan-index",
    "snapshot-corrupt",
    "checkpoint-corrupt",
    "leader-epoch-mismatch",
    "unreadable-file",
}


# --- helpers ------------------------------------------------------------------------------------


def verify(path: Path, deep: bool = False) -> list[Finding]:
    """Every finding verify reports for a partition directory (or file)."""
    reports = list(verify_targets([discover(str(path))], VerifyOptions(deep=deep, jobs=1)))
    return [f for r in reports for f in r.findings]


def only(findings: list[Finding], code: str) -> list[Finding]:
    return [f for f in findings if f.code == code]


def one(findings: list[Finding], code: str) -> Finding:
    hits = only(findings, code)
    assert len(hits) == 1, f"expected exactly one {code}, got {findings}"
    f = hits[0]
    assert f.severity == CATALOG[code].severity
    return f


def assert_clean(findings: list[Finding]) -> None:
    assert [f for f in findings if f.severity >= Severity.WARNING] == []


@pytest.fixture
def built(tmp_path: Path) -> Path:
    """One healthy v2 segment of 12 batches x 10 records (~2.6 KB each): a few index entries."""
    part = tmp_path / "built-0"
    build_partition(part, segments=1, batches_per_segment=12, records_per_batch=10, value_size=200)
    assert len(index_entries((part / "00000000000000000000.index").read_bytes())) >= 4
    assert_clean(verify(part))
    return part


@pytest.fixture
def txn_copy(corpus_root: Path, tmp_path: Path) -> Path:
    """A writable copy of the real `txn-1` partition (its last segment, 547, is in every corpus)."""
    part = copy_tree(corpus_root / "kafka-3.8.0" / "txn-1", tmp_path / "txn-1")
    assert_clean(verify(part))
    return part


SEG0 = "00000000000000000000"
TXN_SEG = "00000000000000000547"


# --- offset index -------------------------------------------------------------------------------


def test_index_missing_on_a_corpus_segment(txn_copy: Path) -> None:
    (txn_copy / f"{TXN_SEG}.index").unlink()
    f = one(verify(txn_copy), "index-missing")
    assert f.file == str(txn_copy / f"{TXN_SEG}.index")
    assert (f.position, f.offset) == (None, None)
    assert repair_command(f) == f"kdump reindex --apply {txn_copy}"  # the hint names the partition


def test_index_size_invalid_offset_index(txn_copy: Path) -> None:
    index = txn_copy / f"{TXN_SEG}.index"
    size = index.stat().st_size
    append_garbage(3, seed=1).apply(index)
    f = one(verify(txn_copy), "index-size-invalid")
    assert f.file == str(index)
    assert f.position == size  # just after the last whole 8-byte entry
    assert f.offset is None


def test_an_index_given_alone_is_checked_against_its_log(txn_copy: Path) -> None:
    index = txn_copy / f"{TXN_SEG}.index"
    size = index.stat().st_size
    append_garbage(3, seed=1).apply(index)
    for given in (index, txn_copy / f"{TXN_SEG}.timeindex", txn_copy / f"{TXN_SEG}.log"):
        f = one(verify(given), "index-size-invalid")
        assert (f.file, f.position) == (str(index), size)


def test_index_size_invalid_time_index_torn_entry(built: Path) -> None:
    timeindex = built / f"{SEG0}.timeindex"
    n = len(index_entries(timeindex.read_bytes(), "timeindex"))
    truncate_index(drop_bytes=5, entry_size=12).apply(timeindex)
    f = one(verify(built), "index-size-invalid")
    assert f.file == str(timeindex)
    assert f.position == (n - 1) * 12
    assert "7 bytes" in f.message


def test_index_size_invalid_txn_index(txn_copy: Path) -> None:
    txnindex = txn_copy / f"{TXN_SEG}.txnindex"
    size = txnindex.stat().st_size
    assert size % 34 == 0
    append_garbage(10, seed=2).apply(txnindex)
    f = one(verify(txn_copy), "index-size-invalid")
    assert f.file == str(txnindex)
    assert f.position == size


def test_index_not_monotonic_shuffled(built: Path) -> None:
    index = built / f"{SEG0}.index"
    shuffle_index_entries(seed=3).apply(index)
    slots = index_entries(index.read_bytes())
    first_bad = next(
        i for i in range(1, len(slots)) if slots[i][0] <= slots[i - 1][0] or slots[i][1] <= slots[i - 1][1]
    )
    hits = only(verify(built), "index-not-monotonic")  # reported once per file, at the first break
    assert len(hits) == 1
    f = hits[0]
    assert f.file == str(index)
    assert f.position == first_bad * 8
    assert f.offset == slots[first_bad][0]  # base offset 0: relative == absolute
    # Every shuffled entry still points at its batch: the broker's lookup lands at or below each
    # target and reads forward (tests/ops/test_verify_start_state.py), so it serves right: a warning.
    assert f.severity == Severity.WARNING


def test_index_not_monotonic_nonzero_slot_repeating_the_base_offset(txn_copy: Path) -> None:
    """A slot i > 0 with relative offset 0 is where Kafka's dump stops (a preallocated tail); when its
    bytes are not zero it is damage, not preallocation."""
    index = txn_copy / f"{TXN_SEG}.index"
    set_index_entry(1, 0, 12345).apply(index)
    f = one(verify(txn_copy), "index-not-monotonic")
    assert (f.position, f.offset) == (8, 547)
    assert only(verify(txn_copy), "index-preallocated-tail") == []


def test_index_offset_mismatch_position_not_a_batch_start(built: Path) -> None:
    index = built / f"{SEG0}.index"
    rel, pos = index_entries(index.read_bytes())[1]
    set_index_entry(1, rel, pos + 1).apply(index)
    f = one(verify(built), "index-offset-mismatch")
    assert (f.file, f.position, f.offset) == (str(index), 8, rel)
    assert f.details["log_position"] == pos + 1
    assert "not the start of a batch" in f.message


def test_index_offset_mismatch_entry_after_the_batch_holding_its_offset(built: Path) -> None:
    """(O, P) with P the start of a batch *after* the one holding O: a fetch of O would skip records."""
    index = built / f"{SEG0}.index"
    slots = index_entries(index.read_bytes())
    rel, pos = slots[1]
    earlier = rel - 10  # the last offset of the batch before the one at `pos`
    assert earlier > slots[0][0]
    set_index_entry(1, earlier, pos).apply(index)
    f = one(verify(built), "index-offset-mismatch")
    assert (f.position, f.offset) == (8, earlier)
    assert "after the batch" in f.message


def test_index_entry_beyond_log_stale_entries(txn_copy: Path) -> None:
    index = txn_copy / f"{TXN_SEG}.index"
    log = txn_copy / f"{TXN_SEG}.log"
    slots = index_entries(index.read_bytes())
    stale_index(log.stat().st_size, slots[-1][0], count=2).apply(index)
    # One finding per file (one cause, one repair), at the first stale entry, counting them all.
    f = one(verify(txn_copy), "index-entry-beyond-log")
    assert (f.file, f.position, f.offset) == (str(index), len(slots) * 8, 547 + slots[-1][0] + 10)
    assert f.details["entries"] == 2
    assert f.details["log_position"] == log.stat().st_size + 100


def test_index_entry_beyond_log_after_truncating_the_log(built: Path) -> None:
    """The realistic origin: the log was cut (say by hand) and the index was left as it was."""
    log = built / f"{SEG0}.log"
    index = built / f"{SEG0}.index"
    slots = index_entries(index.read_bytes())
    rel, pos = slots[-1]
    truncate_at(pos).apply(log)  # cut exactly at the last indexed batch: a clean batch boundary
    findings = verify(built)
    f = one(findings, "index-entry-beyond-log")
    assert (f.position, f.offset) == ((len(slots) - 1) * 8, rel)
    assert f.details["log_position"] == pos
    # The time index's final entry names an offset that is gone too.
    assert only(findings, "time-index-offset-not-found")


def test_index_preallocated_tail_built(built: Path) -> None:
    index = built / f"{SEG0}.index"
    timeindex = built / f"{SEG0}.timeindex"
    n = len(index_entries(index.read_bytes()))
    t = len(index_entries(timeindex.read_bytes(), "timeindex"))
    append_zeros(80).apply(index)
    append_zeros(120).apply(timeindex)
    findings = verify(built)
    tails = sorted(only(findings, "index-preallocated-tail"), key=lambda f: f.file)
    assert [(f.file, f.position, f.details["slots"]) for f in tails] == [
        (str(index), n * 8, 10),
        (str(timeindex), t * 12, 10),
    ]
    assert all(f.severity == Severity.INFO for f in tails)
    assert_clean(findings)


def test_index_preallocated_tail_real_running_copy(corpus_root: Path) -> None:
    """live-0 was copied from a running broker: 154 real entries, then zeros to 1 MiB."""
    part = corpus_root / "kafka-3.8.0-running-copy" / "live-0"
    findings = verify(part)
    tails = sorted(only(findings, "index-preallocated-tail"), key=lambda f: f.file)
    assert [(Path(f.file).name, f.position, f.details["slots"]) for f in tails] == [
        ("00000000000000008074.index", 154 * 8, 1048576 // 8 - 154),
        ("00000000000000008074.timeindex", 154 * 12, 1048572 // 12 - 154),
    ]
    assert_clean(findings)


def _roll_at_kill(part: Path, small_batches: int) -> Path:
    """What a broker killed just after rolling leaves: the closed segment's indexes trimmed, a new active
    segment with `small_batches` real batches (under index.interval.bytes, so no index entry yet) and
    its .index and .timeindex preallocated to 10 MiB of zeros. Returns the new .log."""
    closed = part / "00000000000000008074"
    for suffix, size in ((".index", 8), (".timeindex", 12)):
        index = closed.with_suffix(suffix)
        slots = index_entries(index.read_bytes(), suffix[1:])
        used = next(i for i in range(1, len(slots)) if slots[i][1 if suffix == ".timeindex" else 0] == 0)
        with index.open("r+b") as fh:
            fh.truncate(used * size)  # LogSegment.onBecomeInactiveSegment trims to the entries
    data = (closed.with_suffix(".log")).read_bytes()
    entries = log_entries(data)
    # ... after a final time index entry for the largest timestamp, when it is not the last one yet.
    timeindex = closed.with_suffix(".timeindex")
    last_ts = index_entries(timeindex.read_bytes(), "timeindex")[-1][0]
    top = max(entries, key=lambda e: e.max_timestamp)
    if top.max_timestamp > last_ts:
        timeindex.write_bytes(
            timeindex.read_bytes() + struct.pack(">qi", top.max_timestamp, top.last_offset - 8074)
        )
    next_offset = entries[-1].last_offset + 1
    out = bytearray()
    for e in entries[:small_batches]:
        assert e.base_offset is not None
        batch = bytearray(data[e.position : e.end])
        # baseOffset is outside a v2 batch's checksum: the batch moves to the new segment whole.
        struct.pack_into(">q", batch, 0, next_offset + e.base_offset - entries[0].base_offset)
        out += batch
    # The broker appends an index entry only once more than index.interval.bytes (4096) came since
    # the last one, checked before each append: none yet for these.
    assert sum(e.size for e in entries[: max(small_batches - 1, 0)]) <= 4096
    active = part / f"{next_offset:020d}.log"
    active.write_bytes(bytes(out))
    with active.with_suffix(".index").open("wb") as fh:
        fh.truncate(10 << 20)
    with active.with_suffix(".timeindex").open("wb") as fh:
        fh.truncate((10 << 20) // 12 * 12)
    return active


@pytest.mark.parametrize("small_batches", [0, 1])
def test_killed_broker_active_segment_zero_indexes_are_not_entries(
    corpus_root: Path, tmp_path: Path, small_batches: int
) -> None:
    """An all-zero preallocated index holds no entry (0, 0): no stale entry, no time index mismatch."""
    part = copy_tree(corpus_root / "kafka-3.8.0-running-copy" / "live-0", tmp_path / "live-0")
    active = _roll_at_kill(part, small_batches)
    findings = verify(part)
    assert [f for f in findings if f.severity >= Severity.WARNING] == []
    tails = sorted(
        (Path(f.file).name, f.position, f.details["slots"]) for f in only(findings, "index-preallocated-tail")
    )
    assert tails == [
        (active.with_suffix(".index").name, 0, (10 << 20) // 8),
        (active.with_suffix(".timeindex").name, 0, (10 << 20) // 12),
    ]


def test_index_entries_behind_log_damage_are_the_damages(built: Path) -> None:
    """A checksum error cuts the valid log; the index entries past it are not a second error (the
    damage's repair rebuilds the indexes)."""
    log = built / f"{SEG0}.log"
    slots = index_entries((built / f"{SEG0}.index").read_bytes())
    e = log_entries(log.read_bytes())[2]
    assert slots[-1][1] > e.position
    flip_crc_byte(2).apply(log)
    findings = verify(built)
    assert one(findings, "crc-mismatch").severity == Severity.ERROR
    assert [f for f in findings if f.severity >= Severity.ERROR and f.code != "crc-mismatch"] == []


# --- time index ---------------------------------------------------------------------------------


def test_time_index_missing(txn_copy: Path) -> None:
    (txn_copy / f"{TXN_SEG}.timeindex").unlink()
    f = one(verify(txn_copy), "time-index-missing")
    assert f.file == str(txn_copy / f"{TXN_SEG}.timeindex")
    assert (f.position, f.offset) == (None, None)


def test_time_index_out_of_order(built: Path) -> None:
    timeindex = built / f"{SEG0}.timeindex"
    slots = index_entries(timeindex.read_bytes(), "timeindex")
    assert len(slots) >= 3
    # Swap entries 1 and 2: the timestamp goes backwards at slot 2.
    set_index_entry(1, *slots[2], kind="timeindex").apply(timeindex)
    set_index_entry(2, *slots[1], kind="timeindex").apply(timeindex)
    f = one(verify(built), "time-index-out-of-order")
    assert (f.file, f.position, f.offset) == (str(timeindex), 24, slots[1][1])


def test_time_index_out_of_order_nonzero_tail_slot(txn_copy: Path) -> None:
    timeindex = txn_copy / f"{TXN_SEG}.timeindex"
    set_index_entry(2, 5, 0, kind="timeindex").apply(timeindex)  # relative offset 0, timestamp 5
    f = one(verify(txn_copy), "time-index-out-of-order")
    assert (f.position, f.offset) == (24, 547)


def test_time_index_mismatch_real_segment(txn_copy: Path) -> None:
    timeindex = txn_copy / f"{TXN_SEG}.timeindex"
    slots = index_entries(timeindex.read_bytes(), "timeindex")
    ts, rel = slots[0]
    set_index_entry(0, ts + 1, rel, kind="timeindex").apply(timeindex)  # still below slot 1's timestamp
    assert ts + 1 < slots[1][0]
    f = one(verify(txn_copy), "time-index-mismatch")
    assert (f.file, f.position, f.offset) == (str(timeindex), 0, 547 + rel)
    assert f.details["log_timestamp"] == ts


def test_time_index_offset_not_found_stale(built: Path) -> None:
    timeindex = built / f"{SEG0}.timeindex"
    slots = index_entries(timeindex.read_bytes(), "timeindex")
    last_offset = log_entries((built / f"{SEG0}.log").read_bytes())[-1].last_offset
    stale_index(0, last_offset, count=2, kind="timeindex").apply(timeindex)
    f = one(verify(built), "time-index-offset-not-found")  # one finding for the run of stale entries
    assert (f.file, f.position, f.offset) == (str(timeindex), len(slots) * 12, last_offset + 10)
    assert f.details["entries"] == 2


def test_time_index_offset_not_found_in_a_compaction_gap(tmp_path: Path) -> None:
    """An entry naming an offset no batch holds, inside the log: before the batch that follows it."""
    part = tmp_path / "gap-0"
    seg = SegmentBuilder()
    seg.add_v2(records(10))
    seg.next_offset = 50  # offsets 10..49 were compacted away
    seg.add_v2(records(10, start_ts=BASE_TS + 100))
    seg.write(part)
    timeindex = part / f"{SEG0}.timeindex"
    timeindex.write_bytes(encode_time_index([(BASE_TS + 9, 30), (BASE_TS + 109, 59)], 0))
    f = one(verify(part), "time-index-offset-not-found")
    assert (f.file, f.position, f.offset) == (str(timeindex), 0, 30)


# --- transaction index --------------------------------------------------------------------------


def _txn_partition(part: Path) -> tuple[SegmentBuilder, int, int]:
    """Plain records, an aborted transaction of producer 7, then more plain records."""
    seg = SegmentBuilder()
    seg.add_v2(records(5))
    _, first = seg.add_v2(records(5), producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)
    seg.add_v2(records(5), producer_id=7, producer_epoch=0, base_sequence=5, transactional=True)
    marker = seg.add_marker(7, commit=False)
    seg.add_v2(records(5))
    seg.write(part)
    (part / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint([(0, 0)]))
    return seg, first, marker


def test_txn_index_mismatch_missing_file(tmp_path: Path) -> None:
    part = tmp_path / "tx-0"
    _seg, _first, marker = _txn_partition(part)
    f = one(verify(part), "txn-index-mismatch")
    assert f.file == str(part / f"{SEG0}.txnindex")
    assert (f.position, f.offset) == (None, marker)


def test_txn_index_mismatch_wrong_and_extra_entries(tmp_path: Path) -> None:
    part = tmp_path / "tx-0"
    _seg, first, marker = _txn_partition(part)
    txnindex = part / f"{SEG0}.txnindex"
    txnindex.write_bytes(encode_txn_index([AbortedTxn(0, 7, first, marker, marker + 1)]))
    assert_clean(verify(part))  # the right entry: nothing to report
    txnindex.write_bytes(
        encode_txn_index([AbortedTxn(0, 7, first + 1, marker, marker + 1), AbortedTxn(0, 9, 1, 3, 4)])
    )
    hits = sorted(only(verify(part), "txn-index-mismatch"), key=lambda f: f.position or 0)
    assert [(f.position, f.offset) for f in hits] == [(0, marker), (34, 3)]
    assert "first offset" in hits[0].message
    assert "no ABORT marker" in hits[1].message


def test_txn_index_mismatch_real_segment(txn_copy: Path) -> None:
    txnindex = txn_copy / f"{TXN_SEG}.txnindex"
    data = bytearray(txnindex.read_bytes())
    (last_offset,) = struct.unpack_from(">q", data, 18)
    struct.pack_into(">q", data, 10, struct.unpack_from(">q", data, 10)[0] + 1)  # the first offset
    txnindex.write_bytes(bytes(data))
    f = one(verify(txn_copy), "txn-index-mismatch")
    assert (f.file, f.position, f.offset) == (str(txnindex), 0, last_offset)


# --- partition level ----------------------------------------------------------------------------


def test_segment_overlap(tmp_path: Path) -> None:
    part = tmp_path / "overlap-0"
    first = SegmentBuilder(base_offset=0)
    for k in range(4):
        first.add_v2(records(10, start_ts=BASE_TS + 10 * k))
    first.write(part)  # offsets 0..39
    second = SegmentBuilder(base_offset=30, next_offset=40)
    second.add_v2(records(10, start_ts=BASE_TS + 40))
    second.write(part)
    (part / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint([(0, 0)]))
    f = one(verify(part), "segment-overlap")
    assert f.file == str(part / f"{SEG0}.log")
    assert (f.position, f.offset) == (None, 30)
    assert f.details["next_segment"] == str(part / "00000000000000000030.log")
    assert f.severity == Severity.ERROR


def test_leftover_files(built: Path) -> None:
    names = [f"{SEG0}.log.deleted", "00000000000000000040.log.swap", "00000000000000000040.index.cleaned"]
    for name in names:
        (built / name).write_bytes(b"")
    hits = only(verify(built), "leftover-file")
    assert sorted(f.file for f in hits) == sorted(str(built / n) for n in names)
    assert all((f.position, f.offset) == (None, None) for f in hits)


def test_leftover_files_real_cleaner_leftovers(corpus_root: Path) -> None:
    part = corpus_root / "kafka-3.8.0-running-copy" / "compacted-sparse-0-deleted-leftovers"
    hits = only(verify(part), "leftover-file")
    assert sorted(Path(f.file).name for f in hits) == sorted(p.name for p in part.iterdir())


def test_orphan_index(built: Path) -> None:
    names = ["00000000000000009999.index", "00000000000000009999.timeindex"]
    for name in names:
        (built / name).write_bytes(b"")
    hits = only(verify(built), "orphan-index")
    assert sorted(f.file for f in hits) == [str(built / n) for n in names]
    assert all((f.position, f.offset) == (None, None) for f in hits)


def test_snapshot_corrupt_bad_crc(txn_copy: Path) -> None:
    snap = txn_copy / "00000000000000000612.snapshot"
    data = bytearray(snap.read_bytes())
    data[-1] ^= 0xFF
    snap.write_bytes(bytes(data))
    f = one(verify(txn_copy), "snapshot-corrupt")
    assert (f.file, f.position, f.offset) == (str(snap), 2, None)  # the stored crc is at byte 2
    # Given alone, the file is checked the same way.
    assert one(verify(snap), "snapshot-corrupt").position == 2


def test_snapshot_corrupt_truncated(txn_copy: Path) -> None:
    snap = txn_copy / "00000000000000000612.snapshot"
    truncate_at(5).apply(snap)
    f = one(verify(txn_copy), "snapshot-corrupt")
    assert (f.file, f.position, f.offset) == (str(snap), None, None)


def test_checkpoint_corrupt_leader_epoch_checkpoint(txn_copy: Path) -> None:
    lec = txn_copy / "leader-epoch-checkpoint"
    lec.write_text("0\n2\n0 0\n")  # says two entries, has one
    f = one(verify(txn_copy), "checkpoint-corrupt")
    assert (f.file, f.position, f.offset) == (str(lec), None, None)


def test_checkpoint_corrupt_partition_metadata(txn_copy: Path) -> None:
    pm = txn_copy / "partition.metadata"
    pm.write_text("version: 0\ntopic_id: not-a-topic-id\n")
    f = one(verify(txn_copy), "checkpoint-corrupt")
    assert f.file == str(pm)


def test_checkpoint_corrupt_log_dir_checkpoint_given_alone(tmp_path: Path) -> None:
    cp = tmp_path / "recovery-point-offset-checkpoint"
    cp.write_text("0\n3\ntxn 0 5\n")
    f = one(verify(cp), "checkpoint-corrupt")
    assert f.file == str(cp)


# Every checkpoint the broker reads through CheckpointFileWithFailureHandler (or PartitionMetadataFile)
# puts the log dir offline when it does not parse: an error, whichever file it is.
@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("leader-epoch-checkpoint", "0\n2\n0 0\n"),
        ("partition.metadata", "version: 0\n"),
        ("recovery-point-offset-checkpoint", "0\n1\ntxn 1\n"),
        ("log-start-offset-checkpoint", "1\n0\n"),
        ("replication-offset-checkpoint", "0\n2\ntxn 1 5\n"),
        ("cleaner-offset-checkpoint", "0\nx\n"),
    ],
)
def test_checkpoint_corrupt_is_an_error_for_every_checkpoint(
    txn_copy: Path, tmp_path: Path, name: str, text: str
) -> None:
    log_dir = make_log_dir(tmp_path / "logdir", {"txn-1": txn_copy})
    path = (
        (log_dir / "txn-1" / name)
        if name in ("leader-epoch-checkpoint", "partition.metadata")
        else log_dir / name
    )
    path.write_text(text)
    reports = list(verify_targets([discover(str(log_dir))], VerifyOptions(jobs=1)))
    hits = [f for r in reports for f in r.findings if f.code == "checkpoint-corrupt"]
    assert [(f.file, f.severity) for f in hits] == [(str(path), Severity.ERROR)]
    assert max(r.worst() or Severity.INFO for r in reports) == Severity.ERROR  # verify exits 1


def test_leader_epoch_mismatch_start_offset(built: Path) -> None:
    # Batches carry epoch 0 from offset 0; the checkpoint starts with epoch 1 at 5, which no
    # truncation at a log start explains (tests/ops/checks/test_epoch_checks.py has those): epoch 0 is missing.
    (built.parent / "log-start-offset-checkpoint").write_text("0\n1\nbuilt 0 0\n")
    lec = built / "leader-epoch-checkpoint"
    lec.write_bytes(encode_leader_epoch_checkpoint([(1, 5)]))
    f = one(verify(built), "leader-epoch-mismatch")
    assert (f.file, f.position, f.offset) == (str(lec), None, 0)
    assert f.severity == Severity.ERROR


def test_leader_epoch_mismatch_unlisted_epoch_and_entry_past_the_end(tmp_path: Path) -> None:
    part = tmp_path / "epochs-0"
    seg = SegmentBuilder()
    seg.add_v2(records(10), leader_epoch=0)
    _, later = seg.add_v2(records(10, start_ts=BASE_TS + 10), leader_epoch=3)
    seg.write(part)
    lec = part / "leader-epoch-checkpoint"
    lec.write_bytes(encode_leader_epoch_checkpoint([(0, 0), (5, 100)]))
    hits = sorted(only(verify(part), "leader-epoch-mismatch"), key=lambda f: f.offset or 0)
    assert [(f.offset, f.position) for f in hits] == [(later, None), (100, None)]
    assert "epoch 3" in hits[0].message
    assert "past the log end" in hits[1].message


def test_unreadable_file_oversized_txn_index(txn_copy: Path) -> None:
    """Root reads everything, so make a file kdump refuses to read whole: a sparse 64 MiB+ .txnindex."""
    txnindex = txn_copy / f"{TXN_SEG}.txnindex"
    with txnindex.open("r+b") as fh:
        fh.truncate((64 << 20) + 34)
    findings = verify(txn_copy)
    f = one(findings, "unreadable-file")
    assert (f.file, f.position, f.offset) == (str(txnindex), None, None)
    assert f.severity == Severity.ERROR


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file_permission_denied(txn_copy: Path) -> None:
    log = txn_copy / f"{TXN_SEG}.log"
    log.chmod(0)
    try:
        f = one(verify(txn_copy), "unreadable-file")
    finally:
        log.chmod(0o644)
    assert f.file == str(log)
