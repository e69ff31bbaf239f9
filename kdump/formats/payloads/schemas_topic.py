"""The `_schemas` topic: how Confluent's Schema Registry (and Karapace, which writes the same
records) keeps every subject, version, id and schema in Kafka, and what it holds read back.

Keys and values are JSON (the registry's `SchemaRegistryKey` / `SchemaRegistryValue` classes):

- `{"keytype":"SCHEMA","subject":S,"version":V,"magic":1}` -> `{"subject":S,"version":V,"id":N,
  "schemaType":"PROTOBUF","references":[{"name":..,"subject":..,"version":..}],"schema":TEXT,
  "deleted":false}` (`schemaType` absent for Avro; newer registries add `md5`, `metadata`,
  `ruleSet`). A soft delete writes the value again with `"deleted":true`; a hard delete (after the
  soft one) writes a tombstone (null value) for the key, which compaction later removes together
  with every earlier value of the key.
- `DELETE_SUBJECT` (`{"subject":S,"version":V}`): every version of S up to V is soft-deleted.
- `CLEAR_SUBJECT`: the subject's versions leave the registry's lookup cache.
- `CONFIG`, `MODE`, `NOOP`, `CONTEXT`, `ASSOC`: compatibility, mode and bookkeeping records.

The registry ignores a SCHEMA record whose id is already taken by a different schema ("Found a
schema with duplicate ID"); so does this reading. A schema's GUID (what header-carried ids name) is
its MD5 as the registry computes it (`MD5.ofSchema`): the stored `md5` when present, else the hash of
the schema text, its references, metadata and rule set.
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from kdump.errors import DecodeError

LIVE = "live"
SOFT_DELETED = "soft-deleted"
HARD_DELETED = "hard-deleted"
CLEARED = "cleared"
IGNORED = "ignored-duplicate-id"

SCHEMA_TYPES = ("AVRO", "PROTOBUF", "JSON")


@dataclass(frozen=True, slots=True)
class Reference:
    """A schema's reference to another: the name it is imported or used by, and where it lives."""

    name: str
    subject: str
    version: int


@dataclass(slots=True)
class SchemaVersion:
    """One subject version as `_schemas` last said it (and what became of it)."""

    subject: str
    version: int
    schema_id: int | None
    schema_type: str
    schema: str | None  # None: a tombstone whose earlier values compaction already removed
    references: tuple[Reference, ...]
    state: str
    offset: int  # the record that last changed it
    first_offset: int
    timestamp: int | None = None
    md5: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # metadata, ruleSet as stored

    @property
    def deleted(self) -> bool:
        """Whether the registry no longer serves it as live."""
        return self.state != LIVE

    def guid(self) -> str | None:
        """The GUID header-carried ids name (the registry's MD5 of the schema), or None."""
        if self.md5:
            try:
                return str(uuid.UUID(bytes=base64.b64decode(self.md5)))
            except ValueError:
                pass
        if self.schema is None:
            return None
        return schema_guid(
            self.schema, self.references, self.extra.get("metadata"), self.extra.get("ruleSet")
        )


def schema_guid(
    schema: str, references: tuple[Reference, ...] = (), metadata: Any = None, rule_set: Any = None
) -> str:
    """The registry's MD5 of a schema (`Schema.updateHash`), as a GUID string."""
    md = hashlib.md5(usedforsecurity=False)
    md.update(schema.encode("utf-8"))
    for r in references:
        md.update(r.name.encode("utf-8"))
        md.update(r.subject.encode("utf-8"))
        md.update(r.version.to_bytes(4, "big", signed=True))
    if isinstance(metadata, dict):
        md.update(b"\x01")
        for k in sorted(metadata.get("tags") or {}):
            md.update(k.encode())
            for v in sorted(metadata["tags"][k]):
                md.update(v.encode())
        for k, v in sorted((metadata.get("properties") or {}).items()):
            md.update(k.encode())
            md.update(str(v).encode())
        for s in sorted(metadata.get("sensitive") or []):
            md.update(s.encode())
    if isinstance(rule_set, dict):
        md.update(b"\x01")
        for kind in ("migrationRules", "domainRules", "encodingRules"):
            for rule in rule_set.get(kind) or []:
                for part in ("name", "doc", "kind", "mode", "type"):
                    if rule.get(part) is not None:
                        md.update(str(rule[part]).encode())
                for tag in rule.get("tags") or []:
                    md.update(tag.encode())
                for k, v in sorted((rule.get("params") or {}).items()):
                    md.update(k.encode())
                    md.update(str(v).encode())
                for part in ("expr", "onSuccess", "onFailure"):
                    if rule.get(part) is not None:
                        md.update(str(rule[part]).encode())
                if rule.get("disabled"):
                    md.update(b"\x01")
        if rule_set.get("enableAt") is not None:
            md.update(str(rule_set["enableAt"]).encode())
    return str(uuid.UUID(bytes=md.digest()))


def _json_object(data: bytes | None, what: str) -> dict[str, Any] | None:
    if data is None:
        return None
    try:
        obj = json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise DecodeError(f"the {what} is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise DecodeError(f"the {what} is JSON but not an object")
    return obj


def _int(obj: dict[str, Any], name: str, what: str) -> int:
    v = obj.get(name)
    if not isinstance(v, int) or isinstance(v, bool):
        raise DecodeError(f"the {what} has no integer {name!r}")
    return v


def _references(value: dict[str, Any]) -> tuple[Reference, ...]:
    refs = value.get("references") or []
    if not isinstance(refs, list):
        raise DecodeError("the value's references are not a list")
    out = []
    for r in refs:
        if (
            not isinstance(r, dict)
            or not isinstance(r.get("name"), str)
            or not isinstance(r.get("subject"), str)
        ):
            raise DecodeError(f"a reference without name and subject: {r!r}")
        out.append(Reference(r["name"], r["subject"], _int(r, "version", "reference")))
    return tuple(out)


@dataclass(slots=True)
class SchemasLog:
    """What a `_schemas` partition holds, read record by record in offset order (`apply`)."""

    versions: dict[tuple[str, int], SchemaVersion] = field(default_factory=dict)
    settings: list[dict[str, Any]] = field(default_factory=list)  # CONFIG/MODE/... records, in order
    records: int = 0

    def apply(
        self, offset: int, key: bytes | None, value: bytes | None, timestamp: int | None = None
    ) -> None:
        """Apply one record of the topic.

        Raises:
            DecodeError: a record the registry would not read (the caller reports it, then goes on).
        """
        self.records += 1
        k = _json_object(key, "key")
        if k is None:
            raise DecodeError("a record without a key")
        keytype = k.get("keytype")
        v = _json_object(value, "value")
        if keytype == "SCHEMA":
            subject = k.get("subject")
            if not isinstance(subject, str):
                raise DecodeError("a SCHEMA key without a subject")
            self._schema(offset, subject, _int(k, "version", "SCHEMA key"), v, timestamp)
        elif keytype == "DELETE_SUBJECT":
            if v is not None:
                self._delete_subject(
                    offset, str(v.get("subject", k.get("subject"))), _int(v, "version", "value")
                )
        elif keytype == "CLEAR_SUBJECT":
            if v is not None:
                self._clear_subject(offset, str(v.get("subject", k.get("subject"))))
        elif keytype in ("CONFIG", "MODE", "NOOP", "CONTEXT", "ASSOC"):
            self.settings.append({"offset": offset, "key": k, "value": v})
        else:
            raise DecodeError(f"unknown keytype {keytype!r}")

    def _schema(
        self, offset: int, subject: str, version: int, v: dict[str, Any] | None, timestamp: int | None
    ) -> None:
        old = self.versions.get((subject, version))
        if v is None:  # hard delete: the schema text stays readable until compaction removes it
            if old is None:
                self.versions[(subject, version)] = SchemaVersion(
                    subject, version, None, "AVRO", None, (), HARD_DELETED, offset, offset, timestamp
                )
            else:
                old.state, old.offset, old.timestamp = HARD_DELETED, offset, timestamp
            return
        schema = v.get("schema")
        if not isinstance(schema, str):
            raise DecodeError("a SCHEMA value without a schema text")
        schema_id = _int(v, "id", "SCHEMA value")
        schema_type = v.get("schemaType") or "AVRO"
        refs = _references(v)
        state = SOFT_DELETED if v.get("deleted") else LIVE
        taken = self.by_id(schema_id)
        if taken is not None and taken.schema is not None and taken.schema != schema and taken is not old:
            state = IGNORED  # the registry keeps the first schema of an id
        extra = {n: v[n] for n in ("metadata", "ruleSet") if v.get(n) is not None}
        self.versions[(subject, version)] = SchemaVersion(
            subject,
            version,
            schema_id,
            str(schema_type),
            schema,
            refs,
            state,
            offset,
            old.first_offset if old is not None else offset,
            timestamp,
            v.get("md5") if isinstance(v.get("md5"), str) else None,
            extra,
        )

    def _delete_subject(self, offset: int, subject: str, up_to: int) -> None:
        for (s, version), sv in self.versions.items():
            if s == subject and version <= up_to and sv.state == LIVE:
                sv.state, sv.offset = SOFT_DELETED, offset

    def _clear_subject(self, offset: int, subject: str) -> None:
        for (s, _), sv in self.versions.items():
            if s == subject and sv.state in (LIVE, SOFT_DELETED):
                sv.state, sv.offset = CLEARED, offset

    def by_id(self, schema_id: int) -> SchemaVersion | None:
        """A version registered with this id: a live one when there is one, else the latest known."""
        found = [sv for sv in self.versions.values() if sv.schema_id == schema_id and sv.state != IGNORED]
        if not found:
            return None
        live = [sv for sv in found if sv.state == LIVE]
        return live[-1] if live else max(found, key=lambda sv: sv.offset)

    def listing(self) -> list[SchemaVersion]:
        """Every version, by subject then version."""
        return [self.versions[k] for k in sorted(self.versions)]
