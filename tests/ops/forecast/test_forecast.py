"""The start-up forecast of log dirs built from the corpus (a Kafka 3.8 broker's, stopped uncleanly)."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import pytest
from corpus import require_full_corpus

from kdump.formats.checkpoints import encode_meta_properties, encode_partition_metadata
from kdump.formats.filenames import CLEAN_SHUTDOWN_FILE
from kdump.ops.forecast import Verdict, forecast

PARTS = ("__cluster_metadata-0", "c-none-0", "empty-0", "txn-0")
DIR_ID = "SIlLW-8EEtch0LoRCz2tVw"


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    src = require_full_corpus() / "kafka-3.8.0"
    out = tmp_path / "data"
    out.mkdir()
    for name in PARTS:
        shutil.copytree(src / name, out / name)
    for f in (src / "_logdir-files").iterdir():
        # Without meta.properties the node is unknown: the corpus' metadata assigns it partitions this
        # subset leaves out, which a test that names the node sees created empty.
        if f.name != "meta.properties":
            shutil.copy(f, out / f.name)
    return out


def _name_the_node(log_dir: Path) -> None:
    shutil.copy(require_full_corpus() / "kafka-3.8.0" / "_logdir-files" / "meta.properties", log_dir)


def _by_dir(fc: object) -> dict[str, object]:
    return {p.dir: p for p in fc.partitions}  # type: ignore[attr-defined]


def test_unclean_stop_recovers_from_the_recovery_point(log_dir: Path) -> None:
    fc = forecast([log_dir])
    assert fc.verdict == Verdict.RECOVERS
    parts = _by_dir(fc)
    c_none = parts["c-none-0"]
    assert c_none.action == "recover"
    assert c_none.removed is None
    assert (c_none.log_start_offset, c_none.log_end_offset) == (0, 3000)  # type: ignore[attr-defined]
    assert fc.reread_bytes > 0


def test_clean_shutdown_marker_means_no_recovery(log_dir: Path) -> None:
    (log_dir / CLEAN_SHUTDOWN_FILE).write_bytes(b'{"version":0,"brokerEpoch":7}')
    fc = forecast([log_dir])
    assert fc.verdict == Verdict.CLEAN
    assert fc.reread_bytes == 0
    assert _by_dir(fc)["c-none-0"].log_end_offset == 3000  # type: ignore[attr-defined]


def test_torn_tail_is_cut_and_lost(log_dir: Path) -> None:
    last = sorted((log_dir / "c-none-0").glob("*.log"))[-1]
    data = last.read_bytes()
    last.write_bytes(data[: len(data) - 10])
    fc = forecast([log_dir])
    assert fc.verdict == Verdict.LOSES
    c_none = _by_dir(fc)["c-none-0"]
    assert c_none.removed is not None
    assert c_none.removed[1] == 2999
    assert c_none.log_end_offset == c_none.removed[0]  # type: ignore[attr-defined]


def test_topic_id_mismatch_is_stray_and_its_data_set_aside(log_dir: Path) -> None:
    _name_the_node(log_dir)
    (log_dir / "txn-0" / "partition.metadata").write_bytes(encode_partition_metadata(uuid.UUID(int=7)))
    fc = forecast([log_dir])
    txn = next(p for p in fc.partitions if p.dir == "txn-0" and p.action != "create-empty")
    assert txn.action == "stray"
    assert not txn.served
    assert fc.verdict == Verdict.LOSES
    # The image still assigns txn-0 here: the broker creates it empty under the image's id.
    created = [p for p in fc.partitions if p.action == "create-empty" and p.dir == "txn-0"]
    assert created
    assert created[0].log_end_offset == 0


def test_missing_partition_assigned_here_is_created_empty(log_dir: Path) -> None:
    _name_the_node(log_dir)
    fc = forecast([log_dir])
    created = {p.dir for p in fc.partitions if p.action == "create-empty"}
    assert "big-record-0" in created
    assert "c-none-0" not in created


def test_two_log_dirs_with_one_directory_id_do_not_start(log_dir: Path, tmp_path: Path) -> None:
    _name_the_node(log_dir)
    other = tmp_path / "data2"
    other.mkdir()
    props = {"version": "1", "node.id": "1", "cluster.id": "lenBLIeMRQ6NbEh0tYCH1w", "directory.id": DIR_ID}
    (other / "meta.properties").write_bytes(encode_meta_properties(props))
    fc = forecast([log_dir, other])
    assert fc.verdict == Verdict.NO_START
    assert any("same directory.id" in r for r in fc.refuses)


def test_corrupt_checkpoint_takes_the_metadata_log_dir_and_the_broker_down(log_dir: Path) -> None:
    (log_dir / "recovery-point-offset-checkpoint").write_bytes(b"0\nnot a number\n")
    fc = forecast([log_dir])
    assert fc.verdict == Verdict.NO_START
    assert fc.log_dirs[0].offline
    _name_the_node(log_dir)
    assert not [p for p in forecast([log_dir]).partitions if p.action == "create-empty"]


def test_zookeeper_era_says_what_it_cannot_know(log_dir: Path) -> None:
    shutil.rmtree(log_dir / "__cluster_metadata-0")
    props = {"version": "0", "broker.id": "1", "cluster.id": "lenBLIeMRQ6NbEh0tYCH1w"}
    (log_dir / "meta.properties").write_bytes(encode_meta_properties(props))
    fc = forecast([log_dir])
    assert fc.image is None
    assert "ZooKeeper" in fc.unknown[0]
    assert fc.verdict == Verdict.RECOVERS


def test_metadata_version_newer_than_the_release_does_not_start(log_dir: Path) -> None:
    fc = forecast([log_dir], kafka_version="3.7")  # the corpus' metadata.version is 20 (3.8-IV0)
    assert fc.written_by == "3.8"
    assert fc.verdict == Verdict.NO_START
    assert forecast([log_dir], kafka_version="3.9.1").verdict == Verdict.RECOVERS


def test_clean_load_reads_the_last_segment_from_its_last_index_entry(log_dir: Path) -> None:
    """As `readNextOffset`: the batches after the offset index's last entry give the log end; an entry
    that names no batch boundary, or none at all, and the segment is read whole (the same end)."""
    (log_dir / CLEAN_SHUTDOWN_FILE).write_bytes(b'{"version":0,"brokerEpoch":7}')
    index = sorted((log_dir / "txn-0").glob("*.index"))[-1]
    entries = index.read_bytes()
    assert int.from_bytes(entries[-4:], "big") > 0  # the read starts past the segment's head
    index.chmod(0o644)
    ends = []
    for entry in (entries, entries[:-4] + (7).to_bytes(4, "big"), b""):
        index.write_bytes(entry)
        ends.append(_by_dir(forecast([log_dir]))["txn-0"].log_end_offset)  # type: ignore[attr-defined]
    assert ends[0] is not None
    assert ends[0] > int(index.stem)
    assert ends == [ends[0]] * 3
