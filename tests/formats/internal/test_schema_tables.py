"""kdump's field tables are Kafka's message schemas: checked against the JSON the fetched Kafka jars ship.

Kafka describes every internal record in `common/message/*.json` (group, share and transaction
coordinators, the clients' KRaft control records) and `common/metadata/*.json` (kafka-metadata). The
tables in `kdump/formats/internal` are written by hand from those; this test reads the JSON out of the
jars of a fetched release at test time (nothing of Kafka is committed) and:

* for the newest release (4.4.0): every message is in kdump's tables and equal in everything that
  decides decoding and printing: valid and flexible versions, each field's JSON name, type, versions,
  nullable versions, tagged versions and tag, default, nested structs (and whether they are common
  structs); the record type (apiKey) of every coordinator and metadata message;
* for older releases (3.8.1 to 4.3.1, fetched like the newest): every message, including
  ones removed since, decodes with kdump's tables as that release reads it: at each of its versions the
  same fields in the same order with the same types and nullability, and its tags a subset of ours (tags
  added later are compatible); a message whose layout changed at the same version (share groups' early
  access) must match one of the early-access layouts kdump keeps.

Skipped with a reason where Java/Maven cannot fetch the release; failing in CI where they must.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from typing import Any

import pytest

from kdump.formats.internal import (
    consumer_offsets,
    control_records,
    metadata_tables,
    offsets_tables,
    share_group_state,
    share_streams_tables,
    transaction_log,
)
from kdump.formats.internal.schema import (
    MAX_VERSION,
    TYPE_DEFAULT,
    ArrayOf,
    Field,
    MessageType,
    Prim,
    StructType,
    Versions,
)

JARS = (
    "kafka-group-coordinator",
    "kafka-share-coordinator",
    "kafka-transaction-coordinator",
    "kafka-clients",
    "kafka-metadata",
    "kafka-raft",
    "kafka-server-common",
    "kafka_2.13",
)
NOT_INTERNAL_RECORDS = {
    "RequestHeader": "a request header, never in a log",
    "ResponseHeader": "a response header, never in a log",
    "DefaultPrincipalData": "a serialized principal in requests",
    "AbortedTxn": "a .txnindex entry (fixed layout, decoded with the indexes)",
    "QuorumStateData": "the quorum-state file, JSON on disk",
}
NEWEST = "4.4.0"
OLDER = ("3.8.1", "3.9.1", "4.0.0", "4.1.1", "4.2.0", "4.3.1")


# ----------------------------------------------------------------------------------------- kdump's tables


def _kdump_tables() -> dict[str, list[MessageType]]:
    """Message name -> kdump's tables for it, the current layout first, then early-access layouts."""
    tables: dict[str, list[MessageType]] = {}
    for module in (
        offsets_tables,
        share_streams_tables,
        share_group_state,
        transaction_log,
        metadata_tables,
        control_records,
    ):
        for value in vars(module).values():
            if isinstance(value, MessageType) and value not in tables.get(value.name, []):
                tables.setdefault(value.name, []).insert(0, value)
    for early in (share_streams_tables.EARLY_ACCESS_LAYOUTS, share_group_state.EARLY_ACCESS_LAYOUTS):
        for name, layouts in early.items():
            for _, layout in layouts:
                if layout not in tables[name]:
                    tables[name].append(layout)
    for name, found in tables.items():  # the current layout is the one the record-type maps name
        current = [m for m in found if m in _mapped()]
        if current:
            tables[name] = current + [m for m in found if m not in current]
    return tables


def _mapped() -> list[MessageType]:
    out: list[MessageType] = []
    for _, key, value in consumer_offsets.RECORD_TYPES.values():
        out += [key, value]
    for _, key, value in share_group_state.RECORD_TYPES.values():
        out += [key, value]
    out += [transaction_log.TRANSACTION_LOG_KEY, transaction_log.TRANSACTION_LOG_VALUE]
    out += [msg for _, msg in metadata_tables.METADATA_RECORD_TYPES.values()]
    return out


def _coordinator_types() -> dict[str, dict[int, tuple[str, str]]]:
    """Jar -> record type -> (key message, value message) as kdump maps them."""
    return {
        "kafka-group-coordinator": {
            n: (k.name, v.name) for n, (_, k, v) in consumer_offsets.RECORD_TYPES.items()
        },
        "kafka-share-coordinator": {
            n: (k.name, v.name) for n, (_, k, v) in share_group_state.RECORD_TYPES.items()
        },
        "kafka-transaction-coordinator": {
            0: (transaction_log.TRANSACTION_LOG_KEY.name, transaction_log.TRANSACTION_LOG_VALUE.name)
        },
    }


# ------------------------------------------------------------------------------------------ Kafka's JSON


def _release_schemas(version: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """Message name -> (jar, parsed JSON) of every message schema in the release's jars."""
    from brokers.fixtures import require_release

    lib = require_release(version).lib
    schemas: dict[str, tuple[str, dict[str, Any]]] = {}
    for jar_name in JARS:
        for jar in sorted(lib.glob(f"{jar_name}-{version}.jar")):
            with zipfile.ZipFile(jar) as zf:
                for member in zf.namelist():
                    if not re.fullmatch(r"common/(message|metadata)/\w+\.json", member):
                        continue
                    if member.endswith(("Request.json", "Response.json")):
                        continue
                    text = re.sub(r"^\s*//.*$", "", zf.read(member).decode("utf-8"), flags=re.M)
                    spec = json.loads(text)
                    if spec["name"] not in NOT_INTERNAL_RECORDS:
                        schemas.setdefault(spec["name"], (jar_name, spec))
    assert schemas, f"no message schemas found in Kafka {version}'s jars under {lib}"
    return schemas


def _versions(spec: str | None) -> Versions | None:
    return None if spec is None else Versions.parse(spec)


def _json_name(name: str) -> str:
    return name[0].lower() + name[1:]


_PRIMS = {p.value: p for p in Prim}


def _default(field: dict[str, Any]) -> Any:
    if "default" not in field:
        return TYPE_DEFAULT
    raw = field["default"]
    base = field["type"]
    if raw is None:  # JSON null is no default at all: the type's (an empty array or struct)
        return TYPE_DEFAULT
    if raw == "null":
        return None
    if base == "bool":
        return raw in (True, "true")
    if base in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return int(raw)
    if base == "float64":
        return float(raw)
    return raw


# ------------------------------------------------------------------------------------ exact comparison


def _compare_fields(
    ours: tuple[Field, ...], theirs: list[dict[str, Any]], commons: dict[str, Any], where: str
) -> Iterator[str]:
    names = [f.name for f in ours]
    wanted = [_json_name(f["name"]) for f in theirs]
    if names != wanted:
        yield f"{where}: fields {names} != Kafka's {wanted}"
        return
    for f, spec in zip(ours, theirs, strict=True):
        at = f"{where}/{f.name}"
        tagged = _versions(spec.get("taggedVersions"))
        vers = _versions(spec.get("versions")) or tagged
        nullable = _versions(spec.get("nullableVersions"))
        checks = [
            ("versions", f.versions, vers),
            ("nullableVersions", f.nullable, nullable or Versions.parse("none")),
            ("taggedVersions", f.tagged, tagged or Versions.parse("none")),
            ("tag", f.tag, spec.get("tag") if tagged is not None else None),
            ("default", f.default, _default(spec)),
        ]
        for what, mine, kafka in checks:
            if mine != kafka:
                yield f"{at}: {what} {mine!r} != Kafka's {kafka!r}"
        kafka_type: str = spec["type"]
        array = kafka_type.startswith("[]")
        element = kafka_type[2:] if array else kafka_type
        t: Any = f.type
        if array != isinstance(t, ArrayOf):
            yield f"{at}: type {t} != Kafka's {kafka_type}"
            continue
        if isinstance(t, ArrayOf):
            t = t.element
        if element in _PRIMS:
            if t is not _PRIMS[element]:
                yield f"{at}: type {t} != Kafka's {kafka_type}"
            continue
        if not isinstance(t, StructType) or t.name != element:
            yield f"{at}: type {getattr(t, 'name', t)} != Kafka's {kafka_type}"
            continue
        common = element in commons
        if t.common != common and common:
            yield f"{at}: struct {element} is one of Kafka's commonStructs"
        sub = commons[element]["fields"] if common else spec.get("fields", [])
        yield from _compare_fields(t.fields, sub, commons, at)


def _compare_message(ours: MessageType, spec: dict[str, Any]) -> Iterator[str]:
    name = spec["name"]
    if ours.valid != Versions.parse(spec["validVersions"]):
        yield f"{name}: validVersions {ours.valid} != Kafka's {spec['validVersions']}"
    if ours.flexible != Versions.parse(spec.get("flexibleVersions", "none")):
        yield f"{name}: flexibleVersions {ours.flexible} != Kafka's {spec.get('flexibleVersions')}"
    if spec.get("type") == "metadata" and ours.api_key != spec.get("apiKey"):
        yield f"{name}: apiKey {ours.api_key} != Kafka's {spec.get('apiKey')}"
    commons = {c["name"]: c for c in spec.get("commonStructs", [])}
    yield from _compare_fields(ours.struct.fields, spec.get("fields", []), commons, name)


def test_newest_release_schemas_equal_kdumps_tables() -> None:
    schemas = _release_schemas(NEWEST)
    tables = _kdump_tables()
    problems: list[str] = []
    for name, (jar, spec) in sorted(schemas.items()):
        if name not in tables:
            problems.append(f"{name} ({jar}): no kdump table")
            continue
        problems += _compare_message(tables[name][0], spec)
        kind = spec.get("type")
        if kind in ("coordinator-key", "coordinator-value"):
            mapped = _coordinator_types()[jar].get(spec["apiKey"])
            side = 0 if kind == "coordinator-key" else 1
            if mapped is None or mapped[side] != name:
                problems.append(f"{name}: record type {spec['apiKey']} maps to {mapped} in kdump")
    metadata_keys = {
        spec["apiKey"]: name for name, (_, spec) in schemas.items() if spec.get("type") == "metadata"
    }
    ours = {key: msg.name for key, (_, msg) in metadata_tables.METADATA_RECORD_TYPES.items()}
    if ours != metadata_keys:
        problems.append(f"metadata api keys differ: kdump {ours}, Kafka {metadata_keys}")
    assert not problems, "\n".join(problems)
    assert len(schemas) >= 80


# ------------------------------------------------------------------------------- older releases' bytes


def _layout(fields: list[dict[str, Any]], commons: dict[str, Any], v: int, flexible: bool) -> Any:
    """What a release reads at version `v`: the untagged fields in order and the tags, recursively."""
    untagged: list[Any] = []
    tags: dict[int, Any] = {}
    for f in fields:
        tagged = _versions(f.get("taggedVersions"))
        vers = _versions(f.get("versions")) or tagged
        assert vers is not None
        if v not in vers:
            continue
        kafka_type: str = f["type"]
        element = kafka_type.removeprefix("[]")
        if element in _PRIMS:
            shape: Any = element
        else:
            sub = commons[element]["fields"] if element in commons else f.get("fields", [])
            shape = _layout(sub, commons, v, flexible)
        nullable = _versions(f.get("nullableVersions"))
        entry = (
            _json_name(f["name"]),
            kafka_type.startswith("[]"),
            shape,
            nullable is not None and v in nullable,
        )
        if flexible and tagged is not None and v in tagged:
            tags[int(f["tag"])] = entry
        else:
            untagged.append(entry)
    return (tuple(untagged), tags)


def _our_layout(fields: tuple[Field, ...], v: int, flexible: bool) -> Any:
    untagged: list[Any] = []
    tags: dict[int, Any] = {}
    for f in fields:
        if v not in f.versions:
            continue
        t: Any = f.type
        array = isinstance(t, ArrayOf)
        element = t.element if isinstance(t, ArrayOf) else t
        shape = element.value if isinstance(element, Prim) else _our_layout(element.fields, v, flexible)
        entry = (f.name, array, shape, v in f.nullable)
        if flexible and v in f.tagged:
            assert f.tag is not None
            tags[f.tag] = entry
        else:
            untagged.append(entry)
    return (tuple(untagged), tags)


def _reads_like(ours: Any, theirs: Any) -> bool:
    """Same untagged fields; every tag of theirs read the same by ours (ours may know more tags)."""
    (our_fields, our_tags), (their_fields, their_tags) = ours, theirs
    if len(our_fields) != len(their_fields):
        return False
    for (n1, a1, s1, null1), (n2, a2, s2, null2) in zip(our_fields, their_fields, strict=True):
        if (n1, a1, null1) != (n2, a2, null2):
            return False
        if isinstance(s1, str) or isinstance(s2, str):
            if s1 != s2:
                return False
        elif not _reads_like(s1, s2):
            return False
    for tag, (n2, a2, s2, null2) in their_tags.items():
        if tag not in our_tags:
            return False
        n1, a1, s1, null1 = our_tags[tag]
        if (n1, a1, null1) != (n2, a2, null2) or (isinstance(s2, str) and s1 != s2):
            return False
    return True


def _decodes(ours: MessageType, spec: dict[str, Any]) -> bool:
    commons = {c["name"]: c for c in spec.get("commonStructs", [])}
    valid = Versions.parse(spec["validVersions"])
    flexible_versions = Versions.parse(spec.get("flexibleVersions", "none"))
    for v in range(valid.lo, min(valid.hi, 64) + 1):
        # kdump reads a key at version 0 and, like Kafka's generated readers, tests field versions
        # against its own valid range: a 3.x key read at its record type is the same bytes.
        cv = min(max(v, ours.valid.lo), ours.valid.hi) if v not in ours.valid else v
        theirs = _layout(spec.get("fields", []), commons, v, v in flexible_versions)
        mine = _our_layout(ours.struct.fields, cv, cv in ours.flexible)
        if not _reads_like(mine, theirs):
            return False
    return valid.hi == MAX_VERSION or True


@pytest.mark.parametrize("version", OLDER)
def test_older_release_records_decode_with_kdumps_tables(version: str) -> None:
    schemas = _release_schemas(version)
    tables = _kdump_tables()
    problems: list[str] = []
    for name, (jar, spec) in sorted(schemas.items()):
        if name not in tables:
            problems.append(f"{name} ({jar}): no kdump table")
        elif not any(_decodes(ours, spec) for ours in tables[name]):
            problems.append(f"{name} ({jar}): Kafka {version}'s bytes do not decode with kdump's tables")
    assert not problems, "\n".join(problems)


def test_the_check_fails_on_a_changed_table() -> None:
    """The comparison is not vacuous: one changed field, tag or default is reported."""
    spec = {
        "name": "OffsetCommitValue",
        "validVersions": "0-4",
        "flexibleVersions": "4+",
        "fields": [
            {"name": "offset", "type": "int64", "versions": "0+"},
            {"name": "leaderEpoch", "type": "int32", "versions": "3+", "default": -1},
            {"name": "metadata", "type": "string", "versions": "0+"},
            {"name": "commitTimestamp", "type": "int64", "versions": "0+"},
            {"name": "expireTimestamp", "type": "int64", "versions": "1", "default": -1},
            {"name": "topicId", "type": "uuid", "versions": "4+", "taggedVersions": "4+", "tag": 0},
        ],
    }
    assert list(_compare_message(offsets_tables.OFFSET_COMMIT_VALUE, spec)) == []
    assert _decodes(offsets_tables.OFFSET_COMMIT_VALUE, spec)
    spec["fields"][5]["tag"] = 1
    assert list(_compare_message(offsets_tables.OFFSET_COMMIT_VALUE, spec))
    assert not _decodes(offsets_tables.OFFSET_COMMIT_VALUE, spec)
    spec["fields"][5]["tag"] = 0
    spec["fields"][1]["default"] = -2
    assert list(_compare_message(offsets_tables.OFFSET_COMMIT_VALUE, spec))
    spec["fields"][1]["default"] = -1
    spec["fields"][0]["type"] = "int32"
    assert not _decodes(offsets_tables.OFFSET_COMMIT_VALUE, spec)


def test_early_access_layouts_are_only_tried_after_the_current_one() -> None:
    assert all(tables[0] in _mapped() for name, tables in _kdump_tables().items() if name in _mapped_names())


def _mapped_names() -> set[str]:
    return {m.name for m in _mapped()}
