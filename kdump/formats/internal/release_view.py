"""What an older Kafka release's tool prints of a record a newer release wrote.

Kafka's generated readers skip a tagged field whose tag they do not know, and its JSON converters then
print nothing of it; a record version newer than a release knows is read as its newest known one, or
refused (`metadata_tables`, `cluster_metadata`). The tables record where each began (`Field.since`,
`MessageType.since`); this module applies them to a payload's JSON.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from kdump.formats.internal.releases import KafkaRelease
from kdump.formats.internal.schema import ArrayOf, Field, MessageType, StructType, Versions, kafka_json

_NEWER_FIELDS: dict[str, bool] = {}


def has_newer_fields(msg: MessageType) -> bool:
    """Whether some field of the message, at any depth, was added after Kafka 3.8."""
    found = _NEWER_FIELDS.get(msg.name)
    if found is None:
        found = _NEWER_FIELDS[msg.name] = _any_since(msg.struct, set())
    return found


def _any_since(st: StructType, seen: set[str]) -> bool:
    if st.name in seen:
        return False
    seen.add(st.name)
    for f in st.fields:
        if f.since is not None:
            return True
        sub = _struct_of(f)
        if sub is not None and _any_since(sub, seen):
            return True
    return False


def _struct_of(f: Field) -> StructType | None:
    t = f.type.element if isinstance(f.type, ArrayOf) else f.type
    return t if isinstance(t, StructType) else None


def version_since(msg: MessageType, version: int) -> KafkaRelease | None:
    """The release that added this version of the message (None: 3.8 or earlier)."""
    for v, release in msg.since:
        if v == version:
            return release
    return None


def payload_known_to(payload: str, msg: MessageType, release: KafkaRelease) -> str:
    """`payload` (`{..., "data": {...}}`, Kafka's JSON of a record) without the tagged fields `release`
    does not know. Unchanged (the same string) when it holds none."""
    try:
        view = json.loads(payload)
    except ValueError:
        return payload
    data = view.get("data") if isinstance(view, dict) else None
    if not isinstance(data, dict) or not _strip(data, msg.struct, release):
        return payload
    return kafka_json(view)


def _strip(data: dict[str, Any], st: StructType, release: KafkaRelease) -> bool:
    """Drop from `data` (a struct's JSON) the fields `release` does not know; whether any was there.
    A field the record's version does not have is not in `data`: only the names are needed."""
    changed = False
    for f in st.fields:
        if f.name not in data:
            continue
        if f.since is not None and release < f.since:
            del data[f.name]
            changed = True
            continue
        sub = _struct_of(f)
        if sub is None:
            continue
        value = data[f.name]
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict):
                changed = _strip(item, sub, release) or changed
    return changed


def message_known_to(msg: MessageType, release: KafkaRelease, newest_version: int) -> MessageType:
    """The message as `release`'s generated code has it: versions up to `newest_version`, and no field
    added after `release` (their tags are unknown to it, skipped when read)."""
    return replace(
        msg, valid=Versions(msg.valid.lo, newest_version), struct=_struct_known_to(msg.struct, release)
    )


def _struct_known_to(st: StructType, release: KafkaRelease) -> StructType:
    fields: list[Field] = []
    for f in st.fields:
        if f.since is not None and release < f.since:
            continue
        sub = _struct_of(f)
        if sub is not None:
            known = _struct_known_to(sub, release)
            f = replace(f, type=ArrayOf(known) if isinstance(f.type, ArrayOf) else known)
        fields.append(f)
    return replace(st, fields=tuple(fields))
