"""`salvage` on built partitions: partial records, damaged base offsets, the partition's end, whole
lost segments, the output directory's refusals, and a property: nothing unverified is ever kept."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
from builders import BASE_TS, SegmentBuilder, build_partition, records
from corruptions import make_log_dir, tree_state
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kdump.errors import RefusedError
from kdump.findings import Severity
from kdump.formats.constants import Codec
from kdump.model.log_dir import Target
from kdump.model.partition import PartitionDir
from kdump.ops.checks.verify import VerifyOptions, verify_targets
from kdump.ops.repair.reindex import plan_partition
from kdump.ops.salvage.output import OutputDir, salvage
from kdump.ops.salvage.plan import plan_salvage
from kdump.ops.salvage.result import SalvageResult
from kdump.render.salvage import record_lines
from kdump.scan.log_scanner import scan_log


def _salvage(part: Path, out: Path, parquet: bool = False) -> SalvageResult:
    return salvage(PartitionDir.load(part), out, record_line=record_lines(), parquet=parquet)


def _jsonl(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _assert_clean(result: SalvageResult) -> None:
    clean = result.clean.path
    report = next(iter(verify_targets([Target(str(clean), clean, "partition", None)], VerifyOptions(jobs=1))))
    assert not [f for f in report.findings if f.severity >= Severity.ERROR]
    assert plan_partition(PartitionDir.load(clean), None).changes == []


def _batches(log: Path) -> list[tuple[int, int]]:
    """(position, size) of each batch of a log."""
    return [
        (ev.position, ev.size) for ev in scan_log(log.read_bytes(), resync=False) if hasattr(ev, "crc_ok")
    ]


# --- partial records ---------------------------------------------------------------------------


def _three_batches(part: Path, codec: int, n: int = 400) -> tuple[Path, int, int]:
    """A segment: 10 plain records, `n` records with `codec`, 10 plain records. Returns the log and
    the middle batch's position and size."""
    seg = SegmentBuilder()
    seg.add_v2(records(10))
    position, _ = seg.add_v2(records(n, start_ts=BASE_TS + 10, value_size=200), codec=codec)
    seg.add_v2(records(10, start_ts=BASE_TS + 10 + n))
    log = seg.write(part)
    size = _batches(log)[1][1]
    return log, position, size


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4], ids=lambda c: c.name)
def test_partial_records_before_the_damage_are_offered_unverified(tmp_path: Path, codec: Codec) -> None:
    part = tmp_path / "in" / "t-0"
    log, position, size = _three_batches(part, codec)
    data = bytearray(log.read_bytes())
    # Damage near the end of the batch: the codec frame still yields what comes before it.
    data[position + size - 40] ^= 0xFF
    log.write_bytes(bytes(data))
    result = _salvage(part, tmp_path / "out")

    assert result.plan.lost_offsets == [(10, 409)]
    kept = [row["offset"] for row in _jsonl(result.out / "records.jsonl")]
    assert kept == [*range(10), *range(410, 420)]
    partial = _jsonl(result.out / "partial-unverified.jsonl")
    assert partial, "records before the damage decode"
    assert all(row["type"] == "unverified-record" and row["unverified"] is True for row in partial)
    offsets = [row["offset"] for row in partial]
    assert offsets == list(range(10, 10 + len(offsets)))
    original = {i + 10: r for i, r in enumerate(records(400, start_ts=BASE_TS + 10, value_size=200))}
    # Every record but possibly the one holding the damage is exactly what was written.
    for row in partial[:-1]:
        rec = original[int(str(row["offset"]))]
        assert row["key"] == rec.key.decode()
        assert row["value"] == rec.value.decode()
    assert result.partial_records == len(partial)
    assert result.report["regions"][0]["damaged_entries"][0]["partial_records"] == len(partial)
    _assert_clean(result)


# --- base offsets, which the checksum does not cover ----------------------------------------------


@pytest.mark.parametrize("shift", [3, 1000, -3], ids=["up-a-little", "up-a-lot", "down"])
def test_a_damaged_base_offset_drops_that_batch_only(tmp_path: Path, shift: int) -> None:
    part = tmp_path / "in" / "t-0"
    build_partition(part, segments=1, batches_per_segment=10, records_per_batch=10)
    log = next(part.glob("*.log"))
    position = _batches(log)[5][0]
    data = bytearray(log.read_bytes())
    (base,) = struct.unpack_from(">q", data, position)
    struct.pack_into(">q", data, position, base + shift)
    log.write_bytes(bytes(data))
    result = _salvage(part, tmp_path / "out")
    assert result.plan.lost_offsets == [(50, 59)]
    [region] = result.plan.regions
    assert "offset order" in region.entries[0].reason
    assert [row["offset"] for row in _jsonl(result.out / "records.jsonl")] == [
        *range(50),
        *range(60, 100),
    ]
    _assert_clean(result)


# --- the end of the partition, and whole segments -------------------------------------------------


def test_damage_in_the_last_batch_reports_the_end_the_header_claims(tmp_path: Path) -> None:
    part = tmp_path / "in" / "t-0"
    logs = build_partition(part, segments=2, batches_per_segment=3, records_per_batch=10)
    position, size = _batches(logs[-1])[-1]
    data = bytearray(logs[-1].read_bytes())
    data[position + size - 1] ^= 0xFF
    logs[-1].write_bytes(bytes(data))
    result = _salvage(part, tmp_path / "out")
    assert result.plan.lost_offsets == [(50, 59)]
    lost = result.report["regions"][0]["lost_offsets"]
    assert lost == {"first": 50, "last": 59, "count": 10, "exact": False}
    assert result.records == 50
    _assert_clean(result)


def test_a_segment_that_is_all_zeros_is_left_out(tmp_path: Path) -> None:
    part = tmp_path / "in" / "t-0"
    logs = build_partition(part, segments=3, batches_per_segment=2, records_per_batch=10)
    logs[1].write_bytes(bytes(logs[1].stat().st_size))
    result = _salvage(part, tmp_path / "out")
    assert result.plan.lost_offsets == [(20, 39)]
    assert sorted(p.name for p in result.clean.path.glob("*.log")) == [logs[0].name, logs[2].name]
    assert logs[1].name in result.clean.omitted
    assert result.records == 40
    _assert_clean(result)


def test_an_intact_partition_is_copied_whole(tmp_path: Path) -> None:
    part = tmp_path / "in" / "t-0"
    logs = build_partition(part, segments=2, batches_per_segment=3)
    result = _salvage(part, tmp_path / "out")
    assert result.plan.regions == []
    assert result.plan.lost_offsets == []
    for log in logs:
        assert (result.clean.path / log.name).read_bytes() == log.read_bytes()
        for suffix in (".index", ".timeindex"):
            assert (result.clean.path / log.with_suffix(suffix).name).read_bytes() == log.with_suffix(
                suffix
            ).read_bytes()
    assert result.ok


def test_offsets_past_int64_are_planned_like_any_other(tmp_path: Path) -> None:
    """The plan holds its candidates' offsets in arrays of int64; a forged segment whose last
    offsets run past it is still planned (as before: each batch verifies, its offsets increase)."""
    part = tmp_path / "in" / "t-0"
    seg = SegmentBuilder(base_offset=2**63 - 30)
    seg.add_v2(records(5))
    seg.add_v2(records(40))
    seg.write(part, indexes=False)
    plan = plan_salvage(PartitionDir.load(part))
    assert [k.header.last_offset for k in plan.kept] == [2**63 - 26, 2**63 + 14]
    assert plan.regions == []


# --- the output directory -------------------------------------------------------------------------


def test_the_output_directory_is_refused_where_it_could_do_harm(tmp_path: Path) -> None:
    part = tmp_path / "in" / "t-0"
    build_partition(part, segments=1)
    full = tmp_path / "full"
    full.mkdir()
    (full / "x").write_text("keep")
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    a_file = tmp_path / "file"
    a_file.write_text("keep")
    log_dir = make_log_dir(tmp_path / "kafka-logs", {"t-0": part})
    before = tree_state(tmp_path)
    for out, why in [
        (full, "not empty"),
        (link, "symbolic link"),
        (a_file, "not a directory"),
        (log_dir / "salvaged", "inside the Kafka log dir"),
        (log_dir / "deep" / "er", "inside the Kafka log dir"),
        (part / "salvaged", "inside the partition"),
        (tmp_path / "in" / "salvaged", "inside the Kafka log dir"),  # beside the partition given
    ]:
        with pytest.raises(RefusedError, match=why):
            OutputDir.create(out, part)
    assert tree_state(tmp_path) == before
    empty = tmp_path / "empty"
    empty.mkdir()
    assert OutputDir.create(empty, part).path == empty


def test_files_are_never_overwritten(tmp_path: Path) -> None:
    out = OutputDir(tmp_path)
    (tmp_path / "report.json").write_text("{}")
    with pytest.raises(RefusedError, match="already exists"):
        out.open_new("report.json")
    (tmp_path / "records.jsonl").symlink_to(tmp_path / "target")
    with pytest.raises(RefusedError):
        out.open_new("records.jsonl")
    assert not (tmp_path / "target").exists()


# --- Parquet --------------------------------------------------------------------------------------


def test_parquet_has_the_kafka_source_columns_and_every_record(corpus_root: Path, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    from kdump.spark.schema import KAFKA_COLUMNS, arrow_schema

    src = corpus_root / "kafka-3.8.0" / "txn-1"
    result = salvage(PartitionDir.load(src), tmp_path / "out", record_line=record_lines())
    table = pq.read_table(result.out / "records.parquet")
    kafka = arrow_schema(KAFKA_COLUMNS)
    assert table.schema.names[:8] == kafka.names
    assert [table.schema.field(n).type for n in kafka.names] == [f.type for f in kafka]
    assert table.schema.names[8:] == ["segment", "position", "isControl"]
    rows = table.to_pylist()
    lines = _jsonl(result.out / "records.jsonl")
    assert [r["offset"] for r in rows] == [line["offset"] for line in lines]
    assert all(r["topic"] == "txn" and r["partition"] == 1 for r in rows)
    assert [r["isControl"] for r in rows] == ["control" in line for line in lines]
    for r, line in zip(rows, lines, strict=True):
        assert r["timestamp"].timestamp() * 1000 == line["timestamp"]
        assert (r["value"].decode("utf-8", "backslashreplace") if r["value"] is not None else None) == line[
            "value"
        ]
        assert [h["key"] for h in r["headers"] or []] == [h["key"] for h in line["headers"]]  # type: ignore[attr-defined]


# --- the property: nothing unverified is kept -----------------------------------------------------


def _covered(data: bytes, batches: list[tuple[int, int]]) -> list[int]:
    """Positions a damage may hit without touching the fields a v2 checksum leaves out (base offset,
    leader epoch): those are tested on their own above."""
    out = []
    for position, size in batches:
        out.extend(
            p for p in range(position, position + size) if not (p - position < 8 or 12 <= p - position < 16)
        )
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_every_kept_byte_is_an_original_verified_batch(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    tmp = tmp_path_factory.mktemp("prop")
    part = tmp / "in" / "t-0"
    codec = data.draw(st.sampled_from([Codec.NONE, Codec.LZ4, Codec.ZSTD]))
    logs = build_partition(
        part, segments=2, batches_per_segment=4, records_per_batch=5, codec=codec, value_size=60
    )
    originals = {log.name: log.read_bytes() for log in logs}
    spans = {log.name: _batches(log) for log in logs}
    hits = data.draw(
        st.lists(
            st.tuples(st.integers(0, 1), st.integers(0, 10**9), st.integers(1, 255)), min_size=1, max_size=4
        )
    )
    for which, at, mask in hits:
        log = logs[which]
        candidates = _covered(originals[log.name], spans[log.name])
        raw = bytearray(log.read_bytes())
        raw[candidates[at % len(candidates)]] ^= mask
        log.write_bytes(bytes(raw))
    result = _salvage(part, tmp / "out")
    for log in logs:
        clean = (
            (result.clean.path / log.name).read_bytes() if (result.clean.path / log.name).exists() else b""
        )
        good = {originals[log.name][p : p + s] for p, s in spans[log.name]}
        for p, s in _batches(result.clean.path / log.name) if clean else []:
            assert clean[p : p + s] in good
    _assert_clean(result)
    # What is lost is exactly what is not kept; only past the last kept batch can the end of the loss
    # be uncertain (it is what a damaged header claims, and the report says so).
    kept = {int(str(row["offset"])) for row in _jsonl(result.out / "records.jsonl")}
    lost = {o for a, b in result.plan.lost_offsets for o in range(a, b + 1)}
    assert not kept & lost
    missing = set(range(40)) - kept - lost
    if missing:
        assert min(missing) > max(kept, default=-1)
        assert all(
            r["lost_offsets"] is None or not r["lost_offsets"]["exact"] for r in result.report["regions"][-1:]
        )


def test_plan_reads_only(tmp_path: Path) -> None:
    part = tmp_path / "in" / "t-0"
    build_partition(part, segments=2)
    before = tree_state(part)
    plan_salvage(PartitionDir.load(part))
    assert tree_state(part) == before


def test_a_verified_batch_whose_records_do_not_decode_fails_the_salvage(tmp_path: Path) -> None:
    from kdump.formats.batch import encode_v2_batch

    part = tmp_path / "in" / "t-0"
    seg = SegmentBuilder()
    seg.add_v2(records(5))
    # A checksum that verifies over a gzip payload that is not gzip: the bytes are what was written.
    bad = encode_v2_batch(
        base_offset=5,
        records_payload=b"not gzip at all",
        count=5,
        last_offset_delta=4,
        base_timestamp=BASE_TS,
        max_timestamp=BASE_TS,
        attributes=Codec.GZIP,
    )
    seg._append(bad, 5, BASE_TS)
    seg.add_v2(records(5, start_ts=BASE_TS + 10))
    seg.write(part)
    result = _salvage(part, tmp_path / "out")
    assert result.plan.lost_offsets == []
    assert [f.code for f in result.decode_failures] == ["decompression-failed"]
    assert not result.ok
    assert result.report["records"]["decode_failures"][0]["code"] == "decompression-failed"
    assert result.records == 10


def test_a_file_that_changes_after_the_scan_stops_the_copy(tmp_path: Path) -> None:
    from kdump.errors import KdumpError
    from kdump.ops.salvage.output import write_clean_partition

    part = tmp_path / "in" / "t-0"
    [log] = build_partition(part, segments=1, batches_per_segment=3)
    plan = plan_salvage(PartitionDir.load(part))
    position, size = _batches(log)[1]
    raw = bytearray(log.read_bytes())
    raw[position + size - 1] ^= 0xFF  # after the scan verified it
    log.write_bytes(bytes(raw))
    with pytest.raises(KdumpError, match="changed while it was being salvaged"):
        write_clean_partition(plan, OutputDir.create(tmp_path / "out", part))
