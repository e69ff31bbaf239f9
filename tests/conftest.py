"""Shared fixtures: the corpus (full or the bundled subset), a CLI runner, builders."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import CORPUS_ROOT, available_corpus_root, full_corpus_available, hide_default_corpus

# Hypothesis' per-example deadline (200 ms) measures the machine's load, not kdump: on a shared
# 2-core runner a busy moment failed correct tests. Examples still run; only wall-clock limits go.
settings.register_profile("kdump", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("kdump")

# KDUMP_CORPUS set elsewhere hides ../shared from every test of this process (tests/corpus.py).
hide_default_corpus()


@pytest.fixture(scope="session")
def corpus_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The full corpus when it is beside the checkout, else the bundled real subset."""
    return available_corpus_root(tmp_path_factory)


@pytest.fixture(scope="session")
def full_corpus() -> Path:
    """The full corpus; tests using it skip with a clear reason when it is absent."""
    from corpus import require_full_corpus

    return require_full_corpus()


@pytest.fixture(scope="session")
def corpus_logdirs(corpus_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus directories as real log dirs: each holds only what a broker's log dir holds
    (its partition directories and `_logdir-files/*`, linked), not the oracles beside them, which
    kdump rightly reports as entries Kafka does not keep in a log dir."""
    root = tmp_path_factory.mktemp("logdirs")
    for corpus_dir in sorted(p for p in corpus_root.iterdir() if p.is_dir()):
        mirror = root / corpus_dir.name
        mirror.mkdir()
        for entry in sorted(corpus_dir.iterdir()):
            if entry.name == "_logdir-files":
                for f in sorted(entry.iterdir()):
                    (mirror / f.name).symlink_to(f)
            elif entry.name != "expected":
                (mirror / entry.name).symlink_to(entry)
    return root


@pytest.fixture
def kdump() -> Callable[..., Result]:
    """Run the kdump CLI in-process; stdout and stderr stay separate, exceptions propagate."""
    from kdump.cli import cli

    def run(*args: str, input: str | None = None) -> Result:
        runner = CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"})
        return runner.invoke(cli, list(args), input=input, catch_exceptions=False)

    return run


def pytest_report_header(config: pytest.Config) -> str:
    """Say which corpus the run proves things on."""
    hidden = hide_default_corpus()
    note = f"; {hidden} is hidden (KDUMP_CORPUS is set)" if hidden is not None else ""
    if full_corpus_available():
        return f"kdump corpus: full {CORPUS_ROOT}{note}"
    return f"kdump corpus: bundled subset only (tests needing the full corpus will skip){note}"


# Real Kafka brokers (fetched with Maven into a cache outside git) for the 4.x corpus and behaviour
# tests, and a real S3 server (SeaweedFS) for the storage layer and the Spark source on s3:// paths.
from brokers.fixtures import kafka_newest, kafka_single  # noqa: E402, F401
from s3_server import s3_store  # noqa: E402, F401


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Where KDUMP_TEST_RUN_ENDED names a file, say there that the run reached its end: CI checks it,
    so a run cut short with status 0 (a test that ends the process, as an `os._exit` inside kdump
    once did at 71% of the suite) fails instead of passing on the tests it reached."""
    import os

    marker = os.environ.get("KDUMP_TEST_RUN_ENDED")
    if marker:
        Path(marker).write_text(f"{session.testscollected} collected, exit status {exitstatus}\n")
