"""Shared fixtures: the corpus (full or the bundled subset), a CLI runner, builders."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import available_corpus_root, full_corpus_available


@pytest.fixture(scope="session")
def corpus_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The full corpus when it is beside the checkout, else the bundled real subset."""
    return available_corpus_root(tmp_path_factory)


@pytest.fixture(scope="session")
def full_corpus() -> Path:
    """The full corpus; tests using it skip with a clear reason when it is absent."""
    from corpus import require_full_corpus

    return require_full_corpus()


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
    if full_corpus_available():
        return "kdump corpus: full ../shared/corpus"
    return "kdump corpus: bundled subset only (tests needing the full corpus will skip)"


# A real S3 server (moto's) for the storage layer and the Spark source on s3:// paths.
from s3_server import s3_store  # noqa: E402, F401
