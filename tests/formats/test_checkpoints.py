from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from corpus_paths import CORPUS_DIRS, corpus_file_params, require_corpus
from hypothesis import given
from hypothesis import strategies as st

from kdump.errors import CorruptFieldError
from kdump.formats.checkpoints import (
    CleanShutdown,
    EpochEntry,
    OffsetCheckpointEntry,
    decode_clean_shutdown,
    decode_leader_epoch_checkpoint,
    decode_meta_properties,
    decode_offset_checkpoint,
    decode_partition_metadata,
    encode_clean_shutdown,
    encode_leader_epoch_checkpoint,
    encode_meta_properties,
    encode_offset_checkpoint,
    encode_partition_metadata,
    topic_id_from_uuid,
)
from kdump.formats.filenames import OFFSET_CHECKPOINT_FILES

INT32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
TOPICS = st.text(
    alphabet=st.characters(exclude_characters=" \t\n\x0b\f\r", exclude_categories=["Cs"]), min_size=1
)


# --- leader-epoch-checkpoint and the offset checkpoints -----------------------------------------------


@given(st.lists(st.builds(EpochEntry, INT32, INT64), max_size=20))
def test_leader_epoch_round_trip(entries: list[EpochEntry]) -> None:
    decoded = decode_leader_epoch_checkpoint(encode_leader_epoch_checkpoint(entries))
    assert (decoded.version, decoded.entries) == (0, tuple(entries))


@given(st.lists(st.builds(OffsetCheckpointEntry, TOPICS, INT32, INT64), max_size=20))
def test_offset_checkpoint_round_trip(entries: list[OffsetCheckpointEntry]) -> None:
    decoded = decode_offset_checkpoint(encode_offset_checkpoint(entries))
    assert (decoded.version, decoded.entries) == (0, tuple(entries))


def test_encoded_layout() -> None:
    assert encode_leader_epoch_checkpoint([(0, 0)]) == b"0\n1\n0 0\n"
    assert encode_offset_checkpoint([("c-none", 0, 3000)]) == b"0\n1\nc-none 0 3000\n"
    assert encode_offset_checkpoint([]) == b"0\n0\n"


@pytest.mark.parametrize(
    ("text", "entries"),
    [
        ("0\r\n2\r\n0 0\r\n3 1200\r\n", ((0, 0), (3, 1200))),  # CRLF, as Java's readLine allows
        ("0\r1\r5 7", ((5, 7),)),  # bare CR, no final newline
        ("0\n1\n4\t \t9   \n", ((4, 9),)),  # any whitespace run separates, trailing blanks vanish
        ("0\n1\n+4 -9\n", ((4, -9),)),
        ("0\n1\n\u0663 \u0661\u0662\n", ((3, 12),)),  # Java's parseInt takes any Unicode digit
        ("0\n0\n", ()),
    ],
)
def test_leader_epoch_accepts_what_kafka_accepts(text: str, entries: tuple[tuple[int, int], ...]) -> None:
    assert decode_leader_epoch_checkpoint(text.encode()).entries == entries


@pytest.mark.parametrize(("text", "version"), [("", None), ("0\n", 0), ("0", 0)])
def test_missing_header_lines_mean_no_entries(text: str, version: int | None) -> None:
    # Kafka creates the file before writing it, and reads a missing version or count line as empty.
    decoded = decode_offset_checkpoint(text.encode())
    assert (decoded.version, decoded.entries) == (version, ())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0\n1\n0 0 0\n", r"^Malformed line in checkpoint file: 0 0 0$"),
        ("0\n1\n0\n", "Malformed line in checkpoint file: 0$"),
        ("0\n1\n x 1\n", "Malformed line"),
        ("0\n1\n 0 0\n", "Malformed line"),  # a leading blank yields an empty first field in Java
        ("0\n1\n0 0\n\n", "Malformed line in checkpoint file: $"),  # a blank line is a line
        ("0\n1\n2147483648 0\n", "Malformed line"),  # epoch beyond int32
        ("0\n1\n0 9223372036854775808\n", "Malformed line"),
        ("0\n1\n1_0 0\n", "Malformed line"),  # Python int() would take it, Java does not
        ("zero\n", r"Malformed line in checkpoint file: zero$"),
        ("0 \n", "Malformed line"),  # the version line is parsed whole
        ("0\none\n", "Malformed line in checkpoint file: one$"),
        ("1\n0\n", r"^Unrecognised version:1, expected version: 0 in checkpoint file$"),
        ("0\n2\n0 0\n", r"^Expected \[2\] entries in checkpoint file, but found only \[1\]$"),
        ("0\n0\n0 0\n", r"Expected \[0\] entries .* found only \[1\]"),
        ("0\n-1\n", "Negative entry count -1"),
        ("\ufeff0\n0\n", "Malformed line"),  # Java keeps a BOM in the first line
    ],
)
def test_malformed_leader_epoch_checkpoint(text: str, message: str) -> None:
    with pytest.raises(CorruptFieldError, match=message):
        decode_leader_epoch_checkpoint(text.encode())


@pytest.mark.parametrize(
    "text", ["0\n1\nt 0\n", "0\n1\nt 0 1 2\n", "0\n1\nt x 1\n", "0\n1\nt 2147483648 1\n"]
)
def test_malformed_offset_checkpoint(text: str) -> None:
    with pytest.raises(CorruptFieldError, match="Malformed line in checkpoint file"):
        decode_offset_checkpoint(text.encode())


def test_leading_blank_gives_an_empty_topic() -> None:
    # Java's split keeps the empty field before a leading blank, so Kafka reads topic "" here.
    assert decode_offset_checkpoint(b"0\n1\n 0 1\n").entries == (("", 0, 1),)


def test_non_utf8_checkpoint() -> None:
    with pytest.raises(CorruptFieldError, match="not UTF-8 at byte 4"):
        decode_leader_epoch_checkpoint(b"0\n1\n\xff 0\n")


@pytest.mark.parametrize("topic", ["", "a b", "a\nb"])
def test_encode_rejects_topics_that_cannot_round_trip(topic: str) -> None:
    with pytest.raises(CorruptFieldError, match="checkpoint field"):
        encode_offset_checkpoint([(topic, 0, 0)])


def test_encode_rejects_out_of_range() -> None:
    with pytest.raises(CorruptFieldError, match="epoch"):
        encode_leader_epoch_checkpoint([(2**31, 0)])
    with pytest.raises(CorruptFieldError, match="offset"):
        encode_offset_checkpoint([("t", 0, 2**63)])


# --- partition.metadata -------------------------------------------------------------------------------

NON_ZERO_UUIDS = st.uuids().filter(lambda u: u.int != 0)


@given(NON_ZERO_UUIDS, st.integers(min_value=0, max_value=2**31 - 1))
def test_partition_metadata_round_trip(topic_uuid: uuid.UUID, version: int) -> None:
    decoded = decode_partition_metadata(encode_partition_metadata(topic_uuid, version))
    assert decoded.version == version
    assert decoded.topic_uuid == topic_uuid
    assert decoded.topic_id == topic_id_from_uuid(topic_uuid)
    assert len(decoded.topic_id) == 22


def test_partition_metadata_layout() -> None:
    assert (
        encode_partition_metadata("AAAAAAAAAAAAAAAAAAAAAQ") == b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ"
    )


@pytest.mark.parametrize(
    ("text", "version", "topic_id"),
    [
        ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", 0, "AAAAAAAAAAAAAAAAAAAAAQ"),
        ("version: 0\r\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\r\n", 0, "AAAAAAAAAAAAAAAAAAAAAQ"),
        ("version:\t7\ntopic_id:   EI983ybyS5W9-cnjUAqqoQ\nignored", 7, "EI983ybyS5W9-cnjUAqqoQ"),
        ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ==", 0, "AAAAAAAAAAAAAAAAAAAAAQ=="),
    ],
)
def test_partition_metadata_accepts(text: str, version: int, topic_id: str) -> None:
    decoded = decode_partition_metadata(text.encode())
    assert (decoded.version, decoded.topic_id) == (version, topic_id)
    assert decoded.topic_uuid.int != 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"^Malformed line in partition metadata file: None$"),
        ("version: 0", r"^Malformed line in partition metadata file: None$"),
        (
            "version:0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ",
            "Malformed line in partition metadata file: version:0$",
        ),
        ("Version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", "Malformed line"),
        (
            "version: x\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ",
            "Malformed line in partition metadata file: version: x$",
        ),
        (
            "version: -1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ",
            r"^Unrecognized version of partition metadata file: -1$",
        ),
        ("version: 0\ntopic: AAAAAAAAAAAAAAAAAAAAAQ", "Malformed line"),
        ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAA", "Malformed line"),  # 21 characters
        ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAA+", "Malformed line"),  # not the URL alphabet
        ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ=", "Malformed line"),
        ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", r"^Invalid topic ID in partition metadata file$"),
    ],
)
def test_malformed_partition_metadata(text: str, message: str) -> None:
    with pytest.raises(CorruptFieldError, match=message):
        decode_partition_metadata(text.encode())


def test_encode_partition_metadata_rejects_zero_and_junk() -> None:
    with pytest.raises(CorruptFieldError):
        encode_partition_metadata(uuid.UUID(int=0))
    with pytest.raises(CorruptFieldError):
        encode_partition_metadata("not-a-topic-id")


# --- meta.properties ----------------------------------------------------------------------------------

PROPERTY_TEXT = st.text(alphabet=st.characters(exclude_categories=["Cs"]))


@given(st.dictionaries(PROPERTY_TEXT, PROPERTY_TEXT, max_size=8), st.lists(PROPERTY_TEXT, max_size=2))
def test_meta_properties_round_trip(properties: dict[str, str], comments: list[str]) -> None:
    comments = [c for c in comments if "\n" not in c and "\r" not in c]
    encoded = encode_meta_properties(properties, comments)
    assert encoded.isascii()
    assert decode_meta_properties(encoded) == properties


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("#\n#Sat Nov 21 21:39:06 UTC 2026\nnode.id=1\nversion=1\n", {"node.id": "1", "version": "1"}),
        ("! bang comment\n   # indented comment\n\n  \t\n", {}),
        ("a=1\nb=2\n#a comment\n\nc=3\nd=", {"a": "1", "b": "2", "c": "3", "d": ""}),  # Kafka's own test
        ("key value\nk2:v2\nk3 = v3\nk4\t:\t v4 \n", {"key": "value", "k2": "v2", "k3": "v3", "k4": "v4 "}),
        ("k==v\nk2 ::v2\n", {"k": "=v", "k2": ":v2"}),
        ("lonely\n", {"lonely": ""}),
        ("a\\ b\\=c\\:d=e\\tf\\u0041\\q\n", {"a b=c:d": "e\tfAq"}),
        ("long = first, \\\n        second, \\\r\n   third\n", {"long": "first, second, third"}),
        ("odd=one\\\\\nnext=two\n", {"odd": "one\\", "next": "two"}),
        ("#not continued \\\nx=1\n", {"x": "1"}),
        ("\\\n# a comment after an empty continuation\n", {}),
        ("x=at end\\", {"x": "at end"}),
        ("dup=1\ndup=2\n", {"dup": "2"}),
        ("smile=\\ud83d\\ude00\n", {"smile": "\U0001f600"}),
    ],
)
def test_meta_properties_java_syntax(text: str, expected: dict[str, str]) -> None:
    assert decode_meta_properties(text.encode("latin-1")) == expected


def test_meta_properties_reads_bytes_as_latin1() -> None:
    # Kafka loads the file from an InputStream: ISO-8859-1, so UTF-8 text arrives as mojibake.
    assert decode_meta_properties("cluster.id=é".encode()) == {"cluster.id": "Ã©"}


@pytest.mark.parametrize("text", ["k=\\u00G1\n", "k=\\u12\n", "\\uZZZZ=v\n"])
def test_meta_properties_malformed_unicode_escape(text: str) -> None:
    with pytest.raises(CorruptFieldError, match=r"Malformed \\uxxxx encoding."):
        decode_meta_properties(text.encode())


# --- .kafka_cleanshutdown -----------------------------------------------------------------------------


@given(INT64)
def test_clean_shutdown_round_trip(epoch: int) -> None:
    assert decode_clean_shutdown(encode_clean_shutdown(epoch)) == CleanShutdown(0, epoch)


def test_clean_shutdown_forms() -> None:
    assert encode_clean_shutdown(42) == b'{"version":0,"brokerEpoch":42}'
    assert decode_clean_shutdown(b"") == CleanShutdown(None, None)  # brokers before 3.7
    assert decode_clean_shutdown(b'{"brokerEpoch": 7, "extra": [1]}\n') == CleanShutdown(0, 7)
    assert decode_clean_shutdown(b'{"version": 0}') == CleanShutdown(0, None)
    assert decode_clean_shutdown(b'{"version": 0, "brokerEpoch": null}') == CleanShutdown(0, None)


@pytest.mark.parametrize(
    "text",
    [
        b"{",
        b"   ",
        b"[1]",
        b'{"version": "0"}',
        b'{"brokerEpoch": true}',
        b'{"brokerEpoch": 1.5}',
        b'{"brokerEpoch": NaN}',
        b'{"brokerEpoch": 9223372036854775808}',
        b"\xff",
    ],
)
def test_malformed_clean_shutdown(text: bytes) -> None:
    with pytest.raises(CorruptFieldError):
        decode_clean_shutdown(text)


# --- the corpus ---------------------------------------------------------------------------------------


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_file_params("*/leader-epoch-checkpoint"))
def test_corpus_leader_epoch_checkpoints(path: Path) -> None:
    decoded = decode_leader_epoch_checkpoint(path.read_bytes())
    assert decoded.version == 0
    assert len(decoded.entries) == 1
    assert encode_leader_epoch_checkpoint(decoded.entries) == path.read_bytes()


@pytest.mark.corpus
@pytest.mark.parametrize("path", corpus_file_params("*/partition.metadata"))
def test_corpus_partition_metadata(path: Path) -> None:
    decoded = decode_partition_metadata(path.read_bytes())
    assert decoded.version == 0
    assert encode_partition_metadata(decoded.topic_uuid) == path.read_bytes()


@pytest.mark.corpus
def test_corpus_known_values() -> None:
    root = require_corpus()
    metadata = decode_partition_metadata(
        (root / "kafka-3.8.0/__cluster_metadata-0/partition.metadata").read_bytes()
    )
    assert metadata.topic_uuid == uuid.UUID(int=1)  # KRaft's fixed metadata topic id
    epochs = decode_leader_epoch_checkpoint(
        (root / "kafka-3.8.0/__cluster_metadata-0/leader-epoch-checkpoint").read_bytes()
    )
    assert epochs.entries == (EpochEntry(1, 0),)
    # Epoch 0 began when the partition switched to the v2 format at offset 1200.
    mixed = decode_leader_epoch_checkpoint(
        (root / "kafka-3.8.0-zk-legacy/mixed-formats-0/leader-epoch-checkpoint").read_bytes()
    )
    assert mixed.entries == (EpochEntry(0, 1200),)

    logdir = root / "kafka-3.8.0" / "_logdir-files"
    recovery = decode_offset_checkpoint((logdir / "recovery-point-offset-checkpoint").read_bytes())
    assert len(recovery.entries) == 25
    assert OffsetCheckpointEntry("live", 0, 17514) in recovery.entries
    cleaner = decode_offset_checkpoint((logdir / "cleaner-offset-checkpoint").read_bytes())
    assert set(cleaner.entries) == {("compacted-sparse", 0, 4500), ("compacted", 0, 2501)}
    assert decode_offset_checkpoint((logdir / "log-start-offset-checkpoint").read_bytes()).entries == ()
    assert decode_meta_properties((logdir / "meta.properties").read_bytes()) == {
        "node.id": "1",
        "directory.id": "SIlLW-8EEtch0LoRCz2tVw",
        "version": "1",
        "cluster.id": "lenBLIeMRQ6NbEh0tYCH1w",
    }

    legacy = root / "kafka-3.8.0-zk-legacy" / "_logdir-files"
    # An empty file: the ZooKeeper broker created it and never wrote it (nothing to clean).
    assert decode_offset_checkpoint((legacy / "cleaner-offset-checkpoint").read_bytes()).version is None
    assert decode_meta_properties((legacy / "meta.properties").read_bytes())["broker.id"] == "0"


@pytest.mark.corpus
@pytest.mark.parametrize("corpus_dir", [name for name in CORPUS_DIRS if "running-copy" not in name])
def test_corpus_logdir_files_decode(corpus_dir: str) -> None:
    # The running copy holds partition directories only.
    logdir = require_corpus() / corpus_dir / "_logdir-files"
    for name in OFFSET_CHECKPOINT_FILES:
        data = (logdir / name).read_bytes()
        decoded = decode_offset_checkpoint(data)
        if decoded.version is not None:
            assert encode_offset_checkpoint(decoded.entries) == data
    properties = decode_meta_properties((logdir / "meta.properties").read_bytes())
    assert properties["version"] in ("0", "1")
    assert properties["cluster.id"]


def test_a_small_files_decoding_is_kept_and_a_failure_is_not() -> None:
    """Files of the same bytes (a log dir's partitions share a few) decode once; the value is the
    one a fresh decode gives, and a file that does not decode raises every time."""
    data = b"0\n2\n0 0\n3 17\n"
    first = decode_leader_epoch_checkpoint(data)
    assert decode_leader_epoch_checkpoint(bytes(data)) is first
    assert decode_leader_epoch_checkpoint(data.decode()) == first  # text: not kept
    long = encode_leader_epoch_checkpoint([(e, e * 1000) for e in range(40)])
    assert len(long) > 256
    assert decode_leader_epoch_checkpoint(long) is not decode_leader_epoch_checkpoint(long)  # not kept
    assert decode_leader_epoch_checkpoint(long) == decode_leader_epoch_checkpoint(long.decode())
    meta = b"version: 0\ntopic_id: rVvUT6SgmRiiPXu5xjH5tA\n"
    assert decode_partition_metadata(meta) is decode_partition_metadata(bytes(meta))
    for _ in range(2):
        with pytest.raises(CorruptFieldError):
            decode_leader_epoch_checkpoint(b"0\n2\n0 0\n")
        with pytest.raises(CorruptFieldError):
            decode_partition_metadata(b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n")
