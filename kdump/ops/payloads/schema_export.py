"""`kdump schemas`: every schema a `_schemas` partition holds, deleted ones marked, and the files a
lost registry is rebuilt from.

What the topic still holds is more than a registry serves: soft-deleted versions, and hard-deleted
ones whose tombstone compaction has not yet merged with the schema records before it (their text is
still in the log: recoverable). A hard-deleted version whose earlier records compaction removed is
listed without a schema.

`write_schemas` writes one file per version that has a schema text (`SUBJECT/vVERSION-idID.avsc`,
`.proto` or `.json`; the subject percent-encoded) and `manifest.json`: every version in id order,
which is the order a registry in IMPORT mode takes them back (`POST /subjects/{subject}/versions`
with the schema, its type, references, id and version), referenced schemas before their users.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from pathlib import Path
from typing import Any

from kdump.errors import PathError
from kdump.formats.payloads.schemas_topic import HARD_DELETED, SchemasLog, SchemaVersion

EXTENSIONS = {"AVRO": ".avsc", "PROTOBUF": ".proto", "JSON": ".json"}


def version_row(sv: SchemaVersion, file: str | None = None, *, with_schema: bool = False) -> dict[str, Any]:
    """One subject version as a JSON object (type `schema`); `file` is the `_schemas` partition."""
    row: dict[str, Any] = {
        "type": "schema",
        "file": file,
        "subject": sv.subject,
        "version": sv.version,
        "id": sv.schema_id,
        "schema_type": sv.schema_type,
        "state": sv.state,
        "deleted": sv.deleted,
        "recoverable": sv.schema is not None,
        "references": [{"name": r.name, "subject": r.subject, "version": r.version} for r in sv.references],
        "guid": sv.guid(),
        "offset": sv.offset,
        "first_offset": sv.first_offset,
        "timestamp": sv.timestamp,
    }
    if with_schema:
        row["schema"] = sv.schema
    return row


def summary_row(log: SchemasLog, file: str | None = None) -> dict[str, Any]:
    """Counts over the whole topic (type `schemas-summary`)."""
    versions = log.listing()
    states: dict[str, int] = {}
    for sv in versions:
        states[sv.state] = states.get(sv.state, 0) + 1
    return {
        "type": "schemas-summary",
        "file": file,
        "records": log.records,
        "subjects": len({sv.subject for sv in versions}),
        "versions": len(versions),
        "ids": len({sv.schema_id for sv in versions if sv.schema_id is not None}),
        "states": dict(sorted(states.items())),
        "hard_deleted_recoverable": sum(1 for sv in versions if sv.state == HARD_DELETED and sv.schema),
        "settings": len(log.settings),
    }


def file_name(sv: SchemaVersion) -> str:
    """Where a version's schema is written, relative to the output directory."""
    subject = urllib.parse.quote(sv.subject, safe="") or "%00"
    return f"{subject}/v{sv.version}-id{sv.schema_id}{EXTENSIONS.get(sv.schema_type, '.txt')}"


def write_schemas(log: SchemasLog, out: Path) -> list[str]:
    """Write every version's schema and `manifest.json` into `out`, a new (or empty) directory.

    Returns:
        The files written, relative to `out`.

    Raises:
        PathError: `out` exists and is not empty, or cannot be written.
    """
    try:
        out.mkdir(parents=True, exist_ok=True)
        if any(out.iterdir()):
            raise PathError(f"{out}: not empty; schemas are written into a new or empty directory")
        written: list[str] = []
        entries = []
        ordered = sorted(
            log.listing(), key=lambda sv: (sv.schema_id is None, sv.schema_id or 0, sv.subject, sv.version)
        )
        for sv in ordered:
            entry = version_row(sv)
            del entry["type"], entry["file"]
            if sv.schema is not None:
                name = file_name(sv)
                path = out / name
                path.parent.mkdir(exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(sv.schema)
                written.append(name)
                entry["file"] = name
                entry["import"] = {
                    "method": "POST",
                    "path": f"/subjects/{urllib.parse.quote(sv.subject, safe='')}/versions",
                    "body": {
                        "schema": sv.schema,
                        "schemaType": sv.schema_type,
                        "references": entry["references"],
                        "id": sv.schema_id,
                        "version": sv.version,
                    },
                }
            entries.append(entry)
        manifest = {"versions": entries, "settings": log.settings, "summary": summary_row(log)}
        fd = os.open(out / "manifest.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=2)
            f.write("\n")
        written.append("manifest.json")
    except OSError as exc:
        raise PathError(f"{out}: cannot write the schemas: {exc}") from None
    return written
