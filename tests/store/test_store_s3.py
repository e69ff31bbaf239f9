"""The read-only commands on s3:// (a real S3 server, see tests/s3_server.py) give exactly what the
same files give locally: every finding, every batch and record, every seek answer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from corpus import CORPUS_DIRS


@pytest.fixture(scope="module")
def uploaded(s3_store: Any, corpus_root: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The corpus log dirs (without their oracles) locally and in the store."""
    local = tmp_path_factory.mktemp("s3copy") / "logs"
    for name in CORPUS_DIRS:
        shutil.copytree(corpus_root / name, local / name, ignore=shutil.ignore_patterns("expected"))
    return local, s3_store.upload(local, "store-tests/logs")


def _same(kdump: Any, local: Path, url: str, *args: str) -> str:
    """Run a command on the local path and on its URL; both outputs and exit codes must agree."""
    here = kdump(*args, str(local))
    there = kdump(*args, url)
    assert there.exit_code == here.exit_code, there.output
    assert there.stdout.replace(url, "LOC") == here.stdout.replace(str(local), "LOC")
    return there.stdout


@pytest.mark.parametrize("name", CORPUS_DIRS)
def test_verify_on_s3_equals_local(kdump: Any, uploaded: tuple[Path, str], name: str) -> None:
    local, url = uploaded
    out = _same(kdump, local / name, f"{url}/{name}", "verify", "--format", "json", "--fail-on", "info")
    rows = [json.loads(line) for line in out.splitlines()]
    assert any(r["type"] == "summary" for r in rows)
    # Findings and rows name the remote path as given.
    assert all(r["file"].startswith(f"{url}/{name}") for r in rows if r.get("file"))


def test_verify_deep_on_s3_equals_local(kdump: Any, uploaded: tuple[Path, str]) -> None:
    local, url = uploaded
    _same(kdump, local, url, "verify", "--deep", "--format", "json", "--fail-on", "info")


def _partitions(local: Path) -> list[Path]:
    return sorted(p for p in local.glob("*/*") if p.is_dir() and any(p.glob("*.log")))


def test_dump_records_on_s3_equals_local(kdump: Any, uploaded: tuple[Path, str]) -> None:
    local, url = uploaded
    parts = _partitions(local)
    assert parts
    for part in parts:
        rel = part.relative_to(local).as_posix()
        out = _same(kdump, part, f"{url}/{rel}", "dump", "--records", "--format", "json")
        assert '"type":"record"' in out or '"type":"batch"' in out or "summary" in out


def test_dump_batches_text_on_s3_equals_local(kdump: Any, uploaded: tuple[Path, str]) -> None:
    local, url = uploaded
    for part in _partitions(local):
        rel = part.relative_to(local).as_posix()
        _same(kdump, part, f"{url}/{rel}", "dump", "--format", "text")


@pytest.mark.parametrize("when", ["earliest", "latest", "max-timestamp", "1795297245500"])
def test_seek_on_s3_equals_local(kdump: Any, uploaded: tuple[Path, str], when: str) -> None:
    local, url = uploaded
    for part in _partitions(local):
        rel = part.relative_to(local).as_posix()
        here = kdump("seek-by-time", "--format", "json", when, str(part))
        there = kdump("seek-by-time", "--format", "json", when, f"{url}/{rel}")
        assert there.exit_code == here.exit_code
        a = json.loads(here.stdout.replace(str(part), "LOC"))
        b = json.loads(there.stdout.replace(f"{url}/{rel}", "LOC"))
        if a["used_mtime"]:
            # No batch has a timestamp, so the broker's rule falls back to the file's modification
            # time; an object store keeps the upload's time instead: only that may differ.
            assert b["used_mtime"]
            for row in (a, b):
                for key in (
                    "segment_largest_timestamp",
                    "notes",
                    "offset",
                    "timestamp",
                    "segment",
                    "position",
                ):
                    row.pop(key, None)
        assert a == b


def test_missing_url_is_unreadable(kdump: Any, uploaded: tuple[Path, str]) -> None:
    _local, url = uploaded
    result = kdump("verify", f"{url}/no-such-dir")
    assert result.exit_code == 3
    assert "no such file or directory" in result.stderr


@pytest.mark.parametrize("command", ["reindex", "trim-tail", "restore"])
def test_repairs_refuse_urls(kdump: Any, uploaded: tuple[Path, str], command: str) -> None:
    _local, url = uploaded
    result = kdump(command, f"{url}/kafka-3.8.0")
    assert result.exit_code == 3
    assert "repairs local files only" in result.stderr
    assert result.stderr.count(".") <= 3  # one sentence


def test_coverage_counts_bytes_present(kdump: Any, uploaded: tuple[Path, str]) -> None:
    """The summary's bytes (present and checked) are the same remote as local."""
    local, url = uploaded
    name = CORPUS_DIRS[0]
    here = [json.loads(x) for x in kdump("verify", "--format", "json", str(local / name)).stdout.splitlines()]
    there = [json.loads(x) for x in kdump("verify", "--format", "json", f"{url}/{name}").stdout.splitlines()]
    pick = [(r["size"], r["valid_bytes"]) for r in here if r["type"] == "summary" and r["file"]]
    assert pick
    assert pick == [(r["size"], r["valid_bytes"]) for r in there if r["type"] == "summary" and r["file"]]
    assert any(size for size, _ in pick)


@pytest.fixture(scope="module")
def big_partition(s3_store: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A partition of three segments of ~2.4 MB each (400 batches of 20 records), locally and in
    the store."""
    from builders import BASE_TS, SegmentBuilder, records

    root = tmp_path_factory.mktemp("bigseek") / "logs"
    part = root / "big-0"
    offset = 0
    for s in range(3):
        seg = SegmentBuilder(base_offset=offset)
        for b in range(400):
            seg.add_v2(records(20, start_ts=BASE_TS + (s * 400 + b) * 100, value_size=300))
        seg.write(part)
        offset = seg.next_offset
    return part, s3_store.upload(root, "store-tests/bigseek") + "/big-0"


@pytest.mark.parametrize("when", ["earliest", "latest", "max-timestamp", "mid", "last-segment"])
def test_seek_on_s3_fetches_ranges_not_segments(
    kdump: Any, big_partition: tuple[Path, str], when: str
) -> None:
    """A seek reads the index entries and the few batches the broker's rule walks through: on a
    store, a small part of the log, never whole segments."""
    from builders import BASE_TS

    from kdump.store.remote import FETCHED

    part, url = big_partition
    target = {"mid": str(BASE_TS + 500 * 100 + 7), "last-segment": str(BASE_TS + 1100 * 100)}.get(when, when)
    here = kdump("seek-by-time", "--format", "json", target, str(part))
    before = FETCHED.bytes
    there = kdump("seek-by-time", "--format", "json", target, url)
    fetched = FETCHED.bytes - before
    assert there.exit_code == here.exit_code == 0, there.output
    assert json.loads(there.stdout.replace(url, "LOC")) == json.loads(here.stdout.replace(str(part), "LOC"))
    log_bytes = sum(p.stat().st_size for p in part.glob("*.log"))
    index_bytes = sum(p.stat().st_size for p in part.iterdir() if p.suffix in (".index", ".timeindex"))
    # Indexes whole, then a few batches by range: well under one segment's third.
    assert fetched - index_bytes < log_bytes / 30, (fetched, index_bytes, log_bytes)


def test_verify_opens_each_nonempty_file_once_and_no_empty_one(
    kdump: Any, uploaded: tuple[Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store answers each open with a metadata request: verify opens every file with bytes once
    (a log dir holds many empty files, which the listing already says are empty)."""
    from kdump.store import remote

    local, url = uploaded
    opened: list[str] = []
    original = remote.RemoteReader.__init__

    def counting(self: Any, location: str, size: int | None = None) -> None:
        opened.append(location)
        original(self, location, size)

    monkeypatch.setattr(remote.RemoteReader, "__init__", counting)
    name = CORPUS_DIRS[0]
    result = kdump("verify", "--jobs", "1", "--format", "json", "--fail-on", "info", f"{url}/{name}")
    assert result.exit_code in (0, 1), result.output
    files = [p for p in (local / name).rglob("*") if p.is_file()]
    empty = {f"{url}/{p.relative_to(local).as_posix()}" for p in files if p.stat().st_size == 0}
    assert empty, "the corpus log dir holds empty files (active segments' indexes, checkpoints)"
    assert not empty & set(opened)
    assert len(opened) == len(set(opened))


def test_dump_from_offset_on_s3_fetches_from_the_index_entry(
    kdump: Any, big_partition: tuple[Path, str]
) -> None:
    """`dump --from-offset` finds its start by the offset index (read by ranges) and fetches the
    log from there: the batches it shows, not the segment."""
    from kdump.store.remote import FETCHED

    part, url = big_partition
    args = ("dump", "--from-offset", "23990", "--records", "--format", "json")
    here = kdump(*args, str(part))
    before = FETCHED.bytes
    there = kdump(*args, url)
    fetched = FETCHED.bytes - before
    assert there.exit_code == here.exit_code == 0, there.output
    assert there.stdout.replace(url, "LOC") == here.stdout.replace(str(part), "LOC")
    assert '"offset":23999' in there.stdout
    segment = max(p.stat().st_size for p in part.glob("*.log"))
    assert fetched < segment / 20, (fetched, segment)


def test_verify_and_dump_of_a_big_stored_segment_hand_back_what_they_scanned(
    kdump: Any, s3_store: Any, tmp_path: Path
) -> None:
    """verify and dump scan a stored segment as it arrives and hand back the memory of what they passed:
    its footprint does not follow the segment's size; findings are those of the local files,
    damage included."""
    import random

    from builders import BASE_TS, SegmentBuilder

    from kdump.formats.records import NewRecord
    from kdump.store.buffers import RELEASED

    rnd = random.Random(3)
    seg = SegmentBuilder()
    for b in range(90):  # ~45 MB: beyond a few release steps
        seg.add_v2([NewRecord(b"k%d" % i, rnd.randbytes(50_000), BASE_TS + b) for i in range(10)])
    log = seg.write(tmp_path / "logs" / "big-0")
    data = bytearray(log.read_bytes())
    middle = seg.spans[len(seg.spans) // 2][0]
    data[middle + 1000] ^= 0xFF  # a checksum failure half way: found past released memory
    log.write_bytes(bytes(data))
    url = s3_store.upload(tmp_path / "logs", "store-tests/bigverify") + "/big-0"
    for deep in ((), ("--deep",)):
        here = kdump("verify", "--jobs", "1", "--format", "json", *deep, str(log.parent))
        before = RELEASED.bytes
        there = kdump("verify", "--jobs", "1", "--format", "json", *deep, url)
        assert there.exit_code == here.exit_code == 1, there.output
        # Repair hints name a local copy of a stored file (repairs work on local files only).
        stored = there.stdout.replace(url, "LOC").replace("a local copy of LOC", "LOC")
        assert stored == here.stdout.replace(str(log.parent), "LOC")
        assert '"code":"crc-mismatch"' in there.stdout
        assert RELEASED.bytes - before > len(data) // 2
    # dump, batches and records, the same way.
    for records in ((), ("--records",)):
        here = kdump("dump", "--jobs", "1", "--format", "json", *records, str(log))
        before = RELEASED.bytes
        there = kdump("dump", "--jobs", "1", "--format", "json", *records, f"{url}/{log.name}")
        assert there.exit_code == here.exit_code, there.output
        stored = there.stdout.replace(url, "LOC").replace("a local copy of LOC", "LOC")
        assert stored == here.stdout.replace(str(log.parent), "LOC")
        assert RELEASED.bytes - before > len(data) // 2
