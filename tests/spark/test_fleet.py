"""Fleet verify (`kdump verify --engine spark`) finds exactly what local verify finds.

Damaged copies of corpus partitions (or, without the corpus, of synthetic ones) are verified both
ways; the reports must agree in every finding, in order, and in every summary figure, and the CLI
must print the same thing and exit the same way.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("pyspark", reason="pyspark not installed; install kdump[spark]")
pytest.importorskip("pyarrow", reason="pyarrow not installed; install kdump[spark]")

from kdump.cli import cli
from kdump.model.log_dir import Target, discover
from kdump.ops.checks.verify import PartitionReport, VerifyOptions, plan_verify, verify_targets
from kdump.render.report import report_summary_row
from kdump.render.rows import finding_row
from kdump.spark.fleet import run_fleet_verify
from kdump.spark.schema import FINDING_COLUMNS

pytestmark = pytest.mark.spark

# Corpus partitions present in both the full corpus and its bundled subset.
CORPUS_PARTITIONS = (
    "kafka-3.8.0/c-none-0",
    "kafka-3.8.0/txn-1",
    "kafka-3.8.0/compacted-sparse-0",
    "kafka-3.8.0/timestamps-0",
    "kafka-3.8.0-running-copy/live-0",
)


def _log(part: Path, index: int) -> Path:
    # The bundled subset keeps fewer segments per partition than the full corpus.
    logs = sorted(part.glob("*.log"))
    return logs[min(index, len(logs) - 1)] if index >= 0 else logs[index]


def _flip(path: Path, at: int) -> None:
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, corpus_root: Path, synthetic_log_dir: Path) -> list[Path]:
    """Two 'brokers' of damaged copies, plus files given on their own."""
    base = tmp_path_factory.mktemp("fleet")
    broker1 = base / "broker1"
    broker2 = base / "broker2"
    for rel in CORPUS_PARTITIONS:
        if (corpus_root / rel).is_dir():
            shutil.copytree(corpus_root / rel, broker1 / Path(rel).name)
    shutil.copytree(synthetic_log_dir, broker2)
    if (broker1 / "c-none-0").is_dir():
        _flip(_log(broker1 / "c-none-0", 1), 5000)  # inside a batch body: crc-mismatch
    if (broker1 / "txn-1").is_dir():
        last = _log(broker1 / "txn-1", -1)
        last.write_bytes(last.read_bytes()[:-100])  # partial-trailing-batch
    if (broker1 / "timestamps-0").is_dir():
        log = _log(broker1 / "timestamps-0", 2)
        data = bytearray(log.read_bytes())
        start = min(20_000, len(data) // 2)
        data[start : start + 400] = bytes(400)  # zeros in the middle: framing lost, then resync
        log.write_bytes(bytes(data))
    _flip(broker2 / "syn-0" / f"{0:020d}.log", 150)
    big = broker2 / "big-0" / f"{0:020d}.log"
    big.write_bytes(big.read_bytes()[:-7])
    (broker2 / "syn-0" / f"{29:020d}.index").write_bytes(b"\x00\x00\x00\x05\x00\x00\x00\x03")
    paths = [broker1, broker2, broker2 / "syn-0" / f"{29:020d}.log"]
    snapshots = sorted((broker1 / "txn-1").glob("*.snapshot")) if (broker1 / "txn-1").is_dir() else []
    paths.extend(snapshots[:1])
    return paths


def _targets(paths: list[Path]) -> list[Target]:
    return [discover(str(p)) for p in paths]


def _comparable(reports: list[PartitionReport]) -> list[tuple[Any, ...]]:
    return [(report_summary_row(r), [finding_row(f) for f in r.findings]) for r in reports]


@pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
def test_fleet_verify_equals_local_verify(spark: Any, fleet: list[Path], deep: bool) -> None:
    options = VerifyOptions(deep=deep, jobs=1)
    local = list(verify_targets(_targets(fleet), options))
    remote = run_fleet_verify(_targets(fleet), options)
    assert _comparable(remote) == _comparable(local)
    codes = {f.code for r in local for f in r.findings}
    assert {"crc-mismatch", "partial-trailing-batch"} <= codes
    assert len(local) >= 4


def test_partitions_spread_over_tasks_give_the_same_reports(
    spark: Any, fleet: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tasks of a few bytes: the partitions of several segments are checked segment by segment in
    # several tasks and their reports built after the shuffle, beside partitions checked whole.
    from kdump.spark import fleet as fleet_module

    # Tasks of a byte: every partition of several segments is spread (with a share of the whole
    # fleet as the limit, none was on the bundled subset, whose one big synthetic segment set it).
    monkeypatch.setattr(fleet_module, "task_bytes", lambda total, parallelism: 1)
    units = fleet_module.fleet_units(plan_verify(_targets(fleet)))
    _tasks, split = fleet_module.work_items(units, 2)
    assert split
    assert len(split) < len(units)
    options = VerifyOptions(jobs=1)
    local = list(verify_targets(_targets(fleet), options))
    assert _comparable(run_fleet_verify(_targets(fleet), options)) == _comparable(local)


def test_output_directory(spark: Any, fleet: list[Path], tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    reports = run_fleet_verify(_targets(fleet), VerifyOptions(), output=str(out))
    local = list(verify_targets(_targets(fleet), VerifyOptions(jobs=1)))
    lines = (out / "findings.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [finding_row(f) for r in local for f in r.findings]
    table = pq.read_table(out / "findings.parquet")
    assert table.column_names == [name for name, _ in FINDING_COLUMNS]
    assert table.num_rows == len(lines)
    assert table.column("code").to_pylist() == [json.loads(line)["code"] for line in lines]
    summaries = [json.loads(line) for line in (out / "reports.jsonl").read_text().splitlines()]
    assert summaries == [report_summary_row(r) for r in reports]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_cli_prints_what_local_verify_prints(spark: Any, fleet: list[Path], tmp_path: Path, fmt: str) -> None:
    runner = CliRunner()
    args = ["verify", "--format", fmt, *map(str, fleet)]
    local = runner.invoke(cli, args)
    remote = runner.invoke(cli, [*args, "--engine", "spark", "--output", str(tmp_path / "out")])
    assert remote.exit_code == local.exit_code == 1, remote.output
    assert remote.stdout == local.stdout
    assert (tmp_path / "out" / "findings.parquet").is_file()


def test_no_partitions_at_all(spark: Any, tmp_path: Path) -> None:
    (tmp_path / "empty-logdir").mkdir()
    (tmp_path / "empty-logdir" / "meta.properties").write_text("version=1\n")
    # As local verify: a log dir holding meta.properties is a broker's, with nothing wrong in it; a
    # directory with nothing of a broker's has nothing to check, which fails.
    (tmp_path / "not-kafka").mkdir()
    reports = run_fleet_verify(_targets([tmp_path / "empty-logdir", tmp_path / "not-kafka"]), VerifyOptions())
    got = [(r.kind, [f.code for f in r.findings if f.code == "nothing-to-check"]) for r in reports]
    assert got == [("log-dir", []), ("log-dir", ["nothing-to-check"])]
