"""`--format kcat`: the JSON object `kcat -C -J` prints per record, key for key and in its order."""

from __future__ import annotations

import io
import json

from kdump.findings import make_finding
from kdump.formats.batch import BatchHeader, decode_v2_header
from kdump.formats.records import NewRecord, Record, build_v2_batch
from kdump.ops.dump.files import FileStart
from kdump.ops.dump.payload_events import Decoded, PayloadRecord
from kdump.render.kcat import write_kcat


def _header(**kw: object) -> BatchHeader:
    batch = build_v2_batch(10, [NewRecord(b"k", b"v", 1_700_000_000_000)], **kw)  # type: ignore[arg-type]
    return decode_v2_header(batch, 0, len(batch))


def _lines(events: list[object]) -> tuple[list[str], str]:
    out, said = io.StringIO(), []
    write_kcat(iter(events), out, said.append)
    return out.getvalue().splitlines(), "\n".join(said)


def test_records_have_kcats_keys_in_kcats_order() -> None:
    h = _header()
    rec = Record(10, 1_700_000_000_000, b"k", "välue".encode(), ((b"a", b"1"), (b"b", None), (b"a", b"2")), 0)
    plain = Record(11, 1_700_000_000_001, None, None, (), 1)
    lines, err = _lines([FileStart("logs/orders-3/00000000000000000000.log", "log", 100, 0), h, rec, plain])
    assert err == ""
    assert lines[0] == (
        '{"topic":"orders","partition":3,"offset":10,"tstype":"create","ts":1700000000000,"broker":-1,'
        '"headers":["a","1","b",null,"a","2"],"key":"k","payload":"välue"}'
    )
    assert list(json.loads(lines[1])) == [
        "topic",
        "partition",
        "offset",
        "tstype",
        "ts",
        "broker",
        "key",
        "payload",
    ]
    assert json.loads(lines[1])["key"] is None


def test_log_append_time_legacy_and_control_records() -> None:
    lat = _header(log_append_time=1_700_000_000_500)
    legacy = _header()._replace(magic=0, timestamp_type=-1)
    control = _header(control=True, transactional=True)
    lines, _ = _lines(
        [
            FileStart("x/y.log", "log", 1, 0),
            lat,
            Record(10, 1_700_000_000_500, None, b"v", (), 0),
            control,
            Record(11, 5, b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x01", (), 0),
            legacy,
            Record(12, -1, None, b"old", (), -1, crc=1, crc_ok=True),
        ]
    )
    assert len(lines) == 2  # a consumer never sees control records
    record = json.loads(lines[0])
    assert (record["topic"], record["partition"], record["tstype"], record["ts"]) == (
        None,
        None,
        "logappend",
        1_700_000_000_500,
    )
    # kcat leaves tstype and ts out when the message has no timestamp (v0)
    assert lines[1] == '{"topic":null,"partition":null,"offset":12,"broker":-1,"key":null,"payload":"old"}'


def test_decoded_values_carry_their_schema_ids_and_findings_go_to_stderr() -> None:
    h = _header()
    r = Record(10, 5, b"\x00\x00\x00\x00\x07k", b"\x00\x00\x00\x00\x03v", (), 0)
    pr = PayloadRecord(r, Decoded(b'"k"', 7, "avro"), Decoded(b'{"a":1}', 3, "avro"))
    finding = make_finding("crc-mismatch", "t-0/0.log", "checksum differs", position=0, offset=10)
    lines, err = _lines([FileStart("t-0/0.log", "log", 1, 0), h, pr, finding])
    record = json.loads(lines[0])
    assert list(record)[-4:] == ["key", "key_schema_id", "payload", "value_schema_id"]
    assert (record["key"], record["key_schema_id"], record["payload"], record["value_schema_id"]) == (
        "k",
        7,
        {"a": 1},
        3,
    )
    assert err.startswith("ERROR crc-mismatch at t-0/0.log:0")
