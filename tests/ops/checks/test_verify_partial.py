"""`verify --max-bytes` reads a prefix of each log: it judges nothing past what it read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kdump.formats.checkpoints import encode_leader_epoch_checkpoint
from kdump.model.log_dir import discover
from kdump.ops.checks.verify import VerifyOptions, verify_targets

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "logdir"


def _codes(path: Path, max_bytes: int | None) -> list[str]:
    reports = verify_targets([discover(str(path))], VerifyOptions(max_bytes=max_bytes, jobs=1))
    return [f.code for r in reports for f in r.findings]


@pytest.mark.parametrize("max_bytes", [3000, 12000, 30000])
def test_a_prefix_misses_no_abort_marker_it_did_not_read(max_bytes: int) -> None:
    # txn-1 holds aborted transactions whose ABORT markers lie past these prefixes.
    assert _codes(SAMPLES / "txn-1", None) == []
    assert "txn-index-mismatch" not in _codes(SAMPLES / "txn-1", max_bytes)


def test_a_prefix_does_not_know_the_log_end(tmp_path: Path) -> None:
    part = tmp_path / "txn-1"
    shutil.copytree(SAMPLES / "txn-1", part)
    # Epoch 1 from offset 600: within the whole log (it ends at 611), beyond a 3000-byte prefix.
    (part / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint([(0, 0), (1, 600)]))
    assert _codes(part, None) == []
    assert _codes(part, 3000) == []
    # Past the whole log's end it is still a finding of a whole read.
    (part / "leader-epoch-checkpoint").write_bytes(encode_leader_epoch_checkpoint([(0, 0), (1, 700)]))
    assert _codes(part, None) == ["leader-epoch-mismatch"]
