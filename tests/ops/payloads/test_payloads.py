"""Keys and values decoded offline, without a broker: the wire format, typed values, `_schemas`
record by record (deletes, clears, tombstones, duplicate ids, records the registry would not read),
decode failures as findings at their offsets, `--where`, and the missing-library message."""

from __future__ import annotations

import io
import json
import struct
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("fastavro", reason="decoding payloads needs the payloads extra")

from builders import SegmentBuilder
from payload_producer import schemas_key as _key

from kdump.errors import DecodeError
from kdump.formats.batch import BatchHeader
from kdump.formats.payloads.schemas_topic import SchemasLog, schema_guid
from kdump.formats.payloads.values import JsonWriter, decode_typed
from kdump.formats.payloads.wire import header_ref, message_indexes, prefix_framing
from kdump.formats.records import NewRecord, Record
from kdump.ops.payloads.decode import PayloadDecoder, PayloadOptions
from kdump.ops.payloads.schema_catalog import SchemaCatalog

COVERED_CODES = {"payload-decode-failed", "schemas-record-invalid"}

AVRO = json.dumps(
    {
        "type": "record",
        "name": "T",
        "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": ["null", "string"]}],
    }
)


def _avro(value: dict[str, Any], sid: int = 1) -> bytes:
    import fastavro

    b = io.BytesIO()
    fastavro.schemaless_writer(b, fastavro.parse_schema(json.loads(AVRO)), value)
    return b"\x00" + sid.to_bytes(4, "big") + b.getvalue()


def _value(subject: str, version: int, sid: int, schema: str, deleted: bool = False, **extra: Any) -> bytes:
    return json.dumps(
        {"subject": subject, "version": version, "id": sid, **extra, "schema": schema, "deleted": deleted}
    ).encode()


def test_wire_framing_and_message_indexes() -> None:
    f = prefix_framing(b"\x00\x00\x00\x01\x02rest")
    assert f is not None
    assert (f.ref.schema_id, f.body) == (258, 5)
    assert prefix_framing(b"\x01\x00\x00\x00\x01") is None
    assert prefix_framing(b"\x00\x00\x00\x01") is None
    assert message_indexes(b"\x00", 0) == ([0], 1)
    assert message_indexes(b"\x04\x02\x06", 0) == ([1, 3], 3)  # count 2, indexes 1 and 3 (zigzag)
    with pytest.raises(DecodeError):
        message_indexes(b"\x08\x02", 0)  # 4 indexes, 1 byte
    with pytest.raises(DecodeError):
        message_indexes(b"\x02\x01", 0)  # index -1
    guid = uuid.uuid4()
    ref, at = header_ref(b"\x01" + guid.bytes + b"\x00")
    assert (ref.guid, ref.schema_id, at) == (str(guid), None, 17)
    assert header_ref(b"\x00\x00\x00\x00\x07") == ((7, None), 5)
    for bad in (b"", b"\x02abcd", b"\x01short", b"\x00\x00"):
        with pytest.raises(DecodeError):
            header_ref(bad)


def test_typed_values_as_kafkas_serializers_write_them() -> None:
    assert decode_typed("int32", struct.pack(">i", -5)) == -5
    assert decode_typed("int64", struct.pack(">q", 2**40)) == 2**40
    assert decode_typed("float", struct.pack(">f", 1.5)) == 1.5
    assert decode_typed("double", struct.pack(">d", -0.25)) == -0.25
    assert decode_typed("double", struct.pack(">d", float("nan"))) == "nan"
    u = uuid.uuid4()
    assert decode_typed("uuid", str(u).encode()) == str(u)
    assert decode_typed("uuid", u.bytes) == str(u)
    assert decode_typed("json", b'{"a":[1,2]}') == {"a": [1, 2]}
    for kind, data in [("int32", b"abc"), ("int64", b"1"), ("float", b""), ("uuid", b"nope"), ("json", b"{")]:
        with pytest.raises(DecodeError):
            decode_typed(kind, data)
    w = JsonWriter("hex")
    assert json.loads(w.dumps({"b": b"\x01\xff", "n": [float("inf")], "big": 2**70})) == {
        "b": "01ff",
        "n": ["inf"],
        "big": 2**70,
    }


def test_schemas_log_follows_the_registry() -> None:
    log = SchemasLog()
    log.apply(0, _key("SCHEMA", "a", 1), _value("a", 1, 1, AVRO))
    log.apply(1, _key("SCHEMA", "a", 2), _value("a", 2, 2, '"string"'))
    log.apply(2, _key("SCHEMA", "b", 1), _value("b", 1, 1, AVRO))  # same schema, same id: a second subject
    log.apply(3, _key("SCHEMA", "c", 1), _value("c", 1, 1, '"int"'))  # id 1 taken by another schema: ignored
    log.apply(4, _key("DELETE_SUBJECT", "a"), b'{"subject":"a","version":1}')
    log.apply(5, _key("SCHEMA", "b", 1), _value("b", 1, 1, AVRO, deleted=True))
    log.apply(6, _key("SCHEMA", "b", 1), None)  # hard delete: text still held
    log.apply(7, _key("SCHEMA", "z", 3), None)  # a tombstone whose values compaction removed
    log.apply(8, _key("CLEAR_SUBJECT", "a"), b'{"subject":"a"}')
    log.apply(9, _key("CONFIG"), b'{"compatibilityLevel":"NONE"}')
    states = {(sv.subject, sv.version): sv.state for sv in log.listing()}
    assert states == {
        ("a", 1): "cleared",
        ("a", 2): "cleared",
        ("b", 1): "hard-deleted",
        ("c", 1): "ignored-duplicate-id",
        ("z", 3): "hard-deleted",
    }
    assert log.versions[("z", 3)].schema is None
    assert log.versions[("b", 1)].schema == AVRO
    found = log.by_id(1)
    assert found is not None
    assert found.schema == AVRO
    assert found.deleted
    assert log.by_id(3) is None
    assert len(log.settings) == 1
    for key, value in [
        (b"not json", b"{}"),
        (_key("SCHEMA", "x", 1), b'{"subject":"x"}'),
        (_key("SCHEMA", None, 1), b"{}"),
        (_key("WHAT"), b"{}"),
        (None, b"{}"),
        (b"[1]", None),
    ]:
        with pytest.raises(DecodeError):
            log.apply(10, key, value)


def test_guid_is_the_registrys_md5() -> None:
    import hashlib

    assert schema_guid(AVRO) == str(uuid.UUID(bytes=hashlib.md5(AVRO.encode()).digest()))
    log = SchemasLog()
    md5 = "DrJXcbxslWxqDBSJ1Fz1mg=="
    log.apply(0, _key("SCHEMA", "a", 1), _value("a", 1, 1, AVRO, md5=md5))
    assert log.versions[("a", 1)].guid() == "0eb25771-bc6c-956c-6a0c-1489d45cf59a"


def _logdir(
    tmp_path: Path, records: list[NewRecord], schemas: list[tuple[bytes | None, bytes | None]]
) -> Path:
    root = tmp_path / "logdir"
    data = SegmentBuilder()
    data.add_v2(records)
    data.write(root / "orders-0")
    s = SegmentBuilder()
    s.add_v2([NewRecord(k, v, 1_700_000_000_000 + i, ()) for i, (k, v) in enumerate(schemas)])
    s.write(root / "_schemas-0")
    return root


def _rows(result: Result, kind: str) -> list[dict[str, Any]]:
    assert result.exit_code == 0, result.output
    return [r for r in map(json.loads, result.stdout.splitlines()) if r["type"] == kind]


def test_values_that_do_not_decode_are_shown_raw_with_a_finding(
    kdump: Callable[..., Result], tmp_path: Path
) -> None:
    ts = 1_700_000_000_000
    recs = [
        NewRecord(struct.pack(">i", 1), _avro({"a": 1, "b": "x"}), ts, ()),
        NewRecord(b"short", _avro({"a": 2, "b": None})[:-1] + b"\xff\xff", ts, ()),  # bytes left over
        NewRecord(struct.pack(">i", 3), b"\x00\x00\x00\x00\x01", ts, ()),  # magic and id, nothing else
        NewRecord(struct.pack(">i", 4), b"plain text", ts, ()),  # no schema id: shown as is
        NewRecord(
            struct.pack(">i", 5), _avro({"a": 5, "b": None}), ts, ((b"__value_schema_id", b"\x07bad"),)
        ),
        NewRecord(None, None, ts, ()),  # a tombstone
    ]
    root = _logdir(
        tmp_path,
        recs,
        [(_key("SCHEMA", "orders-value", 1), _value("orders-value", 1, 1, AVRO)), (b"{", b"x")],
    )
    result = kdump(
        "dump", "--format", "json", "--value-type", "registry", "--key-type", "int32", str(root / "orders-0")
    )
    records = _rows(result, "record")
    assert records[0]["value"] == {"a": 1, "b": "x"}
    assert records[0]["key"] == 1
    assert [r["value_format"] for r in records] == ["avro", None, None, None, None, None]
    assert records[1]["key"] == "short"  # not an int32: shown raw, with a finding
    assert records[3]["value"] == "plain text"
    assert records[5]["value"] is None
    findings = [(f["code"], f["offset"]) for f in _rows(result, "finding")]
    assert findings == [("payload-decode-failed", o) for o in (1, 1, 2, 4)]
    (tally,) = _rows(result, "payloads")
    assert tally["failed"] == 4
    assert tally["not_framed"] == 1
    (summary,) = _rows(result, "summary")
    assert summary["findings"]["warning"] == 4
    # The _schemas record the registry would not read is said on stderr.
    assert "schemas-record-invalid" in result.stderr


def test_typed_keys_and_values_in_text(kdump: Callable[..., Result], tmp_path: Path) -> None:
    u = uuid.uuid4()
    recs = [NewRecord(str(u).encode(), struct.pack(">d", 2.5), 1_700_000_000_000, ())]
    root = _logdir(tmp_path, recs, [])
    result = kdump(
        "dump", "--key-type", "uuid", "--value-type", "double", "--format", "text", str(root / "orders-0")
    )
    assert f'key: "{u}" payload: 2.5' in result.stdout
    assert "Payloads: decoded 2 (double 1, uuid 1)" in result.stdout


def test_protobuf_from_proto_text_with_an_import(kdump: Callable[..., Result], tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools", reason="needs grpcio-tools (the payloads extra)")
    from google.protobuf import descriptor_pool, message_factory

    from kdump.ops.payloads.proto_text import compile_proto

    dep = 'syntax = "proto3"; package p; message Inner { string s = 1; }'
    main = 'syntax = "proto3"; package p; import "dep.proto"; message A { int32 x = 1; } message B { p.Inner in = 1; repeated int64 n = 2; }'
    files = compile_proto("main.proto", {"main.proto": main, "dep.proto": dep}, {})
    pool = descriptor_pool.DescriptorPool()
    from google.protobuf import descriptor_pb2

    for name in ("dep.proto", "main.proto"):
        pool.Add(descriptor_pb2.FileDescriptorProto.FromString(files[name]))
    b_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("p.B"))
    msg = b_cls(n=[1, 2])
    msg.__getattribute__("in").s = "deep"
    value = b"\x00\x00\x00\x00\x05" + b"\x02\x02" + msg.SerializeToString()  # message index [1]
    schemas = [
        (_key("SCHEMA", "dep", 1), _value("dep", 1, 4, dep, schemaType="PROTOBUF")),
        (
            _key("SCHEMA", "orders-value", 1),
            _value(
                "orders-value",
                1,
                5,
                main,
                schemaType="PROTOBUF",
                references=[{"name": "dep.proto", "subject": "dep", "version": 1}],
            ),
        ),
    ]
    root = _logdir(tmp_path, [NewRecord(None, value, 1_700_000_000_000, ())], schemas)
    (record,) = _rows(
        kdump("dump", "--format", "json", "--value-type", "registry", str(root / "orders-0")), "record"
    )
    assert record["value"] == {"in": {"s": "deep"}, "n": ["1", "2"]}
    broken = _value("orders-value", 1, 5, "message {", schemaType="PROTOBUF")
    root2 = _logdir(
        tmp_path / "2", [NewRecord(None, value, 1_700_000_000_000, ())], [(schemas[1][0], broken)]
    )
    result = kdump("dump", "--format", "json", "--value-type", "registry", str(root2 / "orders-0"))
    (finding,) = _rows(result, "finding")
    assert finding["code"] == "payload-decode-failed"
    assert "protoc rejects" in finding["message"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    value=st.one_of(
        st.binary(max_size=40), st.binary(max_size=30).map(lambda b: b"\x00\x00\x00\x00\x01" + b)
    ),
    header=st.one_of(st.none(), st.binary(max_size=20)),
    kind=st.sampled_from(["registry", "int32", "int64", "float", "double", "uuid", "json"]),
)
def test_decoding_never_raises(value: bytes, header: bytes | None, kind: str) -> None:
    log = SchemasLog()
    log.apply(0, _key("SCHEMA", "s", 1), _value("s", 1, 1, AVRO))
    decoder = PayloadDecoder(PayloadOptions(value_type=kind, key_type=kind), SchemaCatalog(log=log))
    headers = () if header is None else ((b"__value_schema_id", header),)
    r = Record(0, 0, value, value, headers, 0)
    pr, found = decoder.decode(r, _batch(), "f")
    for side in (pr.key, pr.value):
        assert side.json is None or json.loads(side.json) is not None or side.json == b"null"
    assert all(f.code == "payload-decode-failed" for f in found)


def _batch() -> BatchHeader:
    from kdump.formats.batch import decode_v2_header
    from kdump.formats.records import build_v2_batch

    data = build_v2_batch(0, [NewRecord(None, b"x", 0, ())])
    return decode_v2_header(data, 0, len(data))


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "reference"])
def test_where_keeps_what_jq_select_keeps(
    kdump: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compiled: bool
) -> None:
    pytest.importorskip("jq", reason="--where needs jq (the payloads extra)")
    if not compiled:  # the sequential reference path of small logs
        from kdump.formats import fast_records

        monkeypatch.setattr(fast_records, "compiled", None)
    recs = [
        NewRecord(
            f"k{i}".encode(), f'{{"n":{i}}}'.encode(), 1_700_000_000_000 + i, ((b"h", str(i % 2).encode()),)
        )
        for i in range(10)
    ]
    root = _logdir(tmp_path, recs, [])
    result = kdump(
        "dump",
        "--format",
        "json",
        "--value-type",
        "json",
        "--where",
        '.value.n > 6 or (.headers|from_entries).h == "1" and .key == "k1"',
        str(root / "orders-0"),
    )
    assert [r["key"] for r in _rows(result, "record")] == ["k1", "k7", "k8", "k9"]
    raw = kdump(
        "dump", "--format", "json", "--where", '.value | startswith("{\\"n\\":3")', str(root / "orders-0")
    )
    assert [r["key"] for r in _rows(raw, "record")] == ["k3"]
    bad = kdump("dump", "--where", ".value ==", str(root / "orders-0"))
    assert bad.exit_code == 2
    assert "not a jq expression" in bad.output


def test_a_missing_library_is_one_sentence_and_exit_3(
    kdump: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _logdir(tmp_path, [NewRecord(None, _avro({"a": 1, "b": None}), 1_700_000_000_000, ())], [])
    monkeypatch.setitem(sys.modules, "jq", None)
    result = kdump("dump", "--where", ".value", str(root / "orders-0"))
    assert result.exit_code == 3
    assert result.stderr.strip() == "kdump: --where needs jq: pip install 'kdump[payloads]'"


def test_local_proto_file_with_an_import_beside_it(kdump: Callable[..., Result], tmp_path: Path) -> None:
    pytest.importorskip("grpc_tools", reason="needs grpcio-tools (the payloads extra)")
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    from kdump.ops.payloads.proto_text import compile_proto

    schemas = tmp_path / "schemas"
    schemas.mkdir()
    (schemas / "money.proto").write_text('syntax = "proto3"; package m; message Money { int64 units = 1; }')
    (schemas / "order.proto").write_text(
        'syntax = "proto3"; package o; import "money.proto"; message Order { m.Money total = 1; string id = 2; }'
    )
    files = compile_proto("order.proto", {}, {}, schemas)
    pool = descriptor_pool.DescriptorPool()
    for name in ("money.proto", "order.proto"):
        pool.Add(descriptor_pb2.FileDescriptorProto.FromString(files[name]))
    order = message_factory.GetMessageClass(pool.FindMessageTypeByName("o.Order"))(id="x-1")
    order.total.units = 12
    value = b"\x00\x00\x00\x00\x21\x00" + order.SerializeToString()
    root = _logdir(tmp_path, [NewRecord(None, value, 1_700_000_000_000, ())], [])
    result = kdump(
        "dump", "--format", "json", "--schema-file", f"33={schemas / 'order.proto'}", str(root / "orders-0")
    )  # fmt: skip
    (record,) = _rows(result, "record")
    assert record["value"] == {"total": {"units": "12"}, "id": "x-1"}
    assert (record["value_schema_id"], record["value_format"]) == (33, "protobuf")


def test_registry_credentials_come_from_the_environment_only() -> None:
    import base64

    from kdump.ops.payloads.registry_client import RegistryClient

    basic = RegistryClient("http://r", {"KDUMP_REGISTRY_USER": "u", "KDUMP_REGISTRY_PASSWORD": "p:w"})
    assert basic.headers["Authorization"] == "Basic " + base64.b64encode(b"u:p:w").decode()
    token = RegistryClient("http://r/", {"KDUMP_REGISTRY_TOKEN": "t0k", "KDUMP_REGISTRY_USER": "u"})
    assert token.headers["Authorization"] == "Bearer t0k"
    assert token.url == "http://r"
    assert "Authorization" not in RegistryClient("http://r", {}).headers


def test_an_unreachable_registry_is_exit_3(kdump: Callable[..., Result], tmp_path: Path) -> None:
    import socket

    root = _logdir(tmp_path, [NewRecord(None, _avro({"a": 1, "b": None}, sid=5), 1_700_000_000_000, ())], [])
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = kdump(
        "dump", "--registry", f"http://127.0.0.1:{port}", "--schema-order", "registry", str(root / "orders-0")
    )
    assert result.exit_code == 3
    assert "cannot reach it" in result.stderr


@pytest.mark.parametrize("key_type", ["int32", "raw"])
@pytest.mark.parametrize("fmt", ["json", "text"])
def test_the_direct_loop_writes_what_the_general_way_writes(
    kdump: Callable[..., Result], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str, key_type: str
) -> None:
    from kdump.formats.constants import Codec
    from kdump.render import payload_lines

    seg = SegmentBuilder()
    ts = 1_700_000_000_000
    seg.add_v2(
        [
            # Two live schemas, in runs and alternating: the loop's common case changes under it.
            NewRecord(
                struct.pack(">i", i),
                _avro({"a": i, "b": None if i % 2 else "x\n\u00e9"}, sid=2 if i in (5, 6, 7, 12, 14) else 1),
                ts + i,
                (),
            )
            for i in range(30)
        ],
        codec=Codec.GZIP,
    )
    seg.add_v2(
        [NewRecord(b"k", b"\x00\x00\x00\x00\x01\xff", ts, ((b"h", b"v"),)), NewRecord(None, None, ts, ())]
    )
    seg.add_v2([NewRecord(struct.pack(">i", 7), _avro({"a": 7, "b": "y"}, sid=9), ts, ())])  # unknown id
    seg.add_marker(5, commit=True)
    root = tmp_path / "logdir"
    seg.write(root / "orders-0")
    s = SegmentBuilder()
    s.add_v2(
        [
            NewRecord(_key("SCHEMA", "orders-value", 1), _value("orders-value", 1, 1, AVRO), ts, ()),
            NewRecord(
                _key("SCHEMA", "orders-value", 2), _value("orders-value", 2, 2, AVRO, metadata={}), ts, ()
            ),
        ]
    )
    s.write(root / "_schemas-0")
    args = [
        "dump",
        "--format",
        fmt,
        "--value-type",
        "registry",
        "--key-type",
        key_type,
        "--jobs",
        "1",
        str(root / "orders-0"),
    ]
    direct = kdump(*args)
    monkeypatch.setattr(payload_lines, "DIRECT", False)
    general = kdump(*args)
    assert direct.exit_code == general.exit_code == 0
    assert direct.stdout == general.stdout
    assert "payload-decode-failed" in direct.stdout
    assert "schema-id-unknown" in direct.stdout
