"""`verify` over the real Kafka 3.8.0 corpus: what a broker wrote is legal, and Kafka agrees.

- Every partition verifies with no error, shallow and --deep. Compaction gaps, transactions,
  LogAppendTime, legacy formats v0/v1, mixed formats, the running copy's preallocated indexes and
  the cleaner's `.deleted` leftovers produce only the INFO/WARNING findings listed here.
- Kafka's own index verification (`--verify-index-only`, `--index-sanity-check` oracles with their
  `.stderr`/`.rc`) agrees with kdump file by file, except where Kafka raises a known false alarm;
  each such case has a named test below saying why Kafka is wrong and kdump is right.
- verify writes nothing anywhere: on a read-only copy (`chmod -R a-w`, directories included), every
  file's hash, size, mode and mtime, and the listing of every directory, are the same afterwards
  (tests run as root, which ignores modes, so the listing and hashes are what prove it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result
from corpus import iter_partition_dirs
from corruptions import (
    LogEntry,
    append_garbage,
    chmod_read_only,
    chmod_writable,
    copy_tree,
    log_entries,
    shuffle_index_entries,
    tree_state,
)
from oracle import parse_index_dump, parse_time_index_dump

from kdump.findings import Finding, Severity
from kdump.formats.offset_index import decode_offset_index
from kdump.formats.time_index import decode_time_index
from kdump.model.log_dir import discover
from kdump.ops.checks.verify import VerifyOptions, verify_targets

# What a healthy broker's files legitimately show, per partition (anything else fails the test).
ALLOWED = {
    # The cleaner leaves offset gaps between and inside batches and segments whose first batch starts
    # above the file name's offset; `.deleted` files wait for file.delete.delay.ms.
    "compacted-0": {"offset-gap", "segment-base-mismatch"},
    "compacted-sparse-0": {"offset-gap", "segment-base-mismatch", "leftover-file"},
    "compacted-sparse-0-deleted-leftovers": {"leftover-file"},
    # Copied from a running broker: the active segment's indexes are preallocated with zeros.
    "live-0": {"index-preallocated-tail"},
}

FEATURES = {
    "compaction": ["compacted-0", "compacted-sparse-0"],
    "transactions": ["txn-0", "txn-1", "__consumer_offsets-0", "__transaction_state-0", "idempotent-0"],
    "log-append-time": ["log-append-time-0", "legacy-v1-lat-0"],
    "legacy-formats": [
        "legacy-v0-none-0",
        "legacy-v0-gzip-0",
        "legacy-v0-snappy-0",
        "legacy-v0-lz4-0",
        "legacy-v1-none-0",
        "legacy-v1-gzip-0",
        "legacy-v1-snappy-0",
        "legacy-v1-lz4-0",
    ],
    "mixed-formats": ["mixed-formats-0"],
    "running-copy": ["live-0", "compacted-sparse-0-deleted-leftovers"],
    "internal-topics": ["__cluster_metadata-0", "__consumer_offsets-0", "__transaction_state-0"],
    "empty": ["empty-0"],
}


def _verify_all(root: Path, deep: bool) -> dict[Path, list[Finding]]:
    parts = [p for _c, p, _o in iter_partition_dirs(root)]
    # Each partition is given on its own, and the corpus holds real partitions with no data (empty-0,
    # and one whose segments were all deleted): --allow-empty says they are expected.
    options = VerifyOptions(deep=deep, jobs=2, allow_empty=True)
    reports = verify_targets([discover(str(p)) for p in parts], options)
    return {p: r.findings for p, r in zip(parts, reports, strict=True)}


@pytest.fixture(scope="module")
def corpus_findings(corpus_root: Path) -> dict[Path, list[Finding]]:
    return _verify_all(corpus_root, deep=False)


@pytest.fixture(scope="module")
def corpus_findings_deep(corpus_root: Path) -> dict[Path, list[Finding]]:
    return _verify_all(corpus_root, deep=True)


def _unexpected(findings: dict[Path, list[Finding]]) -> list[str]:
    bad = []
    for part, fs in findings.items():
        allowed = ALLOWED.get(part.name, set())
        for f in fs:
            if f.severity >= Severity.ERROR or f.code not in allowed:
                bad.append(
                    f"{part.parent.name}/{part.name}: {f.severity.label} {f.code} {f.file}: {f.message}"
                )
    return bad


def test_whole_corpus_verifies_without_errors(corpus_findings: dict[Path, list[Finding]]) -> None:
    assert len(corpus_findings) >= 17
    assert _unexpected(corpus_findings) == []


def test_whole_corpus_verifies_deep_without_errors(corpus_findings_deep: dict[Path, list[Finding]]) -> None:
    assert _unexpected(corpus_findings_deep) == []


@pytest.mark.parametrize("feature", sorted(FEATURES))
def test_feature_is_legal(feature: str, corpus_findings_deep: dict[Path, list[Finding]]) -> None:
    """Each broker feature the corpus exercises yields only its listed benign findings."""
    present = {p.name: fs for p, fs in corpus_findings_deep.items() if p.name in FEATURES[feature]}
    if not present:
        pytest.skip(f"no {feature} partition in this corpus")
    for name, fs in present.items():
        assert {f.code for f in fs} <= ALLOWED.get(name, set()), (name, fs)
        assert all(f.severity < Severity.ERROR for f in fs)


def test_running_copy_and_leftovers_are_benign(corpus_findings: dict[Path, list[Finding]]) -> None:
    by_name = {p.name: fs for p, fs in corpus_findings.items()}
    live = by_name["live-0"]
    assert sorted(f.code for f in live) == ["index-preallocated-tail", "index-preallocated-tail"]
    assert all(f.severity == Severity.INFO for f in live)
    leftovers = by_name["compacted-sparse-0-deleted-leftovers"]
    assert leftovers
    # `.deleted` files await the broker's delayed delete, which a start completes: legal.
    assert {(f.code, f.severity) for f in leftovers} == {("leftover-file", Severity.INFO)}


# --- agreement with Kafka's own index verification ------------------------------------------------

# Index files Kafka 3.8's DumpLogSegments complains about although they are what a healthy broker
# writes: (corpus dir, partition dir, file name) -> the named test below that explains it.
CLEANER_ENTRY = "test_kafka_false_alarm_cleaner_multi_batch_append_entry"
LEGACY_APPENDS = "test_kafka_false_alarm_legacy_uncompressed_multi_message_appends"
PREALLOCATED = "test_kafka_false_alarm_preallocated_time_index_fails_sanity_check"
_LEGACY_MISMATCH_FILES = {
    "legacy-v0-none-0": ["0", "185", "339", "430", "546", "645"],
    "legacy-v1-none-0": ["0", "159", "297", "399", "575", "767"],
    "legacy-v0-snappy-0": ["0"],
    "mixed-formats-0": ["0", "78", "702"],
}
KNOWN_FALSE_ALARMS: dict[tuple[str, str, str], str] = {
    ("kafka-3.8.0", "compacted-sparse-0", "00000000000000000000.index"): CLEANER_ENTRY,
    ("kafka-3.8.0-running-copy", "live-0", "00000000000000008074.timeindex"): PREALLOCATED,
    **{
        ("kafka-3.8.0-zk-legacy", part, f"{int(base):020d}.index"): LEGACY_APPENDS
        for part, bases in _LEGACY_MISMATCH_FILES.items()
        for base in bases
    },
}


def _kafka_complaints(oracle_dir: Path, name: str) -> list[str]:
    """What Kafka's --verify-index-only and --index-sanity-check said was wrong with an index file."""
    parse = parse_index_dump if name.endswith(".index") else parse_time_index_dump
    complaints = []
    for variant in ("verify-index-only", "index-sanity-check"):
        oracle = oracle_dir / f"{name}.{variant}.txt"
        assert oracle.exists(), f"missing oracle {oracle}"
        dump = parse(oracle)
        if dump.exit_code:
            complaints.append(f"{variant}: exit {dump.exit_code}")
        if dump.sanity_check_passed is False:
            complaints.append(f"{variant}: sanity check failed")
        err = dump.stderr
        if err is not None:
            for label, section in (
                ("mismatches", err.index_mismatches),
                ("timestamp mismatches", err.timestamp_mismatches),
                ("out of order", err.out_of_order_timestamps),
            ):
                complaints += [f"{variant}: {label} {pairs}" for pairs in section.values() if pairs]
            if err.offsets_not_found:
                complaints.append(f"{variant}: offsets not found {err.offsets_not_found}")
            if err.exception:
                complaints.append(f"{variant}: {err.exception}")
    return complaints


def _index_files(root: Path) -> list[tuple[str, Path, Path, str]]:
    out = []
    for corpus_dir, part, oracle_dir in iter_partition_dirs(root):
        for p in sorted(part.iterdir()):
            if p.name.endswith((".index", ".timeindex")):
                out.append((corpus_dir, part, oracle_dir, p.name))
    return out


def test_kafka_index_verification_agrees_with_kdump(
    corpus_root: Path, corpus_findings: dict[Path, list[Finding]]
) -> None:
    """File by file: Kafka clean <=> kdump clean (no warning or error on the file), except the known
    false alarms, each explained by its own test. Kafka never passes a file kdump complains about."""
    files = _index_files(corpus_root)
    assert len(files) >= 30
    disagreements: dict[tuple[str, str, str], str] = {}
    for corpus_dir, part, oracle_dir, name in files:
        kafka = _kafka_complaints(oracle_dir, name)
        ours = [
            f for f in corpus_findings[part] if f.file == str(part / name) and f.severity >= Severity.WARNING
        ]
        key = (corpus_dir, part.name, name)
        if bool(kafka) != bool(ours):
            disagreements[key] = f"kafka: {kafka}; kdump: {[f.code for f in ours]}"
            assert not ours, f"kdump complains where Kafka does not: {key} {ours}"
    present = {k for k in KNOWN_FALSE_ALARMS if (corpus_root / k[0] / k[1] / k[2]).exists()}
    assert set(disagreements) == present, disagreements


def _index_and_batches(part: Path, name: str) -> tuple[list[tuple[int, int]], list[LogEntry]]:
    base = int(name.split(".")[0])
    entries = [(e.offset, e.position) for e in decode_offset_index((part / name).read_bytes(), base).entries]
    batches = log_entries((part / f"{name.split('.')[0]}.log").read_bytes())
    return entries, batches


def _lookup_is_sound(batches: list[LogEntry], index_offset: int, position: int) -> tuple[int, int]:
    """Check (O, P) the way lookups use it; return (index of the batch at P, index of the batch holding O)."""
    at = next(i for i, b in enumerate(batches) if b.position == position)
    holder = next(i for i, b in enumerate(batches) if b.last_offset >= index_offset)
    assert holder >= at, "the batch holding the offset must start at or after the entry's position"
    b = batches[holder]
    assert (b.base_offset if b.base_offset is not None else b.last_offset) <= index_offset, (
        "O is in that batch"
    )
    return at, holder


def _kdump_index_findings(findings: dict[Path, list[Finding]], part: Path, name: str) -> list[Finding]:
    return [f for f in findings[part] if f.file == str(part / name)]


def test_kafka_false_alarm_cleaner_multi_batch_append_entry(
    corpus_root: Path, corpus_findings: dict[Path, list[Finding]]
) -> None:
    """compacted-sparse-0/0.index: Kafka reports `Index offset: 1194, log offset: 900`.

    The log cleaner writes each cleaned segment with `LogSegment.append(largestOffset, ...,
    retainedRecords)`, one append holding several retained batches, where largestOffset is the
    largest offset of the *records* it kept. Kafka 3.8 (before KAFKA-806) indexes such an append as
    (that offset, position of the append's first batch): the batch at the entry's position ends at
    900, and 1194 is the last record kept of a later batch (1111..1200, which keeps its original
    offset range) of the same append. DumpLogSegments assumes the batch at the position ends at the
    indexed offset, hence the "mismatch". Lookups only need the batch holding 1194 to start at or
    after that position, which it does, so the entry is sound and kdump does not report it.
    """
    part = corpus_root / "kafka-3.8.0" / "compacted-sparse-0"
    name = "00000000000000000000.index"
    oracle = parse_index_dump(
        corpus_root / "kafka-3.8.0" / "expected" / part.name / f"{name}.verify-index-only.txt"
    )
    assert oracle.stderr is not None
    assert list(oracle.stderr.index_mismatches.values()) == [[(1194, 900)]]
    entries, batches = _index_and_batches(part, name)
    (position,) = [p for o, p in entries if o == 1194]
    at, holder = _lookup_is_sound(batches, 1194, position)
    assert batches[at].last_offset == 900
    assert holder > at
    assert (batches[holder].base_offset, batches[holder].last_offset) == (1111, 1200)
    assert all(b.magic == 2 for b in batches[at : holder + 1])
    assert _kdump_index_findings(corpus_findings, part, name) == []


def _legacy_cases() -> list[tuple[str, str]]:
    return [
        (part, f"{int(base):020d}.index") for part, bases in _LEGACY_MISMATCH_FILES.items() for base in bases
    ]


@pytest.mark.parametrize(("part_name", "name"), _legacy_cases())
def test_kafka_false_alarm_legacy_uncompressed_multi_message_appends(
    part_name: str, name: str, corpus_root: Path, corpus_findings: dict[Path, list[Finding]]
) -> None:
    """Legacy (v0/v1) uncompressed data: Kafka reports `Index offset: O, log offset: L` pairs.

    The ZooKeeper-mode broker converted each v2 produce request to the topic's old format on
    append. An uncompressed request of n records becomes n separate legacy messages written by ONE
    `LogSegment.append`, which indexes (last offset of the append, position of its first message).
    The message at the entry's position holds L < O; O is the last message of the same append.
    DumpLogSegments wants the message at the position to hold O; lookups only need the message
    holding O to start at or after the position, which it does, so kdump does not report it.
    """
    part = corpus_root / "kafka-3.8.0-zk-legacy" / part_name
    if not (part / name).exists():
        pytest.skip(f"{part_name}/{name} is not in this corpus")
    oracle = parse_index_dump(
        corpus_root / "kafka-3.8.0-zk-legacy" / "expected" / part_name / f"{name}.verify-index-only.txt"
    )
    assert oracle.stderr is not None
    (pairs,) = oracle.stderr.index_mismatches.values()
    assert pairs
    entries, batches = _index_and_batches(part, name)
    positions = dict(entries)
    for index_offset, log_offset in pairs:
        at, holder = _lookup_is_sound(batches, index_offset, positions[index_offset])
        assert batches[holder].last_offset == index_offset, "O is the last message of the append"
        assert batches[at].last_offset == log_offset
        append = batches[at : holder + 1]
        assert all(b.magic < 2 and b.compression == 0 for b in append), (
            "one uncompressed multi-message append"
        )
        assert [b.last_offset for b in append] == list(range(log_offset, index_offset + 1)), "consecutive"
    assert _kdump_index_findings(corpus_findings, part, name) == []


def test_kafka_false_alarm_preallocated_time_index_fails_sanity_check(
    corpus_root: Path, corpus_findings: dict[Path, list[Finding]]
) -> None:
    """live-0/8074.timeindex: `--index-sanity-check` exits 1 with CorruptIndexException.

    The file was copied from a running broker: the active segment's time index is preallocated to
    segment.index.bytes and ends in zero slots. Kafka's sanity check compares the *last slot*
    (a zero, timestamp 0) with the first timestamp and fails; the broker itself never runs that
    check on an active segment and trims the tail on roll or shutdown. The same file dumps fine
    (the dump stops at the first zero slot) and every real entry is sound: kdump reports the tail
    as INFO `index-preallocated-tail` and nothing else.
    """
    part = corpus_root / "kafka-3.8.0-running-copy" / "live-0"
    name = "00000000000000008074.timeindex"
    expected = corpus_root / "kafka-3.8.0-running-copy" / "expected" / "live-0"
    sanity = parse_time_index_dump(expected / f"{name}.index-sanity-check.txt")
    assert sanity.exit_code == 1
    assert sanity.stderr is not None
    assert sanity.stderr.exception is not None
    assert "last timestamp is 0 which is less than the first timestamp" in sanity.stderr.exception
    verify_only = parse_time_index_dump(expected / f"{name}.verify-index-only.txt")
    assert verify_only.exit_code == 0
    assert verify_only.stderr is None
    dump = parse_time_index_dump(expected / f"{name}.dump.txt")
    ours = decode_time_index((part / name).read_bytes(), 8074)
    assert [tuple(e) for e in ours.entries] == [tuple(e) for e in dump.entries]
    findings = _kdump_index_findings(corpus_findings, part, name)
    assert [(f.code, f.severity, f.position) for f in findings] == [
        ("index-preallocated-tail", Severity.INFO, len(dump.entries) * 12)
    ]
    # The offset index of the same segment passes Kafka's check (a zero slot's offset equals the base).
    index_sanity = parse_index_dump(expected / "00000000000000008074.index.index-sanity-check.txt")
    assert index_sanity.sanity_check_passed is True


# --- verify never writes ----------------------------------------------------------------------------


def _evidence(corpus_root: Path, tmp_path: Path) -> Path:
    """A copy of the corpus plus damaged partitions that exercise every write-prone path of Kafka's tool:
    a .timeindex whose .index is missing, a .txnindex (Kafka opens it read-write), a misaligned
    .index (the Java port truncates it on close), a shuffled time index, garbage after a log."""
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    for corpus_dir in ("kafka-3.8.0", "kafka-3.8.0-zk-legacy", "kafka-3.8.0-running-copy"):
        src = corpus_root / corpus_dir
        if src.is_dir():
            copy_tree(src, evidence / corpus_dir)
    damaged = copy_tree(corpus_root / "kafka-3.8.0" / "txn-1", evidence / "damaged" / "txn-1")
    seg = "00000000000000000547"
    (damaged / f"{seg}.index").unlink()
    shuffle_index_entries(seed=1, entry_size=12).apply(damaged / f"{seg}.timeindex")
    append_garbage(100, seed=1).apply(damaged / f"{seg}.log")
    other = copy_tree(corpus_root / "kafka-3.8.0" / "timestamps-0", evidence / "damaged" / "timestamps-0")
    index = next(other.glob("*.index"))
    append_garbage(3, seed=2).apply(index)
    return evidence


def test_verify_writes_nothing_on_a_read_only_copy(
    corpus_root: Path, tmp_path: Path, kdump: Callable[..., Result]
) -> None:
    evidence = _evidence(corpus_root, tmp_path)
    damaged = evidence / "damaged"
    seg = damaged / "txn-1" / "00000000000000000547"
    misaligned = next((damaged / "timestamps-0").glob("*.index"))
    chmod_read_only(evidence)
    try:
        before = tree_state(evidence)
        runs = [
            ["verify", *[str(p) for p in sorted(evidence.iterdir())]],
            ["verify", "--deep", "--format", "json", str(evidence / "kafka-3.8.0"), str(damaged)],
            ["verify", "--format", "rich", str(damaged / "txn-1")],
            ["verify", "--jobs", "1", f"{seg}.timeindex"],  # Kafka creates the missing .index here
            ["verify", f"{seg}.txnindex"],  # Kafka opens this read-write
            ["verify", f"{seg}.log"],
            ["verify", str(misaligned)],  # Kafka's Java port would trim it to a multiple of 8
            ["verify", "--max-bytes", "1000", str(damaged)],
        ]
        codes = []
        for args in runs:
            result = kdump(*args)
            codes.append(result.exit_code)
            assert result.exit_code in (0, 1), (args, result.output, result.stderr)
        after = tree_state(evidence)
    finally:
        chmod_writable(evidence)
    assert after == before
    assert not (seg.parent / f"{seg.name}.index").exists()
    assert codes[1] == 1  # the garbage after txn-1's log is an error


def test_verify_junit_report_is_the_only_file_written(
    corpus_root: Path, tmp_path: Path, kdump: Callable[..., Result]
) -> None:
    part = copy_tree(corpus_root / "kafka-3.8.0" / "txn-1", tmp_path / "ro" / "txn-1")
    chmod_read_only(tmp_path / "ro")
    try:
        before = tree_state(tmp_path / "ro")
        report = tmp_path / "out" / "report.xml"
        report.parent.mkdir()
        assert kdump("verify", "--junit", str(report), str(part)).exit_code == 0
        after = tree_state(tmp_path / "ro")
    finally:
        chmod_writable(tmp_path / "ro")
    assert after == before
    assert [p.name for p in report.parent.iterdir()] == ["report.xml"]
