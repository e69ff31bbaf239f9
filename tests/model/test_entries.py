"""The one classifier: names as Kafka reads them, entries as the disk has them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kdump.model.entries import (
    FileType,
    NameKind,
    broker_offset_from_name,
    child,
    classify_name,
    file_kind,
    leftover_description,
    probe,
    temp_file_base,
)


@pytest.mark.parametrize(
    ("name", "where", "kind"),
    [
        ("00000000000000000000.log", "partition", NameKind.LOG),
        ("00000000000000000042.index", "partition", NameKind.INDEX),
        ("00000000000000000042.timeindex", "partition", NameKind.TIMEINDEX),
        ("00000000000000000042.txnindex", "partition", NameKind.TXNINDEX),
        ("00000000000000000042.snapshot", "partition", NameKind.SNAPSHOT),
        ("00000000000000000042-0000000001.checkpoint", "partition", NameKind.CHECKPOINT),
        ("00000000000000000042.log.deleted", "partition", NameKind.LEFTOVER),
        ("00000000000000000042.log.swap", "partition", NameKind.LEFTOVER),
        ("00000000000000000042-0000000001.checkpoint.part", "partition", NameKind.LEFTOVER),
        ("leader-epoch-checkpoint", "partition", NameKind.STATE),
        ("leader-epoch-checkpoint.tmp", "partition", NameKind.LEFTOVER),
        ("partition.metadata", "partition", NameKind.STATE),
        ("quorum-state", "partition", NameKind.STATE),
        ("0.log", "partition", NameKind.MISNAMED_LOG),
        ("segment-copy.log", "partition", NameKind.MISNAMED_LOG),
        ("42.index", "partition", NameKind.MISNAMED_INDEX),
        ("notes.txt", "partition", NameKind.UNKNOWN),
        ("meta.properties", "partition", NameKind.UNKNOWN),
        ("meta.properties", "log-dir", NameKind.STATE),
        (".lock", "log-dir", NameKind.STATE),
        ("recovery-point-offset-checkpoint", "log-dir", NameKind.STATE),
        ("recovery-point-offset-checkpoint.tmp", "log-dir", NameKind.LEFTOVER),
        ("bootstrap.checkpoint", "log-dir", NameKind.STATE),
        ("0.log", "log-dir", NameKind.UNKNOWN),
    ],
)
def test_names_are_taken_as_kafka_takes_them(name: str, where: str, kind: NameKind) -> None:
    assert classify_name(name, where) == kind


@pytest.mark.parametrize(
    ("name", "offset"),
    [
        ("0.log", 0),
        ("2.log", 2),
        ("+7.log", 7),
        ("00000000000000000012.log", 12),
        ("12.log.bak", 12),
        ("segment-copy.log", None),
        (".log", None),
        ("99999999999999999999.log", None),  # past Long.MAX_VALUE: parseLong throws
    ],
)
def test_broker_offset_from_name_follows_java_parse_long(name: str, offset: int | None) -> None:
    assert broker_offset_from_name(name) == offset


def test_probe_never_opens_and_names_every_type(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"abc")
    (tmp_path / "d").mkdir()
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "gone").symlink_to(tmp_path / "nothing")
    (tmp_path / "dev").symlink_to("/dev/null")
    assert probe(tmp_path / "f").type == FileType.FILE
    assert probe(tmp_path / "f").size == 3
    assert probe(tmp_path / "d").type == FileType.DIR
    assert probe(tmp_path / "fifo").type == FileType.FIFO
    assert probe(tmp_path / "loop").type == FileType.SYMLINK_LOOP
    assert probe(tmp_path / "gone").type == FileType.DANGLING_SYMLINK
    assert probe(tmp_path / "dev").type == FileType.DEVICE
    assert probe(tmp_path / "missing").type == FileType.MISSING


@pytest.mark.parametrize(
    ("name", "base"),
    [
        ("recovery-point-offset-checkpoint.tmp", "recovery-point-offset-checkpoint"),
        ("leader-epoch-checkpoint.tmp", "leader-epoch-checkpoint"),
        ("partition.metadata.tmp", "partition.metadata"),
        ("meta.properties.tmp", "meta.properties"),
        ("bootstrap.checkpoint.tmp", "bootstrap.checkpoint"),
        ("quorum-state.tmp", "quorum-state"),
        ("notes.tmp", None),
        ("00000000000000000000.log.tmp", None),
        ("recovery-point-offset-checkpoint", None),
    ],
)
def test_temp_files_of_state_files(name: str, base: str | None) -> None:
    assert temp_file_base(name) == base
    assert (file_kind(Path(name)) == "temp-file") is (base is not None)


def test_broker_leftovers_by_name() -> None:
    assert file_kind(Path(".lock")) == "lock"
    assert file_kind(Path(".kafka_cleanshutdown")) == "clean-shutdown"
    assert leftover_description(Path(".kafka_cleanshutdown"), "clean-shutdown", 0) is not None
    assert "empty" in (leftover_description(Path(".kafka_cleanshutdown"), "clean-shutdown", 0) or "")
    assert leftover_description(Path("segment-copy.log"), None, 10) is None


@given(
    parts=st.lists(st.sampled_from(["a", "b.c", "..", ".", "kafka-logs", "x y"]), max_size=4),
    absolute=st.booleans(),
    name=st.text(min_size=1, max_size=12).filter(
        lambda n: "/" not in n and "\0" not in n and n not in (".", "..")
    ),
)
def test_a_child_of_a_listed_name_is_path_slash_name(parts: list[str], absolute: bool, name: str) -> None:
    base = Path("/" if absolute else ".", *parts)
    made = child(base, name)
    expected = base / name
    assert made == expected
    assert str(made) == str(expected)
    assert hash(made) == hash(expected)
    assert made.name == expected.name
    assert made.parent == expected.parent
    assert type(made) is type(expected)
