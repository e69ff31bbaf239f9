"""Kafka releases as kdump compares them: `(major, minor)`, the granularity at which Kafka's record
schemas and its dump tool's text change (patch releases change neither)."""

from __future__ import annotations

from typing import Final

KafkaRelease = tuple[int, int]

NEWEST_RELEASE: Final[KafkaRelease] = (4, 4)
"""The newest Kafka release whose schemas and tool text kdump knows."""


def parse_release(text: str) -> KafkaRelease:
    """`"4.2"`, `"4.2.1"` or `"4"` (its `.0`) as `(4, 2)`; anything not numeric counts as 0."""
    parts = [int(p) if p.isdigit() else 0 for p in text.split(".")[:2]]
    return parts[0], parts[1] if len(parts) > 1 else 0
