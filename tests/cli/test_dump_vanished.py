"""A segment deleted between the listing and its dump (retention on a running broker): `kdump dump`
says it could not read it and exits 3, never the internal-error exit 70 (the live-broker race of
tests/brokers/test_live_scan.py, made deterministic)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import kdump.ops.dump.stream as stream
from kdump.cli import cli

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "logdir" / "txn-1"


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_segment_deleted_after_the_listing_is_unread_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    part = tmp_path / "txn-1"
    shutil.copytree(SAMPLE, part)
    listed = stream.dump_items

    def deleted_once_listed(*args: Any, **kwargs: Any) -> Iterator[Any]:
        for item in listed(*args, **kwargs):
            if item.is_log:
                item.path.unlink()
            yield item

    monkeypatch.setattr(stream, "dump_items", deleted_once_listed)
    result = CliRunner().invoke(cli, ["dump", "--records", "--format", fmt, str(part)])
    assert result.exit_code == 3, result.output
    assert "cannot read" in result.output
    assert "No such file" in result.output
    assert not isinstance(result.exception, OSError)  # said and exited, not raised
