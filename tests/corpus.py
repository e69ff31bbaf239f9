"""Locating the real Kafka 3.8.0 corpus (``shared/corpus``) and its small bundled subset (``tests/data``).

The full corpus (about 44 MB) lives beside the clone, in ``<repo>/../shared/corpus``, or wherever the
``KDUMP_CORPUS`` environment variable points. ``tests/data/corpus-subset.tar.xz`` holds a small real
subset with the same layout (see ``tests/data/PROVENANCE.md``), so corpus-driven tests can always run.

Plain functions only (no fixtures): a conftest can wrap them, e.g. ::

    @pytest.fixture(scope="session")
    def corpus_root(tmp_path_factory):
        return available_corpus_root(tmp_path_factory)
"""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import shutil
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple, Protocol

import pytest

__all__ = [
    "CORPUS_DIRS",
    "CORPUS_ROOT",
    "REPO_ROOT",
    "SUBSET_ARCHIVE",
    "CorpusSegment",
    "available_corpus_root",
    "full_corpus_available",
    "hide_default_corpus",
    "is_subset",
    "iter_corpus_dirs",
    "iter_log_segments",
    "iter_partition_dirs",
    "require_full_corpus",
    "subset_root",
]

REPO_ROOT = Path(__file__).resolve().parents[1]


def _corpus_root_from_env() -> Path:
    env = os.environ.get("KDUMP_CORPUS")
    if env:
        return Path(env).expanduser().resolve()
    return REPO_ROOT.parent / "shared" / "corpus"


CORPUS_ROOT: Path = _corpus_root_from_env()
"""``$KDUMP_CORPUS`` if set, else ``<repo>/../shared/corpus``."""

CORPUS_DIRS: tuple[str, ...] = ("kafka-3.8.0", "kafka-3.8.0-zk-legacy", "kafka-3.8.0-running-copy")
"""The corpus directories, each with partition dirs and ``expected/<partition-dir>/`` oracles."""

SUBSET_ARCHIVE: Path = Path(__file__).resolve().parent / "data" / "corpus-subset.tar.xz"

# Oracle files (and producer manifests) that the archive stores gunzipped, because xz compresses them far
# better that way; they are gzip'ed again on extraction so the extracted tree looks exactly like the corpus.
_GUNZIPPED_IN_ARCHIVE = re.compile(
    r"/expected/(?:[^/]+/\d{20}\.log(?:\.deleted)?\.[\w.-]+\.txt|producer-manifests/[^/]+\.json)$"
)


DEFAULT_SHARED: Path = REPO_ROOT.parent / "shared"
"""Where the corpus is looked for without ``KDUMP_CORPUS``: ``<repo>/../shared``."""

_hidden: list[Path] = []


def hide_default_corpus() -> Path | None:
    """With ``KDUMP_CORPUS`` set elsewhere, make every open or listing of ``<repo>/../shared`` in this
    process fail (an audit hook), and return that directory; else None.

    ``KDUMP_CORPUS=/nonexistent`` then runs the suite as a fresh clone without the corpus runs it,
    and a test that finds ``../shared`` on its own, ignoring ``KDUMP_CORPUS``, fails instead of
    quietly reading the full corpus. Installed once (an audit hook cannot be removed).
    """
    if _hidden:
        return _hidden[0]
    if not os.environ.get("KDUMP_CORPUS") or not DEFAULT_SHARED.is_dir():
        return None
    shared = DEFAULT_SHARED.resolve()
    if shared == CORPUS_ROOT or shared in CORPUS_ROOT.parents:
        return None
    prefix = str(shared) + os.sep

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event not in ("open", "os.listdir", "os.scandir") or not args:
            return
        path = args[0]
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        if not isinstance(path, str):
            return
        full = os.path.abspath(path)  # noqa: PTH100 (a string operation: no filesystem call in the hook)
        if full == str(shared) or full.startswith(prefix):
            raise PermissionError(f"{full}: ../shared is hidden from this run (KDUMP_CORPUS={CORPUS_ROOT})")

    sys.addaudithook(hook)
    _hidden.append(shared)
    return shared


def full_corpus_available(root: Path | None = None) -> bool:
    """True if every corpus directory with its ``expected/facts.json`` exists under ``root`` (default
    ``CORPUS_ROOT``)."""
    root = CORPUS_ROOT if root is None else root
    if is_subset(root):
        return False
    return all((root / name / "expected" / "facts.json").is_file() for name in CORPUS_DIRS)


def is_subset(root: Path) -> bool:
    """True for an extracted copy of the bundled subset (it has a top-level ``SUBSET`` file)."""
    return (root / "SUBSET").is_file()


def require_full_corpus() -> Path:
    """Return ``CORPUS_ROOT``, or skip the calling test when the full corpus is absent."""
    if not full_corpus_available():
        pytest.skip(
            f"full Kafka corpus not found at {CORPUS_ROOT}; "
            "set KDUMP_CORPUS or place shared/ beside the clone"
        )
    return CORPUS_ROOT


class CorpusSegment(NamedTuple):
    """One segment file of the corpus and where its oracles are."""

    corpus_dir: str
    """``kafka-3.8.0``, ``kafka-3.8.0-zk-legacy`` or ``kafka-3.8.0-running-copy``."""
    partition_dir: str
    """e.g. ``c-none-0``, or ``compacted-sparse-0-deleted-leftovers``."""
    log_path: Path
    """The ``<base>.log`` (or ``<base>.log.deleted``) file."""
    oracle_dir: Path
    """``<corpus_dir>/expected/<partition_dir>``."""

    @property
    def base_name(self) -> str:
        """The 20-digit base offset as written in the file name."""
        return self.log_path.name.split(".", 1)[0]

    @property
    def base_offset(self) -> int:
        return int(self.base_name)

    @property
    def is_deleted_leftover(self) -> bool:
        return self.log_path.name.endswith(".deleted")

    @property
    def id(self) -> str:
        """A short test id: ``kafka-3.8.0/c-none-0/00000000000000000000.log``."""
        return f"{self.corpus_dir}/{self.partition_dir}/{self.log_path.name}"

    def oracle(self, variant: str = "deep") -> Path:
        """Path of a ``.log`` oracle: ``shallow``, ``deep``, ``deep-print-data-log`` or
        ``deep-print-data-log.<x>-decoder``. The file may not exist (e.g. no print-data oracle for
        ``big-record-0``, the running copy's closed segment and the ``.deleted`` leftovers)."""
        return self.oracle_dir / f"{self.log_path.name}.{variant}.txt.gz"

    def sibling(self, suffix: str) -> Path:
        """A sibling file of the segment, e.g. ``sibling('.index')``."""
        return self.log_path.with_name(self.base_name + suffix)

    def index_oracle(self, kind: str = "index", variant: str = "dump") -> Path:
        """``<base>.<kind>.<variant>.txt`` with kind ``index``/``timeindex`` and variant ``dump``,
        ``verify-index-only`` or ``index-sanity-check`` (absent for ``.deleted`` leftovers)."""
        return self.oracle_dir / f"{self.base_name}.{kind}.{variant}.txt"


def iter_corpus_dirs(root: Path | None = None) -> Iterator[Path]:
    """The corpus directories present under ``root`` (default ``CORPUS_ROOT``), in ``CORPUS_DIRS`` order."""
    root = CORPUS_ROOT if root is None else root
    for name in CORPUS_DIRS:
        if (root / name).is_dir():
            yield root / name


def iter_partition_dirs(root: Path | None = None) -> Iterator[tuple[str, Path, Path]]:
    """``(corpus_dir_name, partition_dir, oracle_dir)`` for every partition dir (sorted), skipping
    ``expected`` and ``_logdir-files``."""
    for corpus_dir in iter_corpus_dirs(root):
        for part in sorted(corpus_dir.iterdir()):
            if part.is_dir() and part.name not in ("expected", "_logdir-files"):
                yield corpus_dir.name, part, corpus_dir / "expected" / part.name


def iter_log_segments(root: Path | None = None) -> Iterator[CorpusSegment]:
    """Every ``<base>.log`` of every partition dir, plus every ``<base>.log.deleted`` that has its own
    oracle (``<base>.log.deleted.deep.txt.gz``: the running copy's ``compacted-sparse-0-deleted-leftovers``).

    The 8 ``.log.deleted`` files also lying in ``kafka-3.8.0/compacted-sparse-0`` (byte-identical copies of
    the leftovers) have no oracle there and are not yielded.
    """
    for corpus_name, part, oracle_dir in iter_partition_dirs(root):
        for path in sorted(part.iterdir()):
            name = path.name
            leftover = name.endswith(".log.deleted") and (oracle_dir / f"{name}.deep.txt.gz").exists()
            if name.endswith(".log") or leftover:
                yield CorpusSegment(corpus_name, part.name, path, oracle_dir)


class _TempPathFactory(Protocol):
    def getbasetemp(self) -> Path: ...


def _archive_digest(archive: Path) -> str:
    return hashlib.sha256(archive.read_bytes()).hexdigest()[:16]


def subset_root(tmp_dir: Path, archive: Path = SUBSET_ARCHIVE) -> Path:
    """Extract the bundled subset under ``tmp_dir`` (once per archive content) and return its root.

    The result has the corpus layout: ``<root>/<corpus-dir>/<partition-dir>/...`` and
    ``<root>/<corpus-dir>/expected/...``. Safe to call repeatedly and from parallel workers: extraction goes
    to a private directory that is then renamed into place.
    """
    digest = _archive_digest(archive)
    final = Path(tmp_dir) / f"kdump-corpus-subset-{digest}"
    marker = final / ".extracted"
    if marker.exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    work = final.parent / f"{final.name}.partial-{os.getpid()}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    with tarfile.open(archive, "r:xz") as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            rel = Path(member.name)
            if rel.is_absolute() or ".." in rel.parts:
                raise ValueError(f"unsafe path in {archive}: {member.name}")
            src = tar.extractfile(member)
            assert src is not None
            data = src.read()
            target = work / rel
            if _GUNZIPPED_IN_ARCHIVE.search("/" + member.name):
                data = gzip.compress(data, compresslevel=6, mtime=0)
                target = target.with_name(target.name + ".gz")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    (work / ".extracted").write_text(digest + "\n")
    try:
        work.rename(final)
    except OSError:
        # Another worker won the race (or a stale, incomplete copy is in the way).
        if marker.exists():
            shutil.rmtree(work, ignore_errors=True)
        else:
            shutil.rmtree(final, ignore_errors=True)
            work.rename(final)
    return final


def available_corpus_root(tmp_factory: _TempPathFactory | Path) -> Path:
    """The full corpus when present, else the extracted subset.

    ``tmp_factory`` is pytest's ``tmp_path_factory`` (its base temp dir is used) or a plain directory.
    """
    if full_corpus_available():
        return CORPUS_ROOT
    base = tmp_factory if isinstance(tmp_factory, Path) else tmp_factory.getbasetemp()
    return subset_root(base)
