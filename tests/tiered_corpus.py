"""The tiered-storage corpus (`tests/data/tiered-corpus.tar.xz`): real 4.4.0 and 3.9.1 brokers' tiered data.

`tests/data/make_tiered_corpus.py` builds it and `tests/data/PROVENANCE.md` says what is in it. Layout,
as the shared corpus: `kafka-<v>-tiered/<partition>/`, `_logdir-files/` (the log dir's own files and its
`remote-log-index-cache/`), `_remote/` (the LocalTieredStorage directory) and `expected/` (each release's
kafka-dump-log output, `list-offsets.jsonl` with the broker's ListOffsets answers, `facts.json`), plus
`synthetic/` (hand-made remote log metadata records and what each release's tool prints for them).

Plain functions: `tiered_root(tmp)` extracts the archive once (zero tails of the preallocated index files
written as holes: they are 10 MB each); `log_dir_copy` and `remote_copy` give a test its own copy to damage.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from sparse_archives import copy_sparse, extract_once

ARCHIVE = Path(__file__).resolve().parent / "data" / "tiered-corpus.tar.xz"
VERSIONS = ("4.4.0", "3.9.1")


def tiered_root(tmp_dir: Path) -> Path:
    """Extract the archive under `tmp_dir` once per content, and return the directory holding it."""
    return extract_once(ARCHIVE, tmp_dir, "kdump-tiered-corpus")


def corpus_dir(root: Path, version: str) -> Path:
    return root / f"kafka-{version}-tiered"


def log_dir_copy(root: Path, version: str, dest: Path) -> Path:
    """A real log dir as the broker left it: the partition dirs and `_logdir-files/*`, copied to `dest`."""
    src = corpus_dir(root, version)
    dest.mkdir(parents=True)
    for entry in sorted(src.iterdir()):
        if entry.name == "_logdir-files":
            for f in sorted(entry.iterdir()):
                if f.is_dir():
                    shutil.copytree(f, dest / f.name, copy_function=copy_sparse)
                else:
                    copy_sparse(str(f), str(dest / f.name))
        elif entry.name not in ("expected", "_remote"):
            shutil.copytree(entry, dest / entry.name, copy_function=copy_sparse)
    return dest


def remote_copy(root: Path, version: str, dest: Path) -> Path:
    """The LocalTieredStorage directory (holding `kafka-tiered-storage/`), copied to `dest`."""
    shutil.copytree(corpus_dir(root, version) / "_remote", dest)
    return dest


def list_offsets(root: Path, version: str) -> list[dict[str, Any]]:
    """The broker's ListOffsets answers: topic, partition, spec, offset, timestamp, leaderEpoch."""
    text = (corpus_dir(root, version) / "expected" / "list-offsets.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def facts(root: Path, version: str) -> dict[str, Any]:
    """What the corpus script recorded while building (records, the DeleteRecords cut, ...)."""
    result: dict[str, Any] = json.loads((corpus_dir(root, version) / "expected" / "facts.json").read_text())
    return result
