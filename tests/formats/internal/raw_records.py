"""Raw records of the corpus's internal-topic segments, and the oracle lines to compare them with.

Records are read with kafka-python's record reader (`kafka.record.MemoryRecords`) over the whole segment; the
lead may later switch this to kdump's own scanner. Oracle lines are the `| offset: ...` lines of the
`--deep-iteration --print-data-log --<x>-decoder` dumps; the text after `headerKeys: [...]` is what the
internal-topic decoders must reproduce.
"""

from __future__ import annotations

import gzip
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import corpus
import pytest

# <repo>/../shared/corpus, or $KDUMP_CORPUS (tests/corpus.py).
CORPUS_ROOT: Path = corpus.CORPUS_ROOT

SEGMENT = "00000000000000000000.log"

# (corpus dir, partition dir, oracle decoder variant) of every internal-topic segment with a decoder oracle.
OFFSETS_SEGMENTS = (
    ("kafka-3.8.0", "__consumer_offsets-0", "offsets-decoder"),
    ("kafka-3.8.0-zk-legacy", "__consumer_offsets-0", "offsets-decoder"),
)
TRANSACTION_SEGMENTS = (("kafka-3.8.0", "__transaction_state-0", "transaction-log-decoder"),)
METADATA_SEGMENTS = (("kafka-3.8.0", "__cluster_metadata-0", "cluster-metadata-decoder"),)


class RawRecord(NamedTuple):
    offset: int
    key: bytes | None
    value: bytes | None
    is_control: bool


def segment_path(corpus_dir: str, partition_dir: str) -> Path:
    return CORPUS_ROOT / corpus_dir / partition_dir / SEGMENT


def oracle_path(corpus_dir: str, partition_dir: str, variant: str) -> Path:
    return (
        CORPUS_ROOT
        / corpus_dir
        / "expected"
        / partition_dir
        / f"{SEGMENT}.deep-print-data-log.{variant}.txt.gz"
    )


def require_segment(corpus_dir: str, partition_dir: str, variant: str) -> tuple[Path, Path]:
    """The segment and its oracle, or skip the test with the reason when the corpus is absent."""
    log, oracle = segment_path(corpus_dir, partition_dir), oracle_path(corpus_dir, partition_dir, variant)
    if not (log.is_file() and oracle.is_file()):
        pytest.skip(f"Kafka corpus not found ({log} / {oracle}): place shared/corpus beside the checkout")
    return log, oracle


def iter_raw_records(path: Path) -> Iterator[RawRecord]:
    """(offset, key, value, is_control) of every record of a v2 segment, control records included."""
    with warnings.catch_warnings():  # kafka-python's import warns about importlib.resources
        warnings.simplefilter("ignore", DeprecationWarning)
        from kafka.record import MemoryRecords  # kafka-python, a dev dependency

    records = MemoryRecords(path.read_bytes())
    while records.has_next():
        batch = records.next_batch()
        if batch is None:
            break
        is_control = bool(batch.is_control_batch)
        for record in batch:
            key = None if record.key is None else bytes(record.key)
            value = None if record.value is None else bytes(record.value)
            yield RawRecord(record.offset, key, value, is_control)


_RECORD_LINE = re.compile(r"^\| offset: (\d+) .*? headerKeys: \[[^\]]*\]")


def oracle_record_suffixes(path: Path) -> dict[int, str]:
    """offset -> the text after `headerKeys: [...]` on each record line of a gzip'ed deep oracle.

    Lines are split on `\\n` only (the decoders' JSON never holds a raw line break).
    """
    with gzip.open(path, "rb") as fh:
        text = fh.read().decode("utf-8")
    out: dict[int, str] = {}
    for line in text.split("\n"):
        match = _RECORD_LINE.match(line)
        if match:
            out[int(match.group(1))] = line[match.end() :]
    return out
