"""A progress bar on standard error for long commands at a terminal.

One line, redrawn in place at most ten times a second, and only once the command has run for
half a second (KDUMP_PROGRESS_DELAY seconds when set; a quick command shows none). Whatever else is printed while it is drawn must be
preceded by `clear()`, which erases it (the next step draws it again on a line of its own);
`finish()` leaves the finished bar as a line of its own, so nothing printed after it is ever glued
to it. The caller draws one only when standard error is a terminal.

A bar over a log dir streamed partition by partition counts partitions (`partitions=True`): each
step is one partition, whatever its bytes. Its total is known from the listing, where a total in
bytes would cost a listing and a `stat` per partition before the first is checked (0.5 s at 10,000
partitions, seconds at 100,000).
"""

from __future__ import annotations

import os
import shutil
import time
from typing import IO

INTERVAL = 0.1


def _delay() -> float:
    """Seconds a run lasts before its bar is drawn: KDUMP_PROGRESS_DELAY, else half a second."""
    try:
        return max(float(os.environ.get("KDUMP_PROGRESS_DELAY", "0.5")), 0.0)
    except ValueError:
        return 0.5


def _duration(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def _size(n: int, unit: int) -> str:
    return f"{n / unit:.1f}"


class ProgressBar:
    """`bar(n)` says n more bytes are done (what a progress callback of `ops` is given); with
    `partitions`, one more partition (of n bytes) is."""

    def __init__(
        self, label: str, total: int, out: IO[str], *, delay: float | None = None, partitions: bool = False
    ) -> None:
        self.label = label
        self.total = max(total, 0)
        self.partitions = partitions
        self.out = out
        self.done = 0
        self.start = time.monotonic()
        self.delay = _delay() if delay is None else delay
        self.last = 0.0
        self.shown = False  # the bar is on screen now
        self.ever = False  # the bar was drawn at least once
        self.finished = False

    def __call__(self, n: int) -> None:
        self.done += 1 if self.partitions else n
        now = time.monotonic()
        if self.finished or now - self.start < self.delay or now - self.last < INTERVAL:
            return
        self.last = now
        self._draw(self.line(now))

    def line(self, now: float, *, final: bool = False) -> str:
        """The bar's text for the terminal's width: label, bar, bytes done of total, time."""
        width = shutil.get_terminal_size((100, 24)).columns
        done = self.total if final else min(self.done, self.total)
        if self.partitions:
            amount = f"{done:,}/{self.total:,} partitions"
        else:
            unit, name = (1 << 30, "GiB") if self.total >= 10 << 30 else (1 << 20, "MiB")
            amount = f"{_size(done, unit)}/{_size(self.total, unit)} {name}"
        elapsed = now - self.start
        if final:
            when = f"done in {_duration(elapsed)}"
        elif done and self.total:
            when = f"{_duration(elapsed)}, {_duration(elapsed * (self.total - done) / done)} left"
        else:
            when = _duration(elapsed)
        room = width - len(self.label) - len(amount) - len(when) - 4
        cells = max(min(room, 40), 0)
        filled = cells if not self.total else cells * done // self.total
        bar = "━" * filled + ("╺" if filled < cells else "") + "─" * max(cells - filled - 1, 0)
        return " ".join(p for p in (self.label, bar, amount, when) if p)[: width - 1]

    def _draw(self, text: str) -> None:
        self.out.write("\r\x1b[2K" + text)
        self.out.flush()
        self.shown = self.ever = True

    def clear(self) -> None:
        """Erase the bar before something else is printed (it comes back at the next step)."""
        if self.shown:
            self.out.write("\r\x1b[2K")
            self.out.flush()
            self.shown = False

    def finish(self) -> None:
        """Leave the finished bar on a line of its own (nothing, if it was never drawn)."""
        if self.finished:
            return
        self.finished = True
        if self.ever:
            self._draw(self.line(time.monotonic(), final=True))
            self.out.write("\n")
            self.out.flush()
            self.shown = False
