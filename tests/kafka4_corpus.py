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

import hashlib
import os
import shutil
import tarfile
from pathlib import Path

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
    digest = hashlib.sha256(ARCHIVE.read_bytes()).hexdigest()[:16]
    final = Path(tmp_dir) / f"kdump-kafka4-corpus-{digest}"
    if (final / ".extracted").exists():
        return final
    work = final.parent / f"{final.name}.partial-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    with tarfile.open(ARCHIVE, "r:xz") as tar:
        for member in tar.getmembers():
            rel = Path(member.name)
            if not member.isfile() or rel.is_absolute() or ".." in rel.parts:
                continue
            src = tar.extractfile(member)
            assert src is not None
            _write_sparse(work / rel, src.read())
    (work / ".extracted").write_text(digest + "\n")
    try:
        work.rename(final)
    except OSError:
        shutil.rmtree(work, ignore_errors=True)
    return final


def _write_sparse(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as out:
        out.write(data.rstrip(b"\0"))
        out.truncate(len(data))  # the zero tail as a hole, as the broker's preallocation leaves it


def _copy_sparse(src: str, dst: str) -> None:
    _write_sparse(Path(dst), Path(src).read_bytes())
    shutil.copystat(src, dst)


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
                _copy_sparse(str(f), str(dest / f.name))
        elif entry.name != "expected":
            shutil.copytree(entry, dest / entry.name, copy_function=_copy_sparse)
    return dest
