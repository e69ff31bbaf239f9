"""Worker process pools that end with their owner: on Ctrl-C, a closed pipe or an early stop.

A `ProcessPoolExecutor` used as a context manager waits, on the way out, for every task already
queued: after Ctrl-C a verify of a log dir kept running for as long as the whole check would have
taken, and the workers (which get the terminal's SIGINT too) printed their own tracebacks.
Here the workers ignore SIGINT (the main process decides), and when the owner leaves the pool
by an exception (KeyboardInterrupt, BrokenPipeError, a generator closed early) the queued tasks
are cancelled and the workers are terminated at once.
"""

from __future__ import annotations

import ctypes
import functools
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

# How long to wait for a terminated worker to go before leaving it to the operating system.
_JOIN_SECONDS = 0.5

# Whether a pool was stopped in this process (`stop_pool`); read through `pools_abandoned`.
_ABANDONED: list[bool] = []


def _ignore_sigint(initializer: Callable[..., None] | None, initargs: tuple[Any, ...], jobs: int = 1) -> None:
    # The worker was forked with SIGINT blocked (see `worker_pool`); from here on it ignores it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _die_with_parent()
    # The cores are shared out between the workers: the compiled walk of each worker gets its share
    # of threads (1, no helper, where there is a worker per core), not every core again.
    from kdump.formats import fast_walk

    fast_walk.set_threads(max(1, fast_walk.threads() // max(1, jobs)), fast_walk.thread_bytes())
    if initializer is not None:
        initializer(*initargs)


def _die_with_parent() -> None:
    """On Linux, have the kernel kill this worker when the process that forked it is gone, so that
    no worker outlives an owner that ended without stopping it (killed, or `os._exit`)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the owner went before the request was in place
        os._exit(1)


@functools.cache
def process_pools_work() -> bool:
    """Whether worker processes can be had here. A pool's queues need POSIX semaphores, which live in
    /dev/shm: a chroot or container without it (the one-file build runs in such roots) has none,
    and then kdump works in this one process, with the same output, instead of failing."""
    try:
        multiprocessing.get_context("fork").Lock()
    except OSError:
        return False
    return True


def _noop() -> None:
    return None


@contextmanager
def worker_pool(
    jobs: int, *, initializer: Callable[..., None] | None = None, initargs: tuple[Any, ...] = ()
) -> Iterator[ProcessPoolExecutor]:
    """A pool of `jobs` forked workers that never outlives an interrupted or abandoned owner;
    each worker runs `initializer(*initargs)` once it ignores SIGINT."""
    pool = ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_ignore_sigint,
        initargs=(initializer, initargs, jobs),
    )
    try:
        # With fork, the first submit forks every worker. Block SIGINT around it so that no worker
        # can receive the terminal's Ctrl-C before its initializer has set it to be ignored; a
        # SIGINT that arrives meanwhile is delivered to this process when the mask is lifted, and
        # then (inside this try) still stops the workers.
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            pool.submit(_noop)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        yield pool
    except BaseException:
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)


def pools_abandoned() -> bool:
    """Whether a pool was stopped here (`stop_pool`): the process must then end by `os._exit`.

    A stopped pool's manager thread lives on, and Python 3.11's exit handler for process pools
    races it: the handler wakes the thread through a pipe the thread may be closing that moment
    (a traceback, `OSError: [Errno 9] Bad file descriptor`, printed after kdump's verdict), and the
    collector's pass at interpreter teardown can block forever on the pool's locks (seen: a verify
    of a live broker's log dir whose file vanished under it, which exits 3 after stopping its pool).
    Files were closed as the stack unwound; only the standard streams are left to flush.
    """
    return bool(_ABANDONED)


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel what is queued and terminate the workers, without waiting for running tasks."""
    _ABANDONED.append(True)
    # `_processes` is the executor's map of worker processes (stable since Python 3.2); shutdown
    # forgets it, so it is read first.
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        if p.is_alive():
            p.terminate()
    for p in processes:
        p.join(_JOIN_SECONDS)
