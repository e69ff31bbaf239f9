"""Keys and values produced by a real client's serializers, decoded by kdump from the broker's files.

One real KRaft broker (4.4.0) and one real Schema Registry (Apicurio, Confluent-compatible API on
127.0.0.1) for the module; confluent-kafka's AvroSerializer, ProtobufSerializer and JSONSerializer
(prefix ids, and header-carried GUIDs) produce to it (`tests/payload_producer.py`). kdump then
decodes the stopped broker's log dir offline (schemas from its `_schemas` partition, compacted by the
broker's cleaner) and through the registry URL, and every decoded value must equal what was sent.
"""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

pytest.importorskip(
    "confluent_kafka", reason="the payload tests need confluent-kafka (pip install -e '.[dev]')"
)
pytest.importorskip("fastavro", reason="decoding payloads needs the payloads extra")

from brokers.apicurio import RegistryUnavailable, running_registry
from brokers.cluster import BrokerFailed, KafkaCluster
from brokers.fixtures import skip_or_fail
from brokers.releases import Release
from payload_producer import Produced, avro_order, produce_all

COVERED_CODES = {"schema-id-unknown", "schema-deleted"}


@pytest.fixture(scope="module")
def produced(kafka_newest: Release, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Produced]:
    work = tmp_path_factory.mktemp("payloads-live")
    try:
        registry_cm = running_registry(work / "registry")
        registry = registry_cm.__enter__()
    except RegistryUnavailable as exc:
        skip_or_fail(f"no real Schema Registry: {exc}")
    try:
        cluster = KafkaCluster(kafka_newest, work / "cluster", config={"log.cleaner.backoff.ms": 200})
        try:
            cluster.format()
            cluster.start()
        except BrokerFailed as exc:
            cluster.kill()
            skip_or_fail(f"a real Kafka broker did not start here: {exc}")
        with cluster:
            out = produce_all(cluster, registry.url, work)
        yield out
    finally:
        registry_cm.__exit__(None, None, None)


def _records(result: Result) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output + result.stderr
    return [row for row in map(json.loads, result.stdout.splitlines()) if row["type"] == "record"]


def _rows(result: Result, kind: str) -> list[dict[str, Any]]:
    return [row for row in map(json.loads, result.stdout.splitlines()) if row["type"] == kind]


def _avro_json(value: dict[str, Any]) -> dict[str, Any]:
    """What kdump documents for an Avro value in JSON (bytes in --encoding base64)."""
    out = dict(value)
    out["blob"] = base64.b64encode(value["blob"]).decode()
    out["at"] = value["at"].isoformat()
    out["price"] = str(value["price"])
    return out


SOURCES = {
    "offline": lambda p: ["--schemas", str(p.log_dir / "_schemas-0"), "--schema-order", "topic"],
    "registry": lambda p: ["--registry", p.registry_url, "--schema-order", "registry"],
}


def _dump(kdump: Callable[..., Result], p: Produced, topic: str, source: str, *extra: str) -> Result:
    return kdump(
        "dump", "--format", "json", "--encoding", "base64", "--value-type", "registry",
        *SOURCES[source](p), *extra, str(p.log_dir / f"{topic}-0"),
    )  # fmt: skip


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_avro_values_equal_what_was_sent(
    kdump: Callable[..., Result], produced: Produced, source: str
) -> None:
    recs = _records(_dump(kdump, produced, "avro-orders", source, "--key-type", "int32"))
    sent = produced.sent["avro-orders"]
    assert len(recs) == len(sent) == 300
    for row, (key, value) in zip(recs, sent, strict=True):
        assert row["key"] == key
        assert row["key_format"] == "int32"
        assert row["value_format"] == "avro"
        assert row["value_schema_id"] == produced.ids["avro-orders-value"]
        assert row["value"] == _avro_json(value)


@pytest.mark.parametrize("source", sorted(SOURCES))
@pytest.mark.parametrize("topic", ["proto-orders", "proto-headers"])
def test_protobuf_values_equal_what_was_sent(
    kdump: Callable[..., Result], produced: Produced, source: str, topic: str
) -> None:
    from google.protobuf import json_format

    recs = _records(_dump(kdump, produced, topic, source))
    sent = produced.sent[topic]
    assert len(recs) == len(sent) == (120 if topic == "proto-orders" else 20)
    for row, (_key, message) in zip(recs, sent, strict=True):
        assert row["value_format"] == "protobuf"
        parsed = json_format.ParseDict(row["value"], type(message)())
        assert parsed == message
    if topic == "proto-headers":  # the id came in a header, as a GUID: resolved to the registry's id
        assert {r["value_schema_id"] for r in recs} == {produced.ids["proto-orders-value"]}
        assert all(h["key"] == "__value_schema_id" for r in recs for h in r["headers"])


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_json_schema_values_equal_what_was_sent(
    kdump: Callable[..., Result], produced: Produced, source: str
) -> None:
    recs = _records(_dump(kdump, produced, "json-pay", source))
    assert [r["value"] for r in recs] == [v for _, v in produced.sent["json-pay"]]
    assert {r["value_format"] for r in recs} == {"json-schema"}


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_header_guid_avro_values_equal_what_was_sent(
    kdump: Callable[..., Result], produced: Produced, source: str
) -> None:
    recs = _records(_dump(kdump, produced, "avro-headers", source))
    assert [r["value"] for r in recs] == [_avro_json(v) for _, v in produced.sent["avro-headers"]]
    assert {r["value_schema_id"] for r in recs} == {produced.ids["avro-orders-value"]}


def test_soft_deleted_and_compacted_hard_deleted_schemas(
    kdump: Callable[..., Result], produced: Produced
) -> None:
    """After compaction: the soft-deleted subject still decodes (schema-deleted), the hard-deleted
    one is gone from `_schemas` (schema-id-unknown, counted)."""
    result = _dump(kdump, produced, "retired-data", "offline")
    recs = _records(result)
    assert [r["value"] for r in recs[:5]] == [{"n": i} for i in range(5)]
    assert all(r["value_format"] is None for r in recs[5:])
    gone_id = produced.ids["gone-value"]
    assert {r["value_schema_id"] for r in recs[5:]} == {gone_id}
    findings = {f["code"]: f for f in _rows(result, "finding")}
    assert findings["schema-deleted"]["records"] == 5
    assert findings["schema-id-unknown"]["records"] == 3
    (tally,) = _rows(result, "payloads")
    assert tally["decoded"] == {"avro": 5}
    assert (tally["unknown_schema"], tally["deleted_schema"]) == (3, 5)
    assert tally["unknown_schemas"] == [f"id {gone_id}"]


def test_hard_deleted_schema_recoverable_before_compaction(
    kdump: Callable[..., Result], produced: Produced, tmp_path: Path
) -> None:
    result = kdump(
        "dump", "--format", "json", "--value-type", "registry", "--schemas", str(produced.schemas_before),
        str(produced.log_dir / "retired-data-0"),
    )  # fmt: skip
    recs = _records(result)
    assert [r["value"] for r in recs] == [v for _, v in produced.sent["retired-data"]]
    (tally,) = _rows(result, "payloads")
    assert tally["deleted_schema"] == 8
    assert tally["unknown_schema"] == 0


def test_schemas_forensics_before_and_after_compaction(
    kdump: Callable[..., Result], produced: Produced, tmp_path: Path
) -> None:
    after = {
        (r["subject"], r["version"]): r
        for r in _rows(kdump("schemas", "--format", "json", str(produced.log_dir)), "schema")
    }
    before = {
        (r["subject"], r["version"]): r
        for r in _rows(kdump("schemas", "--format", "json", str(produced.schemas_before)), "schema")
    }
    assert set(after) == set(before)
    assert {s for s, _ in after} == set(produced.ids)
    for (subject, _v), row in after.items():
        assert row["id"] in (produced.ids[subject], None)
    assert (
        after[("retired-data-value", 1)]["state"]
        == before[("retired-data-value", 1)]["state"]
        == "soft-deleted"
    )
    assert before[("gone-value", 1)]["state"] == after[("gone-value", 1)]["state"] == "hard-deleted"
    assert before[("gone-value", 1)]["recoverable"] is True
    assert after[("gone-value", 1)]["recoverable"] is False  # compaction removed its schema records
    assert after[("avro-orders-value", 1)]["state"] == "live"
    out = tmp_path / "rebuilt"
    result = kdump("schemas", "--write", str(out), str(produced.schemas_before))
    assert result.exit_code == 0, result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    ids = [v["id"] for v in manifest["versions"]]
    assert ids == sorted(ids)
    files = {v["file"]: v for v in manifest["versions"] if "file" in v}
    assert len(files) == len(produced.ids)
    import fastavro

    for name, v in files.items():
        text = (out / name).read_text()
        assert text == v["import"]["body"]["schema"]
        if name.endswith(".avsc"):
            fastavro.parse_schema(json.loads(text), named_schemas={})
    # A registry rebuilt from the files serves the same schemas by id: decode offline from them.
    avsc = next(n for n, v in files.items() if v["subject"] == "avro-orders-value")
    result = kdump(
        "dump", "--format", "json", "--encoding", "base64", "--schema-file",
        f"{produced.ids['avro-orders-value']}={out / avsc}", "--key-type", "int32", str(produced.log_dir / "avro-orders-0"),
    )  # fmt: skip
    assert [r["value"] for r in _records(result)] == [_avro_json(v) for _, v in produced.sent["avro-orders"]]
    shutil.rmtree(out)


def test_where_on_decoded_fields_and_headers(kdump: Callable[..., Result], produced: Produced) -> None:
    result = _dump(
        kdump, produced, "avro-orders", "offline", "--key-type", "int32",
        "--where", '.value.customer == "customer-0005" and .value.paid',
    )  # fmt: skip
    keys = [r["key"] for r in _records(result)]
    want = [k for k, v in produced.sent["avro-orders"] if v["customer"] == "customer-0005" and v["paid"]]
    assert want
    assert keys == want
    result = _dump(
        kdump,
        produced,
        "proto-headers",
        "offline",
        "--where",
        '(.headers | from_entries | has("__value_schema_id")) and .value.id == "7"',
    )
    assert [r["value"]["id"] for r in _records(result)] == ["7"]


def test_text_output_shows_schema_ids_and_decoded_values(
    kdump: Callable[..., Result], produced: Produced
) -> None:
    result = kdump(
        "dump", "--format", "text", "--value-type", "registry", "--key-type", "int32", "--to-offset", "1",
        str(produced.log_dir / "avro-orders-0"),
    )  # fmt: skip
    assert result.exit_code == 0
    line = next(x for x in result.stdout.splitlines() if x.startswith("| offset: 1 "))
    sid = produced.ids["avro-orders-value"]
    assert f"key: 1 valueSchemaId: {sid} payload: " in line
    assert json.loads(line.split(" payload: ", 1)[1].split(" headers: ")[0])["id"] == avro_order(1)["id"]
