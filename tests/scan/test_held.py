"""A directory's small files read whole with its listing (`kdump.scan.held`, `_dirfiles.c`).

The compiled read holds only what it could read whole and unchanged, and leaves every other entry
to the caller's own look; the readers (`open_buffer`, `read_small_file`) answer from the held bytes
exactly what they would have read, and nothing of any other directory.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdump.errors import PathError
from kdump.formats.fast_records import load_compiled
from kdump.scan import held
from kdump.scan.source import file_change, open_buffer, read_small_file

needs_compiled = pytest.mark.skipif(held.compiled is None, reason="kdump.scan._dirfiles is not built")


def test_the_compiled_read_is_built_where_ci_requires_it() -> None:
    if os.environ.get("KDUMP_REQUIRE_COMPILED") != "1":
        pytest.skip("KDUMP_REQUIRE_COMPILED is not set (a local install may lack a compiler)")
    if os.environ.get("KDUMP_PURE_PYTHON", "") not in ("", "0"):
        pytest.skip("the reference path (KDUMP_PURE_PYTHON) holds nothing")
    assert held.compiled is not None


def _odd_dir(tmp_path: Path) -> Path:
    d = tmp_path / "orders-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(b"\x01" * 5000)
    (d / "00000000000000000000.index").write_bytes(b"")
    (d / "leader-epoch-checkpoint").write_bytes(b"0\n1\n0 0\n")
    (d / "big.log").write_bytes(b"\x02" * (held.FILE_LIMIT + 1))
    (d / "sub").mkdir()
    (d / "link.log").symlink_to(d / "00000000000000000000.log")
    (d / "dangling").symlink_to(tmp_path / "gone")
    (d / "loop").symlink_to(d / "loop")
    os.mkfifo(d / "pipe")
    return d


@needs_compiled
def test_each_kind_of_entry(tmp_path: Path) -> None:
    d = _odd_dir(tmp_path)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(d / "sock"))
        h = held.read_dir(d)
    assert h is not None
    assert h.names() == sorted(os.listdir(d))
    e = h.entries
    assert e["00000000000000000000.log"] == (held.READ, 5000, b"\x01" * 5000)
    assert e["00000000000000000000.index"] == (held.READ, 0, b"")
    assert e["leader-epoch-checkpoint"] == (held.READ, 8, b"0\n1\n0 0\n")
    assert e["big.log"] == (held.FILE, held.FILE_LIMIT + 1, None)  # too large: opened, not read
    assert e["sub"][0] == held.DIR
    # Links, a FIFO (never opened: it would block) and a socket: left to the caller's own look.
    for name in ("link.log", "dangling", "loop", "pipe", "sock"):
        assert e[name] == (held.OTHER, 0, None), name


@needs_compiled
def test_a_fifo_put_in_a_files_place_never_blocks(tmp_path: Path) -> None:
    d = tmp_path / "p"
    d.mkdir()
    os.mkfifo(d / "00000000000000000000.log")
    done = threading.Event()
    result: list[object] = []

    def run() -> None:
        result.append(held.read_dir(d))
        done.set()

    threading.Thread(target=run, daemon=True).start()
    assert done.wait(10), "read_dir blocked on a FIFO"
    h = result[0]
    assert isinstance(h, held.HeldDir)
    assert h.entries["00000000000000000000.log"][0] == held.OTHER


@needs_compiled
def test_the_budget_bounds_what_is_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = tmp_path / "p"
    d.mkdir()
    for i in range(10):
        (d / f"{i:020d}.log").write_bytes(bytes([i]) * 1000)
    monkeypatch.setattr(held, "BUDGET", 3500)
    h = held.read_dir(d)
    assert h is not None
    kinds = [k for k, _, _ in h.entries.values()]
    assert kinds.count(held.READ) == 3
    assert kinds.count(held.FILE) == 7
    assert sum(len(data) for _, _, data in h.entries.values() if data is not None) <= 3500
    assert all(size == 1000 for _, size, _ in h.entries.values())


@needs_compiled
def test_what_cannot_be_read_is_not_held(tmp_path: Path) -> None:
    assert held.read_dir(tmp_path / "missing") is None
    (tmp_path / "file").write_text("x")
    assert held.read_dir(tmp_path / "file") is None  # not a directory: the caller's listing says so
    if os.geteuid() != 0:
        d = tmp_path / "locked"
        d.mkdir()
        (d / "f").write_text("x")
        (d / "f").chmod(0)
        h = held.read_dir(d)
        assert h is not None
        assert h.entries["f"] == (held.OTHER, 0, None)


@needs_compiled
def test_a_name_that_is_not_utf8_is_the_name_os_listdir_gives(tmp_path: Path) -> None:
    d = tmp_path / "p"
    d.mkdir()
    raw = os.fsencode(str(d)) + b"/caf\xe9.log"
    with open(raw, "wb") as f:
        f.write(b"x")
    h = held.read_dir(d)
    assert h is not None
    (name,) = os.listdir(d)
    assert h.names() == [name]
    with held.holding(h):
        assert held.held_bytes(d / name) == b"x"
        assert read_small_file(d / name) == b"x"


@needs_compiled
def test_misuse_raises(tmp_path: Path) -> None:
    read_dir = held.compiled.read_dir  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="must not be negative"):
        read_dir(str(tmp_path), -1, 10)
    with pytest.raises(ValueError, match="must not be negative"):
        read_dir(str(tmp_path), 10, -1)
    with pytest.raises(TypeError):
        read_dir(None, 10, 10)
    with pytest.raises(TypeError):
        read_dir(str(tmp_path), "10", 10)
    with pytest.raises(ValueError, match="null"):
        read_dir("a\0b", 10, 10)
    assert read_dir(str(tmp_path), 0, 0) == []


def _fake(d: Path, entries: dict[str, bytes]) -> held.HeldDir:
    return held.HeldDir(os.fspath(d), {n: (held.READ, len(b), b) for n, b in entries.items()})


def test_only_the_files_of_the_held_directory_are_answered(tmp_path: Path) -> None:
    h = _fake(tmp_path / "p", {"a.log": b"held"})
    assert held.held_bytes(tmp_path / "p" / "a.log") is None  # nothing held outside the block
    with held.holding(h):
        assert held.held_bytes(tmp_path / "p" / "a.log") == b"held"
        assert held.held_bytes(str(tmp_path / "p" / "a.log")) == b"held"
        assert held.held_bytes(tmp_path / "q" / "a.log") is None
        assert held.held_bytes(tmp_path / "p" / "x" / "a.log") is None
        assert held.held_bytes(tmp_path / "p" / "b.log") is None
        assert held.held_bytes(tmp_path / "pp" / "a.log") is None
        with held.holding(None):
            assert held.held_bytes(tmp_path / "p" / "a.log") is None
        assert held.held_bytes(tmp_path / "p" / "a.log") == b"held"
    assert held.held_bytes(tmp_path / "p" / "a.log") is None


def test_a_relative_directory_is_answered_by_relative_paths() -> None:
    with held.holding(_fake(Path(), {"a.log": b"1"})):
        assert held.held_bytes(Path("a.log")) == b"1"
        assert held.held_bytes(Path("x/a.log")) is None
    with held.holding(_fake(Path("x"), {"a.log": b"2"})):
        assert held.held_bytes(Path("x") / "a.log") == b"2"
        assert held.held_bytes(Path("a.log")) is None


@given(data=st.binary(max_size=300), cut=st.none() | st.integers(0, 400))
@settings(max_examples=60, deadline=None)
def test_the_readers_answer_what_they_would_have_read(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, cut: int | None
) -> None:
    d = tmp_path_factory.mktemp("held")
    f = d / "00000000000000000000.log"
    f.write_bytes(data)
    with open_buffer(f, cut) as buf:
        from_disk = bytes(buf)
    with open_buffer(f, cut, read_small=True) as buf:
        assert bytes(buf) == from_disk
    with held.holding(_fake(d, {f.name: data})):
        f.write_bytes(b"not what was held")  # the held bytes are read, not the disk
        with open_buffer(f, cut) as buf:
            assert bytes(buf) == from_disk
            assert isinstance(buf, memoryview)
            assert buf.readonly
            assert file_change(buf) is None
        assert read_small_file(f) == data
        if data:
            with pytest.raises(PathError, match="larger than"):
                read_small_file(f, len(data) - 1)


@needs_compiled
def test_the_held_bytes_are_the_files(tmp_path: Path) -> None:
    d = tmp_path / "p"
    d.mkdir()
    files = {f"{i:020d}.log": os.urandom(i * 97) for i in range(20)}
    for name, data in files.items():
        (d / name).write_bytes(data)
    h = held.read_dir(d)
    assert h is not None
    with held.holding(h):
        for name, data in files.items():
            assert read_small_file(d / name) == data
            with open_buffer(d / name) as buf:
                assert bytes(buf) == data


def test_the_reference_path_holds_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KDUMP_PURE_PYTHON", "1")
    assert load_compiled("_dirfiles", "kdump.scan") is None
    monkeypatch.setattr(held, "compiled", None)
    assert held.read_dir(tmp_path) is None


def test_a_stored_path_is_not_held(tmp_path: Path) -> None:
    assert held.read_dir("s3://bucket/kafka-logs/orders-0") is None


@needs_compiled
def test_a_file_mode_does_not_matter_to_root_only(tmp_path: Path) -> None:
    d = tmp_path / "p"
    d.mkdir()
    f = d / "leader-epoch-checkpoint"
    f.write_bytes(b"0\n0\n")
    f.chmod(0)
    h = held.read_dir(d)
    assert h is not None
    kind = h.entries[f.name][0]
    # Held only where this process can open it: as `open` itself would answer.
    try:
        with open(f, "rb"):
            pass
        assert kind == held.READ
    except PermissionError:
        assert kind == held.OTHER
    finally:
        f.chmod(stat.S_IRUSR | stat.S_IWUSR)
