"""Record-level dumps on every core, still streaming and still in order.

The main process runs the cheap batch-level scan and cuts its events into chunks of about
`CHUNK_BYTES` of log; worker processes decode the records of a chunk and render it to bytes;
the main process writes the chunks in order. At most two chunks per worker are in flight, so
memory stays bounded whatever the segment size. The summary's record and finding counts are
corrected with what the workers decoded, so the output is the same as the sequential path's.
"""

from __future__ import annotations

import dataclasses
import io
import os
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import IO, Any

from kdump.findings import Finding, Severity
from kdump.formats.batch import BatchHeader
from kdump.formats.records import Record
from kdump.ops.dump import DumpEvent, DumpOptions, expand_batches
from kdump.ops.files import FileStart
from kdump.ops.internal import InternalRecord
from kdump.ops.workers import worker_pool
from kdump.scan.events import ScanSummary

CHUNK_BYTES = 1 << 20


def _render(events: Iterable[Any], fmt: str, encoding: str) -> str:
    out = io.StringIO()
    if fmt == "json":
        from kdump.render.jsonl import write_jsonl

        write_jsonl(events, out, encoding=encoding)
    else:
        from kdump.render.text import write_text

        write_text(events, out, encoding=encoding)
    return out.getvalue()


def _work(
    args: tuple[str, str, list[DumpEvent], DumpOptions, str, str, str | None],
) -> tuple[bytes, int, dict[int, int]]:
    path, label, events, options, fmt, encoding, decoder = args
    expanded = expand_batches(Path(path), events, options, label, decoder)
    records = sum(1 for e in expanded if type(e) is Record or type(e) is InternalRecord)
    # Findings of decoding records are new; the batch-level ones were counted by the main scan.
    counts: dict[int, int] = {}
    for e in expanded:
        if isinstance(e, Finding):
            counts[e.severity] = counts.get(e.severity, 0) + 1
    for e in events:
        if isinstance(e, Finding):
            counts[e.severity] -= 1
    # A chunk renders as if its file had just started: give the renderer the file context.
    context = [FileStart(label, "log", 0, None)]
    text = _render([*context, *expanded], fmt, encoding)
    first_newline = text.find("\n")
    # Drop the context's own line (the real FileStart line is rendered by the main process).
    if fmt == "json":
        text = text[first_newline + 1 :]
    else:
        text = _strip_file_header(text)
    return text.encode("utf-8"), records, counts


def _strip_file_header(text: str) -> str:
    # Text output opens a file with "Dumping <file>" (and no "Log starting offset" for base None).
    return text.split("\n", 1)[1] if "\n" in text else ""


def write_parallel(
    logs: Iterable[tuple[Path, str, Iterator[DumpEvent], str | None]],
    out: IO[str],
    *,
    options: DumpOptions,
    fmt: str,
    encoding: str,
    jobs: int,
) -> None:
    """Render shallow dump streams with their records decoded by `jobs` worker processes.

    Args:
        logs: for each file, its path, its label, its shallow event stream (records=False) and
            the internal-topic decoder for its records (or None).
    """
    sink = getattr(out, "buffer", None)
    # A closed pipe or Ctrl-C terminates the workers instead of waiting for their queued chunks.
    with worker_pool(jobs) as pool:
        for path, label, events, decoder in logs:
            _write_log(pool, out, sink, path, label, events, options, fmt, encoding, jobs, decoder)
    out.flush()


class _Tally:
    """Records and finding severities the workers decoded for one log."""

    def __init__(self) -> None:
        self.records = 0
        self.extra: dict[int, int] = {}

    def drain(
        self, pending: deque[Future[tuple[bytes, int, dict[int, int]]]], limit: int, write: Any
    ) -> None:
        while len(pending) > limit:
            data, n, counts = pending.popleft().result()
            self.records += n
            for sev, c in counts.items():
                self.extra[sev] = self.extra.get(sev, 0) + c
            write(data)


def _write_log(
    pool: ProcessPoolExecutor,
    out: IO[str],
    sink: Any,
    path: Path,
    label: str,
    events: Iterator[DumpEvent],
    options: DumpOptions,
    fmt: str,
    encoding: str,
    jobs: int,
    decoder: str | None,
) -> None:
    pending: deque[Future[tuple[bytes, int, dict[int, int]]]] = deque()
    tally = _Tally()

    def write(data: bytes) -> None:
        _write(out, sink, data)

    def submit(chunk: list[DumpEvent]) -> None:
        pending.append(pool.submit(_work, (str(path), label, chunk, options, fmt, encoding, decoder)))

    chunk: list[DumpEvent] = []
    chunk_bytes = 0
    for ev in events:
        if isinstance(ev, ScanSummary):
            if chunk:
                submit(chunk)
                chunk = []
            tally.drain(pending, 0, write)
            extra = tally.extra
            summary = dataclasses.replace(
                ev,
                record_count=tally.records,
                deep=True,
                findings_info=ev.findings_info + extra.get(Severity.INFO, 0),
                findings_warning=ev.findings_warning + extra.get(Severity.WARNING, 0),
                findings_error=ev.findings_error + extra.get(Severity.ERROR, 0),
            )
            write(_render_single(summary, label, fmt, encoding))
            continue
        if isinstance(ev, FileStart):
            tally.drain(pending, 0, write)
            write(_render([ev], fmt, encoding).encode("utf-8"))
            continue
        chunk.append(ev)
        if isinstance(ev, BatchHeader):
            chunk_bytes += ev.size
        if chunk_bytes >= CHUNK_BYTES:
            submit(chunk)
            chunk, chunk_bytes = [], 0
            tally.drain(pending, 2 * jobs, write)
    if chunk:
        submit(chunk)
    tally.drain(pending, 0, write)


def _render_single(ev: DumpEvent, label: str, fmt: str, encoding: str) -> bytes:
    text = _render([FileStart(label, "log", 0, None), ev], fmt, encoding)
    return (text.split("\n", 1)[1] if fmt == "json" else _strip_file_header(text)).encode("utf-8")


def _write(out: IO[str], sink: Any, data: bytes) -> None:
    if sink is not None:
        out.flush()
        sink.write(data)
    else:
        out.write(data.decode("utf-8"))


def default_jobs() -> int:
    """All cores."""
    return os.cpu_count() or 1
