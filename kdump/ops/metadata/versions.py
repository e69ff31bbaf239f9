"""metadata.version feature levels and the Kafka release each came with (Kafka's MetadataVersion enum,
whose levels run one by one from 3.3-IV3 = 7; checked against the 4.4 jar's enum names)."""

from __future__ import annotations

_NAMES = (
    "3.3-IV3", "3.4-IV0", "3.5-IV0", "3.5-IV1", "3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6-IV2",
    "3.7-IV0", "3.7-IV1", "3.7-IV2", "3.7-IV3", "3.7-IV4", "3.8-IV0", "3.9-IV0",
    "4.0-IV0", "4.0-IV1", "4.0-IV2", "4.0-IV3", "4.1-IV0", "4.1-IV1", "4.2-IV0", "4.2-IV1",
    "4.3-IV0", "4.4-IV0", "4.4-IV1", "4.4-IV2",
)  # fmt: skip
FIRST_LEVEL = 7
METADATA_VERSIONS: dict[int, str] = {FIRST_LEVEL + i: name for i, name in enumerate(_NAMES)}


def release_of(level: int) -> str | None:
    """`3.8` for level 20: the first release that reads (and may write) that metadata.version."""
    name = METADATA_VERSIONS.get(level)
    return None if name is None else name.split("-")[0]


def newest_level(release: str) -> int | None:
    """The newest metadata.version level a release (`3.9`, `4.4.0`) supports."""
    major_minor = ".".join(release.split(".")[:2])
    levels = [lv for lv, name in METADATA_VERSIONS.items() if name.split("-")[0] == major_minor]
    return max(levels) if levels else None
