"""verify on tiered storage, on copies of real 4.4.0 and 3.9.1 brokers' data: the healthy log dir and its
remote store verify clean (the remote index cache, a log start below the first local segment and the
remote segments are all legal), and each damage planted in a copy is found with its code.

The remote index cache findings follow what the broker did when started on such a cache (Kafka 3.9.1
and 4.4.0, tried while building this test): a corrupt index or a name it cannot parse stops it at
start-up; `.tmp`, `.deleted` and incomplete entries it deletes; a file with a valid segment id and an
unknown suffix it ignores.
"""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import pytest
from builders import SegmentBuilder
from click.testing import Result
from tiered_corpus import VERSIONS, log_dir_copy, remote_copy, tiered_root

from kdump.formats.batch import BatchHeader
from kdump.formats.internal.remote_log_metadata import decode_remote_log_metadata_record
from kdump.formats.records import NewRecord, Record
from kdump.scan import open_buffer, scan_log

Run = Callable[..., Result]

COVERED_CODES = {
    "remote-index-cache-name-invalid",
    "remote-index-cache-corrupt",
    "remote-index-cache-leftover",
    "remote-segment-missing",
    "remote-segment-mismatch",
    "remote-segment-copy-unfinished",
    "remote-segment-delete-unfinished",
    "remote-segment-unknown",
    "remote-log-gap",
    "remote-metadata-missing",
}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiered_root(tmp_path_factory.getbasetemp())


@pytest.fixture
def data(root: Path, tmp_path: Path) -> Path:
    return log_dir_copy(root, "4.4.0", tmp_path / "data")


@pytest.fixture
def remote(root: Path, tmp_path: Path) -> Path:
    return remote_copy(root, "4.4.0", tmp_path / "remote")


def _verify(kdump: Run, *args: str) -> tuple[int, list[dict[str, object]]]:
    result = kdump("verify", "--format", "json", *args)
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    return result.exit_code, rows


def _codes(rows: list[dict[str, object]]) -> dict[str, str]:
    """code -> severity of every finding (the last of each code)."""
    return {str(r["code"]): str(r["severity"]) for r in rows if r["type"] == "finding"}


def _errors(rows: list[dict[str, object]]) -> set[str]:
    return {str(r["code"]) for r in rows if r["type"] == "finding" and r["severity"] == "error"}


def _cache(data: Path) -> Path:
    return data / "remote-log-index-cache"


def _cached(data: Path, offset: int, kind: str) -> Path:
    return next(_cache(data).glob(f"{offset}_*.{kind}"))


def _remote_part(remote: Path) -> Path:
    return next((remote / "kafka-tiered-storage").glob("tiered-0-*"))


def _remote_files(remote: Path, offset: int) -> list[Path]:
    return sorted(_remote_part(remote).glob(f"{offset:020d}-*"))


# --- healthy brokers' data ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_a_healthy_tiered_broker_verifies_clean(root: Path, tmp_path: Path, kdump: Run, version: str) -> None:
    data = log_dir_copy(root, version, tmp_path / "data")
    remote = remote_copy(root, version, tmp_path / "remote")
    code, rows = _verify(kdump, str(data), str(remote))
    assert _errors(rows) == set(), _codes(rows)
    assert code == 0
    tiered = next(r for r in rows if r["type"] == "summary" and str(r["file"]).endswith("/tiered-0"))
    assert (tiered["tiered"], tiered["log_start_offset"], tiered["local_log_start_offset"]) == (True, 37, 280)
    stores = [
        r for r in rows if r["type"] == "summary" and "kafka-tiered-storage/tiered-0-" in str(r["file"])
    ]
    assert len(stores) == 1
    assert stores[0]["segments"] >= 10
    assert stores[0]["checked_bytes"] == stores[0]["log_bytes"] > 0
    # The remote index cache is legal, and its real entries pass the broker's checks.
    assert not any("remote-log-index-cache" in str(r.get("file")) for r in rows if r["type"] == "finding")


def test_the_remote_store_alone_with_its_metadata_named(data: Path, remote: Path, kdump: Run) -> None:
    code, rows = _verify(kdump, "--remote-log-metadata", str(data), str(remote))
    assert (code, _errors(rows)) == (0, set())
    code, rows = _verify(
        kdump, "--remote-log-metadata", str(data / "__remote_log_metadata-0"), str(_remote_part(remote))
    )
    assert (code, _errors(rows)) == (0, set())


def test_the_cache_given_alone_is_checked(data: Path, kdump: Run) -> None:
    result = kdump("verify", str(_cache(data)))
    assert result.exit_code == 0, result.stdout
    files = len(list(_cache(data).iterdir()))
    assert f"a remote index cache of {files // 3} segments ({files} files)" in result.stdout


# --- the remote index cache --------------------------------------------------------------------------------


def _cache_plant_corrupt_index(data: Path) -> None:
    with _cached(data, 100, "index").open("ab") as fh:
        fh.write(b"\x01\x02\x03")


def _cache_plant_decreasing_times(data: Path) -> None:
    _cached(data, 100, "timeindex").write_bytes(struct.pack(">qi", 2000, 5) + struct.pack(">qi", 1000, 10))


def _cache_plant_txn_below_base(data: Path) -> None:
    _cached(data, 100, "txnindex").write_bytes(struct.pack(">hqqqq", 0, 7, 40, 50, 51))


def _cache_plant_txn_version(data: Path) -> None:
    _cached(data, 100, "txnindex").write_bytes(struct.pack(">hqqqq", 3, 7, 100, 105, 106))


def _cache_plant_stray_file(data: Path) -> None:
    (_cache(data) / "notes.txt").write_text("hello")


def _cache_plant_directory(data: Path) -> None:
    (_cache(data) / "sub.dir").mkdir()


@pytest.mark.parametrize(
    ("plant", "code"),
    [
        (_cache_plant_corrupt_index, "remote-index-cache-corrupt"),
        (_cache_plant_decreasing_times, "remote-index-cache-corrupt"),
        (_cache_plant_txn_below_base, "remote-index-cache-corrupt"),
        (_cache_plant_txn_version, "remote-index-cache-corrupt"),
        (_cache_plant_stray_file, "remote-index-cache-name-invalid"),
        (_cache_plant_directory, "remote-index-cache-name-invalid"),
    ],
)
def test_cache_damage_that_stops_the_broker_is_an_error(
    data: Path, kdump: Run, plant: Callable[[Path], None], code: str
) -> None:
    plant(data)
    exit_code, rows = _verify(kdump, str(data))
    assert exit_code == 1
    assert _errors(rows) == {code}
    finding = next(r for r in rows if r.get("code") == code)
    assert "remote-log-index-cache" in str(finding["file"])


def test_a_txn_entry_version_says_which_releases_refuse_it(data: Path, kdump: Run) -> None:
    _cache_plant_txn_version(data)
    _, rows = _verify(kdump, str(data))
    message = next(str(r["message"]) for r in rows if r.get("code") == "remote-index-cache-corrupt")
    assert "Kafka 4.x refuses to start on it (Kafka 3.9 reads it as version 0)" in message


def test_what_the_broker_deletes_or_ignores_at_start_up_is_info(data: Path, kdump: Run) -> None:
    index = _cached(data, 130, "index")
    shutil.copy(index, index.with_name(index.name + ".deleted"))
    shutil.copy(index, index.with_name(index.name + ".tmp"))
    _cached(data, 160, "timeindex").unlink()  # the broker then deletes 160's other two files
    shutil.copy(index, index.with_name(index.name.replace(".index", ".foo")))
    exit_code, rows = _verify(kdump, str(data))
    assert exit_code == 0
    findings = [r for r in rows if r["type"] == "finding" and "remote-log-index-cache" in str(r["file"])]
    assert {(r["code"], r["severity"]) for r in findings} == {
        ("remote-index-cache-leftover", "info"),
        ("unknown-entry", "info"),
    }
    assert sum(1 for r in findings if r["code"] == "remote-index-cache-leftover") == 4


# --- the remote store against __remote_log_metadata ----------------------------------------------------------


def _rewrite_metadata(data: Path, drop: Callable[[dict[str, object]], bool]) -> int:
    """Rewrite `__remote_log_metadata-0` without the records `drop` picks (epochs kept)."""
    log = data / "__remote_log_metadata-0" / "00000000000000000000.log"
    kept: list[tuple[int, int, bytes, int]] = []
    dropped = 0
    with open_buffer(log) as buf:
        batch: BatchHeader | None = None
        for ev in scan_log(buf, deep=True):
            if isinstance(ev, BatchHeader):
                batch = ev
            elif isinstance(ev, Record) and batch is not None:
                assert ev.value is not None
                value = decode_remote_log_metadata_record(ev.value).value
                assert value is not None
                if drop(value):
                    dropped += 1
                    continue
                kept.append((ev.offset, ev.timestamp, bytes(ev.value), batch.partition_leader_epoch))
    # The kept records get offsets one after another, as a broker that never wrote the dropped ones
    # would have given them (a hole in this delete-policy topic would be an offset-hole of its own).
    seg = SegmentBuilder(base_offset=kept[0][0] if kept else 0)
    for _offset, ts, value, epoch in kept:
        seg.add_v2([NewRecord(None, value, ts)], leader_epoch=epoch)
    for f in log.parent.glob("00000000000000000000.*"):
        f.unlink()
    seg.write(log.parent)
    return dropped


def _state_of(start: int, state: str) -> Callable[[dict[str, object]], bool]:
    """Picks the update record that moved topic `tiered`'s segment starting at `start` to `state`."""

    ids: set[str] = set()

    def pick(value: dict[str, object]) -> bool:
        data = value["data"]
        assert isinstance(data, dict)
        if (
            value["type"] == "REMOTE_LOG_SEGMENT_METADATA_RECORD"
            and data["startOffset"] == start
            and data["remoteLogSegmentId"]["topicIdPartition"]["name"] == "tiered"
        ):
            ids.add(data["remoteLogSegmentId"]["id"])
        return value["state"] == state and data.get("remoteLogSegmentId", {}).get("id") in ids

    return pick


def test_no_metadata_is_an_error(remote: Path, kdump: Run) -> None:
    code, rows = _verify(kdump, str(remote))
    assert code == 1
    assert _errors(rows) == {"remote-metadata-missing"}


def test_a_missing_remote_log_is_an_error(data: Path, remote: Path, kdump: Run) -> None:
    next(p for p in _remote_files(remote, 130) if p.suffix == ".log").unlink()
    code, rows = _verify(kdump, str(data), str(remote))
    assert code == 1
    assert _errors(rows) == {"remote-segment-missing"}
    message = next(str(r["message"]) for r in rows if r.get("code") == "remote-segment-missing")
    assert "offsets 130..159" in message
    assert "its .log is not in the remote store" in message


def test_a_missing_remote_epoch_checkpoint_is_an_error(data: Path, remote: Path, kdump: Run) -> None:
    next(p for p in _remote_files(remote, 190) if p.suffix == ".leader_epoch_checkpoint").unlink()
    code, rows = _verify(kdump, str(data), str(remote))
    assert (code, _errors(rows)) == (1, {"remote-segment-missing"})


def test_files_of_a_segment_nobody_recorded_are_extra(data: Path, remote: Path, kdump: Run) -> None:
    for p in _remote_files(remote, 220):
        stem, rest = p.name.split(".", 1)
        shutil.copy(p, p.with_name(f"{stem.split('-')[0]}-AAAAAAAAAAAAAAAAAAAAAA.{rest}"))
    code, rows = _verify(kdump, str(data), str(remote))
    assert code == 0
    assert _codes(rows).get("remote-segment-unknown") == "warning"
    code, _ = _verify(kdump, "--fail-on", "warning", str(data), str(remote))
    assert code == 1


def test_files_left_after_their_deletion_finished_are_extra(data: Path, remote: Path, kdump: Run) -> None:
    # Offsets 0..29 were deleted from remote storage (DeleteRecords): files under that segment's id again.
    deleted_id = _deleted_segment_id(data)
    for p in _remote_files(remote, 30):
        rest = p.name.split(".", 1)[1]
        shutil.copy(p, p.with_name(f"{30:020d}-{deleted_id}.{rest}"))
    code, rows = _verify(kdump, str(data), str(remote))
    message = next(str(r["message"]) for r in rows if r.get("code") == "remote-segment-unknown")
    assert "its deletion finished per __remote_log_metadata" in message
    assert code == 0


def _deleted_segment_id(data: Path) -> str:
    from kdump.ops.tiered.remote_metadata import load_remote_log_metadata

    meta = load_remote_log_metadata([data])
    part = next(p for p in meta.partitions.values() if p.topic == "tiered")
    return next(s.segment_id for s in part.deleted.values() if s.start_offset == 0)


def test_a_copy_that_never_finished_is_found(data: Path, remote: Path, kdump: Run) -> None:
    assert _rewrite_metadata(data, _state_of(340, "COPY_SEGMENT_FINISHED")) == 1
    code, rows = _verify(kdump, str(data), str(remote))
    assert _codes(rows)["remote-segment-copy-unfinished"] == "warning"
    assert _errors(rows) == set()
    assert code == 0
    # The broker never copied 340..369 then: latest-tiered is one segment lower.
    seek = kdump("seek-by-time", "--format", "json", "-5", str(data / "tiered-0"))
    assert json.loads(seek.stdout)["offset"] == 339


def test_a_deletion_that_never_finished_is_info(data: Path, remote: Path, kdump: Run) -> None:
    assert _rewrite_metadata(data, _state_of(0, "DELETE_SEGMENT_FINISHED")) == 1
    code, rows = _verify(kdump, str(data), str(remote))
    assert _codes(rows)["remote-segment-delete-unfinished"] == "info"
    assert code == 0


def test_a_hole_in_the_remote_log_is_an_error_on_both_sides(data: Path, remote: Path, kdump: Run) -> None:
    assert _rewrite_metadata(data, _state_of(130, "COPY_SEGMENT_FINISHED")) == 1
    code, rows = _verify(kdump, str(data), str(remote))
    assert code == 1
    gaps = [r for r in rows if r.get("code") == "remote-log-gap"]
    assert {str(r["file"]).rsplit("/", 1)[-1].split("-CN")[0] for r in gaps} >= {"tiered-0"}
    assert len(gaps) == 2  # the log dir's partition (37..279 not covered) and the store's partition
    assert all("offsets 130..159" in str(r["message"]) for r in gaps)


def test_corrupt_remote_bytes_are_found_by_the_scanner(data: Path, remote: Path, kdump: Run) -> None:
    log = next(p for p in _remote_files(remote, 250) if p.suffix == ".log")
    raw = bytearray(log.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    log.write_bytes(bytes(raw))
    code, rows = _verify(kdump, str(data), str(remote))
    assert code == 1
    assert "crc-mismatch" in _errors(rows)


def test_a_remote_log_longer_than_recorded_is_a_mismatch(data: Path, remote: Path, kdump: Run) -> None:
    log = next(p for p in _remote_files(remote, 250) if p.suffix == ".log")
    with log.open("ab") as fh:
        fh.write(b"\x00" * 100)
    code, rows = _verify(kdump, str(data), str(remote))
    assert code == 1
    message = next(str(r["message"]) for r in rows if r.get("code") == "remote-segment-mismatch")
    assert "its .log holds 4306 bytes, not 4206" in message


def test_another_segments_bytes_are_a_mismatch(data: Path, remote: Path, kdump: Run) -> None:
    # Same size, other offsets: the bytes of 160..189 under 130..159's name.
    src = next(p for p in _remote_files(remote, 160) if p.suffix == ".log")
    dst = next(p for p in _remote_files(remote, 130) if p.suffix == ".log")
    assert src.stat().st_size == dst.stat().st_size
    shutil.copy(src, dst)
    code, rows = _verify(kdump, str(data), str(remote))
    assert code == 1
    assert "remote-segment-mismatch" in _errors(rows)
    message = next(str(r["message"]) for r in rows if r.get("code") == "remote-segment-mismatch")
    assert "its first offset is 160, not 130" in message


def test_a_damaged_remote_index_is_found(data: Path, remote: Path, kdump: Run) -> None:
    index = next(p for p in _remote_files(remote, 250) if p.suffix == ".index")
    with index.open("ab") as fh:
        fh.write(b"\x00\x01")
    code, rows = _verify(kdump, str(data), str(remote))
    assert code == 1
    assert "index-size-invalid" in _errors(rows)  # the broker cannot rebuild a remote index: an error


def test_the_remote_store_at_an_s3_url(data: Path, remote: Path, kdump: Run, s3_store: object) -> None:
    url = s3_store.upload(remote, "tiered-clean")  # type: ignore[attr-defined]
    code, rows = _verify(kdump, "--remote-log-metadata", str(data), url)
    assert (code, _errors(rows)) == (0, set())
    store = [r for r in rows if r["type"] == "summary" and "kafka-tiered-storage/tiered-0-" in str(r["file"])]
    assert store[0]["checked_bytes"] == store[0]["log_bytes"] > 0
    next(p for p in _remote_files(remote, 130) if p.suffix == ".log").unlink()
    url = s3_store.upload(remote, "tiered-damaged")  # type: ignore[attr-defined]
    code, rows = _verify(kdump, "--remote-log-metadata", str(data), url)
    assert (code, _errors(rows)) == (1, {"remote-segment-missing"})
    seek = kdump("seek-by-time", "--format", "json", "--remote", url, "-2", str(data / "tiered-0"))
    assert json.loads(seek.stdout)["segment"].startswith(url)
