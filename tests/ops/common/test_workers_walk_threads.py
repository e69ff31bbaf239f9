"""Forked workers share the cores out: each worker's compiled walk gets its share of the threads (1,
no helper thread, where there is a worker per core), not every core again."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kdump.formats import fast_walk
from kdump.ops.common.workers import process_pools_work, worker_pool


def _walk_threads() -> tuple[int, int | None]:
    return fast_walk.threads(), fast_walk.thread_bytes()


@pytest.fixture
def four_threads() -> Iterator[None]:
    saved = (fast_walk.threads(), fast_walk.thread_bytes())
    fast_walk.set_threads(4, 12345)
    yield
    fast_walk.set_threads(*saved)


@pytest.mark.skipif(not process_pools_work(), reason="no worker processes here (no /dev/shm)")
@pytest.mark.parametrize(("jobs", "expected"), [(1, 4), (2, 2), (3, 1), (8, 1)])
def test_a_worker_walks_on_its_share_of_the_threads(four_threads: None, jobs: int, expected: int) -> None:
    with worker_pool(jobs) as pool:
        assert pool.submit(_walk_threads).result() == (expected, 12345)
    assert _walk_threads() == (4, 12345)  # the owner keeps its own
