"""Payload bombs are a finding and the dump goes on; decode errors say what is wrong in words.

An Avro array of zero-byte items holds as many items as its block count says: five bytes made a
50-million-item list in the fastavro reader, and `array<array<null>>` grew quadratically (16 KB to
160 MB of JSON). Both the Python reader and the compiled path now stop at the bounds of
kdump.formats.payloads.limits, in time and memory linear in the input.
"""

from __future__ import annotations

import io
import json
import resource
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from builders import SegmentBuilder
from click.testing import Result
from payload_producer import schemas_key as _key

from kdump.errors import DecodeError
from kdump.formats.payloads.avro import avro_json, avro_reader, describe_failure
from kdump.formats.payloads.limits import PayloadLimitError, check_output, item_limit
from kdump.formats.records import NewRecord

# The finding codes this module produces (tests/test_findings_catalog.py).
COVERED_CODES = frozenset({"payload-over-limit"})

NESTED = json.dumps({"type": "array", "items": {"type": "array", "items": "null"}})
FLAT = json.dumps({"type": "array", "items": "null"})
EMPTY_RECORDS = json.dumps(
    {"type": "array", "items": {"type": "record", "name": "E", "fields": [{"name": "n", "type": "null"}]}}
)


def _zigzag(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        byte = z & 0x7F
        z >>= 7
        if z:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _nested_bomb(outer: int, inner: int) -> bytes:
    """array<array<null>>: `outer` inner arrays of `inner` nulls each (2 + a few bytes per inner)."""
    one = _zigzag(inner) + b"\x00"
    return _zigzag(outer) + one * outer + b"\x00"


def test_five_bytes_never_become_fifty_million_items() -> None:
    data = _zigzag(50_000_000) + b"\x00"
    assert len(data) <= 5
    decode = avro_reader(FLAT)
    started = time.perf_counter()
    with pytest.raises(PayloadLimitError, match="array items"):
        decode(data)
    assert time.perf_counter() - started < 0.5
    assert avro_json(FLAT) is None  # the compiled path declines such schemas: the walk bounds them


def test_the_quadratic_nested_bomb_is_stopped_in_linear_time() -> None:
    data = _nested_bomb(4000, 8000)  # ~16 KB that once gave 160 MB of JSON
    assert len(data) < 20_000
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(PayloadLimitError):
        avro_reader(NESTED)(data)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before
    assert grown_kib < 50_000, grown_kib


def test_records_of_nulls_count_too_and_small_legitimate_arrays_pass() -> None:
    with pytest.raises(PayloadLimitError):
        avro_reader(EMPTY_RECORDS)(_zigzag(10_000_000) + b"\x00")
    assert avro_reader(FLAT)(_zigzag(100) + b"\x00") == [None] * 100
    assert len(avro_reader(NESTED)(_nested_bomb(10, 10))) == 10
    # Right at the bound: item_limit(n) items pass, one more does not.
    data = _zigzag(1000) + b"\x00"
    assert len(avro_reader(FLAT)(data)) == 1000
    assert item_limit(len(data)) > 1000


def test_output_bound() -> None:
    check_output(b"x" * (1 << 20), 0)
    with pytest.raises(PayloadLimitError, match="per input byte"):
        check_output(b"x" * ((1 << 20) + 257), 1)


def test_decode_errors_carry_no_python_repr() -> None:
    schema = json.dumps({"type": "record", "name": "R", "fields": [{"name": "b", "type": "boolean"}]})
    with pytest.raises(DecodeError) as caught:
        avro_reader(schema)(b"")
    message = str(caught.value)
    assert "0x" not in message
    assert "<" not in message
    assert "BytesIO" not in message
    assert "ends before its schema does" in message
    assert describe_failure(EOFError()) == "the value ends before its schema does"
    assert describe_failure(EOFError("cannot read boolean from <_io.BytesIO object at 0x7ff6a1b2c3d0>")) == (
        "the value ends before its schema does (cannot read boolean)"
    )
    assert describe_failure(ValueError()) == "it does not fit the schema (ValueError)"


def _logdir(tmp_path: Path, schema: str, values: list[bytes]) -> Path:
    root = tmp_path / "logdir"
    data = SegmentBuilder()
    data.add_v2([NewRecord(None, v, 1_700_000_000_000 + i, ()) for i, v in enumerate(values)])
    data.write(root / "bombs-0")
    s = SegmentBuilder()
    doc = {"subject": "bombs-value", "version": 1, "id": 1, "schema": schema, "deleted": False}
    s.add_v2([NewRecord(_key("SCHEMA", "bombs-value", 1), json.dumps(doc).encode(), 1_700_000_000_000, ())])
    s.write(root / "_schemas-0")
    return root


def test_dump_reports_the_bomb_as_a_finding_and_goes_on(kdump: Callable[..., Result], tmp_path: Path) -> None:
    prefix = b"\x00" + (1).to_bytes(4, "big")
    values = [
        prefix + _zigzag(3) + b"\x00",  # [null, null, null]
        prefix + _nested_bomb(4000, 8000),
        prefix + _zigzag(50_000_000) + b"\x00",
        prefix + _zigzag(1) + b"\x00",
    ]
    root = _logdir(tmp_path, FLAT, [values[0], values[2], values[3]])
    started = time.perf_counter()
    result = kdump("dump", "--format", "json", "--value-type", "registry", str(root / "bombs-0"))
    assert time.perf_counter() - started < 20
    rows: list[dict[str, Any]] = [json.loads(line) for line in result.stdout.splitlines()]
    records = [r for r in rows if r["type"] == "record"]
    assert [r["offset"] for r in records] == [0, 1, 2]  # the dump went on past it
    assert records[0]["value"] == [None, None, None]
    assert records[2]["value"] == [None]
    findings = [(f["code"], f["offset"]) for f in rows if f["type"] == "finding"]
    assert findings == [("payload-over-limit", 1)]
    # The nested schema: its bomb too, through the same path.
    root2 = _logdir(tmp_path / "nested", NESTED, [values[1]])
    result = kdump("dump", "--format", "json", "--value-type", "registry", str(root2 / "bombs-0"))
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [f["code"] for f in rows if f["type"] == "finding"] == ["payload-over-limit"]
    assert len(result.stdout) < 1_000_000


def test_fastavro_writes_what_the_walk_reads() -> None:
    """The walk reads what fastavro writes (blocks with sizes included): no false bound."""
    import fastavro

    schema = {
        "type": "record",
        "name": "R",
        "fields": [
            {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "null"}}},
            {"name": "u", "type": ["null", "string", {"type": "array", "items": "null"}]},
            {"name": "f", "type": {"type": "fixed", "name": "F", "size": 3}},
        ],
    }
    value = {"m": {"a": [None] * 5, "b": []}, "u": [None, None], "f": b"abc"}
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(schema), value)
    assert avro_reader(json.dumps(schema))(buf.getvalue()) == value
    assert struct.calcsize(">i") == 4


@pytest.mark.parametrize("fmt", ["text", "rich", "json"])
def test_state_documents_print_as_json_never_a_python_repr(
    kdump: Callable[..., Result], tmp_path: Path, fmt: str
) -> None:
    marker = tmp_path / ".kafka_cleanshutdown"
    marker.write_text('{"version":0,"brokerEpoch":79484}')
    result = kdump("dump", "--format", fmt, str(marker))
    assert result.exit_code == 0, result.output
    assert "'version'" not in result.stdout
    assert "{'" not in result.stdout
    if fmt == "json":
        docs = [json.loads(line) for line in result.stdout.splitlines()]
        assert {"version": 0, "brokerEpoch": 79484} in [d.get("document") for d in docs]
    else:
        assert '"brokerEpoch": 79484' in result.stdout
