"""The lines kdump's text dump prints when it opens a file, as Kafka's kafka-dump-log prints them.

A segment gets `Log starting offset: <base>`; a KRaft snapshot (`<end offset>-<epoch>.checkpoint`)
gets `Snapshot end offset: <offset>, epoch: <epoch>` and `bootstrap.checkpoint` gets
`KRaft bootstrap snapshot` (DumpLogSegments.dumpLog, Kafka 3.x and 4.x; the 4.4.0 oracles of
tests/data/kafka4-corpus.tar.xz hold the snapshot line). A chunk rendered for the parallel path
(`CONTEXT`) gets the name only, which that path strips.
"""

from __future__ import annotations

import io

import pytest

from kdump.ops.dump.files import CONTEXT, FileStart
from kdump.render.text import write_text


def _header(start: FileStart) -> list[str]:
    out = io.StringIO()
    write_text([start], out)
    return out.getvalue().splitlines()


@pytest.mark.parametrize(
    ("file", "base", "expected"),
    [
        ("orders-0/00000000000000000042.log", 42, ["Log starting offset: 42"]),
        (
            "__cluster_metadata-0/00000000000000000273-0000000002.checkpoint",
            None,
            ["Snapshot end offset: 273, epoch: 2"],
        ),
        ("data/bootstrap.checkpoint", None, ["KRaft bootstrap snapshot"]),
        ("__cluster_metadata-0/273-2.checkpoint", None, []),
        ("copy-of-a-segment.bin", None, []),
    ],
)
def test_file_header_lines(file: str, base: int | None, expected: list[str]) -> None:
    assert _header(FileStart(file, "log", 100, base)) == [f"Dumping {file}", *expected]


def test_a_chunk_context_prints_the_name_only() -> None:
    name = "__cluster_metadata-0/00000000000000000273-0000000002.checkpoint"
    assert _header(FileStart(name, CONTEXT, 0, None)) == [f"Dumping {name}"]
