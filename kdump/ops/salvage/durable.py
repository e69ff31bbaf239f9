"""Salvage's durability waits, off the main thread: fsyncs that overlap the work still to do.

Every output file and directory of a salvage is fsynced before the salvage reports success, as
before; what changes is who waits. The clean partition's files and directories are fsynced (and
closed) on one background thread while the records are decoded and written, and the big records
files start their writeback every `WRITEBACK_BYTES` while they are written, so their final fsync
finds little left to write. `Syncs.finish` waits for every queued sync and raises the first error
any of them met; salvage calls it before the report is written, inside the block that removes the
output on a fault, so a failed fsync on the thread fails the salvage and removes its output just
as one on the main thread does. On the way out of a fault the queue is drained first: nothing is
still writing or syncing in the output directory when it is removed.

The syncs go through `kdump.ops.repair.safety.CALLS`, so the fault tests reach them.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from kdump.ops.repair.safety import CALLS, fsync_dir
from kdump.ops.salvage.guard import sync_close

# A records file starts writing back (a sync on the thread) after this many more bytes.
WRITEBACK_BYTES = 32 << 20


class Syncs:
    """A queue of fsyncs run in order on one thread; a context manager that drains it on exit."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="kdump-sync")
        self._futures: list[Future[None]] = []

    def __enter__(self) -> Syncs:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # On a fault as on success: every queued sync has ended (and closed its file) before the
        # caller goes on, e.g. to remove the output directory.
        wait(self._futures)
        self._pool.shutdown(wait=True)

    def _submit(self, fn: Any, *args: Any) -> Future[None]:
        future: Future[None] = self._pool.submit(fn, *args)
        self._futures.append(future)
        return future

    def sync_close(self, fh: IO[Any]) -> None:
        """Flush `fh` here (a failed write raises now), then fsync and close it on the thread; the
        caller no longer touches it."""
        fh.flush()
        self._submit(sync_close, fh)

    def sync_dir(self, path: Path) -> None:
        """fsync a directory on the thread (after the syncs queued before it)."""
        self._submit(fsync_dir, path)

    def writeback(self, fh: IO[Any], beside: IO[Any] | None = None) -> Writeback:
        """A file being written whose bytes are synced on the thread as they grow (and with them
        what the kernel holds of `beside`, a file another thread writes at the same pace)."""
        return Writeback(self, fh, beside)

    def check(self) -> None:
        """Raise the first error of a sync that has ended, if any (the others keep running)."""
        for future in self._futures:
            if future.done() and future.exception() is not None:
                raise future.exception()  # type: ignore[misc]

    def finish(self) -> None:
        """Wait for every queued sync; raise the first error any of them met."""
        wait(self._futures)
        for future in self._futures:
            error = future.exception()
            if error is not None:
                raise error
        self._futures = []


class Writeback:
    """A big output file: every `WRITEBACK_BYTES` written, a sync of it is queued (unless the last
    one is still running: the main thread never waits for one), so the final one waits for little."""

    def __init__(self, syncs: Syncs, fh: IO[Any], beside: IO[Any] | None = None) -> None:
        self._syncs = syncs
        self._fh = fh
        self._beside = beside
        self._unsynced = 0
        self._last: Future[None] | None = None

    def wrote(self, n: int) -> None:
        self._unsynced += n
        if self._unsynced < WRITEBACK_BYTES or (self._last is not None and not self._last.done()):
            return
        self._syncs.check()
        self._fh.flush()
        self._unsynced = 0
        self._last = self._syncs._submit(CALLS.fsync, self._fh.fileno())
        if self._beside is not None:
            # Not flushed from here: its writer's thread owns its buffer; what is in the kernel is
            # enough to start on.
            self._last = self._syncs._submit(CALLS.fsync, self._beside.fileno())

    def close(self) -> None:
        """Flush here, then the final fsync and close on the thread (after any sync still queued)."""
        self._syncs.sync_close(self._fh)
