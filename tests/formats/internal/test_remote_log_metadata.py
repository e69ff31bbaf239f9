"""`__remote_log_metadata`: the tables match Kafka's JSON schemas, and the decoded text is what each release's
kafka-dump-log `--remote-log-metadata-decoder` prints, record for record, on broker-written records (4.4.0,
3.9.1) and on hand-made ones of every type, state and refusal (`rlmm_samples`)."""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from rlmm_samples import samples
from tiered_corpus import VERSIONS, corpus_dir, tiered_root
from wire import uvarint

from kdump.errors import DecodeError
from kdump.formats.internal import decode_internal_record
from kdump.formats.internal.remote_log_metadata import (
    MESSAGES,
    decode_remote_log_metadata_record,
    format_payload,
)
from kdump.formats.internal.schema import ArrayOf, Field, MessageType, Prim, StructType

Run = Callable[..., Result]
SEGMENT = "00000000000000000000.log"
ORACLE = SEGMENT + ".deep-print-data-log.remote-log-metadata-decoder"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiered_root(tmp_path_factory.getbasetemp())


def _record_lines(text: str) -> list[str]:
    return [line for line in text.split("\n") if line.startswith("| offset:")]


def _as_kafka_39(line: str) -> str:
    # Kafka 3.9 has no TxnIndexEmpty: its records never carry the tag, and its toString() leaves it out.
    assert "txnIdxEmpty=true" not in line
    return line.replace(", txnIdxEmpty=false}", "}")


@pytest.mark.parametrize("version", VERSIONS)
def test_broker_written_records_print_as_kafka_prints_them(root: Path, kdump: Run, version: str) -> None:
    part = corpus_dir(root, version) / "__remote_log_metadata-0"
    oracle = corpus_dir(root, version) / "expected" / "__remote_log_metadata-0" / f"{ORACLE}.txt"
    result = kdump("dump", "--records", "--format", "text", str(part / SEGMENT))
    assert result.exit_code == 0, result.stderr
    ours = _record_lines(result.stdout)
    theirs = _record_lines(oracle.read_text())
    assert len(theirs) >= 30
    if version.startswith("3."):
        ours = [_as_kafka_39(line) for line in ours]
    assert ours == theirs
    states = {m for line in theirs for m in re.findall(r"state=([A-Z_]+)", line)}
    assert states == {
        "COPY_SEGMENT_STARTED",
        "COPY_SEGMENT_FINISHED",
        "DELETE_SEGMENT_STARTED",
        "DELETE_SEGMENT_FINISHED",
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_every_type_state_and_refusal_prints_as_kafka_prints_it(root: Path, kdump: Run, version: str) -> None:
    synthetic = root / "synthetic" / "__remote_log_metadata-0"
    oracle = root / "synthetic" / "expected" / "__remote_log_metadata-0" / f"{ORACLE}.kafka-{version}.txt"
    result = kdump("dump", "--records", "--format", "text", str(synthetic / SEGMENT))
    assert result.exit_code == 0, result.stderr
    ours = _record_lines(result.stdout)
    theirs = _record_lines(oracle.read_text())
    assert len(ours) == len(samples()) == len(theirs)
    if version.startswith("3."):
        ours = [
            line.replace(", txnIdxEmpty=true}", "}").replace(", txnIdxEmpty=false}", "}") for line in ours
        ]
    assert ours == theirs
    # What Kafka refuses is a finding naming the record, never a silent skip.
    refused = sum(1 for line in theirs if "skipping." in line)
    assert refused == 14
    assert result.stdout.count("WARNING unknown-internal-record") == refused


def test_the_decoded_object_names_every_field_as_kafka_does(root: Path, kdump: Run) -> None:
    part = corpus_dir(root, "4.4.0") / "__remote_log_metadata-0"
    result = kdump("dump", "--records", "--format", "json", str(part))
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    decoded = [r["decoded"] for r in rows if r["type"] == "record"]
    assert {d["decoder"] for d in decoded} == {"remote_log_metadata"}
    first = decoded[0]["value"]
    assert first["type"] == "REMOTE_LOG_SEGMENT_METADATA_RECORD"
    assert first["state"] == "COPY_SEGMENT_STARTED"
    data = first["data"]
    assert list(data) == [
        "remoteLogSegmentId",
        "startOffset",
        "endOffset",
        "brokerId",
        "maxTimestampMs",
        "eventTimestampMs",
        "segmentLeaderEpochs",
        "segmentSizeInBytes",
        "customMetadata",
        "remoteLogSegmentState",
        "txnIndexEmpty",
    ]
    assert list(data["remoteLogSegmentId"]["topicIdPartition"]) == ["name", "id", "partition"]
    assert data["remoteLogSegmentId"]["topicIdPartition"]["name"] == "tiered"
    assert data["segmentLeaderEpochs"] == [{"leaderEpoch": 0, "offset": 0}]
    updates = [d for d in decoded if d["record"] == "RemoteLogSegmentMetadataUpdateRecord"]
    assert {u["value"]["state"] for u in updates} == {
        "COPY_SEGMENT_FINISHED",
        "DELETE_SEGMENT_STARTED",
        "DELETE_SEGMENT_FINISHED",
    }


def test_decode_auto_picks_the_decoder_by_topic_and_by_option(root: Path, kdump: Run, tmp_path: Path) -> None:
    log = corpus_dir(root, "4.4.0") / "__remote_log_metadata-0" / SEGMENT
    assert decode_internal_record("__remote_log_metadata", None, _first_value(log)) is not None
    elsewhere = tmp_path / "copy" / SEGMENT
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(log.read_bytes())
    raw = kdump("dump", "--records", str(elsewhere))
    assert "RemoteLogSegmentMetadata{" not in raw.stdout
    chosen = kdump("dump", "--records", "--decode", "remote-log-metadata", str(elsewhere))
    assert "payload: RemoteLogSegmentMetadata{" in chosen.stdout


def _first_value(log: Path) -> bytes:
    from kdump.formats.records import Record
    from kdump.scan import open_buffer, scan_log

    with open_buffer(log) as buf:
        for ev in scan_log(buf, deep=True):
            if isinstance(ev, Record):
                assert ev.value is not None
                return bytes(ev.value)
    raise AssertionError("no record")


def test_bytes_that_do_not_decode_raise_and_dump_reports_them() -> None:
    whole = dict(samples())["update to state 1"]
    with pytest.raises(DecodeError, match="Failed to deserialize record with type 1"):
        decode_remote_log_metadata_record(whole[:-5])
    with pytest.raises(DecodeError):
        decode_remote_log_metadata_record(None)


def test_a_refused_record_keeps_its_bytes_and_says_why() -> None:
    value = dict(samples())["negative start offset"]
    decoded = decode_remote_log_metadata_record(value)
    assert decoded.status == "unknown"
    assert decoded.raw_value == value
    assert "StartOffset for a remote segment cannot be negative" in (decoded.reason or "")
    assert decoded.oracle_suffix(12).startswith(
        " payload: Error at offset 12, skipping. Unexpected start offset = -1."
    )
    assert decoded.value is not None
    assert decoded.value["data"]["startOffset"] == -1
    frame = uvarint(1) + uvarint(9) + uvarint(0)
    assert (
        decode_remote_log_metadata_record(frame).reason
        == "remote log metadata record type 9 is not one Kafka defines"
    )


def test_kafka_39_text_has_no_txn_index_flag() -> None:
    decoded = decode_remote_log_metadata_record(dict(samples())["snapshot record"])
    assert decoded.value is not None
    data = decoded.value["data"]
    assert format_payload(3, data).endswith("state=COPY_SEGMENT_FINISHED, txnIdxEmpty=true}")
    assert format_payload(3, data, txn_index_empty=False).endswith("state=COPY_SEGMENT_FINISHED}")


# --- the tables against the JSON schemas in the fetched jars -------------------------------------------------

_PRIMS = {p.value: p for p in Prim}


def _jar_schemas() -> dict[str, dict[str, dict[str, Any]]]:
    from brokers.releases import cache_root

    found: dict[str, dict[str, dict[str, Any]]] = {}
    for version in VERSIONS:
        jar = cache_root() / version / "lib" / f"kafka-storage-{version}.jar"
        if not jar.is_file():
            continue
        with zipfile.ZipFile(jar) as zf:
            schemas = {}
            for name in zf.namelist():
                if re.fullmatch(r"message/Remote\w+Record\.json", name):
                    text = "\n".join(
                        line
                        for line in zf.read(name).decode().splitlines()
                        if not line.strip().startswith("//")
                    )
                    schema = json.loads(text)
                    schemas[schema["name"]] = schema
            found[version] = schemas
    return found


def _camel(name: str) -> str:
    return name[0].lower() + name[1:]


def _check_fields(fields: tuple[Field, ...], spec: list[dict[str, Any]], where: str, *, newest: bool) -> None:
    by_name = {_camel(s["name"]): s for s in spec}
    ours = {f.name: f for f in fields}
    extra = set(ours) - set(by_name)
    # An older release's schema may lack tagged fields added later (TxnIndexEmpty, 4.0); nothing else.
    assert not extra if newest else all(not ours[n].tagged.empty for n in extra), f"{where}: {extra}"
    assert [n for n in ours if n in by_name] == list(by_name), f"{where}: field order"
    for name, s in by_name.items():
        f = ours.get(name)
        assert f is not None, f"{where}: the table lacks {s['name']}"
        assert str(f.versions) == s["versions"], f"{where}/{name}: versions"
        assert str(f.nullable) == s.get("nullableVersions", "none"), f"{where}/{name}: nullable"
        assert str(f.tagged) == s.get("taggedVersions", "none"), f"{where}/{name}: tagged"
        assert f.tag == s.get("tag"), f"{where}/{name}: tag"
        if "default" in s:
            assert f.default is None, f"{where}/{name}: default"
            assert s["default"] == "null", f"{where}/{name}: default"
        kind = s["type"]
        if kind.startswith("[]"):
            assert isinstance(f.type, ArrayOf), f"{where}/{name}: array"
            element = f.type.element
            assert isinstance(element, StructType)
            assert element.name == kind[2:]
            _check_fields(element.fields, s["fields"], f"{where}/{name}", newest=newest)
        elif kind in _PRIMS:
            assert f.type is _PRIMS[kind], f"{where}/{name}: {kind}"
        else:
            assert isinstance(f.type, StructType), f"{where}/{name}: {kind}"
            assert f.type.name == kind, f"{where}/{name}: {kind}"
            _check_fields(f.type.fields, s["fields"], f"{where}/{name}", newest=newest)


def test_tables_match_kafkas_json_schemas() -> None:
    schemas = _jar_schemas()
    if not schemas:
        pytest.skip("no Kafka storage jar in the release cache (tests/brokers/releases.py fetches them)")
    for version, found in schemas.items():
        tables: dict[str, MessageType] = {msg.name: msg for _, msg in MESSAGES.values()}
        assert set(found) == set(tables), version
        for name, schema in found.items():
            msg = tables[name]
            assert msg.api_key == schema["apiKey"], name
            assert str(msg.valid) == schema["validVersions"], name
            assert str(msg.flexible) == schema["flexibleVersions"], name
            _check_fields(
                msg.struct.fields, schema["fields"], f"{version}/{name}", newest=version == VERSIONS[0]
            )
