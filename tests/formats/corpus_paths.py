"""Where the real-broker corpus lives, and parameters over its files that skip cleanly without it."""

from __future__ import annotations

from pathlib import Path

import corpus
import pytest

# The corpus sits beside the checkout (/work/main -> /work/shared/corpus), or at $KDUMP_CORPUS.
CORPUS_ROOT: Path = corpus.CORPUS_ROOT
CORPUS_DIRS = ("kafka-3.8.0", "kafka-3.8.0-zk-legacy", "kafka-3.8.0-running-copy")
_MISSING_REASON = (
    f"full Kafka corpus not found at {CORPUS_ROOT}: the differential tests need ../shared/corpus"
)


def corpus_available() -> bool:
    return all((CORPUS_ROOT / name).is_dir() for name in CORPUS_DIRS)


def require_corpus() -> Path:
    if not corpus_available():
        pytest.skip(_MISSING_REASON)
    return CORPUS_ROOT


def corpus_file_params(*patterns: str) -> list[object]:
    """One pytest param per corpus file matching any glob pattern (relative to a corpus dir).

    Without the corpus there is a single param that skips with the reason, so the absence shows up
    in the report instead of silently collecting nothing.
    """
    if not corpus_available():
        return [pytest.param(None, marks=pytest.mark.skip(reason=_MISSING_REASON), id="no-corpus")]
    paths = sorted(
        {path for name in CORPUS_DIRS for pattern in patterns for path in (CORPUS_ROOT / name).glob(pattern)}
    )
    return [pytest.param(path, id=str(path.relative_to(CORPUS_ROOT))) for path in paths]


def oracle_for(path: Path, kind: str = "dump") -> Path:
    """`<corpus-dir>/expected/<partition-dir>/<file>.<kind>.txt` for a corpus data file."""
    partition_dir = path.parent
    return partition_dir.parent / "expected" / partition_dir.name / f"{path.name}.{kind}.txt"


def oracle_body(path: Path, kind: str = "dump") -> list[str]:
    """The oracle's lines after its `Dumping <file>` header."""
    lines = oracle_for(path, kind).read_text(encoding="utf-8").splitlines()
    assert lines, f"empty oracle for {path}"
    assert lines[0].startswith("Dumping "), lines[0]
    return lines[1:]


def base_offset_of(path: Path) -> int:
    return int(path.name.split(".", 1)[0])
