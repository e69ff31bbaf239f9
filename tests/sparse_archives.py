"""Corpus archives of real brokers' log dirs, extracted with the preallocated index files' zero tails
as holes (as the broker's preallocation leaves them: a 10 MB index costs no disk), once per content.

Used by `tests/tiered_corpus.py` and `tests/kafka4_corpus.py`.
"""

from __future__ import annotations

import hashlib
import io
import lzma
import os
import shutil
import tarfile
from pathlib import Path


def extract_once(archive: Path, tmp_dir: Path, name: str) -> Path:
    """Extract `archive` under `tmp_dir` as `<name>-<digest>` (once per content, safe between
    processes: a partial extraction is renamed into place) and return that directory."""
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()[:16]
    final = Path(tmp_dir) / f"{name}-{digest}"
    if (final / ".extracted").exists():
        return final
    work = final.parent / f"{final.name}.partial-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    with tarfile.open(archive, "r:xz") as tar:
        for member in tar.getmembers():
            rel = Path(member.name)
            if not member.isfile() or rel.is_absolute() or ".." in rel.parts:
                continue
            src = tar.extractfile(member)
            assert src is not None
            write_sparse(work / rel, src.read())
    (work / ".extracted").write_text(digest + "\n")
    try:
        work.rename(final)
    except OSError:
        shutil.rmtree(work, ignore_errors=True)
    return final


def write_sparse(target: Path, data: bytes) -> None:
    """Write `data` with its zero tail as a hole."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as out:
        out.write(data.rstrip(b"\0"))
        out.truncate(len(data))


def copy_sparse(src: str, dst: str) -> None:
    """`shutil.copytree`'s copy function that keeps zero tails as holes."""
    write_sparse(Path(dst), Path(src).read_bytes())
    shutil.copystat(src, dst)


def pack_archive(roots: list[Path]) -> bytes:
    """The corpus directories `roots` as a reproducible `.tar.xz`: members sorted, mtime 0, owner root
    (their names relative to the directory holding the roots)."""
    members: dict[str, bytes] = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                members[str(path.relative_to(root.parent))] = path.read_bytes()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(members):
            info = tarfile.TarInfo(name)
            info.size = len(members[name])
            info.mode = 0o644
            info.mtime = 0
            info.uname = info.gname = "root"
            tar.addfile(info, io.BytesIO(members[name]))
    return lzma.compress(buffer.getvalue(), preset=9 | lzma.PRESET_EXTREME)
