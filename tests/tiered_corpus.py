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

import hashlib
import json
import os
import shutil
import tarfile
from pathlib import Path
from typing import Any

ARCHIVE = Path(__file__).resolve().parent / "data" / "tiered-corpus.tar.xz"
VERSIONS = ("4.4.0", "3.9.1")


def tiered_root(tmp_dir: Path) -> Path:
    """Extract the archive under `tmp_dir` once per content, and return the directory holding it."""
    digest = hashlib.sha256(ARCHIVE.read_bytes()).hexdigest()[:16]
    final = Path(tmp_dir) / f"kdump-tiered-corpus-{digest}"
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
            data = src.read()
            target = work / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_sparse(target, data)
    (work / ".extracted").write_text(digest + "\n")
    try:
        work.rename(final)
    except OSError:
        shutil.rmtree(work, ignore_errors=True)
    return final


def _write_sparse(target: Path, data: bytes) -> None:
    with target.open("wb") as out:
        out.write(data.rstrip(b"\0"))
        out.truncate(len(data))  # the zero tail as a hole, as the broker's preallocation leaves it


def _copy_sparse(src: str, dst: str) -> None:
    _write_sparse(Path(dst), Path(src).read_bytes())
    shutil.copystat(src, dst)


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
                    shutil.copytree(f, dest / f.name, copy_function=_copy_sparse)
                else:
                    _copy_sparse(str(f), str(dest / f.name))
        elif entry.name not in ("expected", "_remote"):
            shutil.copytree(entry, dest / entry.name, copy_function=_copy_sparse)
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
