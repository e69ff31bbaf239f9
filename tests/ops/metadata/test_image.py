"""The metadata image replayed from `__cluster_metadata`: the corpus' log, and logs broken on purpose."""

from __future__ import annotations

from pathlib import Path

from corpus import require_full_corpus

from kdump.formats.batch import BatchHeader
from kdump.formats.records import NewRecord, Record, build_v2_batch
from kdump.ops.metadata import load_image
from kdump.scan import open_buffer, scan_log

COVERED_CODES = {"metadata-record-invalid", "metadata-log-gap", "metadata-transaction-open"}
BEGIN_TRANSACTION = b"\x01\x17\x00\x00"  # frame 1, BeginTransactionRecord v0, no tagged fields


def _corpus_records() -> list[tuple[int, bytes]]:
    path = require_full_corpus() / "kafka-3.8.0" / "__cluster_metadata-0" / f"{0:020d}.log"
    out = []
    with open_buffer(path) as buf:
        control = False
        for ev in scan_log(buf, file=str(path), deep=True):
            if isinstance(ev, BatchHeader):
                control = ev.is_control
            elif isinstance(ev, Record) and not control and ev.value is not None:
                out.append((ev.offset, bytes(ev.value)))
    return out


def _write(dir_: Path, values: list[bytes], base: int = 0) -> Path:
    dir_.mkdir(parents=True, exist_ok=True)
    data = b"".join(
        build_v2_batch(base + i, [NewRecord(timestamp=1_700_000_000_000, key=None, value=v)])
        for i, v in enumerate(values)
    )
    (dir_ / f"{base:020d}.log").write_bytes(data)
    return dir_


def test_corpus_image_has_every_topic_broker_and_feature() -> None:
    image = load_image(require_full_corpus() / "kafka-3.8.0" / "__cluster_metadata-0")
    assert image.findings == []
    assert image.metadata_version == 20
    assert set(image.brokers) == {1}
    assert image.brokers[1].log_dirs == ["SIlLW-8EEtch0LoRCz2tVw"]
    topic = image.topic_by_name("c-none")
    assert topic is not None
    assert topic.partitions[0].replicas == [1]
    assert topic.partitions[0].directories == ["SIlLW-8EEtch0LoRCz2tVw"]
    assert image.to_dict()["topics"][0]["name"] == "__consumer_offsets"


def test_partition_of_unknown_topic_stops_the_loader(tmp_path: Path) -> None:
    from kdump.formats.internal import decode_with

    values = [v for _, v in _corpus_records()]
    kinds = [decode_with("metadata", None, v, is_control=False).value["type"] for v in values]
    dropped = kinds.index("TOPIC_RECORD")
    kept = values[:dropped] + values[dropped + 1 :]
    image = load_image(_write(tmp_path / "__cluster_metadata-0", kept))
    codes = [(f.code, f.offset) for f in image.findings]
    code, offset = codes[0]  # the topic's first PartitionRecord, after its ConfigRecords
    assert code == "metadata-record-invalid"
    assert offset is not None
    assert kinds[offset + 1] == "PARTITION_RECORD"
    assert image.stopped_at == offset


def test_log_past_the_snapshot_is_a_gap(tmp_path: Path) -> None:
    values = [v for _, v in _corpus_records()][:5]
    image = load_image(_write(tmp_path / "__cluster_metadata-0", values, base=100))
    assert [(f.code, f.offset) for f in image.findings] == [("metadata-log-gap", 0)]


def test_open_transaction_is_not_applied(tmp_path: Path) -> None:
    values = [v for _, v in _corpus_records()]
    image_all = load_image(_write(tmp_path / "a" / "__cluster_metadata-0", values))
    late = _write(tmp_path / "b" / "__cluster_metadata-0", [*values, BEGIN_TRANSACTION, values[-1]])
    image = load_image(late)
    assert [f.code for f in image.findings] == ["metadata-transaction-open"]
    assert image.records_applied == image_all.records_applied


def test_the_replay_reads_the_fields_the_full_decoder_reads() -> None:
    """The replay decodes without the tools' text; what it gets is the full decoder's type and fields,
    and it falls back to the full decoder (None) for anything that decoder does not call ok."""
    from kdump.formats.internal.cluster_metadata import decode_metadata_record, metadata_record_fields

    records = _corpus_records()
    assert len(records) > 20
    for _offset, value in records:
        full = decode_metadata_record(value)
        assert full.status == "ok"
        assert full.value is not None
        assert metadata_record_fields(value) == (full.value["type"], full.value["data"])
    unknown_type = b"\x01\x7f\x00\x00"
    assert decode_metadata_record(unknown_type).status == "unknown"
    for bad in (unknown_type, b"\x00\x02\x00", BEGIN_TRANSACTION + b"\x00", b"\x01\x17", b"\x01\x97\x01\x00"):
        assert metadata_record_fields(bad) is None
