"""Properties of compare: the truncation point against a brute-force model of the epoch rule, a
replica always agrees with itself, and compare(a, b) describes the same ranges as compare(b, a)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replica_sets import append_foreign, batches, copy_partition, cut_at_batch, set_epochs, write_epochs

from kdump.model.partition import PartitionDir
from kdump.ops.replicas.compare import compare_partition
from kdump.ops.replicas.epochs import truncation_point

# --- the epoch rule, brute force -------------------------------------------------------------------


def epoch_at(cache: list[tuple[int, int]], offset: int) -> int | None:
    """The epoch that wrote `offset`, read off the cache: the last entry starting at or before it."""
    found = None
    for epoch, start in cache:
        if start <= offset:
            found = epoch
    return found


def brute_force_truncation(
    follower: list[tuple[int, int]], follower_leo: int, leader: list[tuple[int, int]], leader_leo: int
) -> int:
    """The first offset whose epoch differs between the two logs (or that the leader does not have):
    everything from there on the follower was written by a leader the other never followed."""
    for offset in range(follower_leo):
        if offset >= leader_leo or epoch_at(follower, offset) != epoch_at(leader, offset):
            return offset
    return follower_leo


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[tuple[int, int]], int, list[tuple[int, int]], int]:
    """Two replicas' epoch caches and log end offsets: a shared history, then each its own leaders.

    An epoch number belongs to one leader, so the two branches never share an epoch after the split.
    """
    n_common = draw(st.integers(1, 4))
    common_epochs = sorted(draw(st.sets(st.integers(0, 20), min_size=n_common, max_size=n_common)))
    starts = [0, *sorted(draw(st.sets(st.integers(1, 60), min_size=n_common - 1, max_size=n_common - 1)))]
    common = list(zip(common_epochs, starts, strict=True))
    split = starts[-1] + draw(st.integers(0, 20))
    later = sorted(draw(st.sets(st.integers(common_epochs[-1] + 1, 60), max_size=6)))
    mine = draw(st.lists(st.booleans(), min_size=len(later), max_size=len(later)))

    def branch(epochs: list[int]) -> tuple[list[tuple[int, int]], int]:
        cache = list(common)
        at = split + draw(st.integers(0, 10))
        for e in epochs:
            at += draw(st.integers(0, 10))
            if at > cache[-1][1]:
                cache.append((e, at))
        return cache, cache[-1][1] + draw(st.integers(1, 10))

    leader, leader_leo = branch([e for e, m in zip(later, mine, strict=True) if m])
    follower, follower_leo = branch([e for e, m in zip(later, mine, strict=True) if not m])
    return follower, follower_leo, leader, leader_leo


@given(histories())
@settings(max_examples=400, deadline=None)
def test_truncation_point_matches_the_brute_force_model(
    history: tuple[list[tuple[int, int]], int, list[tuple[int, int]], int],
) -> None:
    follower, follower_leo, leader, leader_leo = history
    # Becoming leader assigns a new epoch, above all, at the leader's log end.
    new_epoch = max(e for e, _ in follower + leader) + 1
    t = truncation_point(follower, follower_leo, [*leader, (new_epoch, leader_leo)], leader_leo, None)
    assert t.method == "leader-epoch"
    assert t.truncate_to == brute_force_truncation(follower, follower_leo, leader, leader_leo)


# --- properties over replicas built from real segments --------------------------------------------

SOURCES = ("kafka-3.8.0/txn-1", "kafka-3.8.0/c-none-0", "kafka-3.8.0/compacted-sparse-0")


@st.composite
def replica_changes(draw: st.DrawFn) -> dict[str, int]:
    return {
        "source": draw(st.integers(0, len(SOURCES) - 1)),
        "cut": draw(st.integers(1, 9)),  # tenths of the batches kept
        "appended": draw(st.integers(0, 3)),
        "epoch": draw(st.integers(1, 6)),
        "restamp": draw(st.integers(0, 9)),  # tenths: where a later epoch starts on the copy
    }


def build_pair(root: Path, work: Path, change: dict[str, int]) -> tuple[Path, Path]:
    src = root / SOURCES[change["source"]]
    a = copy_partition(src, work / "b1" / src.name)
    b = copy_partition(src, work / "b2" / src.name)
    every = batches(b)
    cut = max(1, len(every) * change["cut"] // 10)
    if cut < len(every):
        cut_at_batch(b, cut)
    if change["appended"]:
        append_foreign(b, root / "kafka-3.8.0" / "txn-1", change["appended"], change["epoch"])
    restamp = every[min(len(every) - 1, len(every) * change["restamp"] // 10)][1].base_offset
    if restamp is not None and change["restamp"]:
        set_epochs(b, restamp, change["epoch"])
        write_epochs(b, [(0, every[0][1].base_offset or 0), (change["epoch"], restamp)])
    return a, b


def ranges(parts: list[Path]) -> set[tuple[str, int, int]]:
    result = compare_partition([PartitionDir.load(p) for p in parts], [str(p) for p in parts])
    return {(d.kind, d.first_offset, d.last_offset) for d in result.divergences}


@given(st.integers(0, len(SOURCES) - 1))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_replica_agrees_with_itself(corpus_root: Path, source: int) -> None:
    part = corpus_root / SOURCES[source]
    result = compare_partition([PartitionDir.load(part)] * 2, [str(part), str(part)])
    assert result.agree
    assert not result.divergences
    assert all(t.records_removed == 0 for t in result.truncations)


@given(replica_changes())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_compare_is_symmetric_and_a_copy_agrees(corpus_root: Path, change: dict[str, int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        a, b = build_pair(corpus_root, Path(tmp), change)
        assert ranges([a, b]) == ranges([b, a])
        # A byte-for-byte copy of either agrees with it.
        twin = copy_partition(b, Path(tmp) / "b3" / b.name)
        assert ranges([b, twin]) == set()
