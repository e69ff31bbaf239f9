"""`--where` applied to a dump's events: a record is kept when the jq expression holds for the JSON
object `--format json` prints for it (whatever format is shown); a batch is shown when at least one
of its records is kept. Findings, tallies and summaries pass through."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from kdump.formats.batch import BatchHeader
from kdump.formats.records import Record
from kdump.ops.dump.files import FileStart
from kdump.ops.dump.internal import InternalRecord
from kdump.ops.dump.payload_events import PayloadRecord
from kdump.render import jsonl, rows


def record_json(ev: Any, batch: BatchHeader | None, file_json: str, encoding: str) -> str:
    """The JSON line `--format json` prints for a record event."""
    if type(ev) is PayloadRecord:
        return jsonl.payload_record_line(ev, batch, file_json, encoding)
    if type(ev) is InternalRecord:
        return json.dumps(rows.internal_record_row(ev, batch, str(json.loads(file_json)), encoding))
    return jsonl.record_line(ev, batch, file_json, encoding)


def filter_where(
    events: Iterable[Any], keep: Callable[[str], bool], encoding: str, file: str = ""
) -> Iterator[Any]:
    """The events with only the records `keep` accepts (and the batches holding them)."""
    file_json = json.dumps(file)
    pending: BatchHeader | None = None
    batch: BatchHeader | None = None
    for ev in events:
        if type(ev) in (Record, PayloadRecord, InternalRecord):
            if keep(record_json(ev, batch, file_json, encoding)):
                if pending is not None:
                    yield pending
                    pending = None
                yield ev
            continue
        if isinstance(ev, BatchHeader):
            batch = pending = ev
            continue
        if isinstance(ev, FileStart):
            file_json = json.dumps(ev.file)
        yield ev
