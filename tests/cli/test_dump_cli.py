"""`kdump dump` on the command line: formats, the JSON schema, encodings, filters, --max-bytes, the
non-log files, exit codes, findings in place, and the fast JSON record lines.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from builders import BASE_TS, SegmentBuilder, records
from click.testing import Result
from corpus import iter_log_segments
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import parse_index_dump, parse_snapshot_dump, parse_time_index_dump, parse_txnindex_dump

from kdump.formats.batch import BatchHeader
from kdump.formats.checkpoints import (
    encode_leader_epoch_checkpoint,
    encode_offset_checkpoint,
    encode_partition_metadata,
)
from kdump.formats.constants import Codec
from kdump.formats.offset_index import encode_offset_index
from kdump.formats.producer_snapshot import ProducerSnapshotEntry, encode_producer_snapshot
from kdump.formats.records import NewRecord, Record
from kdump.formats.time_index import encode_time_index
from kdump.formats.txn_index import AbortedTxn, encode_txn_index
from kdump.ops.dump.files import FileStart
from kdump.render import rows
from kdump.render.jsonl import record_line, write_jsonl

Kdump = Callable[..., Result]
SEG0 = "00000000000000000000"
FILE_FIELDS = {"type", "file", "kind", "size", "base_offset"}
FINDING_FIELDS = {"type", "file", "code", "severity", "position", "offset", "message", "repair"}
SUMMARY_FIELDS = {
    "type",
    "file",
    "size",
    "start",
    "valid_bytes",
    "invalid_bytes",
    "scanned_bytes",
    "batch_count",
    "valid_batch_count",
    "record_count",
    "records_counted",
    "uncounted_batches",
    "first_offset",
    "first_offset_at_most",
    "last_offset",
    "max_timestamp",
    "offset_of_max_timestamp",
    "stop_reason",
    "salvageable_batches",
    "findings",
    "deep",
    "partial",
    "end_position",
}
NON_LOG_TYPES = {
    "index-entry",
    "time-index-entry",
    "aborted-txn",
    "producer-state",
    "epoch-entry",
    "checkpoint-entry",
    "property",
    "state",
}


def _rows(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def _ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.exit_code, result.stderr)
    return result


def _of(rows_: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in rows_ if r["type"] == kind]


def _recs(first: int, n: int) -> list[NewRecord]:
    """Records for offsets first..first+n-1: key `key-<offset>`, timestamp BASE_TS + offset, one header."""
    return [
        r._replace(key=f"key-{first + i}".encode())
        for i, r in enumerate(records(n, start_ts=BASE_TS + first))
    ]


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """A partition segment with plain, compressed, idempotent, transactional and control batches.

    Offsets 0..49, keys `key-<offset>`, timestamps BASE_TS + offset. Batch 2 is producer 7's
    (transactional, committed by the marker at offset 30); batch 4 is idempotent producer 9's.
    """
    seg = SegmentBuilder()
    seg.add_v2(_recs(0, 10))
    seg.add_v2(_recs(10, 10), codec=Codec.GZIP)
    seg.add_v2(_recs(20, 10), producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)
    seg.add_marker(7, commit=True)  # offset 30
    seg.add_v2(_recs(31, 9), producer_id=9, producer_epoch=1, base_sequence=0, codec=Codec.LZ4)
    seg.add_v2(_recs(40, 10))
    return seg.write(tmp_path / "mixed-0")


# --- formats ------------------------------------------------------------------------------------------


def test_text_is_the_default_for_pipes(kdump: Kdump, mixed: Path) -> None:
    lines = _ok(kdump("dump", str(mixed))).stdout.splitlines()
    assert lines[0] == f"Dumping {mixed}"
    assert lines[1] == "Log starting offset: 0"
    assert all(ln.startswith("baseOffset: ") for ln in lines[2:-1])
    assert len(lines) == 2 + 6 + 1
    assert lines[-1].startswith("Summary: 6 batches, 50 records, offsets 0..49")


def test_text_records(kdump: Kdump, mixed: Path) -> None:
    out = _ok(kdump("dump", "--records", "--format", "text", str(mixed))).stdout
    lines = out.splitlines()
    recs = [ln for ln in lines if ln.startswith("| offset: ")]
    assert len(recs) == 50
    assert recs[0].startswith(
        f"| offset: 0 CreateTime: {BASE_TS} keySize: 5 valueSize: 100 sequence: -1 headerKeys: [h]"
    )
    assert " key: key-0 payload: value-0-" in recs[0]
    assert recs[0].endswith("headers: [h=0]")
    marker = next(ln for ln in recs if ln.startswith("| offset: 30 "))
    assert "endTxnMarker: COMMIT coordinatorEpoch: 0" in marker
    assert " sequence: 5 " in next(ln for ln in recs if ln.startswith("| offset: 25 "))


def test_json_schema(kdump: Kdump, mixed: Path, tmp_path: Path) -> None:
    legacy = SegmentBuilder(base_offset=0)
    legacy.add_legacy(records(2), magic=1)
    legacy.add_legacy(records(3), magic=0, codec=Codec.GZIP)
    legacy_log = legacy.write(tmp_path / "legacy-0")
    data = bytearray(mixed.read_bytes())
    data[100] ^= 0xFF  # a CRC mismatch in the first batch, for a finding
    mixed.write_bytes(bytes(data))
    out = _rows(_ok(kdump("dump", "--records", "--format", "json", str(mixed), str(legacy_log))))
    assert {r["type"] for r in out} == {"file", "batch", "record", "finding", "summary"}
    for r in out:
        assert r["file"] in (str(mixed), str(legacy_log))
        if r["type"] == "file":
            assert set(r) == FILE_FIELDS
            assert r["kind"] == "log"
        elif r["type"] == "batch":
            assert set(r) == {"type", "file", *rows.BATCH_FIELDS}
        elif r["type"] == "record":
            extra = set(r) - {"type", "file", *rows.RECORD_FIELDS}
            if r["file"] == str(legacy_log):
                assert extra == {"crc", "crc_ok"}
            elif r["offset"] == 30:
                assert extra == {"control"}
                assert r["control"] == {"type": "COMMIT", "version": 0, "coordinator_epoch": 0}
            else:
                assert extra == set()
        elif r["type"] == "finding":
            assert set(r) >= FINDING_FIELDS
        else:
            assert set(r) == SUMMARY_FIELDS
            assert set(r["findings"]) == {"info", "warning", "error"}
    batches = _of(out, "batch")
    assert [b["compression"] for b in batches[:6]] == ["none", "gzip", "none", "none", "lz4", "none"]
    assert (batches[2]["producer_id"], batches[2]["is_transactional"], batches[3]["is_control"]) == (
        7,
        True,
        True,
    )
    assert (batches[4]["base_sequence"], batches[4]["last_sequence"]) == (0, 8)
    assert [b["magic"] for b in batches[6:]] == [1, 1, 0]
    assert batches[8]["base_offset"] == 2  # a wrapper's first inner offset
    assert _of(out, "finding")[0]["code"] == "crc-mismatch"
    legacy_recs = [r for r in _of(out, "record") if r["file"] == str(legacy_log)]
    assert [r["timestamp_type"] for r in legacy_recs] == ["CreateTime"] * 2 + ["NoTimestampType"] * 3


def test_rich_does_not_interpret_markup(kdump: Kdump, tmp_path: Path) -> None:
    seg = SegmentBuilder()
    seg.add_v2([NewRecord(b"[bold]k[/bold]", b"[red]value[/red] :smile:", BASE_TS, ((b"[i]h", b"[u]v"),))])
    log = seg.write(tmp_path / "markup[x]-0")
    out = _ok(kdump("dump", "--records", "--format", "rich", str(log))).stdout
    assert "[bold]k[/bold]" in out
    assert "[red]value[/red] :smile:" in out
    assert "[i]h=[u]v" in out
    assert "\x1b[" not in out  # NO_COLOR / not a terminal: no escape sequences either
    shallow = _ok(kdump("dump", "--format", "rich", str(log))).stdout
    assert "markup[x]-0" in shallow
    assert "Summary: 1 batches, 1 records" in shallow


def test_rich_shows_findings_and_batches(kdump: Kdump, mixed: Path) -> None:
    mixed.write_bytes(mixed.read_bytes() + bytes(100))
    out = _ok(kdump("dump", "--format", "rich", str(mixed))).stdout
    assert "WARNING zero-filled-tail" in out
    assert "20..29" in out  # the offsets column
    assert "txn" in out
    assert "control" in out


# --- encodings ----------------------------------------------------------------------------------------


@pytest.fixture
def binary(tmp_path: Path) -> Path:
    seg = SegmentBuilder()
    seg.add_v2(
        [NewRecord(b"\xff\xfeab", b"caf\xc3\xa9\x00\n", BASE_TS, ((b"h\xff", b"\x80v"), (b"n", None)))]
    )
    return seg.write(tmp_path / "binary-0")


@pytest.mark.parametrize(
    ("encoding", "key", "value", "header"),
    [
        ("utf8", "\\xff\\xfeab", "caf\u00e9\x00\n", "\\x80v"),
        ("hex", "fffe6162", "636166c3a9000a", "8076"),
        (
            "base64",
            base64.b64encode(b"\xff\xfeab").decode(),
            base64.b64encode(b"caf\xc3\xa9\x00\n").decode(),
            base64.b64encode(b"\x80v").decode(),
        ),
    ],
)
def test_encodings_json(kdump: Kdump, binary: Path, encoding: str, key: str, value: str, header: str) -> None:
    (rec,) = _of(
        _rows(_ok(kdump("dump", "--records", "--format", "json", "--encoding", encoding, str(binary)))),
        "record",
    )
    assert (rec["key"], rec["value"]) == (key, value)
    # header names are always text (invalid bytes escaped); their values follow --encoding
    assert rec["headers"] == [{"key": "h\\xff", "value": header}, {"key": "n", "value": None}]
    assert (rec["key_size"], rec["value_size"]) == (4, 7)


def test_encodings_text(kdump: Kdump, binary: Path) -> None:
    utf8 = _ok(kdump("dump", "--records", "--format", "text", str(binary))).stdout
    assert "key: \\xff\\xfeab payload: caf\u00e9" in utf8
    hexed = _ok(kdump("dump", "--records", "--format", "text", "--encoding", "hex", str(binary))).stdout
    assert "key: fffe6162 payload: 636166c3a9000a headers: [h\\xff=8076, n=null]" in hexed


# --- filters ------------------------------------------------------------------------------------------


def _json(kdump: Kdump, *args: str) -> list[dict[str, Any]]:
    return _rows(_ok(kdump("dump", "--format", "json", *args)))


def test_offset_range_with_records(kdump: Kdump, mixed: Path) -> None:
    out = _json(kdump, "--records", "--from-offset", "12", "--to-offset", "27", str(mixed))
    assert [r["offset"] for r in _of(out, "record")] == list(range(12, 28))
    assert [b["base_offset"] for b in _of(out, "batch")] == [10, 20]
    assert len(_of(out, "summary")) == 1


def test_offset_range_shallow(kdump: Kdump, mixed: Path) -> None:
    out = _json(kdump, "--from-offset", "25", "--to-offset", "31", str(mixed))
    assert [b["base_offset"] for b in _of(out, "batch")] == [20, 30, 31]
    assert _of(out, "record") == []


def test_offset_range_uses_the_index_to_start(kdump: Kdump, tmp_path: Path) -> None:
    seg = SegmentBuilder()
    for i in range(40):
        seg.add_v2(records(10, start_ts=BASE_TS + 10 * i, value_size=200))
    seg.write(tmp_path / "big-0", interval_bytes=1000)
    out = _json(kdump, "--records", "--from-offset", "305", "--to-offset", "306", str(tmp_path / "big-0"))
    assert [r["offset"] for r in _of(out, "record")] == [305, 306]
    (summary,) = _of(out, "summary")
    assert summary["start"] > 0  # scanning started at the index entry, not at 0


def test_time_range(kdump: Kdump, mixed: Path) -> None:
    out = _json(
        kdump, "--records", "--from-time", str(BASE_TS + 5), "--to-time", str(BASE_TS + 14), str(mixed)
    )
    assert [r["timestamp"] for r in _of(out, "record")] == [BASE_TS + i for i in range(5, 15)]
    iso = "2023-11-14T22:13:20.005Z"  # BASE_TS + 5
    out = _json(kdump, "--records", "--from-time", iso, "--to-time", str(BASE_TS + 6), str(mixed))
    assert [r["offset"] for r in _of(out, "record")] == [5, 6]


def test_time_range_shallow(kdump: Kdump, mixed: Path) -> None:
    out = _json(kdump, "--from-time", str(BASE_TS + 35), str(mixed))
    assert [b["base_offset"] for b in _of(out, "batch")] == [31, 40]


def test_key_filter_implies_records(kdump: Kdump, mixed: Path) -> None:
    out = _json(kdump, "--key", "key-3", str(mixed))
    assert [(r["offset"], r["key"]) for r in _of(out, "record")] == [(3, "key-3")]
    out = _json(kdump, "--key", "key-42", str(mixed))
    assert [(r["offset"], r["key"]) for r in _of(out, "record")] == [(42, "key-42")]
    assert [b["base_offset"] for b in _of(out, "batch")] == [40]


def test_producer_id_filter(kdump: Kdump, mixed: Path) -> None:
    out = _json(kdump, "--producer-id", "9", str(mixed))
    assert [(b["base_offset"], b["producer_id"]) for b in _of(out, "batch")] == [(31, 9)]
    out = _json(kdump, "--records", "--producer-id", "7", str(mixed))
    assert [b["base_offset"] for b in _of(out, "batch")] == [20, 30]
    assert [r["offset"] for r in _of(out, "record")] == list(range(20, 31))


def test_control_only(kdump: Kdump, mixed: Path) -> None:
    out = _json(kdump, "--records", "--control-only", str(mixed))
    assert [b["base_offset"] for b in _of(out, "batch")] == [30]
    (rec,) = _of(out, "record")
    assert rec["control"]["type"] == "COMMIT"


def test_transactional_only(kdump: Kdump, mixed: Path) -> None:
    out = _json(kdump, "--transactional-only", str(mixed))
    assert [(b["base_offset"], b["is_control"]) for b in _of(out, "batch")] == [(20, False), (30, True)]


def test_filters_keep_findings_and_summary(kdump: Kdump, mixed: Path) -> None:
    mixed.write_bytes(mixed.read_bytes() + b"\x00\x00\x00\x00\x00\x00\x00\x63\x00\x00\x00\x01")
    out = _json(kdump, "--records", "--control-only", str(mixed))
    assert [f["code"] for f in _of(out, "finding")] == ["partial-trailing-batch"]
    assert len(_of(out, "summary")) == 1


# --- --max-bytes ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 3, 6])
def test_max_bytes_prefix_of_whole_batches(kdump: Kdump, mixed: Path, n: int) -> None:
    """Like Kafka's testPrintDataLogPartialBatches: the sizes of the first N batches give N batches."""
    sizes = [b["size"] for b in _of(_json(kdump, str(mixed)), "batch")]
    for extra in (0, 1, 40):
        limit = sum(sizes[:n]) + (extra if n < len(sizes) else 0)
        out = _json(kdump, "--records", "--max-bytes", str(limit), str(mixed))
        assert len(_of(out, "batch")) == n
        assert _of(out, "finding") == []  # the cut is not damage
        (summary,) = _of(out, "summary")
        assert summary["stop_reason"] == ("limit" if n < len(sizes) else "end")
        text = _ok(kdump("dump", "--max-bytes", str(limit), str(mixed))).stdout
        assert sum(ln.startswith("baseOffset: ") for ln in text.splitlines()) == n


# --- other files --------------------------------------------------------------------------------------


def test_dump_index_files(kdump: Kdump, tmp_path: Path) -> None:
    part = tmp_path / "files-0"
    part.mkdir()
    (part / f"{SEG0}.index").write_bytes(encode_offset_index([(0, 0), (7, 4100)], 0) + bytes(80))
    (part / f"{SEG0}.timeindex").write_bytes(encode_time_index([(BASE_TS, 6), (BASE_TS + 9, 12)], 0))
    out = _json(kdump, str(part / f"{SEG0}.index"), str(part / f"{SEG0}.timeindex"))
    assert [r["type"] for r in out] == [
        "file",
        "index-entry",
        "index-entry",
        "finding",
        "file",
        "time-index-entry",
        "time-index-entry",
    ]
    assert [(r["offset"], r["position"]) for r in _of(out, "index-entry")] == [(0, 0), (7, 4100)]
    assert [(r["timestamp"], r["offset"]) for r in _of(out, "time-index-entry")] == [
        (BASE_TS, 6),
        (BASE_TS + 9, 12),
    ]
    (finding,) = _of(out, "finding")
    assert (finding["code"], finding["position"], finding["slots"]) == ("index-preallocated-tail", 16, 10)
    text = _ok(kdump("dump", str(part / f"{SEG0}.index"))).stdout.splitlines()
    assert text[1:3] == ["offset: 0 position: 0", "offset: 7 position: 4100"]


def test_dump_txnindex_snapshot_and_checkpoints(kdump: Kdump, tmp_path: Path) -> None:
    part = tmp_path / "files-0"
    part.mkdir()
    txn = part / f"{SEG0}.txnindex"
    txn.write_bytes(encode_txn_index([AbortedTxn(0, 7, 20, 29, 30)]))
    snap = part / "00000000000000000050.snapshot"
    snap.write_bytes(encode_producer_snapshot([ProducerSnapshotEntry(9, 1, 8, 39, 8, BASE_TS + 39, 0, -1)]))
    lec = part / "leader-epoch-checkpoint"
    lec.write_bytes(encode_leader_epoch_checkpoint([(0, 0), (3, 40)]))
    meta = part / "partition.metadata"
    meta.write_bytes(encode_partition_metadata("EI983ybyS5W9-cnjUAqqoQ"))
    rpo = tmp_path / "recovery-point-offset-checkpoint"
    rpo.write_bytes(encode_offset_checkpoint([("files", 0, 50), ("other-topic", 3, 7)]))
    out = _json(kdump, *(str(p) for p in (txn, snap, lec, meta, rpo)))
    for r in out:
        assert r["type"] in NON_LOG_TYPES | {"file"}
        assert r["file"] in {str(p) for p in (txn, snap, lec, meta, rpo)}
    (aborted,) = _of(out, "aborted-txn")
    assert {k: aborted[k] for k in ("producer_id", "first_offset", "last_offset", "last_stable_offset")} == {
        "producer_id": 7,
        "first_offset": 20,
        "last_offset": 29,
        "last_stable_offset": 30,
    }
    (state,) = _of(out, "producer-state")
    assert (state["producer_id"], state["producer_epoch"], state["last_offset"], state["first_offset"]) == (
        9,
        1,
        39,
        31,
    )
    assert [(e["epoch"], e["start_offset"]) for e in _of(out, "epoch-entry")] == [(0, 0), (3, 40)]
    assert [(p["key"], p["value"]) for p in _of(out, "property")] == [
        ("version", "0"),
        ("topic_id", "EI983ybyS5W9-cnjUAqqoQ"),
    ]
    assert [(c["topic"], c["partition"], c["offset"]) for c in _of(out, "checkpoint-entry")] == [
        ("files", 0, 50),
        ("other-topic", 3, 7),
    ]
    kinds = [r["kind"] for r in _of(out, "file")]
    assert kinds == [
        "txnindex",
        "snapshot",
        "leader-epoch-checkpoint",
        "partition-metadata",
        "offset-checkpoint",
    ]


def test_dump_corrupt_state_files_gives_findings(kdump: Kdump, tmp_path: Path) -> None:
    snap = tmp_path / "00000000000000000050.snapshot"
    data = bytearray(encode_producer_snapshot([ProducerSnapshotEntry(9, 1, 8, 39, 8, BASE_TS, 0, -1)]))
    data[-1] ^= 1
    snap.write_bytes(bytes(data))
    lec = tmp_path / "leader-epoch-checkpoint"
    lec.write_bytes(b"0\n2\n0 0\n")
    out = _json(kdump, str(snap), str(lec))
    assert [f["code"] for f in _of(out, "finding")] == ["snapshot-corrupt", "checkpoint-corrupt"]


def test_dump_log_deleted_leftover(kdump: Kdump, mixed: Path, tmp_path: Path) -> None:
    leftover = tmp_path / f"{SEG0}.log.deleted"
    leftover.write_bytes(mixed.read_bytes())
    out = _json(kdump, "--records", str(leftover))
    (fs,) = _of(out, "file")
    assert (fs["kind"], fs["base_offset"]) == ("log", 0)
    assert len(_of(out, "batch")) == 6
    assert len(_of(out, "record")) == 50


def test_dump_partition_directory_dumps_its_segments(kdump: Kdump, tmp_path: Path) -> None:
    part = tmp_path / "parts-0"
    offset = 0
    for _ in range(3):
        seg = SegmentBuilder(base_offset=offset)
        seg.add_v2(records(4))
        seg.write(part)
        offset = seg.next_offset
    out = _json(kdump, str(part))
    assert [(f["kind"], f["base_offset"]) for f in _of(out, "file")] == [("log", 0), ("log", 4), ("log", 8)]
    assert len(_of(out, "summary")) == 3


def test_state_files_match_kafka_oracles(kdump: Kdump, corpus_root: Path) -> None:
    """Index, time index, txnindex and snapshot dumps of real segments agree with kafka-dump-log."""
    checked = 0
    for seg in iter_log_segments(corpus_root):
        if seg.is_deleted_leftover:
            continue
        idx, tidx = seg.sibling(".index"), seg.sibling(".timeindex")
        if idx.exists() and seg.index_oracle("index").exists():
            out = _json(kdump, str(idx))
            assert [(r["offset"], r["position"]) for r in _of(out, "index-entry")] == [
                tuple(e) for e in parse_index_dump(seg.index_oracle("index")).entries
            ], seg.id
            checked += 1
        if tidx.exists() and seg.index_oracle("timeindex").exists():
            out = _json(kdump, str(tidx))
            assert [(r["timestamp"], r["offset"]) for r in _of(out, "time-index-entry")] == [
                tuple(e) for e in parse_time_index_dump(seg.index_oracle("timeindex")).entries
            ], seg.id
            checked += 1
        for suffix, parse, fields in (
            (
                ".txnindex",
                parse_txnindex_dump,
                ("producer_id", "first_offset", "last_offset", "last_stable_offset"),
            ),
            (".snapshot", parse_snapshot_dump, ("producer_id", "producer_epoch", "coordinator_epoch")),
        ):
            path, oracle = seg.sibling(suffix), seg.oracle_dir / f"{seg.base_name}{suffix}.dump.txt"
            if path.exists() and oracle.exists():
                kind = "aborted-txn" if suffix == ".txnindex" else "producer-state"
                ours = [tuple(r[f] for f in fields) for r in _of(_json(kdump, str(path)), kind)]
                assert ours == [tuple(getattr(e, f) for f in fields) for e in parse(oracle).entries], path
                checked += 1
    assert checked >= 10


# --- exit codes ---------------------------------------------------------------------------------------


def test_exit_0_even_with_findings(kdump: Kdump, mixed: Path) -> None:
    data = bytearray(mixed.read_bytes())
    data[200] ^= 0x55
    mixed.write_bytes(bytes(data) + b"garbage tail")
    result = kdump("dump", "--format", "json", str(mixed))
    assert result.exit_code == 0
    codes = {f["code"] for f in _of(_rows(result), "finding")}
    assert "crc-mismatch" in codes


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--no-such-option"],
        ["--encoding", "latin1"],
        ["--format", "xml"],
        ["--from-offset", "-1"],
        ["--from-offset", "ten"],
        ["--from-time", "yesterday-ish"],
        ["--from-time", "2024-01-01T00:00:00"],  # no zone
        ["--max-bytes", "-5"],
    ],
)
def test_exit_2_usage(kdump: Kdump, mixed: Path, args: list[str]) -> None:
    result = kdump("dump", *args, *([str(mixed)] if args else []))
    assert result.exit_code == 2
    assert result.stdout == ""


def test_exit_3_missing_path_still_dumps_the_rest(kdump: Kdump, mixed: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope" / f"{SEG0}.log"
    result = kdump("dump", "--format", "json", str(missing), str(mixed))
    assert result.exit_code == 3
    assert f"{missing}: no such file or directory" in result.stderr
    assert len(_of(_rows(result), "batch")) == 6


def test_exit_3_unreadable_file(kdump: Kdump, tmp_path: Path) -> None:
    # A snapshot larger than kdump reads whole cannot be read (works as root, unlike file modes).
    snap = tmp_path / "00000000000000000099.snapshot"
    with snap.open("wb") as fh:
        fh.truncate((64 << 20) + 1)
    result = kdump("dump", str(snap))
    assert result.exit_code == 3
    assert str(snap) in result.stderr


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads files whatever their mode"
)
def test_exit_3_permission_denied(kdump: Kdump, mixed: Path) -> None:
    mixed.chmod(0)
    try:
        result = kdump("dump", str(mixed))
    finally:
        mixed.chmod(0o644)
    assert result.exit_code == 3
    assert "cannot read" in result.stderr


# --- findings in place ----------------------------------------------------------------------------------


def test_findings_appear_where_they_occur(kdump: Kdump, tmp_path: Path) -> None:
    seg = SegmentBuilder()
    for i in range(4):
        seg.add_v2(records(3, start_ts=BASE_TS + 10 * i))
    data = bytearray(seg.data)
    p2 = seg.spans[2][0]
    data[p2 + 70] ^= 0x01
    log = tmp_path / "inplace-0" / f"{SEG0}.log"
    log.parent.mkdir()
    log.write_bytes(bytes(data) + bytes(30))
    out = _json(kdump, "--records", str(log))
    sequence = [(r["type"], r.get("code") or r.get("position")) for r in out if r["type"] != "record"]
    assert sequence == [
        ("file", None),
        ("batch", 0),
        ("batch", seg.spans[1][0]),
        ("finding", "crc-mismatch"),
        ("batch", p2),
        ("batch", seg.spans[3][0]),
        ("finding", "zero-filled-tail"),
        ("summary", None),
    ]
    finding = next(r for r in out if r.get("code") == "crc-mismatch")
    assert (finding["position"], finding["offset"]) == (p2, 6)
    text = _ok(kdump("dump", str(log))).stdout.splitlines()
    at = next(i for i, ln in enumerate(text) if ln.startswith("ERROR crc-mismatch"))
    assert f"position: {seg.spans[1][0]} " in text[at - 1]
    assert f"position: {p2} " in text[at + 1]
    assert f"at {log}:{p2} offset 6:" in text[at]


# --- fast JSON record lines -------------------------------------------------------------------------------

maybe_bytes = st.one_of(st.none(), st.binary(max_size=30), st.text(max_size=10).map(str.encode))
record_st = st.builds(
    Record,
    st.integers(0, 2**62),
    st.integers(-1, 2**42),
    maybe_bytes,
    maybe_bytes,
    st.lists(
        st.tuples(st.one_of(st.binary(max_size=8), st.text(max_size=5).map(str.encode)), maybe_bytes),
        max_size=3,
    ).map(tuple),
    st.integers(-1, 2**31 - 1),
)
header_st = st.builds(
    BatchHeader,
    st.integers(0, 2**40),  # position
    st.integers(0, 2**40),
    st.integers(0, 2**40),
    st.integers(0, 100),
    st.integers(61, 2**20),
    st.just(2),
    st.integers(0, 2**32 - 1),
    st.booleans(),
    st.integers(0, 2**32 - 1),
    st.integers(0, 0x7F),
    st.integers(0, 4),
    st.sampled_from([0, 1]),  # timestamp type
    st.integers(-1, 2**42),
    st.integers(-1, 2**42),
    st.integers(-1, 2**40),
    st.integers(-1, 2**15 - 1),
    st.integers(-1, 2**31 - 1),
    st.integers(-1, 100),
    st.booleans(),
    st.booleans(),  # is_control
    st.booleans(),
)
file_names = st.one_of(st.just("/data/t-0/00000000000000000000.log"), st.text(max_size=20))


@settings(max_examples=300, deadline=None)
@given(record_st, header_st, file_names, st.sampled_from(rows.ENCODINGS))
def test_record_line_equals_record_row(r: Record, h: BatchHeader, file: str, encoding: str) -> None:
    line = record_line(r, h, json.dumps(file), encoding)
    assert json.loads(line) == json.loads(json.dumps(rows.record_row(r, h, file, encoding)))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.tuples(header_st, st.lists(record_st, max_size=5)), max_size=4),
    file_names,
    st.sampled_from(rows.ENCODINGS),
)
def test_write_jsonl_record_lines_equal_record_row(
    batches: list[tuple[BatchHeader, list[Record]]], file: str, encoding: str
) -> None:
    """The inline fast path of write_jsonl builds the same objects as record_row."""
    events: list[object] = [FileStart(file, "log", 0, 0)]
    expected: list[dict[str, Any]] = [rows.file_row(FileStart(file, "log", 0, 0))]
    for h, recs in batches:
        events.append(h)
        expected.append(rows.batch_row(h, file))
        for r in recs:
            events.append(r)
            expected.append(rows.record_row(r, h, file, encoding))
    out = io.StringIO()
    write_jsonl(events, out, encoding=encoding)
    got = [json.loads(line) for line in out.getvalue().splitlines()]
    assert got == json.loads(json.dumps(expected))


def test_record_line_for_legacy_and_control_records() -> None:
    legacy_header = BatchHeader(
        0, None, 5, None, 40, 1, 1, True, 1, 0, 0, 0, BASE_TS, BASE_TS, -1, -1, -1, -1, False, False, False
    )
    legacy = Record(5, BASE_TS, b"k", b"v", (), -1, 123, True)
    assert json.loads(record_line(legacy, legacy_header, '"f"', "utf8")) == rows.record_row(
        legacy, legacy_header, "f", "utf8"
    )
    control_header = legacy_header._replace(
        magic=2, base_offset=5, count=1, is_control=True, is_transactional=True
    )
    marker = Record(5, BASE_TS, struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 3), (), -1)
    row = json.loads(record_line(marker, control_header, '"f"', "utf8"))
    assert row["control"] == {"type": "ABORT", "version": 0, "coordinator_epoch": 3}
    assert row == rows.record_row(marker, control_header, "f", "utf8")
    assert re.fullmatch(r"\{.*\}", record_line(legacy, None, '"f"', "hex"))


def test_fast_batch_lines_equal_the_schema_rows(corpus_root: Path) -> None:
    from kdump.formats.batch import BatchHeader
    from kdump.render.jsonl import batch_line
    from kdump.render.rows import batch_row
    from kdump.scan import open_buffer, scan_log

    seen = 0
    for log in sorted(corpus_root.glob("*/*/*.log")):
        with open_buffer(log) as buf:
            for ev in scan_log(buf, file=str(log)):
                if isinstance(ev, BatchHeader):
                    assert json.loads(batch_line(ev, json.dumps(str(log)))) == batch_row(ev, str(log))
                    seen += 1
    assert seen > 100
