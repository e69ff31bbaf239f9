"""The storage layer's parts, without a server: spellings, listings, paths, archives, buffers."""

from __future__ import annotations

import io
import pickle
import tarfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kdump.store.archive import index_archive
from kdump.store.buffers import sparse_buffer
from kdump.store.entries import Entry, Tree, parent_of
from kdump.store.locations import archive_split, compression_of, is_stored, is_url
from kdump.store.paths import StoredPath
from kdump.store.trees import remember


def test_spellings(tmp_path: Path) -> None:
    assert is_url("s3://bucket/logs")
    assert not is_url("/var/lib/kafka")
    assert archive_split("s3://b/x/broker1.tar.gz/kafka-logs/t-0") == (
        "s3://b/x/broker1.tar.gz",
        "kafka-logs/t-0",
    )
    assert archive_split("s3://b/broker1.tar.zst") == ("s3://b/broker1.tar.zst", "")
    # A local directory named like an archive is a directory.
    (tmp_path / "odd.tar").mkdir()
    assert archive_split(str(tmp_path / "odd.tar")) is None
    assert not is_stored(tmp_path / "odd.tar")
    (tmp_path / "real.tar").write_bytes(b"")
    assert archive_split(f"{tmp_path}/real.tar/a/b") == (f"{tmp_path}/real.tar", "a/b")
    assert [compression_of(n) for n in ("a.tar", "a.tgz", "a.tar.gz", "a.tar.zst")] == ["", "gz", "gz", "zst"]


def test_parent_keeps_the_scheme() -> None:
    assert parent_of("s3://b/logs/t-0") == "s3://b/logs"
    assert parent_of("x.tar.gz/logs") == "x.tar.gz"


@given(st.lists(st.lists(st.sampled_from(["a", "b", "t-0", "x.log"]), min_size=1, max_size=4), max_size=12))
def test_tree_links_every_entry_to_the_root(paths: list[list[str]]) -> None:
    root = "s3://bucket/logs"
    tree = Tree.build(root, [Entry(f"{root}/{'/'.join(p)}", "file", 7) for p in paths])
    for path, entry in tree.entries.items():
        if path == root:
            continue
        parent = parent_of(path)
        assert tree.entries[parent].kind == "dir" or parent == root
        assert path[len(parent) + 1 :] in tree.names(parent)
        assert entry.kind in ("file", "dir")
    assert all(names == sorted(names) for names in tree.children.values())


def test_stored_path_answers_from_its_listing_and_pickles_with_it() -> None:
    root = "s3://bucket/unit-tests"
    tree = Tree.build(
        root, [Entry(f"{root}/orders-0/00000000000000000000.log", "file", 1234, True, 5_000_000_000)]
    )
    remember(tree)
    part = StoredPath(f"{root}/orders-0")
    log = part / "00000000000000000000.log"
    assert str(log) == f"{root}/orders-0/00000000000000000000.log"
    assert log.is_file()
    assert not log.is_dir()
    assert part.is_dir()
    assert log.stat().st_size == 1234
    assert log.stat().st_mtime_ns == 5_000_000_000
    assert not (part / "00000000000000000000.index").exists()
    assert part.names() == ["00000000000000000000.log"]
    assert log.with_suffix(".index").name == "00000000000000000000.index"
    assert log.resolve() == log
    back = pickle.loads(pickle.dumps(log))
    assert isinstance(back, StoredPath)
    assert str(back) == str(log)
    assert back.stat().st_size == 1234


def _tar(members: dict[str, bytes], fmt: int) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=fmt) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return raw.getvalue()


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT])
def test_archive_names_long_and_short(tmp_path: Path, fmt: int) -> None:
    long_topic = "t" * (90 if fmt == tarfile.USTAR_FORMAT else 180)
    members = {
        f"./kafka-logs/{long_topic}-0/00000000000000000000.log": b"x" * 1000,
        "kafka-logs/meta.properties": b"version=1\n",
        "kafka-logs/.kafka_cleanshutdown": b"",
    }
    archive = tmp_path / "names.tar"
    archive.write_bytes(_tar(members, fmt))
    index = index_archive(str(archive))
    assert not index.findings
    assert sorted(index.members) == sorted(n.removeprefix("./") for n in members)
    m = index.members[f"kafka-logs/{long_topic}-0/00000000000000000000.log"]
    assert archive.read_bytes()[m.offset : m.offset + m.size] == b"x" * 1000


def test_sparse_buffer_holds_only_what_was_filled(tmp_path: Path) -> None:
    f = tmp_path / "f.bin"
    f.write_bytes(bytes(range(256)) * 64)
    archive = tmp_path / "one.tar"
    archive.write_bytes(_tar({"f.bin": f.read_bytes()}, tarfile.GNU_FORMAT))
    with sparse_buffer(f"{archive}/f.bin") as sb:
        assert sb.size == 256 * 64
        sb.fill(1000, 2000)
        sb.fill(1500, 2500)  # overlaps are not read twice
        assert sb.filled == [(1000, 2000), (2000, 2500)]
        assert bytes(sb.view[1000:2500]) == f.read_bytes()[1000:2500]
        assert bytes(sb.view[0:1000]) == bytes(1000)
