"""A `leader-epoch-mismatch` names the trim as its repair exactly where the trim fixes it.

A torn tail that took the batches of the last leader epoch leaves a checkpoint naming that epoch
past the log end: the broker's recovery cuts the tail and drops the epoch (`truncateFromEnd`), and
so does `kdump trim-tail`, so verify names it, and running the hint as printed ends clean. A
checkpoint that contradicts batches which stay is not fixed by any trim: no repair is named.
The batches are the sample's real `txn-1`; their leader epochs (outside the checksum) are set as a
broker would have written them across one leader change.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

from corruptions import copy_tree, log_entries
from hint_shell import printed_hints, shell

from kdump.formats.checkpoints import encode_leader_epoch_checkpoint

EPOCH_AT = 12  # partitionLeaderEpoch in a v2 batch header
SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "logdir" / "txn-1"


def _two_epochs(part: Path, last: int) -> tuple[list[int], list[tuple[int, int]]]:
    """Epoch 0, then epoch 1 for the last `last` batches; returns base offsets and positions of the
    last segment's batches."""
    logs = sorted(part.glob("*.log"))
    total = sum(len(log_entries(p.read_bytes())) for p in logs)
    bases: list[int] = []
    i = 0
    for log in logs:
        data = bytearray(log.read_bytes())
        for e in log_entries(data):
            assert e.base_offset is not None
            struct.pack_into(">i", data, e.position + EPOCH_AT, 0 if i < total - last else 1)
            bases.append(e.base_offset)
            i += 1
        log.write_bytes(bytes(data))
    tail = [(e.base_offset or 0, e.position) for e in log_entries(logs[-1].read_bytes())]
    return bases, tail


def _findings(cwd: Path, path: str, tmp_path: Path) -> list[dict[str, object]]:
    out = shell(f"kdump verify --format json '{path}'", cwd, tmp_path).stdout
    return [r for r in map(json.loads, out.splitlines()) if r.get("type") == "finding"]


def test_a_torn_tail_past_the_last_epoch_start_names_the_trim_and_it_fixes_it(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    part = copy_tree(SAMPLE, cwd / "copies of" / "txn-1")
    bases, tail = _two_epochs(part, 3)
    (part / "leader-epoch-checkpoint").write_bytes(
        encode_leader_epoch_checkpoint([(0, bases[0]), (1, bases[-3])])
    )
    # Torn inside the fifth batch from the end: epoch 1 (the last three) is gone with it.
    log = sorted(part.glob("*.log"))[-1]
    with log.open("r+b") as fh:
        fh.truncate(tail[-5][1] + 30)
    rel = "copies of/txn-1"
    mismatch = [f for f in _findings(cwd, rel, tmp_path) if f["code"] == "leader-epoch-mismatch"]
    assert mismatch
    assert all(f["repair"] == "kdump trim-tail --apply 'copies of/txn-1'" for f in mismatch)
    hints, status = printed_hints(rel, cwd, tmp_path)
    assert status == 1
    assert hints[0] == "kdump trim-tail --apply 'copies of/txn-1'"
    for _ in range(3):  # each hint as printed, then verify asks again
        if not hints:
            break
        done = shell(hints[0], cwd, tmp_path)
        assert done.returncode == 0, done.stderr
        hints, status = printed_hints(rel, cwd, tmp_path)
    assert (hints, status) == ([], 0)


def test_a_checkpoint_the_staying_batches_contradict_names_no_repair(tmp_path: Path) -> None:
    part = copy_tree(SAMPLE, tmp_path / "txn-1")
    bases, _ = _two_epochs(part, 3)
    # Epoch 1 recorded one batch late: the batches that carry it from earlier stay whatever is trimmed.
    (part / "leader-epoch-checkpoint").write_bytes(
        encode_leader_epoch_checkpoint([(0, bases[0]), (1, bases[-2])])
    )
    mismatch = [f for f in _findings(tmp_path, "txn-1", tmp_path) if f["code"] == "leader-epoch-mismatch"]
    assert mismatch
    assert all(f["repair"] is None for f in mismatch)
