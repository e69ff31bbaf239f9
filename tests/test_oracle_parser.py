"""The oracle parser (``tests/oracle.py``) agrees with the corpus' own facts and producer manifests.

Each corpus-wide test runs twice: on the full corpus (skipped when absent) and on the bundled subset (always).
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from corpus import (
    CORPUS_DIRS,
    CorpusSegment,
    full_corpus_available,
    is_subset,
    iter_log_segments,
    iter_partition_dirs,
    require_full_corpus,
    subset_root,
)
from oracle import (
    LogDump,
    OracleBatch,
    OracleParseError,
    OracleRecord,
    facts_from_log_dump,
    parse_index_dump,
    parse_log_dump,
    parse_oracle,
    parse_snapshot_dump,
    parse_stderr,
    parse_time_index_dump,
    parse_txnindex_dump,
)

FACT_KEYS = (
    "batches",
    "records",
    "control_batches",
    "transactional_batches",
    "first_offset",
    "last_offset",
    "magic",
    "codecs",
    "control_records",
    "batch_record_count_gaps",
)
LOG_VARIANTS = (
    "deep-print-data-log",
    "deep-print-data-log.offsets-decoder",
    "deep-print-data-log.transaction-log-decoder",
    "deep-print-data-log.cluster-metadata-decoder",
)


@pytest.fixture(scope="module", params=["full", "subset"])
def root(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if request.param == "full":
        return require_full_corpus()
    return subset_root(tmp_path_factory.getbasetemp())


@functools.cache
def _dump(path: Path) -> LogDump:
    return parse_log_dump(path)


def _segments(root: Path, corpus_dir: str | None = None) -> list[CorpusSegment]:
    return [s for s in iter_log_segments(root) if corpus_dir is None or s.corpus_dir == corpus_dir]


def _facts(root: Path, corpus_dir: str) -> dict[str, Any]:
    facts: dict[str, Any] = json.loads((root / corpus_dir / "expected" / "facts.json").read_text())
    return facts


def _batch_fields(batch: OracleBatch) -> tuple[Any, ...]:
    return tuple(getattr(batch, f.name) for f in dataclasses.fields(batch) if f.name != "records")


def _record_meta(record: OracleRecord) -> tuple[Any, ...]:
    return tuple(
        getattr(record, f.name) for f in dataclasses.fields(record) if f.name not in ("key", "payload")
    )


@pytest.mark.parametrize("corpus_dir", CORPUS_DIRS)
def test_segment_facts(root: Path, corpus_dir: str) -> None:
    """Per segment: batch/record/control counts, first/last offset, magic and codec counts, index counts."""
    problems: list[str] = []
    checked = 0
    for part, entry in _facts(root, corpus_dir).items():
        part_dir = root / corpus_dir / part
        oracle_dir = root / corpus_dir / "expected" / part
        for seg in entry["segments_from_dump"]:
            log = part_dir / f"{seg['segment']}.log"
            if not log.exists():
                assert is_subset(root), f"{log} listed in facts.json but missing"
                continue
            checked += 1
            where = f"{corpus_dir}/{part}/{seg['segment']}"
            dump = _dump(oracle_dir / f"{seg['segment']}.log.deep.txt.gz")
            got = facts_from_log_dump(dump)
            for key in FACT_KEYS:
                if got[key] != seg[key]:
                    problems.append(f"{where}: {key} = {got[key]!r}, facts.json says {seg[key]!r}")
            if dump.other_lines:
                problems.append(f"{where}: unparsed lines {dump.other_lines[:3]!r}")
            if log.stat().st_size != seg["log_bytes"]:
                problems.append(
                    f"{where}: .log is {log.stat().st_size} bytes, facts.json says {seg['log_bytes']}"
                )
            walked = sum(b.size for b in dump.batches) + (dump.invalid_trailing_bytes or 0)
            if walked != seg["log_bytes"]:
                problems.append(
                    f"{where}: batch sizes + trailing bytes = {walked}, file has {seg['log_bytes']}"
                )
            if dump.start_offset != int(seg["segment"]):
                problems.append(f"{where}: Log starting offset {dump.start_offset}")
            index = parse_index_dump(oracle_dir / f"{seg['segment']}.index.dump.txt")
            if len(index.entries) != seg["index_entries"]:
                problems.append(
                    f"{where}: {len(index.entries)} index entries, facts.json says {seg['index_entries']}"
                )
            timeindex = parse_time_index_dump(oracle_dir / f"{seg['segment']}.timeindex.dump.txt")
            if len(timeindex.entries) != seg["timeindex_entries"]:
                problems.append(
                    f"{where}: {len(timeindex.entries)} timeindex entries,"
                    f" facts.json says {seg['timeindex_entries']}"
                )
    assert checked > 0
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("corpus_dir", CORPUS_DIRS)
def test_partition_totals(root: Path, corpus_dir: str) -> None:
    """Totals per partition (only where every segment of the partition is present)."""
    problems: list[str] = []
    for part, entry in _facts(root, corpus_dir).items():
        segs = entry["segments_from_dump"]
        logs = [root / corpus_dir / part / f"{s['segment']}.log" for s in segs]
        if not all(log.exists() for log in logs):
            assert is_subset(root)
            continue
        totals = entry["totals_from_dump"]
        on_disk = sorted((root / corpus_dir / part).glob("*.log"))
        if totals["segments"] != len(on_disk):
            problems.append(f"{part}: {len(on_disk)} .log files, facts.json says {totals['segments']}")
        summed: dict[str, Any] = {
            "batches": 0,
            "records": 0,
            "control_batches": 0,
            "transactional_batches": 0,
        }
        counters: dict[str, Counter[str]] = {
            "magic": Counter(),
            "codecs": Counter(),
            "control_records": Counter(),
        }
        firsts, lasts = [], []
        for log in logs:
            got = facts_from_log_dump(
                _dump(log.parent.parent / "expected" / part / f"{log.name}.deep.txt.gz")
            )
            for key in summed:
                summed[key] += got[key]
            for key, counter in counters.items():
                counter.update(got[key])
            if got["first_offset"] is not None:
                firsts.append(got["first_offset"])
                lasts.append(got["last_offset"])
        summed.update({key: dict(counter) for key, counter in counters.items()})
        summed["first_offset"] = min(firsts) if firsts else None
        summed["last_offset"] = max(lasts) if lasts else None
        for key, value in summed.items():
            if totals[key] != value:
                problems.append(f"{part}: total {key} = {value!r}, facts.json says {totals[key]!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("corpus_dir", CORPUS_DIRS)
def test_log_dump_variants_agree(root: Path, corpus_dir: str) -> None:
    """Shallow batches == deep batches; print-data and decoder records == deep records (plus their text)."""
    problems: list[str] = []
    for seg in _segments(root, corpus_dir):
        deep = _dump(seg.oracle("deep"))
        shallow_path = seg.oracle("shallow")
        if shallow_path.exists():
            shallow = _dump(shallow_path)
            if [_batch_fields(b) for b in shallow.batches] != [_batch_fields(b) for b in deep.batches]:
                problems.append(f"{seg.id}: shallow batches differ from deep batches")
            if shallow.record_count:
                problems.append(f"{seg.id}: shallow dump has record lines")
        for variant in LOG_VARIANTS:
            path = seg.oracle(variant)
            if not path.exists():
                continue
            data = _dump(path)
            if [_batch_fields(b) for b in data.batches] != [_batch_fields(b) for b in deep.batches]:
                problems.append(f"{seg.id} {variant}: batches differ from deep")
            if [_record_meta(r) for r in data.iter_records()] != [
                _record_meta(r) for r in deep.iter_records()
            ]:
                problems.append(f"{seg.id} {variant}: record metadata differs from deep")
            if data.other_lines:
                problems.append(f"{seg.id} {variant}: unparsed lines {data.other_lines[:3]!r}")
            if data.decoded:
                continue
            for r in data.iter_records():
                if r.is_control:
                    continue
                if (r.key is not None) != (r.key_size >= 0) or (r.payload is not None) != (r.value_size >= 0):
                    problems.append(f"{seg.id} {variant}: offset {r.offset}: key/payload presence vs sizes")
        if any(r.key is not None or r.payload is not None for r in deep.iter_records()):
            problems.append(f"{seg.id}: deep dump has key/payload text")
    assert not problems, "\n".join(problems)


def _non_consecutive(dump: LogDump) -> list[tuple[int, int]]:
    """DumpLogSegments' consecutive-offset check (Scala: seeded by the first record; printed newest first)."""
    pairs: list[tuple[int, int]] = []
    last: int | None = None
    for record in dump.iter_records():
        if last is not None and record.offset != last + 1:
            pairs.append((last, record.offset))
        last = record.offset
    return pairs[::-1]


def test_non_consecutive_offsets_match_stderr(root: Path) -> None:
    """``Non-consecutive offsets`` summaries (sibling .stderr or inline) follow from the parsed records."""
    problems: list[str] = []
    with_summary = 0
    for seg in _segments(root):
        for variant in ("deep", "deep-print-data-log"):
            path = seg.oracle(variant)
            if not path.exists():
                continue
            dump = _dump(path)
            expected = _non_consecutive(dump)
            reported = dump.stderr.non_consecutive_offsets if dump.stderr else {}
            got = [pair for pairs in reported.values() for pair in pairs]
            with_summary += bool(got)
            if got != expected:
                problems.append(
                    f"{seg.id} {variant}: stderr pairs {got[:4]}..., records give {expected[:4]}..."
                )
            if seg.is_deleted_leftover and expected and not dump.stderr_inline:
                problems.append(f"{seg.id}: expected the summary inline in stdout")
    assert with_summary > 0
    assert not problems, "\n".join(problems)


def test_producer_manifests_agree(root: Path) -> None:
    """Acked records found in the dumps have the producer's key/value lengths, header count, timestamp."""
    problems: list[str] = []
    compared = 0
    for corpus_path in (root / name for name in CORPUS_DIRS):
        manifests = corpus_path / "expected" / "producer-manifests"
        for manifest_path in sorted(manifests.glob("*.json.gz")):
            manifest = json.loads(gzip.decompress(manifest_path.read_bytes()))
            topic = manifest_path.name.removesuffix(".json.gz")
            records: dict[tuple[int, int], tuple[OracleRecord, OracleBatch]] = {}
            for seg in _segments(root, corpus_path.name):
                if seg.partition_dir.rsplit("-", 1)[0] != topic or seg.is_deleted_leftover:
                    continue
                partition = int(seg.partition_dir.rsplit("-", 1)[1])
                for batch in _dump(seg.oracle("deep")).batches:
                    for record in batch.records:
                        records[partition, record.offset] = (record, batch)
            for acked in manifest.get("records", []):
                found = records.get((acked["partition"], acked["offset"]))
                if found is None:
                    continue
                compared += 1
                record, batch = found
                where = f"{topic}-{acked['partition']}@{acked['offset']}"
                key_len = -1 if acked["key_len"] is None else acked["key_len"]
                value_len = -1 if acked["value_len"] is None else acked["value_len"]
                if (record.key_size, record.value_size) != (key_len, value_len):
                    problems.append(
                        f"{where}: sizes {record.key_size}/{record.value_size} vs {key_len}/{value_len}"
                    )
                if record.header_keys is not None and len(record.header_keys) != acked["headers"]:
                    problems.append(
                        f"{where}: header keys {record.header_keys} vs {acked['headers']} headers"
                    )
                if batch.magic > 0 and "ts" in acked and record.timestamp != acked["ts"]:
                    problems.append(f"{where}: timestamp {record.timestamp} vs {acked['ts']}")
    assert compared > 0
    assert not problems, "\n".join(problems[:50])


def test_every_oracle_parses(root: Path) -> None:
    problems: list[str] = []
    counts: Counter[str] = Counter()
    for _, _, oracle_dir in iter_partition_dirs(root):
        for path in sorted(oracle_dir.iterdir()):
            if path.name.endswith(".stderr"):
                err = parse_stderr(path)
                counts["stderr"] += 1
                if err.other_lines:
                    problems.append(f"{path}: unparsed stderr lines {err.other_lines[:3]!r}")
                continue
            if path.name.endswith(".rc"):
                continue
            dump = _dump(path) if ".log." in path.name else parse_oracle(path)
            counts[type(dump).__name__] += 1
            if dump.other_lines:
                problems.append(f"{path}: unparsed lines {dump.other_lines[:3]!r}")
            if not dump.dumped_path:
                problems.append(f"{path}: no 'Dumping' line")
    assert not problems, "\n".join(problems)
    assert {"LogDump", "OffsetIndexDump", "TimeIndexDump", "ProducerSnapshotDump", "stderr"} <= set(counts)


def test_index_oracle_variants(root: Path) -> None:
    """verify-index-only prints no entries; index-sanity-check passes except the running copy's time index."""
    problems: list[str] = []
    for seg in _segments(root):
        if seg.is_deleted_leftover:
            continue
        for kind, parse in (("index", parse_index_dump), ("timeindex", parse_time_index_dump)):
            dump = parse(seg.index_oracle(kind, "dump"))
            verify = parse(seg.index_oracle(kind, "verify-index-only"))
            sanity = parse(seg.index_oracle(kind, "index-sanity-check"))
            if verify.entries or sanity.entries:
                problems.append(f"{seg.id} {kind}: verify/sanity oracles list entries")
            if dump.stderr != verify.stderr:
                problems.append(f"{seg.id} {kind}: dump and verify-index-only summaries differ")
            if sanity.sanity_check_passed is not True and not getattr(sanity, "is_empty", False):
                err = sanity.stderr
                if not (sanity.exit_code == 1 and err is not None and err.exception):
                    problems.append(f"{seg.id} {kind}: sanity check neither passed nor aborted")
                elif (seg.partition_dir, kind) != ("live-0", "timeindex"):
                    problems.append(f"{seg.id} {kind}: unexpected sanity failure {err.exception}")
    assert not problems, "\n".join(problems)


def test_running_copy_preallocated_indexes(root: Path) -> None:
    base = root / "kafka-3.8.0-running-copy" / "expected" / "live-0" / "00000000000000008074"
    index = parse_index_dump(f"{base}.index.dump.txt")
    timeindex = parse_time_index_dump(f"{base}.timeindex.dump.txt")
    assert len(index.entries) == len(timeindex.entries) == 154
    assert index.entries[0].offset > 8074
    sanity = parse_time_index_dump(f"{base}.timeindex.index-sanity-check.txt")
    assert sanity.sanity_check_passed is False
    assert sanity.exit_code == 1
    assert sanity.stderr is not None
    assert sanity.stderr.exception is not None
    assert sanity.stderr.exception.startswith("org.apache.kafka.storage.internals.log.CorruptIndexException")
    assert sanity.stderr.traceback[0].startswith("\tat ")


def test_snapshot_and_txnindex_oracles(root: Path) -> None:
    oracle_dir = root / "kafka-3.8.0" / "expected" / "__consumer_offsets-0"
    txn = parse_txnindex_dump(oracle_dir / "00000000000000000000.txnindex.dump.txt")
    assert txn.entries
    assert all(e.version == 0 and e.first_offset <= e.last_offset < e.last_stable_offset for e in txn.entries)
    snapshot = parse_snapshot_dump(oracle_dir / "00000000000000000101.snapshot.dump.txt")
    assert snapshot.entries
    assert all(e.last_sequence is not None for e in snapshot.entries)


def test_subset_layout(tmp_path_factory: pytest.TempPathFactory) -> None:
    first = subset_root(tmp_path_factory.getbasetemp())
    assert subset_root(tmp_path_factory.getbasetemp()) == first  # idempotent
    assert is_subset(first)
    assert not full_corpus_available(first)
    segments = list(iter_log_segments(first))
    ids = {s.id for s in segments}
    assert "kafka-3.8.0-running-copy/live-0/00000000000000008074.log" in ids
    assert (
        "kafka-3.8.0-running-copy/compacted-sparse-0-deleted-leftovers/00000000000000001201.log.deleted"
        in ids
    )
    # The .log.deleted copies inside kafka-3.8.0/compacted-sparse-0 have no oracle there and are not yielded.
    assert not any(s.is_deleted_leftover and s.corpus_dir == "kafka-3.8.0" for s in segments)
    for seg in segments:
        assert seg.oracle("deep").exists(), seg.id
    magics = {b.magic for s in segments for b in _dump(s.oracle("deep")).batches}
    codecs = {b.compression for s in segments for b in _dump(s.oracle("deep")).batches}
    assert magics == {0, 1, 2}
    assert codecs == {"none", "gzip", "snappy", "lz4", "zstd"}
    live = first / "kafka-3.8.0-running-copy" / "live-0" / "00000000000000008074.index"
    assert live.stat().st_size == 1048576


def test_full_corpus_segments() -> None:
    root = require_full_corpus()
    segments = list(iter_log_segments(root))
    assert sum(s.is_deleted_leftover for s in segments) == 8
    for seg in segments:
        assert seg.oracle("deep").exists(), seg.id


_V2_BATCH_LINE = (
    "baseOffset: {base} lastOffset: {last} count: {count} baseSequence: -1 lastSequence: -1 producerId: -1"
    " producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: {control}"
    " deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 5 size: 100 magic: 2 compresscodec: none"
    " crc: 4294967295 isvalid: true"
)


def _record_line(offset: int, key_size: int, value_size: int, headers: str = "") -> str:
    return (
        f"| offset: {offset} CreateTime: 5 keySize: {key_size} valueSize: {value_size} sequence: -1"
        f" headerKeys: [{headers}]"
    )


def _write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    path = tmp_path / name
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), mtime=0))
    return path


def test_payload_with_newlines_and_fake_lines(tmp_path: Path) -> None:
    value = "a\n| offset: 9 CreateTime: 5 keySize: 1 valueSize: 1 sequence: -1 headerKeys: [] payload: x\r\nb"
    key = "k payload: k"
    lines = [
        "Dumping x/00000000000000000000.log",
        "Log starting offset: 0",
        _V2_BATCH_LINE.format(base=0, last=1, count=2, control="false"),
        _record_line(0, len(key), len(value.encode()), "h-id,,dup") + f" key: {key} payload: {value}",
        _record_line(1, 0, -1, "") + " key: ",
        "Found 7 invalid bytes at the end of 00000000000000000000.log",
    ]
    dump = parse_log_dump(_write(tmp_path, "00000000000000000000.log.deep-print-data-log.txt.gz", lines))
    first, second = dump.records
    assert (first.key, first.payload, first.header_keys) == (key, value, ["h-id", "", "dup"])
    assert (second.key, second.payload, second.header_keys) == ("", None, [])
    assert dump.invalid_trailing_bytes == 7
    assert dump.invalid_trailing_file == "00000000000000000000.log"
    assert dump.other_lines == []


def test_replacement_characters_use_size_range(tmp_path: Path) -> None:
    # 3 malformed bytes -> one U+FFFD (3 bytes of UTF-8), 1 malformed byte -> one U+FFFD.
    key = "\ufffd payload: \ufffd"
    lines = [
        "Dumping x/00000000000000000000.log",
        _V2_BATCH_LINE.format(base=0, last=0, count=1, control="false"),
        _record_line(0, 4 + 10, 2) + f" key: {key} payload: ok",
    ]
    dump = parse_log_dump(_write(tmp_path, "00000000000000000000.log.deep-print-data-log.txt.gz", lines))
    assert (dump.records[0].key, dump.records[0].payload) == (key, "ok")


def test_control_records_and_legacy_lines(tmp_path: Path) -> None:
    lines = [
        "Dumping x/00000000000000000000.log",
        _V2_BATCH_LINE.format(base=0, last=0, count=1, control="true"),
        _record_line(0, 4, 6) + " endTxnMarker: ABORT coordinatorEpoch: 3",
        _V2_BATCH_LINE.format(base=1, last=1, count=1, control="true"),
        _record_line(1, 4, 19) + " controlType: LEADER_CHANGE(2)",
        "offset: 4 position: 200 NoTimestampType: -1 size: 50 magic: 0 compresscodec: gzip crc: 7"
        " isvalid: false",
        "| offset: 3 NoTimestampType: -1 keySize: -1 valueSize: 2 isValid: true crc: 3803534975} payload: hi",
        "| offset: 4 NoTimestampType: -1 keySize: 1 valueSize: -1 isValid: false crc: 1} key: k",
    ]
    dump = parse_log_dump(_write(tmp_path, "00000000000000000000.log.deep-print-data-log.txt.gz", lines))
    marker, leader, v0a, v0b = dump.records
    assert marker.control == ("ABORT", 3)
    assert marker.control_type == "ABORT"
    assert leader.control == "controlType: LEADER_CHANGE(2)"
    assert leader.control_type == "LEADER_CHANGE(2)"
    legacy = dump.batches[2]
    assert (legacy.base_offset, legacy.last_offset, legacy.count, legacy.magic, legacy.crc_ok) == (
        None,
        4,
        None,
        0,
        False,
    )
    assert (v0a.crc, v0a.is_valid, v0a.payload, v0a.header_keys, v0a.sequence) == (
        3803534975,
        True,
        "hi",
        None,
        None,
    )
    assert (v0b.key, v0b.payload, v0b.is_valid) == ("k", None, False)
    assert facts_from_log_dump(dump)["control_records"] == {"ABORT": 1, "LEADER_CHANGE(2)": 1}


def test_inconsistent_sizes_are_rejected(tmp_path: Path) -> None:
    lines = [
        "Dumping x/00000000000000000000.log",
        _V2_BATCH_LINE.format(base=0, last=0, count=1, control="false"),
        _record_line(0, 3, 5) + " key: abc payload: toolong",
    ]
    with pytest.raises(OracleParseError, match="keySize 3"):
        parse_log_dump(_write(tmp_path, "00000000000000000000.log.deep-print-data-log.txt.gz", lines))
