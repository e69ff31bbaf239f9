"""One verdict across commands for a file given on its own: `dump` reads what `verify` reads.

A segment copied aside under another name (`segment-copy.log`) is read by both as a segment, with the
base offset of its first batch said on stderr; the broker's leftovers (`.lock`, an empty
`.kafka_cleanshutdown`, a checkpoint's `.tmp`) are recognised as what they are by both, with no
false finding. The same bytes get the same exit code from both commands.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from kdump.model.entries import file_kind
from kdump.model.log_dir import discover

Kdump = Callable[..., Result]
REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"
META = (SAMPLES / "logdir" / "meta.properties").read_text()
GZIP_SEGMENT = SAMPLES / "logdir" / "c-gzip-0" / "00000000000000002428.log"
TXN = SAMPLES / "logdir" / "txn-1"


def _rows(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def _findings(result: Result) -> list[dict[str, Any]]:
    return [r for r in _rows(result) if r["type"] == "finding"]


def _both(kdump: Kdump, path: Path) -> tuple[Result, Result]:
    return kdump("dump", "--format", "json", str(path)), kdump("verify", "--format", "json", str(path))


def test_segment_copied_aside_is_read_by_both(kdump: Kdump, tmp_path: Path) -> None:
    copy = tmp_path / "segment-copy.log"
    shutil.copy(GZIP_SEGMENT, copy)
    said = "taken as a segment by its content, base offset 2428 from its first batch"
    dump, verify = _both(kdump, copy)
    assert dump.exit_code == verify.exit_code == 0, dump.stdout + verify.stdout
    assert said in dump.stderr
    assert said in verify.stderr
    assert _findings(dump) == _findings(verify) == []
    batches = [r for r in _rows(dump) if r["type"] == "batch"]
    summary = next(r for r in _rows(verify) if r.get("scope") == "file")
    assert len(batches) == summary["batches"] == 18
    assert batches[0]["base_offset"] == summary["first_offset"] == 2428
    assert summary["checked_bytes"] == copy.stat().st_size


def test_damaged_copy_gets_the_same_findings_from_both(kdump: Kdump, tmp_path: Path) -> None:
    """The bad-crc sample's segment, copied aside: the same damage, found by both at one place."""
    damaged = next((SAMPLES / "damaged" / "bad-crc-0").glob("*.log"))
    copy = tmp_path / "copy-of-bad.log"
    shutil.copy(damaged, copy)
    dump, verify = _both(kdump, copy)
    assert verify.exit_code == 1
    assert dump.exit_code == 0  # dump shows damage; only an unreadable input fails it
    dumped = {(f["code"], f["position"]) for f in _findings(dump)}
    verified = {(f["code"], f["position"]) for f in _findings(verify)}
    assert ("crc-mismatch", next(p for c, p in verified if c == "crc-mismatch")) in dumped
    assert {c for c, _ in dumped} <= {c for c, _ in verified}
    assert "checkpoint-corrupt" not in {c for c, _ in dumped}


def _leftovers(tmp_path: Path) -> dict[str, Path]:
    d = tmp_path / "ld"
    d.mkdir()
    (d / "meta.properties").write_text(META)
    files = {
        "lock": d / ".lock",
        "clean-shutdown": d / ".kafka_cleanshutdown",
        "offset-checkpoint-tmp": d / "recovery-point-offset-checkpoint.tmp",
        "torn-checkpoint-tmp": d / "replication-offset-checkpoint.tmp",
        "epoch-tmp": d / "leader-epoch-checkpoint.tmp",
    }
    files["lock"].write_bytes(b"")
    files["clean-shutdown"].write_bytes(b"")
    files["offset-checkpoint-tmp"].write_text("0\n2\ntxn 1 612\nc-gzip 0 3000\n")
    files["torn-checkpoint-tmp"].write_text("0\n2\ntxn 1")
    shutil.copy(TXN / "leader-epoch-checkpoint", files["epoch-tmp"])
    return files


@pytest.mark.parametrize(
    ("which", "kind", "said"),
    [
        ("lock", "lock", "the broker's lock file"),
        ("clean-shutdown", "clean-shutdown", "an empty clean-shutdown marker"),
        ("offset-checkpoint-tmp", "temp-file", "recovery-point-offset-checkpoint"),
        ("torn-checkpoint-tmp", "temp-file", "replication-offset-checkpoint"),
        ("epoch-tmp", "temp-file", "leader-epoch-checkpoint"),
    ],
)
def test_broker_leftovers_are_what_they_are(
    kdump: Kdump, tmp_path: Path, which: str, kind: str, said: str
) -> None:
    path = _leftovers(tmp_path)[which]
    assert file_kind(path) == kind
    target = discover(str(path))
    assert target.segments == ()
    dump, verify = _both(kdump, path)
    assert dump.exit_code == verify.exit_code == 0, dump.stdout + dump.stderr + verify.stdout
    assert _findings(dump) == _findings(verify) == []
    assert "by its content" not in dump.stderr + verify.stderr
    start = next(r for r in _rows(dump) if r["type"] == "file")
    assert start["kind"] == kind
    assert said in json.dumps(_rows(dump))
    summary = next(r for r in _rows(verify) if r.get("scope") == "file")
    assert said in summary["taken_as"]


def test_a_temp_checkpoint_is_shown_as_the_checkpoint_it_would_be(kdump: Kdump, tmp_path: Path) -> None:
    files = _leftovers(tmp_path)
    entries = [r for r in _rows(kdump("dump", "--format", "json", str(files["offset-checkpoint-tmp"])))]
    got = [(e["topic"], e["partition"], e["offset"]) for e in entries if e["type"] == "checkpoint-entry"]
    assert got == [("txn", 1, 612), ("c-gzip", 0, 3000)]
    epochs = _rows(kdump("dump", "--format", "json", str(files["epoch-tmp"])))
    assert [r for r in epochs if r["type"] == "epoch-entry"]
    torn = _rows(kdump("dump", "--format", "json", str(files["torn-checkpoint-tmp"])))
    assert not [r for r in torn if r["type"] in ("checkpoint-entry", "finding")]
    assert "does not parse" in json.dumps(torn)


def test_a_log_dir_with_leftovers_passes_verify(kdump: Kdump, tmp_path: Path) -> None:
    files = _leftovers(tmp_path)
    log_dir = files["lock"].parent
    files["epoch-tmp"].unlink()  # a partition's file, not a log dir's
    shutil.copytree(TXN, log_dir / "txn-1")
    (log_dir / "txn-1" / "leader-epoch-checkpoint.tmp").write_text("0\n1\n0 0\n")
    result = kdump("verify", "--format", "json", str(log_dir))
    assert result.exit_code == 0, result.stdout
    tmp_findings = [f for f in _findings(result) if f["code"] == "leftover-file"]
    assert sorted(Path(f["file"]).name for f in tmp_findings) == sorted(
        [
            "recovery-point-offset-checkpoint.tmp",
            "replication-offset-checkpoint.tmp",
            "leader-epoch-checkpoint.tmp",
        ]
    )
    assert {f["severity"] for f in tmp_findings} == {"info"}
    assert all("interrupted write" in f["message"] for f in tmp_findings)


def test_an_unreadable_copy_fails_both(kdump: Kdump, tmp_path: Path) -> None:
    missing = tmp_path / "segment-copy.log"
    dump, verify = _both(kdump, missing)
    assert dump.exit_code == verify.exit_code == 3
