"""The Kafka 4.x corpus (`tests/data/kafka4-corpus.tar.xz`): log dirs real Kafka 4.4.0, 4.1.1 and 3.9.1 brokers wrote.

`tests/data/make_kafka4_corpus.py` builds it and `tests/data/PROVENANCE.md` says what is in it. Per
release three corpus directories, in the shared corpus layout: `kafka-<v>/` (after a clean stop),
`kafka-<v>-running-copy/` (copied with `cp -a` while a producer wrote) and `kafka-<v>-killed-copy/`
(copied after SIGKILL), each with its partition dirs, `_logdir-files/` (the log dir's own files) and
`expected/` (that release's kafka-dump-log of every file, `<file>.<variant>.txt`); and
`kafka-4.4.0-elr/`, node 1 of a 3-node 4.4.0 cluster whose metadata log holds eligible leader replicas.

Plain functions: `kafka4_root(tmp)` extracts the archive once per content (the zero tails of the
preallocated index files as holes); `log_dir_copy` gives a test a real log dir to read or damage.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sparse_archives import copy_sparse, extract_once

ARCHIVE = Path(__file__).resolve().parent / "data" / "kafka4-corpus.tar.xz"
VERSIONS = ("4.4.0", "4.1.1", "3.9.1")
CORPUS_DIRS = (
    *(f"kafka-{v}{copy}" for v in VERSIONS for copy in ("", "-running-copy", "-killed-copy")),
    f"kafka-{VERSIONS[0]}-elr",
)
DECODERS = {
    "__consumer_offsets": "offsets-decoder",
    "__transaction_state": "transaction-log-decoder",
    "__share_group_state": "share-group-state-decoder",
    "__cluster_metadata": "cluster-metadata-decoder",
}


def kafka4_root(tmp_dir: Path) -> Path:
    """Extract the archive under `tmp_dir` once per content, and return the directory holding it."""
    return extract_once(ARCHIVE, tmp_dir, "kdump-kafka4-corpus")


def version_of(corpus_dir: str) -> str:
    """The release that wrote a corpus directory (`kafka-3.9.1-killed-copy` -> `3.9.1`)."""
    return corpus_dir.split("-")[1]


def partitions(corpus: Path) -> list[Path]:
    """The partition directories of a corpus directory, sorted."""
    return sorted(p for p in corpus.iterdir() if p.is_dir() and p.name not in ("_logdir-files", "expected"))


def decoder_of(partition: Path) -> str | None:
    """The kafka-dump-log decoder flag (without `--`) of an internal topic's partition, else None."""
    return DECODERS.get(partition.name.rsplit("-", 1)[0])


def oracle(corpus: Path, file: Path, variant: str) -> Path:
    """`expected/<partition>/<file>.<variant>.txt` of `file` in `corpus`."""
    return corpus / "expected" / file.parent.name / f"{file.name}.{variant}.txt"


def log_dir_copy(root: Path, corpus_dir: str, dest: Path) -> Path:
    """A real log dir as the broker left it: the partition dirs and `_logdir-files/*`, copied to `dest`."""
    src = root / corpus_dir
    dest.mkdir(parents=True)
    for entry in sorted(src.iterdir()):
        if entry.name == "_logdir-files":
            for f in sorted(entry.iterdir()):
                copy_sparse(str(f), str(dest / f.name))
        elif entry.name != "expected":
            shutil.copytree(entry, dest / entry.name, copy_function=copy_sparse)
    return dest
