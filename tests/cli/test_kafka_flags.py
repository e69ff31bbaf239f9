"""`kdump dump` given Kafka's own kafka-dump-log.sh flags prints what Kafka's tool prints, line for line.

Every oracle of the corpus (``expected/``: the full corpus when ``../shared`` is present, the bundled
real subset otherwise) is reproduced by the invocation its README names, run from the corpus root as
the oracles were: stdout byte for byte, stderr (Kafka's summaries, with its absolute paths made
relative as in the oracles) line for line, and the exit status. The oracles were written by Kafka
3.8's tool, so these runs ask for its text with ``--kafka-version 3.8``.
"""

from __future__ import annotations

import gzip
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import tiered_corpus
from builders import SegmentBuilder, records
from click.testing import Result
from corpus import CORPUS_DIRS

from kdump.formats.constants import Codec
from kdump.render.kafka_tool import hash_map_order, shown_path

Kdump = Callable[..., Result]

_LOG_VARIANTS = {
    "shallow": [],
    "deep": ["--deep-iteration"],
    "deep-print-data-log": ["--deep-iteration", "--print-data-log"],
}
_INDEX_VARIANTS = {
    "dump": [],
    "verify-index-only": ["--verify-index-only"],
    "index-sanity-check": ["--index-sanity-check"],
}


def _flags(oracle: Path) -> tuple[str, list[str]] | None:
    """The file an oracle dumped (its name without the variant) and the flags that made it."""
    name = oracle.name.removesuffix(".gz").removesuffix(".txt")
    m = re.fullmatch(r"(\d{20}\.(?:log|index|timeindex|snapshot|txnindex|log\.deleted))\.(.+)", name)
    if m is None:
        return None
    file, variant = m.groups()
    if file.endswith((".index", ".timeindex")):
        flags = _INDEX_VARIANTS.get(variant)
    elif file.endswith((".snapshot", ".txnindex")):
        flags = [] if variant == "dump" else None
    elif variant.startswith("deep-print-data-log."):
        flags = [*_LOG_VARIANTS["deep-print-data-log"], f"--{variant.split('.', 1)[1]}"]
    else:
        flags = _LOG_VARIANTS.get(variant)
    return None if flags is None else (file, flags)


def _oracles(root: Path) -> Iterator[Path]:
    for corpus_dir in CORPUS_DIRS:
        expected = root / corpus_dir / "expected"
        if expected.is_dir():
            for part in sorted(p for p in expected.iterdir() if p.is_dir()):
                for oracle in sorted(part.iterdir()):
                    if oracle.name.endswith((".txt", ".txt.gz")) and _flags(oracle) is not None:
                        yield oracle


def _text(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def _sibling(oracle: Path, suffix: str) -> Path:
    return oracle.with_name(oracle.name.removesuffix(".gz") + suffix)


def _kafka_stderr(oracle: Path, root: Path) -> list[str]:
    """Kafka's stderr, without the Java stack trace lines kdump does not imitate."""
    path = _sibling(oracle, ".stderr")
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    return [line.replace(f"{root}/", "") for line in lines if not line.startswith("\tat ")]


def _run_oracle(kdump: Kdump, root: Path, oracle: Path, monkeypatch: pytest.MonkeyPatch, tmp: Path) -> None:
    found = _flags(oracle)
    assert found is not None
    file, flags = found
    part = oracle.parent.name
    corpus_dir = oracle.parent.parent.parent
    if file.endswith(".deleted"):
        # Made from a copy named <base>.log (the tool ignores other suffixes): its `Dumping` line has the
        # bare name.
        src = corpus_dir / part.removesuffix("-deleted-leftovers") / file
        if not src.exists():
            src = corpus_dir / part / file
        shutil.copyfile(src, tmp / file.removesuffix(".deleted"))
        monkeypatch.chdir(tmp)
        arg = file.removesuffix(".deleted")
    else:
        monkeypatch.chdir(root)
        arg = f"{corpus_dir.name}/{part}/{file}"
    result = kdump("dump", "--kafka-version", "3.8", *flags, "--files", arg)
    expected_rc = int(_sibling(oracle, ".rc").read_text()) if _sibling(oracle, ".rc").exists() else 0
    theirs = _text(oracle)
    ours = result.stdout_bytes
    stderr = [line.replace(f"{Path.cwd()}/", "") for line in result.stderr.splitlines()]
    kafka_stderr = _kafka_stderr(oracle, root)
    if file.endswith(".deleted"):
        # The running copy's leftovers captured Kafka's stderr summary at the end of stdout.
        head, sep, tail = theirs.partition(b"\nNon-consecutive offsets in ")
        if sep:
            theirs = head + b"\n"
            kafka_stderr = ("Non-consecutive offsets in " + tail.decode()).splitlines()
            stderr = [re.sub(r"^(Non-consecutive offsets in ).*/", r"\1", s) for s in stderr]
            kafka_stderr = [re.sub(r"^(Non-consecutive offsets in ).*/", r"\1", s) for s in kafka_stderr]
    assert ours == theirs, f"{oracle}: stdout differs"
    assert stderr == kafka_stderr, f"{oracle}: stderr differs"
    assert result.exit_code == expected_rc, oracle


def test_every_corpus_oracle_is_reproduced_by_kafkas_flags(
    kdump: Kdump, corpus_root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    oracles = list(_oracles(corpus_root))
    assert oracles, f"no oracle under {corpus_root}"
    kinds = set()
    for oracle in oracles:
        _run_oracle(kdump, corpus_root, oracle, monkeypatch, tmp_path)
        kinds.add(oracle.name.split(".", 1)[1].removesuffix(".gz"))
    # Every kind of oracle the corpus has was compared (the subset has fewer kinds than the full corpus).
    assert {"log.shallow.txt", "log.deep.txt", "index.dump.txt"} <= kinds


def test_the_tiered_corpus_oracles_of_kafka_39_and_44_are_reproduced(
    kdump: Kdump, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bundled tiered-storage corpus holds oracles of Kafka 3.9.1's (Scala) and 4.4.0's (Java) tools,
    the remote log metadata decoder's included, on broker output and on hand-made records Kafka refuses."""
    root = tiered_corpus.tiered_root(tmp_path_factory.getbasetemp())
    monkeypatch.chdir(root)
    runs: list[tuple[str, str, Path]] = []
    for version in tiered_corpus.VERSIONS:
        base = tiered_corpus.corpus_dir(root, version)
        for part in sorted(p for p in (base / "expected").iterdir() if p.is_dir() and p.name != "_remote"):
            runs += [(version, f"{base.name}/{part.name}", o) for o in sorted(part.glob("*.txt"))]
        synthetic = root / "synthetic" / "expected"
        runs += [
            (version, "synthetic/__remote_log_metadata-0", o)
            for o in synthetic.glob(f"*.kafka-{version}.txt")
        ]
    compared = 0
    for version, part, oracle in runs:
        found = _flags(oracle.with_name(oracle.name.replace(f".kafka-{version}", "")))
        if found is None:
            continue
        file, flags = found
        result = kdump("dump", "--kafka-version", version, *flags, "--files", f"{part}/{file}")
        assert result.stdout_bytes == oracle.read_bytes(), oracle
        assert _relative(result.stderr) == _relative(_kafka_stderr_text(oracle)), oracle
        compared += 1
    assert compared >= 70


def _kafka_stderr_text(oracle: Path) -> str:
    path = _sibling(oracle, ".stderr")
    return path.read_text() if path.exists() else ""


def _relative(stderr: str) -> str:
    """Kafka's absolute paths (of the machine that ran it, or of this test) from the corpus on."""
    return re.sub(r"/\S*?/(?=kafka-[\d.]+-tiered/|synthetic/)", "", stderr)


def test_paths_are_shown_as_javas_file_shows_them() -> None:
    assert shown_path("a//b/00000000000000000000.log") == "a/b/00000000000000000000.log"
    assert shown_path("dir/") == "dir"
    assert shown_path("/") == "/"


def test_summaries_follow_the_hash_maps_order() -> None:
    # "Aa" and "BB" share a String hash (2112), bucket 0; "a" (97) is in bucket 1. Java puts a new key at
    # the head of its bucket; Scala keeps a bucket sorted by hash (equal here: insertion order).
    assert hash_map_order(["a", "BB", "Aa"], True) == ["Aa", "BB", "a"]
    assert hash_map_order(["a", "BB", "Aa"], False) == ["BB", "Aa", "a"]
    # "q" (113) and "a" (97) share bucket 1 of 16, not of 32. Java doubles the table at the touch after
    # the one that made 13 entries; Scala when the 12th entry would be put.
    others = [chr(c) for c in range(ord("b"), ord("b") + 11)]
    assert hash_map_order(["q", "a", *others], True)[:2] == ["a", "q"]  # 13 entries, 16 buckets
    assert hash_map_order(["q", "a", *others, "q"], True)[0] == "a"  # a 14th touch: 32 buckets
    assert hash_map_order(["q", "a", *others, "q"], True)[-1] == "q"
    assert hash_map_order(["q", "a", *others[:9]], False)[:2] == ["a", "q"]  # 11 entries, 16 buckets
    assert hash_map_order(["q", "a", *others[:10]], False)[-1] == "q"  # the 12th: 32 buckets


# --- the flags on segments built here -------------------------------------------------------------


@pytest.fixture
def part(tmp_path: Path) -> Path:
    """Two segments; the second starts at offset 5 and its first record has no key."""
    part = tmp_path / "orders-0"
    first = SegmentBuilder()
    first.add_v2(records(5))
    first.write(part)
    second = SegmentBuilder(base_offset=5)
    second.add_v2(records(2, key=False))
    second.add_v2(records(3))
    second.write(part)
    return part


def _log(part: Path, base: int) -> str:
    return str(part / f"{base:020d}.log")


def test_files_keep_the_order_given(kdump: Kdump, part: Path) -> None:
    result = kdump("dump", "--files", f"{_log(part, 5)},{_log(part, 0)}")
    assert result.exit_code == 0, result.stderr
    dumped = [line for line in result.stdout.splitlines() if line.startswith("Dumping ")]
    assert dumped == [f"Dumping {_log(part, 5)}", f"Dumping {_log(part, 0)}"]


def test_a_directory_stands_for_its_logs(kdump: Kdump, part: Path) -> None:
    result = kdump("dump", "--deep-iteration", str(part))
    assert result.exit_code == 0, result.stderr
    assert [line for line in result.stdout.splitlines() if line.startswith("Log starting offset:")] == [
        "Log starting offset: 0",
        "Log starting offset: 5",
    ]
    assert sum(line.startswith("| offset: ") for line in result.stdout.splitlines()) == 10


@pytest.mark.parametrize(
    ("version", "line", "summary"),
    [
        ("3.8", " payload: value-0-", []),
        ("4.4", "| payload: value-0-", ["Non-consecutive offsets in {log}", "  -1 is followed by 5"]),
    ],
)
def test_releases_differ_where_kafka_does(
    kdump: Kdump, part: Path, monkeypatch: pytest.MonkeyPatch, version: str, line: str, summary: list[str]
) -> None:
    monkeypatch.chdir(part)
    log = f"{5:020d}.log"
    result = kdump("dump", "--kafka-version", version, "--skip-record-metadata", "--print-data-log", log)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    # A record without key: what precedes its payload is where 3.x and 4.x differ.
    assert lines[3].startswith(line), lines[3]
    assert lines[6].startswith("| key: key-0 payload: value-0-")
    assert result.stderr.splitlines() == [s.format(log=part / log) for s in summary]


def test_max_bytes_reads_whole_batches_only(kdump: Kdump, part: Path) -> None:
    whole = kdump("dump", "--files", _log(part, 5))
    batches = [line for line in whole.stdout.splitlines() if line.startswith("baseOffset: ")]
    first_size = int(batches[0].split(" size: ")[1].split()[0])
    cut = kdump("dump", "--max-bytes", str(first_size + 10), "--files", _log(part, 5))
    assert [line for line in cut.stdout.splitlines() if line.startswith("baseOffset: ")] == batches[:1]
    assert "invalid bytes" not in cut.stdout


def test_trailing_bytes_are_counted_as_kafka_counts_them(kdump: Kdump, part: Path) -> None:
    log = Path(_log(part, 0))
    log.write_bytes(log.read_bytes() + b"\x00" * 7)
    result = kdump("dump", "--files", str(log))
    assert result.stdout.splitlines()[-1] == f"Found 7 invalid bytes at the end of {log.name}"


def test_unknown_and_missing_files_are_handled_as_kafka_does(kdump: Kdump, part: Path) -> None:
    other = part / "partition.metadata"
    other.write_text("version: 0\n")
    result = kdump("dump", "--files", str(other))
    assert (result.exit_code, result.stdout) == (0, f"Dumping {other}\n")
    assert result.stderr == f"Ignoring unknown file {other}\n"
    missing = part / f"{99:020d}.log"
    result = kdump("dump", "--files", f"{missing},{_log(part, 0)}")
    assert result.exit_code == 1
    assert result.stdout == f"Dumping {missing}\nLog starting offset: 99\n"
    assert result.stderr == f'Exception in thread "main" java.nio.file.NoSuchFileException: {missing}\n'


def test_an_index_that_fails_the_sanity_check_stops_the_run(kdump: Kdump, part: Path) -> None:
    index = part / f"{0:020d}.timeindex"
    size = index.stat().st_size
    assert size == 12, "one entry expected"
    index.write_bytes(index.read_bytes() + b"\x00\x00\x00")
    result = kdump("dump", "--index-sanity-check", "--files", f"{index},{_log(part, 5)}")
    assert result.exit_code == 1
    assert result.stdout == f"Dumping {index}\n"
    assert result.stderr == (
        'Exception in thread "main" org.apache.kafka.storage.internals.log.CorruptIndexException: '
        f"Time index file {index} is corrupt, found 15 bytes which is neither positive nor a multiple of 12\n"
    )


@pytest.mark.parametrize("option", [["--records"], ["--format", "json"], ["--from-offset", "3"]])
def test_kdumps_own_options_do_not_mix_with_kafkas(kdump: Kdump, part: Path, option: list[str]) -> None:
    result = kdump("dump", "--deep-iteration", *option, str(part))
    assert result.exit_code == 2
    assert "cannot be used with Kafka's flags" in result.stderr
    assert result.stdout == ""


def test_without_files_or_paths_is_a_usage_error(kdump: Kdump) -> None:
    result = kdump("dump", "--deep-iteration")
    assert result.exit_code == 2
    assert "Missing --files" in result.stderr


def test_decoder_classes_read_keys_as_kafkas_decoders_do(kdump: Kdump, part: Path) -> None:
    api = "org.apache.kafka.tools.api."
    result = kdump("dump", "--key-decoder-class", f"{api}IntegerDecoder", "--files", _log(part, 0))
    assert result.exit_code == 0, result.stderr
    record = result.stdout.splitlines()[3]
    # The number is the key's first four bytes ("key-"), as Java's ByteBuffer.getInt reads them.
    assert f" key: {int.from_bytes(b'key-', 'big', signed=True)} payload: value-0-" in record
    # 3.x's tool takes the old names, with a note before each log; 4.x's no longer loads them.
    old = "kafka.serializer.StringDecoder"
    result = kdump("dump", "--kafka-version", "3.8", "--value-decoder-class", old, "--files", _log(part, 0))
    assert result.stdout.splitlines()[1] == f"{old} is deprecated. Please use {api}StringDecoder instead"
    assert result.stdout.splitlines()[2] == "Log starting offset: 0"
    result = kdump("dump", "--value-decoder-class", old, "--files", _log(part, 0))
    assert result.exit_code == 1
    assert (
        result.stderr
        == 'Exception in thread "main" java.lang.RuntimeException: Failed to load decoder class\n'
    )
    result = kdump("dump", "--value-decoder-class", "com.example.AvroDecoder", "--files", _log(part, 0))
    assert result.exit_code == 2
    assert "cannot run the Java class com.example.AvroDecoder" in result.stderr


def test_records_that_do_not_decode_stop_the_run_with_kdumps_reason(kdump: Kdump, tmp_path: Path) -> None:
    seg = SegmentBuilder()
    seg.add_v2(records(3))
    seg.add_v2(records(20), codec=Codec.GZIP)
    log = seg.write(tmp_path / "zipped-0")
    data = bytearray(log.read_bytes())
    data[-6] ^= 0xFF  # in the gzip trailer's checksum
    log.write_bytes(bytes(data))
    shallow = kdump("dump", "--files", str(log))
    assert shallow.exit_code == 0
    assert len(shallow.stdout.splitlines()) == 4
    deep = kdump("dump", "--deep-iteration", "--files", str(log))
    assert deep.exit_code == 1
    assert deep.stdout.splitlines()[-1].startswith("baseOffset: 3 ")
    assert "Kafka's tool stops here with an exception kdump does not imitate" in deep.stderr


@pytest.mark.parametrize(
    ("flag", "release", "refused"),
    [
        ("--share-group-state-decoder", "3.9", True),
        ("--share-group-state-decoder", "4.0", False),
        ("--remote-log-metadata-decoder", "3.8", True),
        ("--remote-log-metadata-decoder", "3.9", False),
    ],
)
def test_a_decoder_flag_the_release_lacks_stops_as_its_tool_does(
    kdump: Kdump, part: Path, flag: str, release: str, refused: bool
) -> None:
    """Kafka 3.x has no share group decoder and 3.8 no remote log metadata decoder: joptsimple refuses
    the flag before any file is read (seen on 3.8.1 and 3.9.1's tools)."""
    segment = part / "00000000000000000000.log"
    r = kdump("dump", "--files", str(segment), flag, "--kafka-version", release)
    name = flag.removeprefix("--")
    if refused:
        assert r.exit_code == 1
        assert r.stdout == ""
        assert r.stderr == (
            f'Exception in thread "main" joptsimple.UnrecognizedOptionException: {name} is not a recognized option\n'
        )
    else:
        assert r.exit_code == 0, r.output
        assert r.stdout.startswith(f"Dumping {segment}")
