"""`trim-tail` on damaged copies of real corpus segments: the broker's cut, a clean verify, a full restore.

The expected cut is worked out here from the undamaged segment, independently of kdump: the broker's
recovery (`LogSegment.recover`, kafka-internals.md §4.1) keeps every batch before the first one that
is incomplete, has a length below the minimum, or fails its checksum, so the cut is the start of the
first damaged batch, or the old end of the file when the damage was appended after it.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from builders import build_partition
from click.testing import Result
from corpus import iter_log_segments
from corruptions import (
    Damage,
    LogEntry,
    append_garbage,
    append_zeros,
    copy_tree,
    file_hashes,
    flip_bit,
    flip_body_byte,
    flip_crc_byte,
    garble_length,
    held_lock,
    log_entries,
    make_log_dir,
    run_kdump,
    set_magic,
    torn_page,
    tree_state,
    truncate_at,
    truncate_inside,
    zero_range,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import read_oracle_text

from kdump.findings import Finding, Severity
from kdump.formats.checkpoints import decode_leader_epoch_checkpoint, encode_leader_epoch_checkpoint
from kdump.formats.producer_snapshot import encode_producer_snapshot
from kdump.model.log_dir import discover
from kdump.ops.checks.verify import VerifyOptions, verify_targets
from kdump.ops.repair import safety
from kdump.ops.repair.safety import restore
from kdump.ops.repair.trim import apply_trim_tail, plan_trim_tail

Kdump = Callable[..., Result]

# Real partitions whose last segment is in every corpus: v2 lz4 with transactions, v2 uncompressed
# with out-of-order timestamps, legacy v0 uncompressed (one message per entry).
REAL = {
    "txn-1": ("kafka-3.8.0", "txn-1"),
    "timestamps-0": ("kafka-3.8.0", "timestamps-0"),
    "legacy-v0-none-0": ("kafka-3.8.0-zk-legacy", "legacy-v0-none-0"),
}


def _torn_cut(entries: list[LogEntry], size: int) -> int:
    boundary = ((size - 1) // 4096) * 4096
    return next(e.position for e in entries if e.position <= boundary < e.end)


# name -> (damage for these entries, expected cut from the original entries and size, batches removed)
def _cases(entries: list[LogEntry], size: int) -> dict[str, tuple[Damage, int]]:
    last = entries[-1]
    middle = len(entries) // 2
    return {
        "partial-batch-inside-header": (truncate_inside(-1, 30), last.position),
        "partial-batch-inside-body": (truncate_inside(-1, -10), last.position),
        "appended-zeros": (append_zeros(5000), size),
        "torn-page-of-zeros-over-the-end": (torn_page(4096), _torn_cut(entries, size)),
        "garbage-after-last-batch": (append_garbage(777, seed=3), size),
        "bad-checksum-last-batch": (flip_crc_byte(-1), last.position),
        "bad-checksum-middle-batch": (flip_crc_byte(middle), entries[middle].position),
        "bit-flip-in-middle-batch-body": (flip_body_byte(middle, -5), entries[middle].position),
    }


CASE_NAMES = [
    "partial-batch-inside-header",
    "partial-batch-inside-body",
    "appended-zeros",
    "torn-page-of-zeros-over-the-end",
    "garbage-after-last-batch",
    "bad-checksum-last-batch",
    "bad-checksum-middle-batch",
    "bit-flip-in-middle-batch-body",
]


def _verify(path: Path) -> list[Finding]:
    # A trim may leave a partition with one empty segment, as the broker's recovery does.
    options = VerifyOptions(jobs=1, allow_empty=True)
    return [f for r in verify_targets([discover(str(path))], options) for f in r.findings]


def _last_log(part: Path) -> Path:
    return sorted(part.glob("*.log"))[-1]


@pytest.mark.parametrize("case", CASE_NAMES)
@pytest.mark.parametrize("real", sorted(REAL))
def test_trim_tail_cuts_where_the_broker_does_then_verify_clean_and_restore(
    real: str, case: str, corpus_root: Path, tmp_path: Path, kdump: Kdump
) -> None:
    corpus_dir, name = REAL[real]
    part = copy_tree(corpus_root / corpus_dir / name, tmp_path / name)
    log = _last_log(part)
    original = log.read_bytes()
    entries = log_entries(original)
    damage, cut = _cases(entries, len(original))[case]
    damage.apply(log)
    damaged = log.read_bytes()
    damaged_hashes = file_hashes(part)
    assert any(f.severity >= Severity.WARNING for f in _verify(part))  # zeros: a warning

    (plan,) = plan_trim_tail(discover(str(part)))
    assert plan.segment is not None
    assert plan.segment.log == log
    assert (plan.size, plan.cut_position, plan.removed_bytes) == (len(damaged), cut, len(damaged) - cut)
    kept = [e for e in entries if e.end <= cut]
    assert plan.new_log_end_offset == (kept[-1].last_offset + 1 if kept else None)
    if case == "bad-checksum-middle-batch":
        # The batches after the bad one are valid: the plan says they could be salvaged first.
        assert plan.salvageable_batches == len(entries) - len(kept) - 1
    # Kafka's DumpLogSegments prints `Found N invalid bytes at the end` for a partial trailing batch:
    # N = size - position of the incomplete batch = size - cut.
    if case.startswith("partial-batch"):
        assert len(damaged) - cut == len(damaged) - entries[-1].position

    dry = kdump("trim-tail", str(part))
    assert dry.exit_code == 1
    assert f"cut at position {cut} of {len(damaged)}" in dry.stdout
    backup = tmp_path / "backup"
    result = kdump("trim-tail", "--apply", "--backup-dir", str(backup), str(part))
    assert result.exit_code == 0, result.output
    assert log.read_bytes() == damaged[:cut]
    # A cut that takes txn-1's last COMMIT marker leaves its transaction open, as the broker's own
    # recovery would: verify says so at info, with no coordinator log beside it to tell it hangs.
    assert [f for f in _verify(part) if f.severity >= Severity.WARNING] == []
    assert kdump("trim-tail", str(part)).exit_code == 0  # nothing left to trim

    assert kdump("restore", str(backup)).exit_code == 0
    assert file_hashes(part) == damaged_hashes


def test_no_corpus_segment_has_invalid_bytes_and_kafka_agrees(corpus_root: Path) -> None:
    """For every corpus segment: `Found N invalid bytes at the end` in Kafka's shallow dump (N = 0 when
    it prints none) equals size - cut, and trim-tail has nothing to do anywhere."""
    trailer = re.compile(r"^Found (\d+) invalid bytes at the end of ", re.MULTILINE)
    checked = 0
    for seg in iter_log_segments(corpus_root):
        oracle = seg.oracle("shallow")
        if not oracle.exists():
            continue
        found = [int(m.group(1)) for m in trailer.finditer(read_oracle_text(oracle))]
        kafka_invalid = found[0] if found else 0
        data = seg.log_path.read_bytes()
        kept = log_entries(data, recovery=True)
        cut = kept[-1].end if kept else 0
        assert len(data) - cut == kafka_invalid, seg.id
        checked += 1
    assert checked >= 17
    for corpus_dir in corpus_root.iterdir():
        if corpus_dir.is_dir() and corpus_dir.name.startswith("kafka-"):
            for plan in plan_trim_tail(discover(str(corpus_dir))):
                assert not plan.needed, plan.label


# --- --to-offset and --drop-later-segments ---------------------------------------------------------


@pytest.fixture
def three_segments(tmp_path: Path) -> Path:
    """Segments 0, 40, 80: 4 batches of 10 records each, plus producer snapshots at 40, 80 and 120."""
    part = tmp_path / "three-0"
    build_partition(part, segments=3, batches_per_segment=4)
    for offset in (40, 80, 120):
        (part / f"{offset:020d}.snapshot").write_bytes(encode_producer_snapshot([]))
    return part


@pytest.mark.parametrize(
    ("to_offset", "cut_segment", "cut_batch"), [(55, 40, 1), (50, 40, 1), (80, 80, 0), (5, 0, 0)]
)
def test_to_offset_cuts_at_a_batch_boundary_and_moves_later_segments(
    three_segments: Path, tmp_path: Path, kdump: Kdump, to_offset: int, cut_segment: int, cut_batch: int
) -> None:
    part = three_segments
    before = file_hashes(part)
    log = part / f"{cut_segment:020d}.log"
    cut = log_entries(log.read_bytes())[cut_batch].position
    new_end = cut_segment + 10 * cut_batch  # batches hold 10 offsets each
    result = kdump("trim-tail", "--format", "json", "--to-offset", str(to_offset), str(part))
    assert result.exit_code == 1
    (row,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert (row["segment"], row["cut_position"], row["new_log_end_offset"]) == (str(log), cut, new_end)
    assert row["drop_later_segments"] is True
    backup = tmp_path / "backup"
    assert (
        kdump(
            "trim-tail", "--apply", "--to-offset", str(to_offset), "--backup-dir", str(backup), str(part)
        ).exit_code
        == 0
    )
    assert log.stat().st_size == cut
    later = [b for b in (0, 40, 80) if b > cut_segment]
    for base in later:
        assert not (part / f"{base:020d}.log").exists()
        assert (
            backup / next(p.name for p in backup.iterdir() if p.name.endswith(f"{base:020d}.log"))
        ).exists()
    remaining_snapshots = sorted(int(p.name.split(".")[0]) for p in part.glob("*.snapshot"))
    assert remaining_snapshots == [o for o in (40, 80, 120) if o <= new_end]
    findings = _verify(part)
    assert [f for f in findings if f.severity >= Severity.WARNING] == []
    reports = list(verify_targets([discover(str(part))], VerifyOptions(jobs=1)))
    assert reports[0].last_offset == (new_end - 1 if new_end > 0 else None)
    assert kdump("restore", str(backup)).exit_code == 0
    assert file_hashes(part) == before


def test_to_offset_on_a_real_partition(corpus_root: Path, tmp_path: Path, kdump: Kdump) -> None:
    part = copy_tree(corpus_root / "kafka-3.8.0" / "txn-1", tmp_path / "txn-1")
    before = file_hashes(part)
    log = part / "00000000000000000547.log"
    entries = log_entries(log.read_bytes())
    target = next(e for e in entries if e.base_offset is not None and e.last_offset > e.base_offset + 1)
    assert target.base_offset is not None
    to_offset = target.base_offset + 1  # inside the batch: the whole batch goes
    backup = tmp_path / "backup"
    result = kdump(
        "trim-tail", "--apply", "--to-offset", str(to_offset), "--backup-dir", str(backup), str(part)
    )
    assert result.exit_code == 0, result.output
    assert log.stat().st_size == target.position
    assert [f for f in _verify(part) if f.severity >= Severity.WARNING] == []
    assert kdump("restore", str(backup)).exit_code == 0
    assert file_hashes(part) == before


def _sizes(part: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in part.iterdir() if p.is_file()}


def test_damage_in_a_middle_segment_removes_later_segments_as_the_broker_does(
    three_segments: Path, tmp_path: Path, kdump: Kdump
) -> None:
    """`LogLoader.recoverLog`: the first invalid batch truncates its segment and every later segment
    goes, with its indexes and snapshots; the plan's numbers are what applying it leaves."""
    part = three_segments
    (part / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint([(0, 0), (3, 75), (4, 90)]))
    middle = part / "00000000000000000040.log"
    flip_crc_byte(-1).apply(middle)
    damaged, sizes = file_hashes(part), _sizes(part)
    cut = log_entries(middle.read_bytes())[-1].position

    dry = kdump("trim-tail", "--format", "json", str(part))
    assert dry.exit_code == 1
    (row,) = [json.loads(line) for line in dry.stdout.splitlines()]
    assert (row["segment"], row["cut_position"], row["new_log_end_offset"]) == (str(middle), cut, 70)
    assert row["drop_later_segments"] is True
    assert row["removed_segments"] == 1
    moved = {Path(p).name for p in row["moved_files"]}
    assert moved == {f"{80:020d}.{ext}" for ext in ("log", "index", "timeindex", "snapshot")} | {
        f"{120:020d}.snapshot"
    }
    assert row["backed_up_bytes"] == sizes[middle.name] - cut + sum(sizes[n] for n in moved)
    assert row["old_log_end_offset"] == 120
    assert row["offset_hole"] is None
    assert row["leader_epochs_dropped"] == 2  # epochs 3 and 4 start at 75 and 90, past the new end 70
    assert row["salvage_first"] is True  # segment 80 holds valid data the trim takes out
    text = kdump("trim-tail", str(part)).stdout
    assert "removes 1 later segments as the broker does" in text
    assert f"kdump salvage {part}" in text
    assert "new log end offset 70" in text

    backup = tmp_path / "drop"
    result = kdump("trim-tail", "--apply", "--backup-dir", str(backup), str(part))
    assert result.exit_code == 0, result.output
    assert "moved 5 files" in result.stdout
    after = _sizes(part)
    assert sorted(p.name.split(".")[0] for p in part.glob("*.log")) == [f"{0:020d}", f"{40:020d}"]
    assert moved.isdisjoint(after)
    assert after[middle.name] == cut
    # Nothing lost that the plan did not list: the backup holds the cut tail and every moved file.
    kept_back = sum(p.stat().st_size for p in backup.iterdir() if ".tail-" in p.name or p.name[4:] in moved)
    assert kept_back == row["backed_up_bytes"]
    reports = list(verify_targets([discover(str(part))], VerifyOptions(jobs=1)))
    assert reports[0].last_offset == row["new_log_end_offset"] - 1
    assert [f for r in reports for f in r.findings if f.severity >= Severity.WARNING] == []
    epochs = decode_leader_epoch_checkpoint((part / "leader-epoch-checkpoint").read_bytes()).entries
    assert [(e.epoch, e.start_offset) for e in epochs] == [(0, 0)]
    assert kdump("restore", str(backup)).exit_code == 0
    assert file_hashes(part) == damaged


def test_keeping_later_segments_is_explicit_and_names_the_hole(
    three_segments: Path, tmp_path: Path, kdump: Kdump
) -> None:
    part = three_segments
    middle = part / "00000000000000000040.log"
    flip_crc_byte(-1).apply(middle)
    damaged = file_hashes(part)
    cut = log_entries(middle.read_bytes())[-1].position
    (plan,) = plan_trim_tail(discover(str(part)), drop_later_segments=False)
    assert (plan.cut_position, plan.removed_segments, plan.moved_files) == (cut, 0, ())
    assert plan.offset_hole == (70, 79)
    assert plan.new_log_end_offset == 120  # the later segment still ends the log
    dry = kdump("trim-tail", "--keep-later-segments", str(part))
    assert "leaves an offset hole 70..79" in dry.stdout
    assert "which no broker produces" in dry.stdout

    keep = tmp_path / "keep"
    assert (
        kdump("trim-tail", "--apply", "--keep-later-segments", "--backup-dir", str(keep), str(part)).exit_code
        == 0
    )
    assert middle.stat().st_size == cut
    assert (part / "00000000000000000080.log").exists()
    reports = list(verify_targets([discover(str(part))], VerifyOptions(jobs=1)))
    assert reports[0].last_offset == 119
    holes = [f for r in reports for f in r.findings if f.code == "offset-hole"]
    assert [(f.offset, f.details["gap"], f.severity) for f in holes] == [(70, 10, Severity.WARNING)]
    assert kdump("restore", str(keep)).exit_code == 0
    assert file_hashes(part) == damaged


# --- lock refusal ---------------------------------------------------------------------------------


def test_trim_refuses_while_another_process_holds_the_log_dir_lock(corpus_root: Path, tmp_path: Path) -> None:
    log_dir = make_log_dir(tmp_path / "data", {"txn-1": corpus_root / "kafka-3.8.0" / "txn-1"})
    part = log_dir / "txn-1"
    append_garbage(100, seed=9).apply(_last_log(part))
    before = tree_state(tmp_path)
    with held_lock(log_dir) as holder:
        result = run_kdump("trim-tail", "--apply", str(part))
        assert result.returncode == 4, result.stderr
        assert f"pid {holder.pid}" in result.stderr
        assert "stop the broker" in result.stderr
        backup = tmp_path / "some-backup"
        assert run_kdump("trim-tail", "--apply", "--to-offset", "560", str(part)).returncode == 4
        assert run_kdump("restore", str(backup)).returncode == 3  # the backup dir does not exist
    assert tree_state(tmp_path) == before
    assert run_kdump("trim-tail", "--apply", str(part)).returncode == 0


def test_restore_refuses_while_the_lock_is_held(corpus_root: Path, tmp_path: Path, kdump: Kdump) -> None:
    log_dir = make_log_dir(tmp_path / "data", {"txn-1": corpus_root / "kafka-3.8.0" / "txn-1"})
    part = log_dir / "txn-1"
    append_zeros(100).apply(_last_log(part))
    damaged = file_hashes(part)
    backup = tmp_path / "backup"
    assert kdump("trim-tail", "--apply", "--backup-dir", str(backup), str(part)).exit_code == 0
    trimmed = file_hashes(part)
    with held_lock(log_dir):
        assert run_kdump("restore", str(backup)).returncode == 4
    assert file_hashes(part) == trimmed
    assert run_kdump("restore", str(backup)).returncode == 0
    assert file_hashes(part) == damaged


# --- property: random damage, trim, verify -------------------------------------------------------------

_BUILT: dict[str, bytes] = {}


def _built_segment() -> bytes:
    if "log" not in _BUILT:
        with tempfile.TemporaryDirectory() as tmp:
            (log,) = build_partition(Path(tmp) / "p-0", segments=1, batches_per_segment=10, value_size=150)
            _BUILT["log"] = log.read_bytes()
    return _BUILT["log"]


@st.composite
def tail_damages(draw: st.DrawFn) -> Damage:
    """Damage of the kind recovery truncates: anything that breaks framing or a checksum, or is appended.

    (Rewriting a batch's base offset or leader epoch keeps its checksum valid: that is offset-regression
    territory, repaired with --to-offset, not by trimming a tail.)
    """
    data = _built_segment()
    entries = log_entries(data)
    n = len(entries)
    idx = st.integers(0, n - 1)
    covered = st.builds(
        lambda i, frac: entries[i].position + 21 + int(frac * (entries[i].size - 22)), idx, st.floats(0, 1)
    )
    options = [
        st.builds(truncate_at, st.integers(0, len(data))),
        st.builds(flip_bit, covered, st.integers(0, 7)),
        st.builds(lambda start: zero_range(start), covered),
        st.builds(
            lambda start, n: zero_range(start, min(start + n, len(data))), covered, st.integers(1, 300)
        ),
        st.builds(append_garbage, st.integers(1, 2000), st.integers(0, 100)),
        st.builds(append_zeros, st.integers(1, 5000)),
        st.builds(garble_length, idx, st.integers(-(2**31), 2**31 - 1)),
        st.builds(set_magic, idx, st.sampled_from([0, 1, 3, 7, 127, 255])),
    ]
    first = draw(st.one_of(options))
    if draw(st.booleans()):
        return first + draw(st.sampled_from([append_zeros(100), append_garbage(50, 1), truncate_tail_safe()]))
    return first


def truncate_tail_safe() -> Damage:
    return Damage("truncate_tail(7)", lambda d: d[: max(len(d) - 7, 0)])


@settings(max_examples=30, deadline=None, database=None)
@given(damage=tail_damages())
def test_property_random_damage_then_trim_tail_leaves_no_log_errors(damage: Damage) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        part = Path(tmp) / "p-0"
        build_partition(part, segments=1, batches_per_segment=10, value_size=150)
        log = part / "00000000000000000000.log"
        damage.apply(log)
        damaged = file_hashes(part)
        (plan,) = plan_trim_tail(discover(str(part)))
        result = apply_trim_tail(plan, backup_dir=Path(tmp) / "backup")
        findings = _verify(part)
        log_errors = [f for f in findings if f.severity == Severity.ERROR and f.kind.where.startswith("log")]
        assert log_errors == [], damage
        if plan.needed:
            # trim-tail rebuilt the indexes of the segment it cut. (A log cut by the damage itself exactly
            # at a batch boundary needs no trim: its stale indexes are reindex's job, and verify says so.)
            assert [f for f in findings if f.severity >= Severity.WARNING] == [], damage
        kept = log_entries(log.read_bytes(), recovery=True)
        assert log.stat().st_size == (kept[-1].end if kept else 0)
        if result.backup_dir is not None:
            restore(result.backup_dir)
            assert file_hashes(part) == damaged


class _Stop(Exception):
    """Raised at the N-th step of an apply: the files are left as a kill there leaves them."""


def test_a_mid_log_trim_stopped_at_any_step_is_finished_by_a_second_run(
    three_segments: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every step of removing later segments, snapshots and epochs comes before the cut, so a run
    stopped anywhere leaves the damage in place, and running again ends where one run ends."""
    part = three_segments
    (part / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint([(0, 0), (3, 75)]))
    flip_crc_byte(-1).apply(part / "00000000000000000040.log")
    reference = copy_tree(part, tmp_path / "reference")
    (plan,) = plan_trim_tail(discover(str(reference)))
    apply_trim_tail(plan, tmp_path / "reference-backup")
    expected = file_hashes(reference)

    stopped_at = 0
    while True:
        stopped_at += 1
        work = copy_tree(part, tmp_path / f"run-{stopped_at}" / part.name)
        calls = 0

        def stop(name: str, at: int = stopped_at) -> None:
            nonlocal calls
            calls += 1
            if calls == at:
                raise _Stop(name)

        monkeypatch.setattr(safety, "fault_point", stop)
        try:
            (plan,) = plan_trim_tail(discover(str(work)))
            apply_trim_tail(plan, tmp_path / f"run-{stopped_at}" / "backup-1")
            stopped = False
        except _Stop:
            stopped = True
        monkeypatch.setattr(safety, "fault_point", lambda name: None)
        (plan,) = plan_trim_tail(discover(str(work)))
        apply_trim_tail(plan, tmp_path / f"run-{stopped_at}" / "backup-2")
        assert file_hashes(work) == expected, f"stopped at step {stopped_at}"
        if not stopped:
            break
    assert stopped_at > 10  # index rewrites, 5 moves, the epoch checkpoint and the cut were each stopped
