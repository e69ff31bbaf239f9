"""Where schemas come from: `_schemas` partitions read offline, local schema files, and a registry
URL, asked in that order unless told otherwise; and the decoders built from them.

A schema is found by id, by GUID (header-carried ids; for `_schemas` and files the GUID is computed
as the registry computes it) or by subject and version (references). Each source is asked only for
what the ones before it did not have; the registry only when a record needs a schema the files do not
hold. Every answer, found or not, is kept for the run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kdump.errors import DecodeError, PathError
from kdump.findings import Finding, make_finding
from kdump.formats.batch import BatchHeader
from kdump.formats.payloads.schemas_topic import LIVE, Reference, SchemasLog, SchemaVersion, schema_guid
from kdump.formats.payloads.wire import SchemaRef
from kdump.formats.records import Record
from kdump.ops.dump.payload_events import SOURCES
from kdump.ops.payloads.registry_client import RegistryClient

SCHEMAS_TOPIC = "_schemas"
_FILE_TYPES = {".avsc": "AVRO", ".proto": "PROTOBUF", ".json": "JSON"}


@dataclass(frozen=True, slots=True)
class SchemaEntry:
    """One schema, wherever it was found."""

    schema_id: int | None
    schema_type: str  # AVRO, PROTOBUF or JSON
    schema: str
    references: tuple[Reference, ...]
    source: str  # "_schemas", "file" or "registry"
    subject: str | None = None
    version: int | None = None
    state: str = LIVE  # or soft-deleted, hard-deleted, cleared (see schemas_topic)
    path: str | None = None  # a local file's path (its directory resolves .proto imports)

    @property
    def deleted(self) -> bool:
        """Whether the registry no longer serves it as live."""
        return self.state != LIVE


def _entry_of(sv: SchemaVersion) -> SchemaEntry | None:
    if sv.schema is None:
        return None
    return SchemaEntry(
        sv.schema_id, sv.schema_type, sv.schema, sv.references, "_schemas", sv.subject, sv.version, sv.state
    )


def read_schemas_log(paths: Iterable[Path]) -> tuple[SchemasLog, list[Finding]]:
    """Every record of these `_schemas` partitions (or segments), applied in offset order, and
    the findings of reading them: damage, and records the registry would not read."""
    from kdump.model.log_dir import discover
    from kdump.ops.dump.stream import DumpOptions, dump_targets

    log = SchemasLog()
    findings: list[Finding] = []
    for path in paths:
        target = discover(str(path))
        batch: BatchHeader | None = None
        for ev in dump_targets([target], DumpOptions(records=True, decode="none")):
            if isinstance(ev, BatchHeader):
                batch = ev
            elif isinstance(ev, Finding):
                findings.append(ev)
            elif isinstance(ev, Record) and batch is not None and not batch.is_control:
                try:
                    log.apply(ev.offset, ev.key, ev.value, ev.timestamp)
                except DecodeError as exc:
                    findings.append(
                        make_finding(
                            "schemas-record-invalid",
                            str(path),
                            f"_schemas record at offset {ev.offset} is not one the registry reads: {exc}",
                            position=batch.position,
                            offset=ev.offset,
                        )
                    )
    return log, findings


def schemas_partitions(paths: Iterable[Path]) -> list[Path]:
    """The `_schemas` partitions named by these paths: the `_schemas` partition directories in a log
    dir (or a directory of log dirs), or a partition directory or segment given itself (whatever its
    name: the registry's topic is configurable)."""
    from kdump.model.log_dir import discover

    found: list[Path] = []
    for path in paths:
        target = discover(str(path))
        named = [p.path for p in target.partitions() if p.topic == SCHEMAS_TOPIC]
        chosen = named or ([path] if target.kind in ("partition", "file") else [])
        found += [p for p in chosen if p not in found]
    return found


def sibling_schemas(paths: Iterable[Path]) -> list[Path]:
    """The `_schemas` partitions of the log dirs these dumped paths are or lie in."""
    from kdump.model.log_dir import discover

    found: list[Path] = []
    for path in paths:
        try:
            target = discover(str(path))
            if target.kind in ("partition", "file"):
                parent = path.parent if target.kind == "partition" else path.parent.parent
                target = discover(str(target.log_dir_path or parent))
        except PathError:
            continue
        found += [p.path for p in target.partitions() if p.topic == SCHEMAS_TOPIC and p.path not in found]
    return found


@dataclass(slots=True)
class SchemaCatalog:
    """Schemas by id, GUID and subject version, from the sources in `order`."""

    log: SchemasLog | None = None
    files: dict[str, SchemaEntry] = field(default_factory=dict)  # by "id:N" or "subject:S"
    registry: RegistryClient | None = None
    order: tuple[str, ...] = SOURCES
    findings: list[Finding] = field(default_factory=list)  # from reading _schemas
    _by_ref: dict[SchemaRef, SchemaEntry | None] = field(default_factory=dict)
    _guids: dict[str, SchemaEntry] | None = None
    _registry_guids: dict[str, SchemaEntry] | None = None

    def find(self, ref: SchemaRef) -> SchemaEntry | None:
        """The schema an id or GUID names, or None when no source has it."""
        if ref in self._by_ref:
            return self._by_ref[ref]
        found = None
        for source in self.order:
            found = self._from(source, ref)
            if found is not None:
                break
        self._by_ref[ref] = found
        return found

    def _from(self, source: str, ref: SchemaRef) -> SchemaEntry | None:
        if source == "registry":
            return self._from_registry(ref)
        if ref.guid is not None:
            return self._local_guids(source).get(ref.guid)
        assert ref.schema_id is not None
        if source == "topic":
            sv = self.log.by_id(ref.schema_id) if self.log is not None else None
            return _entry_of(sv) if sv is not None else None
        return self.files.get(f"id:{ref.schema_id}")

    def _local_guids(self, source: str) -> dict[str, SchemaEntry]:
        if self._guids is None:
            self._guids = {}
            for entry in self._local_entries():
                guid = schema_guid(entry.schema, entry.references)
                self._guids.setdefault(f"{entry.source}:{guid}", entry)
            if self.log is not None:
                for sv in self.log.versions.values():
                    found = sv.guid()
                    e = _entry_of(sv)
                    if found is not None and e is not None:
                        self._guids.setdefault(f"_schemas:{found}", e)
        prefix = "_schemas:" if source == "topic" else "file:"
        return {k[len(prefix) :]: v for k, v in self._guids.items() if k.startswith(prefix)}

    def _local_entries(self) -> Iterator[SchemaEntry]:
        yield from self.files.values()

    def _from_registry(self, ref: SchemaRef) -> SchemaEntry | None:
        if self.registry is None:
            return None
        if ref.schema_id is not None:
            got = self.registry.schema_by_id(ref.schema_id)
            return _registry_entry(got, ref.schema_id) if got is not None else None
        assert ref.guid is not None
        got = self.registry.schema_by_guid(ref.guid)
        if got is not None:
            return _registry_entry(got, got.get("id"))
        if self._registry_guids is None:
            # A registry without GUIDs (Apicurio's Confluent API): compute them as Confluent's does.
            self._registry_guids = {}
            for version in self.registry.all_versions():
                entry = _registry_entry(version, version.get("id"))
                if entry is not None:
                    self._registry_guids.setdefault(schema_guid(entry.schema, entry.references), entry)
        return self._registry_guids.get(ref.guid)

    def subject_version(self, subject: str, version: int) -> SchemaEntry | None:
        """A referenced schema: that subject's version (latest for a local file of the subject)."""
        for source in self.order:
            if source == "topic" and self.log is not None:
                sv = self.log.versions.get((subject, version))
                if sv is not None and sv.schema is not None:
                    return _entry_of(sv)
            elif source == "files" and f"subject:{subject}" in self.files:
                return self.files[f"subject:{subject}"]
            elif source == "registry" and self.registry is not None:
                got = self.registry.subject_version(subject, version)
                if got is not None:
                    return _registry_entry(got, got.get("id"))
        return None

    def references_of(self, entry: SchemaEntry) -> list[tuple[Reference, SchemaEntry]]:
        """Every schema `entry` references, directly or not, dependencies first.

        Raises:
            DecodeError: a reference no source resolves, or a cycle.
        """
        out: list[tuple[Reference, SchemaEntry]] = []
        seen: set[tuple[str, int]] = set()

        def visit(e: SchemaEntry, trail: tuple[tuple[str, int], ...]) -> None:
            for r in e.references:
                key = (r.subject, r.version)
                if key in trail:
                    raise DecodeError(f"reference cycle through {r.subject} version {r.version}")
                if key in seen:
                    continue
                dep = self.subject_version(r.subject, r.version)
                if dep is None:
                    raise DecodeError(
                        f"reference {r.name!r} ({r.subject} version {r.version}) is in no source"
                    )
                visit(dep, (*trail, key))
                seen.add(key)
                out.append((r, dep))

        visit(entry, ())
        return out


def _registry_entry(got: dict[str, Any], schema_id: Any) -> SchemaEntry | None:
    schema = got.get("schema")
    if not isinstance(schema, str):
        return None
    refs = tuple(
        Reference(str(r.get("name")), str(r.get("subject")), int(r.get("version", 0)))
        for r in got.get("references") or []
        if isinstance(r, dict)
    )
    state = "soft-deleted" if got.get("deleted") else LIVE
    return SchemaEntry(
        schema_id if isinstance(schema_id, int) else None,
        str(got.get("schemaType") or "AVRO"),
        schema,
        refs,
        "registry",
        got.get("subject") if isinstance(got.get("subject"), str) else None,
        got.get("version") if isinstance(got.get("version"), int) else None,
        state,
    )


def file_entry(name: str, path: Path) -> tuple[str, SchemaEntry]:
    """A local schema file given as `ID=PATH` or `SUBJECT=PATH`: its catalog key and entry.

    Raises:
        PathError: the file cannot be read, or its type is not known by its extension.
    """
    kind = _FILE_TYPES.get(path.suffix.lower())
    if kind is None:
        raise PathError(f"{path}: a schema file is .avsc (Avro), .proto (Protobuf) or .json (JSON Schema)")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PathError(f"{path}: cannot read the schema file: {exc}") from None
    if name.isdigit():
        return f"id:{int(name)}", SchemaEntry(int(name), kind, text, (), "file", path=str(path))
    return f"subject:{name}", SchemaEntry(None, kind, text, (), "file", subject=name, path=str(path))


def build_catalog(
    schemas: Iterable[Path],
    files: Iterable[tuple[str, Path]],
    registry: str | None,
    order: tuple[str, ...] = SOURCES,
    client: Callable[[str], RegistryClient] = RegistryClient,
) -> SchemaCatalog:
    """A catalog of the given `_schemas` partitions, local files and registry URL.

    Raises:
        PathError: a path cannot be read (a damaged `_schemas` is read as far as it goes: its
            findings are in `findings`).
    """
    catalog = SchemaCatalog(order=order)
    paths = list(schemas)
    if paths:
        catalog.log, catalog.findings = read_schemas_log(paths)
    for name, path in files:
        key, entry = file_entry(name, path)
        catalog.files[key] = entry
    if registry:
        catalog.registry = client(registry)
    return catalog
