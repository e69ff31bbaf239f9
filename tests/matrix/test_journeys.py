"""Journeys: for each damage class of the corruption matrix, do what verify says and check the result.

A real segment of the corpus (its batches exactly as the broker wrote them) is split at batch boundaries
into a three-segment partition, as the broker rolls segments, with indexes by the reindex rule, in a log
dir. It must verify clean. Then one damage of the matrix is made in the middle segment (damage in the
middle of the log: the broker's recovery truncates there and deletes the later segments) or in the last
one (a torn or corrupt tail), and the journey is:

1. `kdump verify` finds it and prints a repair hint per finding;
2. every hint is run as printed (`kdump salvage P && kdump trim-tail --apply P`, or
   `kdump trim-tail [--to-offset N] --apply P`), after a dry run of the trim gave its plan;
3. `kdump verify --fail-on info` finds nothing but a `transaction-open` info where the cut took a marker;
4. nothing is lost that the plan did not list: every byte of every original log file is either still
   in the partition or in the backup directory, the bytes backed up are the plan's `backed_up_bytes`,
   the cut is at the plan's position, the plan's segments are the ones gone, and the log now ends at
   the plan's new log end offset; when the hint named salvage, every valid batch past the cut is in
   salvage's records.

Damage classes of the matrix without a repair hint (a partition leader epoch flipped lower:
`leader-epoch-regression`; offsets below the segment's base or past 2^31-1 above it) have no
journey to follow: verify names no command for them.
"""

from __future__ import annotations

import json
import shlex
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from corruptions import (
    Damage,
    append_garbage,
    append_zeros,
    entry_at,
    flip_body_byte,
    flip_crc_byte,
    garble_length,
    log_entries,
    make_log_dir,
    set_magic,
    torn_page,
    truncate_inside,
)

from kdump.formats.batch import BatchHeader
from kdump.ops.repair.safety import MANIFEST
from kdump.scan.events import ScanSummary
from kdump.scan.log_scanner import scan_log

Kdump = Callable[..., Result]

# (key, segment in the corpus, how many of its entries to use): v2 uncompressed, v2 transactional with
# markers, v2 gzip, legacy v0 (one message per offset). All are in the bundled subset.
SUBJECTS = (
    ("v2-none", "kafka-3.8.0/timestamps-0/00000000000000001166.log", None),
    ("v2-txn", "kafka-3.8.0/txn-1/00000000000000000547.log", None),
    ("v2-gzip", "kafka-3.8.0-running-copy/live-0/00000000000000008074.log", 30),
    ("v0-none", "kafka-3.8.0-zk-legacy/legacy-v0-none-0/00000000000000000645.log", 30),
)


def set_offset(batch_index: int, source_index: int) -> Damage:
    """Give an entry the offset field (+0, int64, outside every checksum) of another entry: a
    base offset at or below its predecessor's last offset, `offset-regression`."""

    def fn(d: bytes) -> bytes:
        out = bytearray(d)
        src = entry_at(d, source_index)
        struct.pack_into(
            ">q",
            out,
            entry_at(d, batch_index).position,
            src.last_offset if src.magic < 2 else src.base_offset,
        )
        return bytes(out)

    return Damage(f"set_offset({batch_index},{source_index})", fn)


# Damage to an entry of the middle segment (index 1 of its entries, so one valid entry is before it
# and valid entries follow it), then damage at the end of the log.
MIDDLE = {
    "checksum-byte": flip_crc_byte(1),
    "payload-byte": flip_body_byte(1),
    "length-below-minimum": garble_length(1, 5),
    "length-past-the-end": garble_length(1, 1 << 30),
    "magic-unsupported": set_magic(1, 7),
    "offset-regression": set_offset(1, 0),
}
TAIL = {
    "checksum-byte": flip_crc_byte(-1),
    "truncated-last-batch": truncate_inside(-1, 30),
    "zero-tail": append_zeros(4096),
    "garbage-tail": append_garbage(100, seed=1),
    "torn-page": torn_page(),
    "magic-unsupported": set_magic(-1, 7),
}
CASES = [("middle", k, d) for k, d in MIDDLE.items()] + [("tail", k, d) for k, d in TAIL.items()]


def _build(corpus_root: Path, rel: str, limit: int | None, tmp_path: Path, kdump: Kdump) -> Path:
    src = corpus_root / rel
    if not src.is_file():
        pytest.skip(f"{rel} is not in this corpus")
    data = src.read_bytes()
    entries = log_entries(data)[:limit]
    assert len(entries) >= 6
    third = len(entries) // 3
    log_dir = make_log_dir(tmp_path / "data", {})
    part = log_dir / src.parent.name
    part.mkdir()
    meta = src.parent / "partition.metadata"
    if meta.exists():
        shutil.copyfile(meta, part / meta.name)
    for chunk in (entries[:third], entries[third : 2 * third], entries[2 * third :]):
        first = chunk[0].base_offset if chunk[0].base_offset is not None else chunk[0].last_offset
        (part / f"{first:020d}.log").write_bytes(data[chunk[0].position : chunk[-1].end])
    assert (
        kdump("reindex", "--apply", "--backup-dir", str(tmp_path / "reindex-backup"), str(part)).exit_code
        == 0
    )
    healthy = kdump("verify", "--fail-on", "info", str(part))
    assert healthy.exit_code == 0, healthy.stdout
    return part


def _rows(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def _hints(kdump: Kdump, part: Path) -> list[str]:
    result = kdump("verify", "--format", "json", "--fail-on", "info", str(part))
    hints: list[str] = []
    for row in _rows(result):
        if row.get("type") == "finding" and row.get("repair") and row["repair"] not in hints:
            hints.append(row["repair"])
    return hints


def _run_hint(kdump: Kdump, hint: str, tmp_path: Path, step: int) -> dict[str, Any]:
    """Run a hint's commands as printed; return what they said (plan, backup dir, salvage dir)."""
    done: dict[str, Any] = {}

    for command in hint.split(" && "):
        argv = shlex.split(command)
        assert argv[0] == "kdump", hint
        if argv[1] == "salvage":
            out = tmp_path / f"salvage-{step}"
            argv = [*argv[:2], "--out", str(out), *argv[2:]]  # where this test reads it from
            result = kdump(*argv[1:])
            assert result.exit_code in (0, 1), result.output
            done["salvage"] = out
        else:
            assert argv[1] == "trim-tail", hint
            assert "--apply" in argv
            dry = [a for a in argv[1:] if a != "--apply"]
            (plan,) = _rows(kdump(*dry, "--format", "json"))
            backup = tmp_path / f"backup-{step}"
            result = kdump(*argv[1:], "--format", "json", "--backup-dir", str(backup))
            assert result.exit_code == 0, result.output
            (applied,) = _rows(result)
            assert applied["applied"] is True
            assert {k: v for k, v in applied.items() if k not in ("applied", "backup_dir")} == {
                k: v for k, v in plan.items() if k != "applied"
            }
            done["plan"], done["backup"] = plan, backup
    return done


def _check_plan_kept_its_word(
    plan: dict[str, Any], backup: Path, before: dict[str, bytes], part: Path, kdump: Kdump
) -> None:
    manifest = json.loads((backup / MANIFEST).read_text())
    cut_logs = {Path(s["path"]).name: Path(s["backup"]) for s in manifest["steps"] if s["op"] == "truncate"}
    moved = {Path(s["path"]).name: Path(s["backup"]) for s in manifest["steps"] if s["op"] == "move"}
    assert sorted(moved) == sorted(Path(p).name for p in plan["moved_files"])
    backed_up = 0
    for name, original in before.items():
        now = part / name
        if name in moved:
            assert not now.exists(), name
            assert moved[name].read_bytes() == original, name
            backed_up += len(original)
        elif name in cut_logs:
            kept = now.read_bytes()
            assert kept + cut_logs[name].read_bytes() == original, name  # nothing lost, nothing added
            assert len(kept) == plan["cut_position"]
            assert str(now) == plan["segment"]
            backed_up += len(original) - len(kept)
        elif name.endswith(".log"):
            assert now.read_bytes() == original, name  # untouched
    assert backed_up == plan["backed_up_bytes"]
    gone_logs = [n for n in moved if n.endswith(".log")]
    assert len(gone_logs) == plan["removed_segments"]
    summaries = [
        r for r in _rows(kdump("verify", "--format", "json", str(part))) if r.get("type") == "summary"
    ]
    last = summaries[0]["last_offset"]
    assert (None if last is None else last + 1) == plan["new_log_end_offset"]


@pytest.mark.parametrize(("subject", "rel", "limit"), SUBJECTS, ids=[s[0] for s in SUBJECTS])
@pytest.mark.parametrize(("where", "name", "damage"), CASES, ids=[f"{w}-{n}" for w, n, _ in CASES])
def test_following_verifys_hints_gives_a_clean_log_and_loses_nothing_unlisted(
    subject: str,
    rel: str,
    limit: int | None,
    where: str,
    name: str,
    damage: Damage,
    corpus_root: Path,
    tmp_path: Path,
    kdump: Kdump,
) -> None:
    part = _build(corpus_root, rel, limit, tmp_path, kdump)
    logs = sorted(part.glob("*.log"))
    damage.apply(logs[1] if where == "middle" else logs[-1])
    damaged = {p.name: p.read_bytes() for p in part.iterdir() if p.is_file()}
    valid_past_damage = _valid_batches_past_first_damage(part)

    hints = _hints(kdump, part)
    assert hints, f"verify names no repair for {name}"
    step = 0
    while hints and step < 3:
        for hint in hints:
            before = {p.name: p.read_bytes() for p in part.iterdir() if p.is_file()}
            done = _run_hint(kdump, hint, tmp_path, step)
            if "plan" in done:
                _check_plan_kept_its_word(done["plan"], done["backup"], before, part, kdump)
            if "plan" in done:
                # The trim's plan and verify's hint agree on whether valid data lies past the cut.
                assert done["plan"]["salvage_first"] == ("salvage" in done), hint
            if "salvage" in done:
                # Everything valid after the cut was got out before the trim took it away.
                salvaged = {
                    json.loads(line)["offset"]
                    for line in (done["salvage"] / "records.jsonl").read_text().splitlines()
                }
                missing = [last for last in valid_past_damage if last not in salvaged]
                assert not missing, missing
            elif "plan" in done and step == 0:
                # No salvage named: the trim took out no valid batch.
                assert done["plan"]["salvageable_batches"] == 0
                assert done["plan"]["removed_segments"] == 0 or not valid_past_damage
            step += 1
            break  # one repair at a time, then ask verify again
        hints = _hints(kdump, part)
    final = kdump("verify", "--format", "json", "--fail-on", "info", str(part))
    # A cut that takes a transaction's COMMIT marker leaves the transaction open, as the broker's own
    # recovery would: info (`transaction-open`), with no coordinator log here to say it hangs.
    left = [r for r in _rows(final) if r.get("type") == "finding"]
    assert [(r["code"], r["severity"]) for r in left if r["code"] != "transaction-open"] == [], final.stdout
    assert all(r["severity"] == "info" for r in left), final.stdout
    assert damaged  # the journey started from the damaged copy
    # Undo every repair, newest first: the damaged copy comes back byte for byte.
    for backup in sorted(tmp_path.glob("backup-*"), reverse=True):
        assert kdump("restore", str(backup)).exit_code == 0
    assert {p.name: p.read_bytes() for p in part.iterdir() if p.is_file()} == damaged


def _valid_batches_past_first_damage(part: Path) -> list[int]:
    """Last offsets of the checksum-valid entries a forensic scan finds after the broker's recovery
    point, in the first damaged segment and every later one."""
    out: list[int] = []
    seen_damage = False
    for log in sorted(part.glob("*.log")):
        data = log.read_bytes()
        valid_end = 0
        headers = []
        for ev in scan_log(data, file=str(log)):
            if isinstance(ev, BatchHeader):
                headers.append(ev)
            elif isinstance(ev, ScanSummary):
                valid_end = ev.valid_bytes
        if seen_damage or valid_end < len(data):
            out.extend(
                h.last_offset for h in headers if h.crc_ok and (seen_damage or h.position >= valid_end)
            )
            seen_damage = True
    return out
