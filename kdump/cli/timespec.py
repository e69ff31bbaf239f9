"""Parsing times given on the command line: epoch milliseconds, ISO-8601, relative times, `now`."""

from __future__ import annotations

import re
import time
from datetime import datetime

import click

_RELATIVE = re.compile(r"^-(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


def parse_time_ms(text: str, now_ms: int | None = None) -> int:
    """Turn `1700000000000`, `2026-11-21T14:05:00Z`, `-30m` or `now` into epoch milliseconds.

    ISO-8601 times must carry a zone (`Z` or `+02:00`): a time without one is ambiguous on a
    broker whose clock zone nobody remembers at 3 a.m.
    """
    now = int(time.time() * 1000) if now_ms is None else now_ms
    s = text.strip()
    if s == "now":
        return now
    if re.fullmatch(r"-?\d+", s):
        return int(s)
    m = _RELATIVE.match(s)
    if m:
        return now - int(float(m.group(1)) * _UNIT_MS[m.group(2)])
    try:
        dt = datetime.fromisoformat(s.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError as exc:
        raise ValueError(
            f"{text!r} is not a time: use epoch milliseconds, ISO-8601 with a zone, -30m/-2h/-1d, or now"
        ) from exc
    if dt.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone: add Z or an offset such as +02:00")
    return int(dt.timestamp() * 1000)


class TimeParam(click.ParamType):  # type: ignore[type-arg,unused-ignore]  # generic only in newer click
    """A click parameter holding a time in epoch milliseconds."""

    name = "TIME"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int:
        """Parse the option's text."""
        if isinstance(value, int):
            return value
        try:
            return parse_time_ms(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
