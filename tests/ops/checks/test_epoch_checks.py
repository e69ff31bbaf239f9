"""verify's leader-epoch check against a checkpoint the broker truncated at the log start offset.

After DeleteRecords (or retention, or in `__cluster_metadata` a snapshot that became the oldest) the
broker's `LeaderEpochFileCache.truncateFromStart` keeps the entry covering the new log start offset,
its start moved up to it, while the segment holding the earlier batches stays on disk. Such a
checkpoint is what a healthy broker writes: verify must be quiet on it, and still fail a checkpoint
that is wrong. The batches are a real broker's (the corpus' `txn-1` and `__cluster_metadata-0`);
for the multi-epoch cases their leader epochs, which no checksum covers, are set as a broker would
have written them across two leader changes.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from corruptions import copy_tree, log_entries, make_log_dir

from kdump.findings import Finding, Severity
from kdump.formats.checkpoints import encode_leader_epoch_checkpoint
from kdump.model.log_dir import discover
from kdump.ops.checks import log_dir_stream
from kdump.ops.checks.epochs import truncate_from_start
from kdump.ops.checks.verify import VerifyOptions, verify_targets

EPOCH_AT = 12  # partitionLeaderEpoch in a v2 batch header, outside the checksum


def verify(path: Path) -> list[Finding]:
    reports = list(verify_targets([discover(str(path))], VerifyOptions(jobs=1)))
    return [f for r in reports for f in r.findings]


def epoch_findings(path: Path) -> list[Finding]:
    return [f for f in verify(path) if f.code == "leader-epoch-mismatch"]


def _set_epochs(part: Path, k1: int, k2: int) -> list[int]:
    """Epoch 0 for batches [0, k1), 1 for [k1, k2), 2 after; returns every batch's base offset."""
    bases: list[int] = []
    i = 0
    for log in sorted(part.glob("*.log")):
        data = bytearray(log.read_bytes())
        for e in log_entries(data):
            assert e.magic == 2
            assert e.base_offset is not None
            epoch = 0 if i < k1 else 1 if i < k2 else 2
            struct.pack_into(">i", data, e.position + EPOCH_AT, epoch)
            bases.append(e.base_offset)
            i += 1
        log.write_bytes(bytes(data))
    return bases


class Epochs:
    """A copy of txn-1 whose batches carry epochs 0, 1, 2, and the offsets that matter."""

    def __init__(self, dst: Path) -> None:
        # The sample's txn-1 is the corpus partition whole, on every machine (the bundled subset
        # keeps only its last segment, too few batches for three epochs).
        self.part = copy_tree(Path(__file__).resolve().parents[3] / "samples" / "logdir" / "txn-1", dst)
        n = sum(len(log_entries(p.read_bytes())) for p in self.part.glob("*.log"))
        assert n >= 12
        k1, k2 = n // 3, 2 * n // 3
        self.bases = bases = _set_epochs(self.part, k1, k2)
        self.first, self.b1, self.b2 = bases[0], bases[k1], bases[k2]
        self.full = [(0, self.first), (1, self.b1), (2, self.b2)]
        # DeleteRecords to an offset inside epoch 1 (one past a batch's base: inside it, or its next).
        self.log_start = bases[k1 + 2] + 1
        assert self.b1 < self.log_start < self.b2

    def write_checkpoint(self, entries: list[tuple[int, int]]) -> None:
        (self.part / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint(entries))


@pytest.fixture
def epochs(tmp_path: Path) -> Epochs:
    e = Epochs(tmp_path / "alone" / "txn-1")
    e.write_checkpoint(e.full)
    assert epoch_findings(e.part) == []  # the whole history is consistent
    return e


def _in_log_dir(e: Epochs, tmp_path: Path, log_start: int) -> Path:
    log_dir = make_log_dir(tmp_path / "logdir", {"txn-1": e.part})
    (log_dir / "log-start-offset-checkpoint").write_text(f"0\n1\ntxn 1 {log_start}\n")
    return log_dir / "txn-1"


def test_truncate_from_start_is_the_brokers() -> None:
    # LeaderEpochFileCache.truncateFromStart: exclusive, the covering entry moved up to the start.
    entries = [(0, 0), (1, 100), (2, 200)]
    assert truncate_from_start(entries, 150) == [(1, 150), (2, 200)]
    assert truncate_from_start(entries, 100) == [(1, 100), (2, 200)]
    assert truncate_from_start(entries, 0) == entries
    assert truncate_from_start(entries, 250) == [(2, 250)]
    assert truncate_from_start([(3, 500)], 100) == [(3, 500)]


def test_truncated_checkpoint_with_the_log_dirs_log_start_is_quiet(epochs: Epochs, tmp_path: Path) -> None:
    epochs.write_checkpoint(truncate_from_start(epochs.full, epochs.log_start))
    assert epochs.full[0] not in truncate_from_start(epochs.full, epochs.log_start)
    part = _in_log_dir(epochs, tmp_path, epochs.log_start)
    findings = verify(part)
    assert [f for f in findings if f.severity >= Severity.WARNING] == []


def test_truncated_checkpoint_of_a_partition_given_alone_is_quiet(epochs: Epochs) -> None:
    # No log dir says where the log starts: the checkpoint's first entry is taken as the log start,
    # since the batches agree that its epoch was in force there.
    epochs.write_checkpoint(truncate_from_start(epochs.full, epochs.log_start))
    assert epoch_findings(epochs.part) == []


def test_stale_checkpoint_not_yet_truncated_is_quiet(epochs: Epochs, tmp_path: Path) -> None:
    # The truncation is flushed asynchronously; the broker truncates again when it loads the log.
    part = _in_log_dir(epochs, tmp_path, epochs.log_start)
    assert epoch_findings(part) == []


def test_a_lagging_log_start_checkpoint_does_not_contradict_it(epochs: Epochs, tmp_path: Path) -> None:
    # The broker flushes the truncated epoch checkpoint at once and the log start checkpoint once a
    # minute: a copy in between holds the old log start. That is a healthy broker's state.
    epochs.write_checkpoint(truncate_from_start(epochs.full, epochs.log_start))
    part = _in_log_dir(epochs, tmp_path, epochs.first)
    reports = list(verify_targets([discover(str(part))], VerifyOptions(jobs=1)))
    assert [f for r in reports for f in r.findings if f.severity >= Severity.WARNING] == []


def test_after_a_clean_shutdown_the_recorded_log_start_is_trusted(epochs: Epochs, tmp_path: Path) -> None:
    # A clean shutdown writes the log start checkpoint last: it says the log starts at the first
    # batch, so epochs 0 and 1 below the checkpoint's first entry are genuinely missing from it.
    epochs.write_checkpoint(truncate_from_start(epochs.full, epochs.log_start))
    part = _in_log_dir(epochs, tmp_path, epochs.first)
    (part.parent / ".kafka_cleanshutdown").write_text("")
    reports = list(verify_targets([discover(str(part))], VerifyOptions(jobs=1)))
    hits = [f for r in reports for f in r.findings if f.code == "leader-epoch-mismatch"]
    assert sorted((f.offset, f.severity) for f in hits) == [
        (epochs.first, Severity.ERROR),
        (epochs.b1, Severity.ERROR),
    ]
    assert max(r.worst() or Severity.INFO for r in reports) == Severity.ERROR  # verify exits 1


def test_an_epoch_missing_above_the_log_start_fails(epochs: Epochs, tmp_path: Path) -> None:
    epochs.write_checkpoint([(1, epochs.log_start)])  # epoch 2 from b2 is missing
    part = _in_log_dir(epochs, tmp_path, epochs.log_start)
    reports = list(verify_targets([discover(str(part))], VerifyOptions(jobs=1)))
    hits = [f for r in reports for f in r.findings if f.code == "leader-epoch-mismatch"]
    assert [(f.offset, f.severity) for f in hits] == [(epochs.b2, Severity.ERROR)]
    assert "epoch 2" in hits[0].message
    assert max(r.worst() or Severity.INFO for r in reports) == Severity.ERROR  # verify exits 1


def test_wrong_entry_above_the_log_start_still_fails(epochs: Epochs) -> None:
    wrong = [(1, epochs.log_start), (2, epochs.b2 + 1)]  # epoch 2 really starts at b2
    epochs.write_checkpoint(wrong)
    hits = epoch_findings(epochs.part)
    assert [(f.offset, f.severity) for f in hits] == [(epochs.b2, Severity.ERROR)]
    assert f"batches carry it from {epochs.b2}" in hits[0].message


def test_first_entry_whose_epoch_the_batches_contradict_still_fails(epochs: Epochs) -> None:
    # Epoch 2 was not in force at the log start the checkpoint implies: no truncation gives this.
    epochs.write_checkpoint([(2, epochs.log_start)])
    hits = epoch_findings(epochs.part)
    assert hits
    assert all(f.severity == Severity.ERROR for f in hits)


def test_metadata_log_truncated_behind_its_oldest_snapshot(corpus_root: Path, tmp_path: Path) -> None:
    part = copy_tree(corpus_root / "kafka-3.8.0" / "__cluster_metadata-0", tmp_path / "__cluster_metadata-0")
    bases = [e.base_offset for p in sorted(part.glob("*.log")) for e in log_entries(p.read_bytes())]
    assert len(bases) > 10
    snapshot_at = bases[len(bases) // 2]
    (epoch, start) = encode_and_check_single_epoch(part)
    assert start <= bases[0] < snapshot_at
    # KafkaMetadataLog moved the log start to the snapshot; the cache was truncated there.
    (part / f"{snapshot_at:020d}-{epoch:010d}.checkpoint").write_bytes(b"")
    (part / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint([(epoch, snapshot_at)]))
    assert epoch_findings(part) == []
    # An epoch the batches never carried is still wrong.
    (part / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint([(epoch + 1, snapshot_at)]))
    assert [f.severity for f in epoch_findings(part)] == [Severity.ERROR]


def encode_and_check_single_epoch(part: Path) -> tuple[int, int]:
    """The metadata log's one checkpoint entry (one controller, one epoch)."""
    lines = (part / "leader-epoch-checkpoint").read_text().split()
    assert lines[:2] == ["0", "1"]
    return int(lines[2]), int(lines[3])


def test_a_streamed_log_dir_answers_log_start_and_clean_shutdown_from_its_listing(
    epochs: Epochs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The streamed verify asks the log dir's one listing, not the disk per partition, whether a
    # log-start-offset-checkpoint and a clean-shutdown marker are there: the same verdicts.
    monkeypatch.setattr(log_dir_stream, "STREAM_MIN", 1)
    epochs.write_checkpoint(truncate_from_start(epochs.full, epochs.log_start))
    part = _in_log_dir(epochs, tmp_path, epochs.first)

    def hits() -> list[tuple[int | None, Severity]]:
        target = discover(str(part.parent), lazy=True)
        assert target.entries is not None  # streamed
        reports = list(log_dir_stream.verify_streamed([target], VerifyOptions(jobs=1)))
        return sorted(
            (f.offset, f.severity) for r in reports for f in r.findings if f.code == "leader-epoch-mismatch"
        )

    assert hits() == []  # a lagging log start checkpoint: a healthy broker's state
    (part.parent / ".kafka_cleanshutdown").write_text("")
    assert hits() == [(epochs.first, Severity.ERROR), (epochs.b1, Severity.ERROR)]  # trusted
    (part.parent / "log-start-offset-checkpoint").unlink()
    assert hits() == []  # no log start recorded: the checkpoint's first entry is the start
