"""dump decodes Kafka's internal topics exactly as kafka-dump-log's decoders do, and shows transactions."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from builders import SegmentBuilder, records
from click.testing import Result

from kdump.formats.batch import BatchHeader
from kdump.formats.constants import ControlType
from kdump.formats.records import NewRecord
from kdump.model.partition import PartitionDir
from kdump.ops.dump.internal import InternalRecord, choose_decoder
from kdump.ops.dump.stream import DumpOptions, dump_file
from kdump.ops.dump.transactions import partition_transactions
from kdump.render.text import internal_record_line

Run = Callable[..., Result]

COVERED_CODES = {"unknown-internal-record", "unknown-tagged-field"}

DECODER_ORACLES = [
    ("kafka-3.8.0", "__consumer_offsets-0", "offsets-decoder"),
    ("kafka-3.8.0-zk-legacy", "__consumer_offsets-0", "offsets-decoder"),
    ("kafka-3.8.0", "__transaction_state-0", "transaction-log-decoder"),
    ("kafka-3.8.0", "__cluster_metadata-0", "cluster-metadata-decoder"),
]


def _record_lines(data: bytes) -> list[bytes]:
    # Keys and values of internal records may hold newlines: split on "\n" only, keep "| offset:" lines.
    return [line for line in data.split(b"\n") if line.startswith(b"| offset:")]


def _kafka_lines(log: Path, kafka: str) -> list[bytes]:
    """Record lines as `internal_record_line` renders them in the style of Kafka `kafka`'s tool."""
    lines: list[bytes] = []
    batch: BatchHeader | None = None
    for ev in dump_file(log, DumpOptions(records=True)):
        if isinstance(ev, BatchHeader):
            batch = ev
        elif isinstance(ev, InternalRecord):
            lines.append(internal_record_line(ev, batch, kafka=kafka).encode("utf-8", "surrogateescape"))
    return lines


@pytest.mark.parametrize(("corpus_dir", "partition", "decoder"), DECODER_ORACLES)
def test_decoded_record_lines_equal_kafkas_decoder_output(
    corpus_root: Path, kdump: Run, corpus_dir: str, partition: str, decoder: str
) -> None:
    part = corpus_root / corpus_dir / partition
    if not part.is_dir():
        pytest.skip(f"{corpus_dir}/{partition} is not in this corpus")
    compared = 0
    for log in sorted(part.glob("*.log")):
        oracle = (
            corpus_root
            / corpus_dir
            / "expected"
            / partition
            / f"{log.name}.deep-print-data-log.{decoder}.txt.gz"
        )
        if not oracle.exists():
            continue
        theirs = _record_lines(gzip.decompress(oracle.read_bytes()))
        # The Kafka 3.8 tool's text, from the one render function a Kafka-compatible mode calls.
        assert _kafka_lines(log, "3.8") == theirs
        # kdump's text mode prints the newest Kafka's text, which is the same for offsets records.
        result = kdump("dump", "--records", "--format", "text", str(log))
        assert result.exit_code == 0, result.stderr
        ours = _record_lines(result.stdout_bytes)
        assert ours == _kafka_lines(log, "4.4")
        if decoder == "offsets-decoder":
            assert ours == theirs
        compared += len(ours)
    assert compared > 0


def test_json_records_carry_the_decoded_object(corpus_root: Path, kdump: Run) -> None:
    part = corpus_root / "kafka-3.8.0" / "__consumer_offsets-0"
    if not part.is_dir():
        pytest.skip("__consumer_offsets-0 is not in this corpus")
    result = kdump("dump", "--records", "--format", "json", str(part))
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    records = [r for r in rows if r["type"] == "record"]
    assert records
    assert all("decoded" in r for r in records)
    commits = [r for r in records if r["decoded"]["decoder"] == "consumer_offsets" and r["decoded"]["key"]]
    assert any(r["decoded"]["key"]["type"] in ("0", "1") for r in commits)


def test_decode_none_shows_raw_records(corpus_root: Path, kdump: Run) -> None:
    part = corpus_root / "kafka-3.8.0" / "__transaction_state-0"
    if not part.is_dir():
        pytest.skip("__transaction_state-0 is not in this corpus")
    result = kdump("dump", "--records", "--decode", "none", "--format", "json", str(part))
    records = [json.loads(line) for line in result.stdout.splitlines() if '"type":"record"' in line]
    assert records
    assert not any("decoded" in r for r in records)


def test_decoder_is_chosen_by_directory_name(tmp_path: Path) -> None:
    assert choose_decoder(tmp_path / "__consumer_offsets-12" / "0.log", "auto") == "offsets"
    assert choose_decoder(tmp_path / "__transaction_state-3" / "0.log", "auto") == "transactions"
    assert choose_decoder(tmp_path / "__cluster_metadata-0" / "0.log", "auto") == "metadata"
    assert choose_decoder(tmp_path / "orders-0" / "0.log", "auto") is None
    assert choose_decoder(tmp_path / "x" / "00000000000000000100-0000000001.checkpoint", "auto") == "metadata"
    assert choose_decoder(tmp_path / "orders-0" / "0.log", "offsets") == "offsets"
    assert choose_decoder(tmp_path / "__consumer_offsets-0" / "0.log", "none") is None


def test_unknown_record_type_is_shown_raw_with_a_finding(tmp_path: Path) -> None:
    part = tmp_path / "__consumer_offsets-0"
    seg = SegmentBuilder()
    # Record type 32767 does not exist: Kafka's decoder says "Unknown record type"; kdump keeps the bytes.
    seg.add_v2([NewRecord(b"\x7f\xff\x00\x01g", b"\x00\x00value", 1_700_000_000_000)])
    log = seg.write(part)
    events = list(dump_file(log, DumpOptions(records=True)))
    findings = [e for e in events if getattr(e, "code", None) == "unknown-internal-record"]
    assert len(findings) == 1
    assert findings[0].offset == 0
    assert findings[0].position == 0
    decoded = [e for e in events if isinstance(e, InternalRecord)]
    assert decoded[0].decoded.status == "unknown"
    assert decoded[0].decoded.to_dict()["rawKey"] is not None


def test_transactions_view_matches_the_corpus_readme(corpus_root: Path) -> None:
    part = corpus_root / "kafka-3.8.0" / "txn-0"
    if not part.is_dir():
        pytest.skip("txn-0 is not in this corpus")
    report = partition_transactions(PartitionDir.load(part))
    # README: 40 transactions, 27 committed and 13 aborted (t aborted when t % 3 == 1).
    assert report.count("committed") == 27
    assert report.count("aborted") == 13
    assert report.count("open") == 0


def test_hanging_transaction_pins_its_first_offset(tmp_path: Path, kdump: Run) -> None:
    part = tmp_path / "orders-0"
    seg = SegmentBuilder()
    seg.add_v2(records(3), producer_id=7, producer_epoch=1, base_sequence=0, transactional=True)
    seg.add_marker(7, commit=True, producer_epoch=1)
    _, hanging_start = seg.add_v2(
        records(2), producer_id=9, producer_epoch=0, base_sequence=0, transactional=True
    )
    seg.add_v2(records(4))
    seg.write(part)
    result = kdump("dump", "--transactions", "--format", "json", str(part))
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    txns = [r for r in rows if r["type"] == "transaction"]
    assert [(t["producer_id"], t["state"]) for t in txns] == [(7, "committed"), (9, "open")]
    assert txns[1]["pins_offset"] == hanging_start
    summary = rows[-1]
    assert summary["type"] == "transactions-summary"
    assert summary["last_stable_offset_pinned_at"] == hanging_start
    text = kdump("dump", "--transactions", str(part)).stdout
    assert "HANGING producerId: 9" in text


def test_markers_are_decoded_as_control_records(tmp_path: Path) -> None:
    part = tmp_path / "__consumer_offsets-0"
    seg = SegmentBuilder()
    seg.add_marker(3, commit=True)
    log = seg.write(part)
    events = [e for e in dump_file(log, DumpOptions(records=True)) if isinstance(e, InternalRecord)]
    assert len(events) == 1
    assert events[0].decoded.decoder == "control"
    assert events[0].decoded.to_dict()["key"] == {"version": 0, "type": int(ControlType.COMMIT)}


def test_unknown_tagged_field_is_named_in_a_finding_and_the_text(tmp_path: Path, kdump: Run) -> None:
    part = tmp_path / "__consumer_offsets-0"
    seg = SegmentBuilder()
    key = b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x00"
    # OffsetCommitValue v4: offset, leaderEpoch, metadata "", commitTimestamp, then tag 7 (2 bytes) kdump does not know.
    value = (
        b"\x00\x04"
        + (5).to_bytes(8, "big")
        + (0).to_bytes(4, "big")
        + b"\x01"
        + (1_700_000_000_000).to_bytes(8, "big")
        + b"\x01\x07\x02hi"
    )
    seg.add_v2([NewRecord(key, value, 1_700_000_000_000)])
    log = seg.write(part)
    events = list(dump_file(log, DumpOptions(records=True)))
    findings = [e for e in events if getattr(e, "code", None) == "unknown-tagged-field"]
    assert len(findings) == 1
    assert "value tag 7 (2 bytes)" in findings[0].message
    assert "OffsetCommit version 4" in findings[0].message
    result = kdump("dump", "--records", "--format", "text", str(log))
    line = next(x for x in result.stdout.splitlines() if x.startswith("| offset: 0"))
    assert line.endswith(' unknownTaggedFields: [{"in":"value","path":"","tag":7,"data":"aGk="}]')
    assert '"offset":5' in line
