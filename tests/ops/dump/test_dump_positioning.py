"""`dump --from-offset` positions itself through the checked segment reader, and a partial read
(a later start, a --max-bytes limit) judges only what it read and says which range that was."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from builders import BASE_TS, SegmentBuilder, records
from click.testing import Result

from kdump.findings import Finding
from kdump.formats.batch import BatchHeader
from kdump.formats.offset_index import decode_offset_index, encode_offset_index
from kdump.model.log_dir import discover
from kdump.ops.dump.stream import DumpFilter, DumpOptions, dump_targets
from kdump.scan.events import ScanSummary

Kdump = Callable[..., Result]
SAMPLES = Path(__file__).resolve().parents[3] / "samples"


def _big(tmp_path: Path) -> Path:
    """40 batches of 10 records (offsets 0..399), indexed every ~1000 bytes."""
    seg = SegmentBuilder()
    for i in range(40):
        seg.add_v2(records(10, start_ts=BASE_TS + 10 * i, value_size=200))
    return seg.write(tmp_path / "big-0", interval_bytes=1000)


def _json(kdump: Kdump, *args: str) -> list[dict[str, Any]]:
    result = kdump("dump", "--format", "json", *args)
    assert result.exit_code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def _of(rows: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in rows if r["type"] == kind]


def _batch_positions(log: Path) -> dict[int, int]:
    """Base offset -> position of every batch of a sound log."""
    out: dict[int, int] = {}
    for ev in dump_targets([discover(str(log))], DumpOptions()):
        if isinstance(ev, BatchHeader) and ev.base_offset is not None:
            out[ev.base_offset] = ev.position
    return out


def test_a_sound_index_gives_a_later_start_and_no_finding(kdump: Kdump, tmp_path: Path) -> None:
    log = _big(tmp_path)
    out = _json(kdump, "--records", "--from-offset", "305", "--to-offset", "306", str(log))
    assert [r["offset"] for r in _of(out, "record")] == [305, 306]
    assert _of(out, "finding") == []
    (summary,) = _of(out, "summary")
    assert summary["start"] > 0
    assert summary["partial"] is True


@pytest.mark.parametrize(
    ("damage", "first", "last"),
    [
        ("inside-a-batch", 305, 360),
        ("later-batch", 305, 360),
        ("past-the-end", 399, 399),
        ("shuffled", 305, 360),
    ],
)
def test_a_planted_bad_index_entry_is_a_finding_and_the_dump_stays_right(
    kdump: Kdump, tmp_path: Path, damage: str, first: int, last: int
) -> None:
    log = _big(tmp_path)
    index = log.with_suffix(".index")
    positions = _batch_positions(log)
    entries = list(decode_offset_index(index.read_bytes(), 0).entries)
    # The entry a lookup of `first` lands on: the last one at or below it.
    slot = max(i for i, e in enumerate(entries) if e.offset <= first)
    entry = entries[slot]
    if damage == "inside-a-batch":
        entries[slot] = entry._replace(position=entry.position + 7)
    elif damage == "later-batch":
        # A real batch start, in order with its neighbours, but of offsets 310.., above the one
        # looked up: reading from there would skip offsets 305..309.
        entries[slot] = entry._replace(position=positions[310])
        del entries[slot + 1 : slot + 3]
    elif damage == "past-the-end":
        entries[slot] = entry._replace(position=log.stat().st_size + 100)
    else:
        entries.reverse()
    index.write_bytes(encode_offset_index(entries, 0))

    out = _json(kdump, "--records", "--from-offset", str(first), "--to-offset", str(last), str(log))
    # The dump is right: every offset asked for, read from the start of the log.
    assert [r["offset"] for r in _of(out, "record")] == list(range(first, last + 1))
    codes = [f["code"] for f in _of(out, "finding")]
    expected = {
        "inside-a-batch": "index-offset-mismatch",
        "later-batch": "index-offset-mismatch",
        "past-the-end": "index-entry-beyond-log",
        "shuffled": "index-not-monotonic",
    }[damage]
    assert codes == [expected]
    (finding,) = _of(out, "finding")
    assert finding["file"] == str(index)
    (summary,) = _of(out, "summary")
    assert summary["start"] == 0
    assert summary["partial"] is False
    # The summary counts the finding it shows.
    assert summary["findings"]["warning"] + summary["findings"]["error"] == 1
    # Text says the same.
    text = kdump("dump", "--from-offset", str(first), str(log)).stdout
    assert f" {expected} at {index}:" in text


def test_an_active_segments_preallocated_index_is_no_finding(kdump: Kdump, tmp_path: Path) -> None:
    log = _big(tmp_path)
    index, tindex = log.with_suffix(".index"), log.with_suffix(".timeindex")
    # A running broker's files: both preallocated from one segment.index.bytes (here 1200).
    index.write_bytes(index.read_bytes().ljust(1200, b"\x00"))
    tindex.write_bytes(tindex.read_bytes().ljust(1200, b"\x00"))
    out = _json(kdump, "--records", "--from-offset", "305", "--to-offset", "306", str(log))
    assert [r["offset"] for r in _of(out, "record")] == [305, 306]
    assert _of(out, "finding") == []
    assert _of(out, "summary")[0]["start"] > 0


def _summary(events: Any) -> ScanSummary:
    (summary,) = [ev for ev in events if isinstance(ev, ScanSummary)]
    return summary


def test_a_read_from_mid_segment_does_not_judge_the_segments_start(kdump: Kdump) -> None:
    """A read from an index entry in the middle of a segment starts at a batch above the file
    name's offset: that says nothing about the segment's first batch, which it did not read."""
    part = SAMPLES / "logdir" / "c-gzip-0"
    whole = _json(kdump, str(part))
    assert _of(whole, "finding") == []
    assert _of(whole, "summary")[0]["partial"] is False
    out = _json(kdump, "--from-offset", "2700", str(part))
    assert _of(out, "finding") == []
    (summary,) = _of(out, "summary")
    assert summary["partial"] is True
    assert 0 < summary["start"] < summary["end_position"] == summary["size"]
    assert summary["first_offset"] <= 2700 <= summary["last_offset"]
    first_batch = _of(out, "batch")[0]
    assert first_batch["position"] >= summary["start"]
    text = kdump("dump", "--from-offset", "2700", str(part)).stdout
    (line,) = [ln for ln in text.splitlines() if ln.startswith("Summary:")]
    assert (
        f"offsets {summary['first_offset']}..{summary['last_offset']}, partial read of positions "
        f"{summary['start']}..{summary['size']} of {summary['size']} (nothing else checked)"
    ) in line
    assert "segment-base-mismatch" not in text


def test_a_whole_read_summary_is_unchanged(kdump: Kdump) -> None:
    part = SAMPLES / "logdir" / "c-gzip-0"
    text = kdump("dump", "--to-offset", "2500", str(part)).stdout
    (line,) = [ln for ln in text.splitlines() if ln.startswith("Summary:")]
    assert "partial" not in line
    assert "valid bytes 176174 of 176174" in line


def test_a_max_bytes_read_says_its_range_and_judges_nothing_past_it(tmp_path: Path) -> None:
    log = _big(tmp_path)
    data = bytearray(log.read_bytes())
    positions = sorted(_batch_positions(log).values())
    # Framing lost at batch 5 (a length field below the minimum); batch 30 starts past the limit.
    data[positions[5] + 8 : positions[5] + 12] = (3).to_bytes(4, "big")
    log.write_bytes(bytes(data))
    limit = positions[20] + 5
    events = list(dump_targets([discover(str(log))], DumpOptions(max_bytes=limit)))
    summary = _summary(events)
    assert summary.partial
    assert summary.start == 0
    assert summary.scanned_bytes <= limit
    findings = [ev for ev in events if isinstance(ev, Finding)]
    codes = [f.code for f in findings]
    assert codes[0] == "invalid-batch-length"
    # The forensic resync finds batch 6 inside the range read; nothing is claimed about the rest.
    assert all("end of the file" not in f.message for f in findings)
    # A limit before any later batch: the skipped range is the range read, said so.
    events = list(dump_targets([discover(str(log))], DumpOptions(max_bytes=positions[6] - 1)))
    skipped = [ev for ev in events if isinstance(ev, Finding) and ev.code == "skipped-bytes"]
    assert len(skipped) == 1
    assert "the rest of the file was not read" in skipped[0].message


def test_from_offset_with_max_bytes_counts_from_the_start(tmp_path: Path) -> None:
    log = _big(tmp_path)
    whole = _summary(dump_targets([discover(str(log))], DumpOptions()))
    options = DumpOptions(filter=DumpFilter(from_offset=305), max_bytes=whole.size)
    summary = _summary(dump_targets([discover(str(log))], options))
    assert summary.start > 0
    assert summary.partial
    assert summary.scanned_bytes == whole.size
