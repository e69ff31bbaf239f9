"""Avro schemas shared by the compiled Avro-to-JSON tests (tests/formats/test_avro_json.py) and its fuzz
target (tests/fuzz/compiled_targets.py): one record that holds every type the compiled path handles,
so the property tests and the fuzzer exercise the same shapes."""

from __future__ import annotations

from typing import Any

ADDRESS: dict[str, Any] = {
    "type": "record",
    "name": "Address",
    "namespace": "x.y",
    "fields": [{"name": "zip", "type": "int"}],
}

ALL_TYPES: dict[str, Any] = {
    "type": "record",
    "name": "All",
    "namespace": "x",
    "fields": [
        {"name": "n", "type": "null"},
        {"name": "b", "type": "boolean"},
        {"name": "i", "type": "int"},
        {"name": "l", "type": "long"},
        {"name": "f", "type": "float"},
        {"name": "d", "type": "double"},
        {"name": "s", "type": "string"},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B_b", "C9"]}},
        {"name": "a", "type": {"type": "array", "items": ["null", "long", "string"]}},
        {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "double"}}},
        {"name": "home", "type": ADDRESS},
        {"name": "work", "type": ["null", "x.y.Address"]},
        {"name": "_last9", "type": "string"},
    ],
}
