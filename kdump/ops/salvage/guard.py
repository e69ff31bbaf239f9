"""Salvage's output under a full or failing disk: a pre-flight for room, and no half output left.

salvage never writes to the partition it reads; what it writes is a new output directory. Before
that directory is made, `salvage_needs` sizes it: the clean partition copy (every kept batch, at
most the partition's log bytes, with its rebuilt indexes, at most the original ones) and the
records files, counted at the log bytes again (JSON of uncompressed records is rarely smaller;
compressed batches may expand further, which the pre-flight cannot know without decompressing).
A write, rename or fsync that still fails removes what the run wrote, so the directory is as it
was (absent or empty) and the same command runs again once the cause is fixed; that holds for
the fsyncs `kdump.ops.salvage.durable` runs on its thread too (their errors are raised on the main
thread before the report is written, and the thread has stopped before anything is removed).

Every write of the output goes through `kdump.ops.repair.safety.CALLS`, so the fault tests reach it.
"""

from __future__ import annotations

import contextlib
import io
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from kdump.errors import LogDirLockedError, RepairFaultError
from kdump.model.partition import PartitionDir
from kdump.ops.repair.faults import command_line, describe_os_error
from kdump.ops.repair.preflight import Need
from kdump.ops.repair.safety import CALLS


class _Raw(io.RawIOBase):
    """An output file descriptor whose writes go through `CALLS.write`."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        return int(CALLS.write(self._fd, b))

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        if not self.closed:
            import os

            try:
                os.close(self._fd)
            finally:
                super().close()


def open_output(fd: int, *, text: bool, buffering: int) -> IO[Any]:
    """A buffered (text or binary) file over a new output file's descriptor."""
    size = buffering if buffering > 1 else io.DEFAULT_BUFFER_SIZE
    binary = io.BufferedWriter(_Raw(fd), buffer_size=size)
    if text:
        return io.TextIOWrapper(binary, encoding="utf-8", newline="\n", write_through=False)
    return binary


def sync_close(fh: IO[Any]) -> None:
    """Flush, fsync and close an output file (closed whether the fsync fails or not)."""
    try:
        fh.flush()
        CALLS.fsync(fh.fileno())
    finally:
        fh.close()


def salvage_needs(part: PartitionDir, out: Path) -> list[Need]:
    """The room the output needs, by the pre-flight's account above."""
    logs: list[int] = []
    indexes: list[int] = []
    for seg in part.segments:
        for path, into in (
            (seg.log, logs),
            (seg.index, indexes),
            (seg.timeindex, indexes),
            (seg.txnindex, indexes),
        ):
            if path is not None:
                try:
                    into.append(path.stat().st_size)
                except OSError:
                    continue
    return [Need(out, (*logs, *indexes, sum(logs)), "the salvage output")]


@contextlib.contextmanager
def output_removed_on_fault(out: Path, source: Path, rerun: Sequence[str | Path]) -> Iterator[None]:
    """Remove what a salvage wrote when a write, rename or fsync fails, and say what to run next."""
    existed = out.exists()
    try:
        yield
    except RepairFaultError:
        raise
    except OSError as exc:
        if isinstance(exc, LogDirLockedError):
            raise
        if existed:
            for child in list(out.iterdir()) if out.is_dir() else []:
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        child.unlink()
        else:
            shutil.rmtree(out, ignore_errors=True)
        raise RepairFaultError(
            f"salvage stopped: {describe_os_error(exc)}; {source} was not touched and what was written "
            f"to {out} was removed; once the cause is fixed, run it again: {command_line(rerun)}",
            undone=True,
        ) from exc
