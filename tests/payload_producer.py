"""Records produced by a real client's Schema Registry serializers to a real broker, and a `_schemas`
partition in the layout Confluent's registry writes.

confluent-kafka's AvroSerializer, ProtobufSerializer and JSONSerializer register their schemas with
a real registry (Apicurio, `brokers.apicurio`) and produce to a real KRaft broker
(`brokers.cluster`). Header-carried ids are written by the client's own `header_schema_id_serializer`;
Apicurio's Confluent API hands out no GUIDs (the serializer then fails with "Schema GUID is not set"),
so the client here is given the GUID Confluent's registry would return: the MD5 of the schema text
it stores (`MD5.ofSchema`), computed in this file.

No registry that writes `_schemas` runs here (Confluent's is not on Maven Central; Karapace is not on
PyPI), so `_schemas` is written by this script, record for record in Confluent's JSON key and value
formats (`SchemaKey`, `SchemaValue`, `DeleteSubjectKey`/`Value`, `ConfigKey`, `NoopKey`: Jackson's
field order, null fields left out), with the ids and schemas the registry assigned, to a compacted
topic of the same broker; the broker's own log cleaner compacts it.
"""

from __future__ import annotations

import base64
import decimal
import hashlib
import importlib
import json
import shutil
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

COMMON_PROTO = """syntax = "proto3";
package kdumptest.common;

message Money {
  string currency = 1;
  int64 units = 2;
}
"""

ORDER_PROTO = """syntax = "proto3";
package kdumptest;

import "kdumptest_common.proto";
import "google/protobuf/timestamp.proto";

message Header {
  string trace = 1;
}

message Order {
  int64 id = 1;
  kdumptest.common.Money total = 2;
  repeated string items = 3;
  google.protobuf.Timestamp at = 4;
  map<string, int32> counts = 5;
  Status status = 6;
  Line first = 7;
  enum Status {
    NEW = 0;
    PAID = 1;
  }
  message Line {
    string sku = 1;
    double price = 2;
  }
}
"""

AVRO_ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "kdumptest",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": "string"},
        {"name": "amount", "type": "double"},
        {"name": "qty", "type": "int"},
        {"name": "paid", "type": "boolean"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "blob", "type": "bytes"},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "counters", "type": {"type": "map", "values": "long"}},
        {
            "name": "address",
            "type": {
                "type": "record",
                "name": "Address",
                "fields": [{"name": "street", "type": "string"}, {"name": "zip", "type": "int"}],
            },
        },
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    ],
}

AVRO_RETIRED = {
    "type": "record",
    "name": "Retired",
    "namespace": "kdumptest",
    "fields": [{"name": "n", "type": "int"}],
}
AVRO_GONE = {
    "type": "record",
    "name": "Gone",
    "namespace": "kdumptest",
    "fields": [{"name": "s", "type": "string"}],
}

JSON_PAY = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "Payment",
    "type": "object",
    "properties": {"id": {"type": "integer"}, "amount": {"type": "number"}, "lines": {"type": "array"}},
}


def avro_order(i: int) -> dict[str, Any]:
    return {
        "id": 10_000_000_000 + i,
        "customer": f"customer-{i % 37:04d}",
        "amount": i * 1.25,
        "qty": i % 7,
        "paid": i % 2 == 0,
        "note": None if i % 3 else f"note {i} \u00e9",
        "blob": bytes([i % 256, 0, 255]),
        "status": ["NEW", "PAID", "SHIPPED"][i % 3],
        "tags": [f"t{j}" for j in range(i % 4)],
        "counters": {f"c{j}": j * i for j in range(i % 3)},
        "address": {"street": f"{i} Main St", "zip": 10000 + i},
        "at": datetime.fromtimestamp(1_700_000_000 + i, UTC),
        "price": decimal.Decimal(f"{i}.{i % 100:02d}"),
    }


def confluent_md5(schema: str, references: list[Any]) -> bytes:
    """The MD5 Confluent's registry keeps for a schema (`MD5.ofSchema`: the text, then each
    reference's name, subject and 4-byte version), whose UUID form is the schema's GUID."""
    md = hashlib.md5(schema.encode("utf-8"))
    for r in references:
        md.update(r.name.encode() + r.subject.encode() + r.version.to_bytes(4, "big"))
    return md.digest()


@dataclass
class Produced:
    """What was sent, where it landed, and the registry it was registered with."""

    registry_url: str
    log_dir: Path  # a copy of the broker's log dir, taken after a clean shutdown
    schemas_before: Path  # `_schemas-0` before compaction (every record still there)
    sent: dict[str, list[tuple[Any, Any]]] = field(default_factory=dict)  # topic -> (key, value) in order
    ids: dict[str, int] = field(default_factory=dict)  # subject -> id
    proto: dict[str, Any] = field(default_factory=dict)  # message classes by name


def _proto_classes(workdir: Path) -> dict[str, Any]:
    from grpc_tools import protoc

    src = workdir / "proto"
    src.mkdir(parents=True, exist_ok=True)
    (src / "kdumptest_common.proto").write_text(COMMON_PROTO)
    (src / "kdumptest_order.proto").write_text(ORDER_PROTO)
    import grpc_tools

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    code = protoc.main(
        [
            "protoc",
            f"-I{src}",
            f"-I{well_known}",
            f"--python_out={src}",
            "kdumptest_common.proto",
            "kdumptest_order.proto",
        ]
    )
    assert code == 0
    sys.path.insert(0, str(src))
    order = importlib.import_module("kdumptest_order_pb2")
    return {"Order": order.Order, "Header": order.Header}


def schemas_key(keytype: str, subject: str | None = None, version: int | None = None) -> bytes:
    """A `_schemas` key as Confluent's registry writes it (Jackson's field order, nulls left out)."""
    key: dict[str, Any] = {"keytype": keytype}
    if subject is not None:
        key["subject"] = subject
    if version is not None:
        key["version"] = version
    key["magic"] = 1 if keytype == "SCHEMA" else 0
    return json.dumps(key, separators=(",", ":")).encode()


def schema_value(
    subject: str,
    version: int,
    sid: int,
    schema_type: str,
    refs: list[Any],
    schema: str,
    deleted: bool,
    md5: str | None = None,
) -> bytes:
    value: dict[str, Any] = {"subject": subject, "version": version, "id": sid}
    if md5 is not None:
        value["md5"] = md5
    if schema_type != "AVRO":
        value["schemaType"] = schema_type
    if refs:
        value["references"] = refs
    value["schema"] = schema
    value["deleted"] = deleted
    return json.dumps(value, separators=(",", ":")).encode()


def produce_all(cluster: Any, registry_url: str, workdir: Path) -> Produced:
    """Register, produce and write `_schemas`; stop the broker; return what was sent and where."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from confluent_kafka.schema_registry import (
        SchemaRegistryClient,
        header_schema_id_serializer,
        topic_subject_name_strategy,
    )
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import IntegerSerializer, MessageField, SerializationContext

    classes = _proto_classes(workdir)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topics = ["avro-orders", "proto-orders", "json-pay", "avro-headers", "proto-headers", "retired-data"]
    compacted = {
        "cleanup.policy": "compact",
        "segment.ms": "200",
        "min.cleanable.dirty.ratio": "0.01",
        "min.compaction.lag.ms": "0",
    }
    new = [NewTopic(t, 1, 1) for t in topics] + [NewTopic("_schemas", 1, 1, config=compacted)]
    for f in admin.create_topics(new).values():
        f.result(timeout=60)
    # A bounded wait per request: one CI run hung 20 minutes on a registry request never answered.
    client = SchemaRegistryClient({"url": registry_url, "timeout": 30})
    # The classic subject per topic, named outright: confluent-kafka 2.16 defaults to asking the
    # registry's associations API first, which Apicurio does not serve (the hung request was one).
    per_topic = {"subject.name.strategy": topic_subject_name_strategy}

    class GuidClient(SchemaRegistryClient):  # type: ignore[misc]
        """The real client, given the GUID Confluent's registry would return (Apicurio has none)."""

        def register_schema_full_response(self, subject_name: str, schema: Any, *a: Any, **k: Any) -> Any:
            registered = super().register_schema_full_response(subject_name, schema, *a, **k)
            if registered.guid is None:
                import attrs

                stored = super().get_version(subject_name, "latest").schema
                md5 = confluent_md5(stored.schema_str, stored.references or [])
                registered = attrs.evolve(registered, guid=str(uuid.UUID(bytes=md5)))
            return registered

    guid_client = GuidClient({"url": registry_url, "timeout": 30})
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5, "compression.type": "lz4"})
    out = Produced(registry_url, workdir / "logdir-copy", workdir / "schemas-before")
    out.proto = classes

    def send(topic: str, ser: Any, key_ser: Any, items: list[tuple[Any, Any]]) -> None:
        for key, value in items:
            headers: list[tuple[str, bytes]] = []
            vctx = SerializationContext(topic, MessageField.VALUE, headers)
            data = ser(value, vctx)
            k = key_ser(key, SerializationContext(topic, MessageField.KEY)) if key_ser else key
            producer.produce(topic, key=k, value=data, headers=headers or None)
        producer.flush(60)
        out.sent.setdefault(topic, []).extend(items)

    avro = AvroSerializer(client, json.dumps(AVRO_ORDER), conf=per_topic)
    send("avro-orders", avro, IntegerSerializer(), [(i, avro_order(i)) for i in range(300)])
    order, header = classes["Order"], classes["Header"]

    def proto_order(i: int) -> Any:
        m = order(id=i, items=[f"i{j}" for j in range(i % 3)], status=i % 2)
        m.total.currency, m.total.units = "EUR", i * 100
        m.at.seconds = 1_700_000_000 + i
        m.counts["x"] = i
        m.first.sku, m.first.price = f"sku-{i}", i / 4
        return m

    psr = ProtobufSerializer(order, client, {"use.deprecated.format": False, **per_topic})
    hsr = ProtobufSerializer(header, client, {"use.deprecated.format": False, **per_topic})
    send("proto-orders", psr, None, [(f"k{i}".encode(), proto_order(i)) for i in range(100)])
    send("proto-orders", hsr, None, [(None, header(trace=f"trace-{i}")) for i in range(20)])
    jsr = JSONSerializer(json.dumps(JSON_PAY), client, conf=per_topic)
    send("json-pay", jsr, None, [(None, {"id": i, "amount": i / 8, "lines": [i, "x"]}) for i in range(50)])
    hdr = {"schema.id.serializer": header_schema_id_serializer, **per_topic}
    ahs = AvroSerializer(guid_client, json.dumps(AVRO_ORDER), conf=hdr)
    send("avro-headers", ahs, None, [(None, avro_order(i)) for i in range(40)])
    phs = ProtobufSerializer(order, guid_client, {"use.deprecated.format": False, **hdr})
    send("proto-headers", phs, None, [(None, proto_order(i)) for i in range(20)])
    retired = AvroSerializer(client, json.dumps(AVRO_RETIRED), conf=per_topic)
    send("retired-data", retired, None, [(None, {"n": i}) for i in range(5)])
    gone = AvroSerializer(client, json.dumps(AVRO_GONE), conf={"auto.register.schemas": True, **per_topic})
    # A schema of another subject on the same topic: the gone-value subject (record name strategy).
    gone_items = [(None, {"s": f"gone {i}"}) for i in range(3)]
    for _, value in gone_items:
        data = gone(value, SerializationContext("gone", MessageField.VALUE))
        producer.produce("retired-data", value=data)
    producer.flush(60)
    out.sent["retired-data"].extend(gone_items)

    _write_schemas_topic(cluster, client, producer, out)
    cluster.stop()
    node = cluster.nodes[0]
    shutil.copytree(node.log_dir, out.log_dir, symlinks=True)
    return out


def _write_schemas_topic(cluster: Any, client: Any, producer: Any, out: Produced) -> None:
    """Every subject version the registry holds, then deletes; the registry's own record formats."""
    texts = {"kdumptest_common.proto": COMMON_PROTO}
    versions = []
    for subject in client.get_subjects():
        for version in client.get_versions(subject):
            rs = client.get_version(subject, version)
            versions.append((rs.schema_id, subject, version, rs.schema))
    versions.sort()

    def put(key: bytes, value: bytes | None) -> None:
        producer.produce("_schemas", key=key, value=value)

    put(schemas_key("NOOP"), None)
    put(schemas_key("CONFIG"), b'{"compatibilityLevel":"BACKWARD"}')
    for sid, subject, version, schema in versions:
        out.ids[subject] = sid
        text = schema.schema_str
        md5 = None
        if schema.schema_type == "PROTOBUF":
            # Confluent's registry keeps .proto text; the client registered descriptors. The GUID the
            # client was handed (the MD5 of what the registry stored) goes with it, as newer
            # registries keep it (`md5`, base64).
            text = texts.get(subject, ORDER_PROTO)
            md5 = base64.b64encode(confluent_md5(schema.schema_str, schema.references or [])).decode()
        refs = [{"name": r.name, "subject": r.subject, "version": r.version} for r in schema.references or []]
        value = schema_value(subject, version, sid, schema.schema_type or "AVRO", refs, text, False, md5)
        put(schemas_key("SCHEMA", subject, version), value)
    producer.flush(60)
    by_subject = {subject: (sid, version, schema) for sid, subject, version, schema in versions}
    # retired-data-value: the whole subject soft-deleted (DELETE_SUBJECT, up to its version).
    sid, version, schema = by_subject["retired-data-value"]
    put(
        schemas_key("DELETE_SUBJECT", "retired-data-value"),
        json.dumps({"subject": "retired-data-value", "version": version}, separators=(",", ":")).encode(),
    )
    # gone-value: soft-deleted (the value again, deleted), then hard-deleted (a tombstone).
    sid, version, schema = by_subject["gone-value"]
    put(
        schemas_key("SCHEMA", "gone-value", version),
        schema_value("gone-value", version, sid, "AVRO", [], schema.schema_str, True),
    )
    put(schemas_key("SCHEMA", "gone-value", version), None)
    producer.flush(60)
    node = cluster.nodes[0]
    part = node.log_dir / "_schemas-0"
    shutil.copytree(part, out.schemas_before)
    # Roll the segment (segment.ms) so the cleaner may compact it, then wait for it to.
    time.sleep(0.5)
    put(schemas_key("NOOP"), None)
    producer.flush(60)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        checkpoint = node.log_dir / "cleaner-offset-checkpoint"
        if checkpoint.exists() and "_schemas 0" in checkpoint.read_text():
            return
        time.sleep(0.5)
    raise AssertionError("the broker's log cleaner did not compact _schemas in 90 s")
