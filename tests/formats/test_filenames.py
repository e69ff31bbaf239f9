from __future__ import annotations

import pytest
from corpus_paths import CORPUS_DIRS, require_corpus
from hypothesis import given
from hypothesis import strategies as st

from kdump.formats.filenames import (
    LOG_DIR_FILES,
    PARTITION_DIR_FILES,
    PartitionDirName,
    SegmentFileName,
    parse_partition_dir_name,
    parse_segment_file_name,
    partition_dir_name,
    segment_file_name,
)

OFFSETS = st.integers(min_value=0, max_value=2**63 - 1)
SEGMENT_FORMS = [
    ("log", ""),
    ("log", "deleted"),
    ("log", "cleaned"),
    ("log", "swap"),
    ("index", ""),
    ("index", "swap"),
    ("timeindex", "cleaned"),
    ("txnindex", "deleted"),
    ("snapshot", ""),
    ("snapshot", "deleted"),
]


@given(OFFSETS, st.sampled_from(SEGMENT_FORMS))
def test_segment_name_round_trip(offset: int, form: tuple[str, str]) -> None:
    kind, suffix = form
    name = segment_file_name(offset, kind, suffix)  # type: ignore[arg-type]
    assert len(name.split(".", 1)[0]) == 20
    assert parse_segment_file_name(name) == SegmentFileName(offset, kind, suffix)  # type: ignore[arg-type]


@given(OFFSETS, st.integers(min_value=0, max_value=2**31 - 1), st.sampled_from(["", "part", "deleted"]))
def test_kraft_snapshot_round_trip(offset: int, epoch: int, suffix: str) -> None:
    name = segment_file_name(offset, "checkpoint", suffix, epoch=epoch)  # type: ignore[arg-type]
    assert parse_segment_file_name(name) == SegmentFileName(offset, "checkpoint", suffix, epoch=epoch)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("00000000000000012345.log", SegmentFileName(12345, "log", "")),
        ("00000000000000001201.timeindex.deleted", SegmentFileName(1201, "timeindex", "deleted")),
        ("00000000000000000812.snapshot.deleted", SegmentFileName(812, "snapshot", "deleted")),
        ("09223372036854775807.index", SegmentFileName(2**63 - 1, "index", "")),
        (
            "00000000000000000692-0000000001.checkpoint",
            SegmentFileName(692, "checkpoint", "", epoch=1),
        ),
        (
            "00000000000000000692-0000000001.checkpoint.part",
            SegmentFileName(692, "checkpoint", "part", epoch=1),
        ),
        (
            "120-oAtiIQ95REujbuzNd_lkLQ.log",
            SegmentFileName(120, "log", "", remote_segment_id="oAtiIQ95REujbuzNd_lkLQ"),
        ),
        (
            "0-oAtiIQ95REujbuzNd_lkLQ.timeindex",
            SegmentFileName(0, "timeindex", "", remote_segment_id="oAtiIQ95REujbuzNd_lkLQ"),
        ),
    ],
)
def test_parse_segment_names(name: str, expected: SegmentFileName) -> None:
    assert parse_segment_file_name(name) == expected


@pytest.mark.parametrize(
    "name",
    [
        "12345.log",  # not zero-padded
        "000000000000000012345.log",  # 21 digits
        "0000000000000001234.log",  # 19 digits
        "99999999999999999999.log",  # beyond int64
        "00000000000000000000.log.bak",
        "00000000000000000000.log.part",  # .part is for KRaft snapshots only
        "00000000000000000000.checkpoint",  # no epoch
        "00000000000000000000-9999999999.checkpoint",  # epoch beyond int32
        "00000000000000000000-000000001.checkpoint",
        "00000000000000000000.LOG",
        "00000000000000000000.log\n",
        "0000000000000000000\u0661.log",  # Kafka writes ASCII digits only
        "bootstrap.checkpoint",
        "leader-epoch-checkpoint",
        "partition.metadata",
        "00000000000000000000.index.tmp",
        "",
    ],
)
def test_parse_rejects_names_kafka_does_not_write(name: str) -> None:
    assert parse_segment_file_name(name) is None


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((-1, "log"), {}),
        ((2**63, "log"), {}),
        ((0, "log", "part"), {}),
        ((0, "snapshot", "swap"), {}),
        ((0, "checkpoint"), {}),
        ((0, "checkpoint", "swap"), {"epoch": 1}),
        ((0, "log"), {"epoch": 1}),
        ((0, "segment"), {}),
    ],
)
def test_segment_file_name_rejects(args: tuple[object, ...], kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):  # noqa: PT011 - each case has its own message
        segment_file_name(*args, **kwargs)  # type: ignore[arg-type]


def test_segment_file_name_layout() -> None:
    assert segment_file_name(8074, "timeindex") == "00000000000000008074.timeindex"
    assert segment_file_name(2101, "log", "deleted") == "00000000000000002101.log.deleted"
    assert segment_file_name(692, "checkpoint", epoch=1) == "00000000000000000692-0000000001.checkpoint"


# --- partition directories ----------------------------------------------------------------------------

TOPICS = st.text(alphabet="abcXYZ019._-", min_size=1, max_size=30)


@given(TOPICS, st.integers(min_value=0, max_value=2**31 - 1))
def test_partition_dir_round_trip(topic: str, partition: int) -> None:
    assert parse_partition_dir_name(partition_dir_name(topic, partition)) == PartitionDirName(
        topic, partition
    )


@given(
    TOPICS,
    st.integers(min_value=0, max_value=10_000),
    st.sampled_from(["delete", "future", "stray"]),
    st.uuids(),
)
def test_suffixed_partition_dir_round_trip(topic: str, partition: int, status: str, unique: object) -> None:
    unique_id = str(unique).replace("-", "")
    name = partition_dir_name(topic, partition, status, unique_id)  # type: ignore[arg-type]
    assert parse_partition_dir_name(name) == PartitionDirName(topic, partition, status, unique_id)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("c-none-0", PartitionDirName("c-none", 0)),
        ("__consumer_offsets-49", PartitionDirName("__consumer_offsets", 49)),
        ("my.topic-3", PartitionDirName("my.topic", 3)),
        ("t--1", PartitionDirName("t-", 1)),  # split at the last "-": no negative partitions
        ("t-+1", PartitionDirName("t", 1)),  # Integer.parseInt takes a plus sign
        (
            "txn-1.8b0fd1e3d9b84c07a6a2dcf27e1a1fd4-delete",
            PartitionDirName("txn", 1, "delete", "8b0fd1e3d9b84c07a6a2dcf27e1a1fd4"),
        ),
        ("a.b-0.x-future", PartitionDirName("a.b", 0, "future", "x")),
        ("a-b-7.0123abcd-stray", PartitionDirName("a-b", 7, "stray", "0123abcd")),
    ],
)
def test_parse_partition_dirs(name: str, expected: PartitionDirName) -> None:
    assert parse_partition_dir_name(name) == expected


@pytest.mark.parametrize(
    "name",
    [
        "nodash",
        "-0",
        "topic-",
        "topic-x",
        "topic-2147483648",
        "topic-0-delete",  # a status needs ".<unique id>" before it
        "topic-0.-delete",
        "a.b-0.x.y-future",  # the unique id ends at the last ".", leaving partition "0.x"
        "top ic-0.abc-delete",  # Kafka's pattern for suffixed names refuses whitespace
        "_logdir-files",
        "expected",
        "",
    ],
)
def test_parse_partition_dir_rejects(name: str) -> None:
    assert parse_partition_dir_name(name) is None


def test_partition_dir_name_rejects_half_suffixes() -> None:
    with pytest.raises(ValueError, match="unique id"):
        partition_dir_name("t", 0, "delete")
    with pytest.raises(ValueError, match="status"):
        partition_dir_name("t", 0, None, "abc")


# --- the corpus ---------------------------------------------------------------------------------------


@pytest.mark.corpus
@pytest.mark.parametrize("corpus_dir", CORPUS_DIRS)
def test_every_corpus_name_is_understood(corpus_dir: str) -> None:
    root = require_corpus() / corpus_dir
    for partition_dir in sorted(
        p for p in root.iterdir() if p.is_dir() and p.name not in ("expected", "_logdir-files")
    ):
        parsed_dir = parse_partition_dir_name(partition_dir.name)
        if partition_dir.name == "compacted-sparse-0-deleted-leftovers":
            assert parsed_dir is None  # named by the corpus builder; Kafka would refuse it
        else:
            assert parsed_dir is not None, partition_dir
            assert parsed_dir.status is None
            assert partition_dir_name(parsed_dir.topic, parsed_dir.partition) == partition_dir.name
        for file in sorted(partition_dir.iterdir()):
            if file.name in PARTITION_DIR_FILES:
                continue
            parsed = parse_segment_file_name(file.name)
            assert parsed is not None, file
            assert (
                segment_file_name(parsed.base_offset, parsed.kind, parsed.suffix, parsed.epoch) == file.name
            )
    logdir_files = root / "_logdir-files"
    if logdir_files.is_dir():
        assert {p.name for p in logdir_files.iterdir()} <= LOG_DIR_FILES
