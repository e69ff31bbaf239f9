"""The events that open and describe non-log files in a dump stream.

What a file *is* (its kind by name) is decided in one place, `kdump.model.entries`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CONTEXT = "context"
"""`FileStart.kind` of the file context a renderer is given to render a chunk of a file already opened
(the renderer prints its name only: the header lines came with the file's own `FileStart`)."""


@dataclass(frozen=True, slots=True)
class FileStart:
    """A file begins: every dump stream opens each file with one."""

    file: str
    kind: str
    size: int
    base_offset: int | None


@dataclass(frozen=True, slots=True)
class Entry:
    """One decoded entry of a non-log file (index entry, aborted txn, producer state, checkpoint line).

    `kind` names the row type in JSON (`index-entry`, `time-index-entry`, `aborted-txn`,
    `producer-state`, `epoch-entry`, `checkpoint-entry`, `property`, `state`).
    """

    file: str
    kind: str
    fields: dict[str, Any]
