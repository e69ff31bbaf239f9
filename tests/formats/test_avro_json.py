"""The compiled Avro-to-JSON path writes exactly what the reference (fastavro, then orjson) writes,
or declines; it never accepts bytes the reference rejects."""

from __future__ import annotations

import io
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("fastavro", reason="decoding Avro needs the payloads extra")

import fastavro
from avro_schemas import ADDRESS, ALL_TYPES

from kdump.errors import DecodeError
from kdump.formats.payloads.avro import _compiled, avro_json, avro_reader
from kdump.formats.payloads.values import JsonWriter

pytestmark = pytest.mark.skipif(_compiled() is None, reason="the compiled Avro path is not built here")

SCHEMA = ALL_TYPES

text = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
floats = st.floats(allow_nan=True, allow_infinity=True, width=32)
doubles = st.floats(allow_nan=True, allow_infinity=True)
values = st.fixed_dictionaries(
    {
        "n": st.none(),
        "b": st.booleans(),
        "i": st.integers(-(2**31), 2**31 - 1),
        "l": st.integers(-(2**63), 2**63 - 1),
        "f": floats,
        "d": doubles,
        "s": text,
        "e": st.sampled_from(["A", "B_b", "C9"]),
        "a": st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), text), max_size=5),
        "m": st.dictionaries(text, st.lists(doubles, max_size=3), max_size=3),
        "home": st.fixed_dictionaries({"zip": st.integers(-(2**31), 2**31 - 1)}),
        "work": st.one_of(st.none(), st.fixed_dictionaries({"zip": st.integers(0, 99999)})),
        "_last9": text,
    }
)


def _encode(value: dict[str, Any]) -> bytes:
    b = io.BytesIO()
    fastavro.schemaless_writer(b, fastavro.parse_schema(json.loads(json.dumps(SCHEMA))), value)
    return b"\x00\x00\x00\x00\x01" + b.getvalue()


def _reference(data: bytes) -> bytes | None:
    try:
        return JsonWriter().dumps(avro_reader(json.dumps(SCHEMA), skip=5)(data))
    except DecodeError:
        return None


@settings(max_examples=400, deadline=None)
@given(value=values)
def test_compiled_equals_reference(value: dict[str, Any]) -> None:
    compiled = avro_json(json.dumps(SCHEMA), skip=5)
    assert compiled is not None
    data = _encode(value)
    out = compiled(data)
    ref = _reference(data)
    assert ref is not None
    if out is None:
        # Declined: a float whose text has an exponent or is not finite somewhere in the value.
        floats_in = [value["f"], value["d"], *(x for xs in value["m"].values() for x in xs)]
        assert any(not math.isfinite(x) or "e" in repr(float(x)) for x in floats_in)
    else:
        assert out == ref


@settings(max_examples=600, deadline=None)
@given(value=values, cut=st.integers(0, 200), noise=st.binary(max_size=6))
def test_damaged_values_are_declined_or_decoded_alike(value: dict[str, Any], cut: int, noise: bytes) -> None:
    compiled = avro_json(json.dumps(SCHEMA), skip=5)
    assert compiled is not None
    data = _encode(value)
    data = data[: 5 + cut] + noise + data[5 + cut + len(noise) :]
    out = compiled(data)
    if out is not None:
        assert out == _reference(data)


def test_what_is_not_compiled() -> None:
    assert avro_json(json.dumps({"type": "bytes"})) is None
    assert avro_json(json.dumps({"type": "long", "logicalType": "timestamp-millis"})) is None
    linked = {"type": "record", "name": "L", "fields": [{"name": "next", "type": ["null", "L"]}]}
    assert avro_json(json.dumps(linked)) is None
    assert avro_json(json.dumps("string")) is not None
    assert avro_json(json.dumps("x.y.Address"), [json.dumps(ADDRESS)]) is not None
