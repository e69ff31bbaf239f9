"""`salvage` on real corpus partitions with damage planted in the middle of a segment.

The expected outcome is worked out from Kafka's own deep dump of the undamaged segments
(`kafka-dump-log --deep-iteration`), independently of kdump's scanner:

- the damaged batches are the oracle's batches whose bytes the damage changed (none when garbage
  is inserted between two batches);
- the recovered records are the oracle's records of every other batch, in order;
- the lost offsets are, for each run of damaged batches, the gap between the surviving batches
  either side of it;
- the clean partition is the original segments' bytes minus exactly the damaged batches', it
  verifies with no error or warning, and rebuilding its indexes changes nothing.
"""

from __future__ import annotations

import json
import random
import struct
from pathlib import Path

import pytest
from corpus import is_subset
from corruptions import copy_tree, tree_state
from oracle import LogDump, OracleBatch, OracleRecord, parse_log_dump

from kdump.findings import Severity
from kdump.model.log_dir import Target
from kdump.model.partition import PartitionDir
from kdump.ops.checks.verify import VerifyOptions, verify_targets
from kdump.ops.repair.reindex import plan_partition
from kdump.ops.salvage.output import salvage
from kdump.ops.salvage.result import SalvageResult
from kdump.render.salvage import record_lines

PARTITIONS = [
    ("kafka-3.8.0", "txn-1"),  # v2 lz4, transactions and markers
    ("kafka-3.8.0", "c-none-0"),  # v2 uncompressed
    ("kafka-3.8.0", "c-snappy-0"),  # v2 snappy (xerial framing)
    ("kafka-3.8.0", "timestamps-0"),  # out-of-order CreateTime
    ("kafka-3.8.0", "log-append-time-0"),  # LogAppendTime
    ("kafka-3.8.0", "compacted-sparse-0"),  # compaction gaps
    ("kafka-3.8.0-zk-legacy", "legacy-v0-none-0"),  # one v0 message per entry
    ("kafka-3.8.0-zk-legacy", "legacy-v1-lz4-0"),  # v1 compressed wrappers
    ("kafka-3.8.0-zk-legacy", "mixed-formats-0"),  # v0, v1 and v2 (zstd) in one partition
]
DAMAGES = ["flipped-byte", "zeroed-page", "wrong-length", "inserted-garbage"]


def _oracle(corpus_root: Path, corpus: str, log: Path) -> LogDump:
    path = corpus_root / corpus / "expected" / log.parent.name / f"{log.name}.deep.txt.gz"
    assert path.exists(), f"no deep oracle {path}"
    return parse_log_dump(path)


def _low(b: OracleBatch) -> int:
    if b.base_offset is not None:
        return b.base_offset
    return b.records[0].offset if b.records else b.last_offset


def _damage(kind: str, data: bytes, batch: OracleBatch) -> bytes:
    """Damage the middle of a segment at `batch`."""
    out = bytearray(data)
    if kind == "flipped-byte":
        out[batch.position + batch.size // 2] ^= 0xFF
    elif kind == "zeroed-page":
        page = (batch.position // 4096 + 1) * 4096
        if page >= len(out):
            page = (batch.position // 4096) * 4096
        end = min(page + 4096, len(out))
        out[page:end] = bytes(end - page)
    elif kind == "wrong-length":
        (length,) = struct.unpack_from(">i", out, batch.position + 8)
        struct.pack_into(">i", out, batch.position + 8, length * 3 + 5)
    else:
        return data[: batch.position] + random.Random(7).randbytes(1000) + data[batch.position :]
    return bytes(out)


def _record_fields(rec: OracleRecord) -> tuple[object, ...]:
    return (
        rec.offset,
        rec.timestamp_type,
        rec.timestamp,
        rec.key_size,
        rec.value_size,
        rec.sequence,
        rec.crc,
    )


def _row_fields(row: dict[str, object]) -> tuple[object, ...]:
    v2 = "crc" not in row
    return (
        row["offset"],
        row["timestamp_type"],
        row["timestamp"],
        row["key_size"],
        row["value_size"],
        row["sequence"] if v2 else None,
        None if v2 else row["crc"],
    )


def _lost(ordered: list[tuple[OracleBatch, bool]], floor: int) -> list[tuple[int, int]]:
    """Each run of damaged batches as the gap between the surviving batches either side."""
    lost = []
    prev_last: int | None = None
    run = False
    for b, damaged in ordered:
        if damaged:
            run = True
            continue
        if run:
            first = floor if prev_last is None else prev_last + 1
            if _low(b) - 1 >= first:
                lost.append((first, _low(b) - 1))
            run = False
        prev_last = b.last_offset
    assert not run, "the damage is planted in the middle: a surviving batch follows it"
    return lost


@pytest.mark.parametrize("kind", DAMAGES)
@pytest.mark.parametrize(("corpus", "name"), PARTITIONS, ids=[p for _, p in PARTITIONS])
def test_salvage_recovers_everything_but_the_damaged_batches(
    corpus_root: Path, tmp_path: Path, corpus: str, name: str, kind: str
) -> None:
    src = corpus_root / corpus / name
    part_dir = copy_tree(src, tmp_path / "in" / name)
    logs = sorted(part_dir.glob("*.log"))
    oracles = {log.name: _oracle(corpus_root, corpus, src / log.name) for log in logs}
    # The damaged segment: one with at least three batches, in the middle of the partition if it can be.
    eligible = [log for log in logs if len(oracles[log.name].batches) >= 3]
    if not eligible and is_subset(corpus_root):
        pytest.skip(f"the bundled corpus subset keeps too few batches of {name} (the full corpus has them)")
    target = eligible[(len(eligible) - 1) // 2]
    batches = oracles[target.name].batches
    middle = batches[len(batches) // 2]
    original = target.read_bytes()
    damaged = _damage(kind, original, middle)
    target.write_bytes(damaged)
    before = tree_state(part_dir)

    result = salvage(PartitionDir.load(part_dir), tmp_path / "out", record_line=record_lines())

    assert tree_state(part_dir) == before, "salvage wrote to its input"
    if kind == "inserted-garbage":
        hit: set[int] = set()
    else:
        hit = {
            b.position
            for b in batches
            if original[b.position : b.position + b.size] != damaged[b.position : b.position + b.size]
        }
    assert hit or kind == "inserted-garbage"
    ordered = [(b, log == target and b.position in hit) for log in logs for b in oracles[log.name].batches]
    if ordered[-1][1] and is_subset(corpus_root):
        pytest.skip(f"{kind} reaches the end of the bundled subset's short copy of {name}: no batch after it")

    # Records: Kafka's deep dump minus exactly the damaged batches.
    expected = [_record_fields(r) for b, dmg in ordered if not dmg for r in b.records]
    lines = (result.out / "records.jsonl").read_text().splitlines()
    got = [_row_fields(json.loads(line)) for line in lines]
    assert got == expected
    assert result.records == len(expected)

    # Lost offsets: exact.
    floor = int(logs[0].name.split(".")[0])
    assert result.plan.lost_offsets == _lost(ordered, floor)
    assert [(x["first"], x["last"]) for x in result.report["lost_offsets"]] == _lost(ordered, floor)

    # The clean partition: the original bytes minus the damaged batches, byte for byte.
    clean = result.out / name
    for log in logs:
        source = original if log == target else log.read_bytes()
        keep = b"".join(
            source[b.position : b.position + b.size]
            for b in oracles[log.name].batches
            if not (log == target and b.position in hit)
        )
        assert (clean / log.name).read_bytes() == keep, log.name
    _assert_clean(result, clean)


def _assert_clean(result: SalvageResult, clean: Path) -> None:
    options = VerifyOptions(jobs=1, allow_empty=True)  # the corpus has a real empty partition
    report = next(iter(verify_targets([Target(str(clean), clean, "partition", None)], options)))
    # The damaged batches' offsets are missing from the copy: verify names each such hole, and
    # only within the ranges the report gives as lost.
    lost = result.plan.lost_offsets
    holes = [f for f in report.findings if f.code == "offset-hole"]
    for f in holes:
        assert f.offset is not None
        assert any(a <= f.offset and f.offset + f.details["gap"] - 1 <= b for a, b in lost), (f, lost)
    bad = [f for f in report.findings if f.severity >= Severity.WARNING and f not in holes]
    assert not bad, bad
    assert result.ok
    interval = result.report["clean_partition"]["index_interval_bytes"]
    assert plan_partition(PartitionDir.load(clean), None, interval_bytes=interval).changes == []


def test_every_intact_corpus_partition_is_salvaged_whole(corpus_root: Path, tmp_path: Path) -> None:
    from corpus import iter_partition_dirs

    seen = 0
    for corpus, part_dir, _oracle_dir in iter_partition_dirs(corpus_root):
        out = tmp_path / corpus / part_dir.name
        result = salvage(PartitionDir.load(part_dir), out, record_line=record_lines(), parquet=False)
        plan = result.plan
        assert plan.regions == [], part_dir
        assert plan.complete == (not plan.not_read)
        for log in sorted(part_dir.glob("*.log")):
            assert (out / part_dir.name / log.name).read_bytes() == log.read_bytes(), log
        verified = next(
            iter(verify_targets([Target(str(part_dir), part_dir, "partition", None)], VerifyOptions(jobs=1)))
        )
        assert result.records == verified.records, part_dir
        _assert_clean(result, out / part_dir.name)
        seen += 1
    assert seen >= 10
