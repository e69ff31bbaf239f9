"""pytest fixtures for real brokers; each skips with the reason when Java, Maven or the jars are missing.

``KDUMP_SKIP_BROKERS=1`` skips them all (a quick local run). CI's `.ci/run` fetches the releases first
and sets ``KDUMP_REQUIRE_BROKERS=1``, which turns every such skip into a failure there: a broker that
cannot start in CI is a broken run, not a quiet one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from brokers.cluster import BrokerFailed, KafkaCluster
from brokers.releases import NEWEST, Release, ReleaseUnavailable, fetch, java_missing


def skip_or_fail(reason: str) -> NoReturn:
    """Skip with `reason`, or fail where the run requires real brokers (CI)."""
    if os.environ.get("KDUMP_REQUIRE_BROKERS") == "1":
        pytest.fail(f"{reason} (KDUMP_REQUIRE_BROKERS=1)")
    pytest.skip(reason)


def require_release(version: str = NEWEST) -> Release:
    """The release, fetched if needed; skips the calling test, saying why, where it cannot run."""
    if os.environ.get("KDUMP_SKIP_BROKERS") == "1":
        pytest.skip("real Kafka brokers skipped: KDUMP_SKIP_BROKERS=1")
    why = java_missing()
    if why:
        skip_or_fail(f"no real Kafka broker: {why}")
    try:
        return fetch(version)
    except ReleaseUnavailable as exc:
        skip_or_fail(f"no real Kafka broker: {exc}")


@pytest.fixture(scope="session")
def kafka_newest() -> Release:
    """The newest pinned Kafka release's jars."""
    return require_release(NEWEST)


@pytest.fixture
def kafka_single(kafka_newest: Release, tmp_path: Path) -> Iterator[KafkaCluster]:
    """One started KRaft node of the newest release, killed after the test."""
    cluster = KafkaCluster(kafka_newest, tmp_path / "cluster")
    try:
        cluster.format()
        cluster.start()
    except BrokerFailed as exc:
        cluster.kill()
        skip_or_fail(f"a real Kafka {kafka_newest.version} broker did not start here: {exc}")
    with cluster:
        yield cluster
