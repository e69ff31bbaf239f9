"""A read-only client of a Schema Registry's Confluent-compatible REST API.

Only GET requests, and only for schemas: `/schemas/ids/{id}`, `/schemas/guids/{guid}` and
`/subjects/{subject}/versions/{version}`. Credentials come from the environment, never from the
command line (where they would show in `ps` and shell history):
`KDUMP_REGISTRY_USER` and `KDUMP_REGISTRY_PASSWORD` (HTTP basic), or `KDUMP_REGISTRY_TOKEN`
(a bearer token).
"""

from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from kdump.errors import PathError

USER_ENV = "KDUMP_REGISTRY_USER"
PASSWORD_ENV = "KDUMP_REGISTRY_PASSWORD"
TOKEN_ENV = "KDUMP_REGISTRY_TOKEN"
TIMEOUT_S = 15.0


class RegistryClient:
    """GETs against one registry base URL (e.g. `http://host:8081` or Apicurio's
    `http://host:8080/apis/ccompat/v7`)."""

    def __init__(self, url: str, environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self.url = url.rstrip("/")
        self.headers = {"Accept": "application/vnd.schemaregistry.v1+json, application/json"}
        token = env.get(TOKEN_ENV)
        user = env.get(USER_ENV)
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        elif user:
            pair = f"{user}:{env.get(PASSWORD_ENV, '')}".encode()
            self.headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        self.requests = 0

    def get(self, path: str) -> dict[str, Any] | None:
        """The JSON object at `path`, or None when the registry answers 404 (no such schema) or
        with something else than an object."""
        obj = self.get_json(path)
        return obj if isinstance(obj, dict) else None

    def get_json(self, path: str) -> Any:
        """The JSON at `path`, or None when the registry answers 404.

        Raises:
            PathError: the registry cannot be reached or answers with another error.
        """
        self.requests += 1
        request = urllib.request.Request(self.url + path, headers=self.headers, method="GET")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise PathError(f"schema registry {self.url}: GET {path}: HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise PathError(f"schema registry {self.url}: cannot reach it: {exc}") from None
        try:
            obj = json.loads(body)
        except ValueError:
            raise PathError(f"schema registry {self.url}: GET {path}: the answer is not JSON") from None
        return obj

    def schema_by_id(self, schema_id: int) -> dict[str, Any] | None:
        """`{"schema", "schemaType", "references"}` of an id (soft-deleted ones too, as the
        registry serves them to deserializers)."""
        return self.get(f"/schemas/ids/{schema_id}")

    def schema_by_guid(self, guid: str) -> dict[str, Any] | None:
        """The schema a GUID names (registries that keep GUIDs)."""
        return self.get(f"/schemas/guids/{urllib.parse.quote(guid, safe='')}")

    def subject_version(self, subject: str, version: int | str) -> dict[str, Any] | None:
        """One version of a subject, soft-deleted ones included."""
        return self.get(f"/subjects/{urllib.parse.quote(subject, safe='')}/versions/{version}?deleted=true")

    def all_versions(self) -> list[dict[str, Any]]:
        """Every version of every subject, soft-deleted ones included (for a registry that cannot
        look a GUID up: the GUIDs are then computed from the schemas)."""
        out = []
        for subject in self.get_json("/subjects?deleted=true") or []:
            quoted = urllib.parse.quote(str(subject), safe="")
            for version in self.get_json(f"/subjects/{quoted}/versions?deleted=true") or []:
                got = self.subject_version(str(subject), version)
                if got is not None:
                    out.append(got)
        return out
