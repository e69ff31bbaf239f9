"""Record-level dumps on every core, still streaming and still in order.

The main process runs the cheap batch-level scan and cuts its events into chunks of about
`CHUNK_BYTES` of log; worker processes decode the records of a chunk and render it to bytes;
the main process writes the chunks in order. At most two chunks per worker are in flight, so
memory stays bounded whatever the segment size. The summary's record and finding counts are
corrected with what the workers decoded, so the output is the same as the sequential path's.

With one job the chunks are rendered in the main process, the same way. A clean batch's records go
through the compiled record path (`render.fast_lines`) when it is on; any other batch, and every
batch when a filter or an internal-topic decoder is in play, the reference way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import multiprocessing
import os
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import IO, Any

from kdump.findings import Finding, Severity
from kdump.formats.batch import BatchHeader
from kdump.formats.records import Record
from kdump.ops.common.workers import process_pools_work, worker_pool
from kdump.ops.dump.files import CONTEXT, FileStart
from kdump.ops.dump.internal import InternalRecord
from kdump.ops.dump.payload_events import PayloadTally
from kdump.ops.dump.stream import (
    UNCHECKED,
    DumpEvent,
    DumpOptions,
    batches_span,
    count_finding,
    decode_expanded,
    expand_batches,
)
from kdump.render import fast_lines
from kdump.scan.events import ScanSummary
from kdump.scan.source import open_buffer
from kdump.store.queries import as_path

CHUNK_BYTES = 1 << 20


def _render(events: Iterable[Any], fmt: str, encoding: str) -> str:
    out = io.StringIO()
    if fmt in TTY_FORMATS:
        from kdump.render.text import write_text

        write_text(events, out, encoding=encoding)
        return _tty(out.getvalue().encode("utf-8"), fmt).decode("utf-8")
    if fmt == "json":
        from kdump.render.jsonl import write_jsonl

        write_jsonl(events, out, encoding=encoding)
    else:
        from kdump.render.text import write_text

        write_text(events, out, encoding=encoding)
    return out.getvalue()


WorkArgs = tuple[str, str, list[DumpEvent], DumpOptions, str, str, str | None]
# A chunk's bytes, its records, its new findings by severity, and its keys' and values' tally.
WorkResult = tuple[bytes, int, dict[int, int], PayloadTally | None]


# Text lines as shown at a terminal (`render.tty_lines`): whole values, or lines cut with a mark.
TTY_FORMATS = ("tty", "tty-full")


def _tty(data: bytes, fmt: str) -> bytes:
    from kdump.render.tty_lines import colour_enabled, tty_bytes

    return tty_bytes(data, full=fmt == "tty-full", colour=colour_enabled())


def _work(args: WorkArgs) -> WorkResult:
    path, label, events, options, fmt, encoding, decoder = args
    if fmt in TTY_FORMATS:
        data, records, counts, tally = _work((path, label, events, options, "text", encoding, decoder))
        return _tty(data, fmt), records, counts, tally
    payloads = options.payloads
    if payloads is not None and decoder is None and (payloads.decoding or payloads.where):
        from kdump.render.payload_lines import work_payloads

        return work_payloads(args)
    if fast_lines.enabled() and decoder is None and not options.filter.active:
        return _work_fast(args)
    return _work_reference(args)


def _work_fast(args: WorkArgs) -> WorkResult:
    """A chunk with every clean batch rendered by the compiled path, the others as the reference does."""
    path, label, events, _options, fmt, encoding, _decoder = args
    renderer = fast_lines.LineRenderer(json.dumps(label), fmt, encoding)
    parts: list[bytes] = []
    pending: list[DumpEvent] = []
    records = 0
    counts: dict[int, int] = {}

    def flush() -> None:
        if pending:
            parts.append(_render_context(pending, label, fmt, encoding))
            pending.clear()

    with open_buffer(as_path(path), span=batches_span(events)) as buf:
        for ev in events:
            if not isinstance(ev, BatchHeader):
                pending.append(ev)  # a finding of the batch-level scan, counted there
                continue
            # Findings of the batch-level scan before this batch are rendered first (the reference way).
            target = parts if not pending else []
            if renderer.render_into(buf, ev, target):
                if target is not parts:
                    flush()
                    parts.extend(target)
                records += ev.count or 0
                continue
            decoded, findings = decode_expanded(buf, ev, label)
            for f in findings:
                count_finding(counts, f)
            records += len(decoded)
            pending.append(ev)
            pending.extend(findings)
            pending.extend(decoded)
    flush()
    return b"".join(parts), records, counts, None


def _render_context(events: list[DumpEvent], label: str, fmt: str, encoding: str) -> bytes:
    """Events of one file rendered as if the file had just started, without the file's own line."""
    text = _render([FileStart(label, CONTEXT, 0, None), *events], fmt, encoding)
    if fmt == "json":
        text = text[text.find("\n") + 1 :]
    else:
        text = _strip_file_header(text)
    return text.encode("utf-8")


def _work_reference(args: WorkArgs) -> WorkResult:
    path, label, events, options, fmt, encoding, decoder = args
    expanded = expand_batches(as_path(path), events, options, label, decoder)
    records = sum(1 for e in expanded if type(e) is Record or type(e) is InternalRecord)
    # Findings of decoding records are new; the batch-level ones were counted by the main scan.
    counts: dict[int, int] = {}
    for e in expanded:
        if isinstance(e, Finding):
            count_finding(counts, e)
    for e in events:
        if isinstance(e, Finding):
            count_finding(counts, e, -1)
    # A chunk renders as if its file had just started: give the renderer the file context.
    context = [FileStart(label, CONTEXT, 0, None)]
    text = _render([*context, *expanded], fmt, encoding)
    first_newline = text.find("\n")
    # Drop the context's own line (the real FileStart line is rendered by the main process).
    if fmt == "json":
        text = text[first_newline + 1 :]
    else:
        text = _strip_file_header(text)
    return text.encode("utf-8"), records, counts, None


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
) -> int:
    """Render shallow dump streams with their records decoded by `jobs` worker processes; how many
    batches were left undecompressed because their codec's library is missing here (0: none).

    Args:
        logs: for each file, its path, its label, its shallow event stream (records=False) and
            the internal-topic decoder for its records (or None).
    """
    sink = getattr(out, "buffer", None)
    turns: _Turns | None = None
    pool_context: contextlib.AbstractContextManager[Executor]
    if jobs > 1 and not process_pools_work():
        jobs = 1  # no /dev/shm: the same output, rendered in this process
    if jobs <= 1:
        pool_context = _InlineExecutor()
    else:
        fd = _file_descriptor(out) if sink is not None else None
        if fd is not None:
            turns = _Turns(multiprocessing.get_context("fork"), fd)
        # A closed pipe or Ctrl-C terminates the workers instead of waiting for their queued chunks.
        pool_context = worker_pool(jobs, initializer=_start_worker, initargs=(turns,))
    unchecked = 0
    with pool_context as pool:
        for path, label, events, decoder in logs:
            unchecked += _write_log(
                pool, out, sink, path, label, events, options, fmt, encoding, jobs, decoder, turns
            )
    out.flush()
    return unchecked


def _file_descriptor(out: IO[str]) -> int | None:
    try:
        return out.fileno()
    except (OSError, ValueError, AttributeError):
        return None  # not a real file (a test runner's capture): chunks come back as bytes


class _Turns:
    """Workers write their rendered chunks straight to the output file, in submission order.

    Sending each chunk back to the main process to be written costs more CPU than rendering it
    with the compiled path (every byte pickled and piped twice), so each worker waits for its
    chunk's turn and writes it itself to the inherited file descriptor. The main process writes
    (a file's first line, its summary) only while no chunk is in flight.
    """

    def __init__(self, ctx: Any, fd: int) -> None:
        self.fd = fd
        self.cond = ctx.Condition()
        self.turn = ctx.RawValue("q", 0)
        self.next_seq = 0  # used by the main process only

    def write_in_turn(self, seq: int, data: bytes) -> None:
        """Wait for `seq`'s turn, write `data`, pass the turn on (also when the write fails)."""
        with self.cond:
            self.cond.wait_for(lambda: self.turn.value == seq)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self.fd, view) :]
            finally:
                self.turn.value = seq + 1
                self.cond.notify_all()


# A worker's `_Turns`, inherited through fork (set by the pool's initializer).
_worker_turns: _Turns | None = None


def _start_worker(turns: _Turns | None) -> None:
    global _worker_turns
    _worker_turns = turns


def _work_in_turn(args: WorkArgs, seq: int) -> WorkResult:
    """`_work`, then the chunk written in its turn by this worker; nothing comes back but counts."""
    turns = _worker_turns
    assert turns is not None
    try:
        data, records, counts, tally = _work(args)
    except BaseException:
        turns.write_in_turn(seq, b"")  # later chunks must not wait forever
        raise
    turns.write_in_turn(seq, data)
    return b"", records, counts, tally


class _InlineExecutor(Executor):
    """One job: each chunk is rendered in this process when it is submitted."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        done: Future[Any] = Future()
        done.set_result(fn(*args, **kwargs))
        return done


class _Tally:
    """Records and finding severities the workers decoded for one log."""

    def __init__(self) -> None:
        self.records = 0
        self.extra: dict[int, int] = {}
        self.payloads: PayloadTally | None = None

    def drain(self, pending: deque[Future[WorkResult]], limit: int, write: Any) -> None:
        while len(pending) > limit:
            data, n, counts, payloads = pending.popleft().result()
            if payloads is not None:
                if self.payloads is None:
                    self.payloads = payloads
                else:
                    self.payloads.merge(payloads)
            self.records += n
            for sev, c in counts.items():
                self.extra[sev] = self.extra.get(sev, 0) + c
            write(data)


def _write_log(
    pool: Executor,
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
    turns: _Turns | None = None,
) -> int:
    """Render one log; how many of its batches were left undecompressed (their codec is missing)."""
    pending: deque[Future[WorkResult]] = deque()
    tally = _Tally()
    unchecked = 0

    def write(data: bytes) -> None:
        if data:
            _write(out, sink, data)
            if turns is not None:
                sink.flush()  # before any worker writes to the same file

    def submit(chunk: list[DumpEvent]) -> None:
        args = (str(path), label, chunk, options, fmt, encoding, decoder)
        if turns is None:
            pending.append(pool.submit(_work, args))
            return
        pending.append(pool.submit(_work_in_turn, args, turns.next_seq))
        turns.next_seq += 1

    chunk: list[DumpEvent] = []
    chunk_bytes = 0
    for ev in events:
        if isinstance(ev, ScanSummary):
            if chunk:
                submit(chunk)
                chunk = []
            tally.drain(pending, 0, write)
            if tally.payloads is not None:
                from kdump.render.payload_lines import finish_payloads

                ev, tail = finish_payloads(ev, tally.payloads, options, label)
                write(_render_context(tail, label, fmt, encoding))
            extra = tally.extra
            summary = dataclasses.replace(
                ev,
                record_count=tally.records,
                uncounted_batches=ev.uncounted_batches + extra.get(UNCHECKED, 0),
                deep=True,
                findings_info=ev.findings_info + extra.get(Severity.INFO, 0),
                findings_warning=ev.findings_warning + extra.get(Severity.WARNING, 0),
                findings_error=ev.findings_error + extra.get(Severity.ERROR, 0),
            )
            write(_render_single(summary, label, fmt, encoding))
            unchecked += summary.uncounted_batches
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
    return unchecked


def _render_single(ev: DumpEvent, label: str, fmt: str, encoding: str) -> bytes:
    text = _render([FileStart(label, CONTEXT, 0, None), ev], fmt, encoding)
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
