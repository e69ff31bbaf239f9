"""`kdump.ops.replicas.compare` on replica sets built from the corpus's real segments."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from replica_sets import (
    append_foreign,
    batches,
    copy_partition,
    cut_at_batch,
    drop_head,
    set_epochs,
    write_epochs,
)

from kdump.model.partition import PartitionDir
from kdump.ops.replicas.compare import PartitionComparison, compare_partition, exit_code
from kdump.ops.replicas.epochs import end_offset_for

# Finding codes these tests produce (tests/test_findings_catalog.py checks every code has a test).
COVERED_CODES = frozenset({"leader-epoch-checkpoint-contradicted"})


@pytest.fixture
def txn(corpus_root: Path, tmp_path: Path) -> Path:
    """A writable copy of the real partition txn-1 (transactions, three segments in the full corpus)."""
    return copy_partition(corpus_root / "kafka-3.8.0" / "txn-1", tmp_path / "b1" / "txn-1")


@pytest.fixture
def foreign(corpus_root: Path) -> Path:
    """Real batches of another partition, to stand for what another leader wrote."""
    return corpus_root / "kafka-3.8.0" / "timestamps-0"


def replica(src: Path, tmp_path: Path, broker: str) -> Path:
    return copy_partition(src, tmp_path / broker / src.name)


def run(*parts: Path, leader: Path | None = None) -> PartitionComparison:
    labels = [str(p) for p in parts]
    return compare_partition(
        [PartitionDir.load(p) for p in parts], labels, None if leader is None else str(leader)
    )


def records_from(part: Path, first: int) -> int:
    total = 0
    for log, e in batches(part):
        if e.base_offset is not None and e.base_offset >= first:
            total += struct.unpack_from(">i", log.read_bytes(), e.position + 57)[0]
    return total


def test_identical_replicas_agree(txn: Path, tmp_path: Path) -> None:
    other = replica(txn, tmp_path, "b2")
    result = run(txn, other)
    assert result.agree
    assert not result.divergences
    assert not result.findings
    pair = result.pairs[0]
    assert pair.common_last_offset == batches(txn)[-1][1].last_offset
    assert all(t.records_removed == 0 for t in result.truncations)
    assert exit_code([result]) == 0


def test_lag(txn: Path, tmp_path: Path) -> None:
    follower = replica(txn, tmp_path, "b2")
    cut = cut_at_batch(follower, -3)
    result = run(txn, follower, leader=txn)
    [d] = result.divergences
    assert d.kind == "lag"
    assert (d.first_offset, d.last_offset) == (cut, batches(txn)[-1][1].last_offset)
    leader_side, follower_side = d.sides
    assert leader_side.records == records_from(txn, cut)
    assert follower_side.batches == 0
    assert result.pairs[0].common_last_offset == cut - 1
    # The follower is a prefix: it truncates nothing and fetches the rest.
    [t] = result.truncations
    assert t.replica == str(follower)
    assert t.truncation.truncate_to == cut
    assert t.records_removed == 0
    assert exit_code([result]) == 1


def test_conflict_at_the_head(txn: Path, foreign: Path, tmp_path: Path) -> None:
    """An unclean election: the new leader (epoch 1) wrote other batches where the old one had its tail."""
    new_leader = replica(txn, tmp_path, "b2")
    cut = cut_at_batch(new_leader, -3)
    first, _last, written = append_foreign(new_leader, foreign, 4, epoch=1)
    write_epochs(new_leader, [(0, batches(txn)[0][1].base_offset or 0), (1, cut)])
    result = run(txn, new_leader, leader=new_leader)
    [d] = result.divergences
    assert d.kind == "conflict"
    assert d.first_offset == cut == first
    old, new = d.sides
    assert old.epochs == (0,)
    assert new.epochs == (1,)
    assert new.records == written
    assert old.records == records_from(txn, cut)
    # The old leader asks for epoch 0; the new leader answers: epoch 0 ends at `cut`.
    [t] = result.truncations
    assert t.replica == str(txn)
    assert t.truncation.truncate_to == cut
    assert t.truncation.requests[0][:3] == (0, 0, cut)
    assert t.records_removed == records_from(txn, cut)
    assert t.dump_command == f"kdump dump --records --from-offset {cut} --to-offset {old.last_offset} {txn}"
    assert exit_code([result]) == 1


def test_conflict_in_the_middle_of_a_segment(txn: Path, foreign: Path, tmp_path: Path) -> None:
    every = batches(txn)
    log, _ = every[len(every) // 2]
    in_segment = [i for i, (lg, _e) in enumerate(every) if lg == log]
    middle = in_segment[len(in_segment) // 2]
    assert middle not in (in_segment[0], in_segment[-1])
    other = replica(txn, tmp_path, "b2")
    cut = cut_at_batch(other, middle)
    append_foreign(other, foreign, 2, epoch=3)
    result = run(txn, other)
    [d] = result.divergences
    assert d.kind == "conflict"
    assert d.first_offset == cut
    assert result.pairs[0].common_last_offset == cut - 1
    assert result.pairs[0].common_epoch == 0
    # Each way: whoever leads, the other loses its side of the conflict (no high watermark is known
    # here, so when the leader cannot answer the follower's epoch the point is unknown).
    by_follower = {t.replica: t for t in result.truncations}
    assert by_follower[str(txn)].truncation.truncate_to == cut
    assert by_follower[str(other)].truncation.truncate_to == cut


def test_compare_is_symmetric(txn: Path, foreign: Path, tmp_path: Path) -> None:
    other = replica(txn, tmp_path, "b2")
    cut_at_batch(other, -2)
    append_foreign(other, foreign, 3, epoch=2)

    def ranges(r: PartitionComparison) -> set[tuple[str, int, int]]:
        return {(d.kind, d.first_offset, d.last_offset) for d in r.divergences}

    ab, ba = run(txn, other), run(other, txn)
    assert ranges(ab) == ranges(ba)
    assert ab.divergences[0].sides == tuple(reversed(ba.divergences[0].sides))


def test_several_epochs_truncate_to_the_largest_common_epoch(
    txn: Path, foreign: Path, tmp_path: Path
) -> None:
    every = batches(txn)
    n = len(every)
    s1, s2 = (every[n // 3][1].base_offset or 0), (every[2 * n // 3][1].base_offset or 0)
    start = every[0][1].base_offset or 0
    set_epochs(txn, s1, 2)
    set_epochs(txn, s2, 5)
    write_epochs(txn, [(0, start), (2, s1), (5, s2)])
    follower = replica(txn, tmp_path, "b2")
    cut_at_batch(follower, 2 * n // 3)
    set_epochs(follower, s1, 3)  # a leader the other replica never followed
    append_foreign(follower, foreign, 2, epoch=4)
    write_epochs(follower, [(0, start), (3, s1), (4, s2)])
    result = run(txn, follower, leader=txn)
    [t] = result.truncations
    # Asks 4: the leader answers (2, s2); the follower does not know 2, truncates to the end of its
    # epoch 0 (s1) and asks 0: the leader answers (0, s1). Two rounds, truncation at s1.
    assert [r[:2] for r in t.truncation.requests] == [(4, 2), (0, 0)]
    assert t.truncation.truncate_to == s1
    assert t.epochs_removed == (3, 4)
    kinds = {d.kind for d in result.divergences}
    assert kinds == {"conflict"}


def test_divergent_leader_epoch_checkpoint(txn: Path, tmp_path: Path) -> None:
    """An older (or foreign) checkpoint: it starts epoch 1 where the batches still carry epoch 0."""
    other = replica(txn, tmp_path, "b2")
    every = batches(other)
    mid = every[len(every) // 2][1]
    write_epochs(other, [(0, every[0][1].base_offset or 0), (1, mid.base_offset or 0)])
    result = run(txn, other)
    assert not result.divergences
    [f] = result.findings
    assert f.code == "leader-epoch-checkpoint-contradicted"
    assert f.offset == mid.base_offset
    assert f.file == str(other / "leader-epoch-checkpoint")
    assert exit_code([result]) == 1
    # The broker trusts the checkpoint: as a follower of the other, this replica asks for epoch 1,
    # which the leader never had; the leader answers "epoch 0 ends at my log end", the follower's
    # checkpoint ends epoch 0 at `mid`, so it throws away records the leader holds too.
    t = next(t for t in result.truncations if t.replica == str(other))
    assert t.truncation.method == "leader-epoch"
    assert t.truncation.truncate_to == mid.base_offset
    assert t.records_removed == records_from(other, mid.base_offset or 0) > 0


def test_checkpoint_entry_inside_a_batch(txn: Path, tmp_path: Path) -> None:
    every = batches(txn)
    wide = next(e for _, e in every if e.base_offset is not None and e.last_offset > e.base_offset)
    assert wide.base_offset is not None
    write_epochs(txn, [(0, every[0][1].base_offset or 0), (1, wide.base_offset + 1)])
    set_epochs(txn, wide.base_offset + 1, 1)
    result = run(txn, replica(txn, tmp_path, "b2"))
    codes = [f.code for f in result.findings if f.file.startswith(str(txn))]
    assert codes == ["leader-epoch-checkpoint-contradicted"]


def test_retention_gap_below_the_log_start(txn: Path, tmp_path: Path) -> None:
    other = replica(txn, tmp_path, "b2")
    start = drop_head(other, 2)
    result = run(txn, other)
    [d] = result.divergences
    assert d.kind == "gap"
    assert d.last_offset == start - 1
    assert d.sides[1].batches == 0
    assert "log start offset" in d.reason
    # Retention is not a conflict: the common prefix runs on past it.
    assert result.pairs[0].common_last_offset == batches(txn)[-1][1].last_offset


def test_compaction_is_a_gap(corpus_root: Path, tmp_path: Path) -> None:
    """The cleaner's leftovers (`.log.deleted`) are the uncompacted originals of a segment."""
    src = corpus_root / "kafka-3.8.0" / "compacted-sparse-0"
    if not (src / "00000000000000001500.log.deleted").exists():
        pytest.skip("the bundled subset lacks the cleaner's leftovers of compacted-sparse-0")
    cleaned = replica(src, tmp_path, "b1")
    original = replica(src, tmp_path, "b2")
    for p in original.glob("*.log"):
        if (original / (p.name + ".deleted")).exists():
            p.unlink()
    for p in original.glob("*.log.deleted"):
        p.rename(p.with_name(p.name.removesuffix(".deleted")))
    result = run(cleaned, original)
    assert result.divergences
    assert {d.kind for d in result.divergences} == {"gap"}, [(d.kind, d.reason) for d in result.divergences]


def test_damage_is_uncomparable_not_divergence(txn: Path, tmp_path: Path) -> None:
    other = replica(txn, tmp_path, "b2")
    every = batches(other)
    log, victim = every[len(every) // 2]
    data = bytearray(log.read_bytes())
    data[victim.position + 70] ^= 0xFF
    log.write_bytes(bytes(data))
    result = run(txn, other)
    assert not result.divergences
    [u] = result.uncomparable
    assert u.replica == str(other)
    assert u.first_offset == victim.base_offset
    assert u.reason == "crc-mismatch"
    assert u.last_offset == victim.last_offset
    assert [f.code for f in result.findings] == ["crc-mismatch"]
    assert exit_code([result]) == 3


def test_end_offset_for_follows_kafka() -> None:
    cache = [(0, 0), (2, 10), (5, 20)]
    assert end_offset_for(cache, 5, 30) == (5, 30)  # the latest epoch: the log end
    assert end_offset_for(cache, 3, 30) == (2, 20)  # unknown epoch: the floor, ended by the next
    assert end_offset_for(cache, 0, 30) == (0, 10)
    assert end_offset_for(cache, 9, 30) == (-1, -1)  # above every epoch: undefined
    assert end_offset_for([(3, 7)], 1, 30) == (1, 7)  # below every epoch: the first start
    assert end_offset_for(cache, -1, 30) == (-1, -1)


def epochs_by_offset(part: Path) -> dict[int, int]:
    """Brute force, from the bytes: the leader epoch of the batch holding each offset."""
    out = {}
    for log, e in batches(part):
        epoch = struct.unpack_from(">i", log.read_bytes(), e.position + 12)[0]
        for offset in range(e.base_offset if e.base_offset is not None else e.last_offset, e.last_offset + 1):
            out[offset] = epoch
    return out


def brute_force_truncation(follower: Path, leader: Path) -> int:
    """The first offset the follower holds under another epoch than the leader (or that the leader
    lacks): from there on its records were written by a leader the other never followed."""
    mine, theirs = epochs_by_offset(follower), epochs_by_offset(leader)
    for offset in sorted(mine):
        if theirs.get(offset) != mine[offset]:
            return offset
    return max(mine) + 1


@pytest.mark.parametrize("scenario", ["lag", "conflict-at-head", "conflict-mid-segment", "several-epochs"])
def test_truncation_point_matches_brute_force_on_real_segments(
    scenario: str, txn: Path, foreign: Path, tmp_path: Path
) -> None:
    every = batches(txn)
    n = len(every)
    start = every[0][1].base_offset or 0
    other = replica(txn, tmp_path, "b2")
    if scenario == "lag":
        cut_at_batch(other, -3)
    elif scenario == "conflict-at-head":
        cut = cut_at_batch(other, -3)
        append_foreign(other, foreign, 3, epoch=1)
        write_epochs(other, [(0, start), (1, cut)])
    elif scenario == "conflict-mid-segment":
        cut = cut_at_batch(other, n // 2)
        append_foreign(other, foreign, 2, epoch=4)
        write_epochs(other, [(0, start), (4, cut)])
    else:
        s1, s2 = (every[n // 3][1].base_offset or 0), (every[2 * n // 3][1].base_offset or 0)
        set_epochs(txn, s1, 2)
        set_epochs(txn, s2, 5)
        write_epochs(txn, [(0, start), (2, s1), (5, s2)])
        set_epochs(other, s1, 3)
        cut_at_batch(other, 2 * n // 3)
        append_foreign(other, foreign, 2, epoch=4)
        write_epochs(other, [(0, start), (3, s1), (4, s2)])
    result = run(txn, other)
    for t in result.truncations:
        follower, leader = Path(t.replica), Path(t.leader)
        assert t.truncation.truncate_to == brute_force_truncation(follower, leader), (t.leader, t.replica)
