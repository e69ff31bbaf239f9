"""The forecast's last stable offset and open transactions, and its note on an unfinished ZooKeeper
migration in the metadata log (the broker-oracle side is tests/brokers/test_forecast_transactions.py
and test_forecast_oracle.py)."""

from __future__ import annotations

from pathlib import Path

from kdump.ops.forecast import forecast
from kdump.ops.forecast.transactions import judge
from kdump.ops.forecast.zk_migration import zk_migration_notes
from kdump.ops.metadata import MetadataImage, PartitionState, TopicState

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "damaged"


def _image(txn_replicas: list[int] | None = None, zk_state: int | None = None) -> MetadataImage:
    image = MetadataImage(
        "test", zk_migration_state=zk_state, zk_migration_offset=None if zk_state is None else 41
    )
    if txn_replicas is not None:
        state = PartitionState(
            replicas=txn_replicas, isr=txn_replicas, leader=txn_replicas[0], leader_epoch=0, partition_epoch=0
        )
        image.topics["tid"] = TopicState("__transaction_state", "tid", {0: state})
    return image


def test_open_transaction_pins_the_lso_of_the_recovered_partition() -> None:
    """samples/damaged/torn-tail-0: producer 3's transaction from offset 604 has no marker below the
    recovery's cut at 611; no coordinator log at hand, so the coordinator may still end it."""
    fc = forecast([SAMPLES])
    torn = fc.bounds()[("torn-tail", 0)]
    assert torn.log_end_offset == 611
    assert torn.last_stable_offset == 604
    assert [(t.producer_id, t.first_offset, t.hangs) for t in torn.open_transactions] == [(3, 604, False)]
    assert torn.to_dict()["last_stable_offset"] == 604
    assert fc.bounds()[("bad-crc", 0)].open_transactions == []
    assert fc.summary()["lso_pinned_partitions"] == 1
    assert fc.summary()["hanging_transactions"] == 0


def test_transaction_hangs_when_the_whole_coordinator_log_is_here_and_knows_nothing_of_it() -> None:
    # Every __transaction_state partition on node 1, none of it in these log dirs: created empty.
    assert judge({3: 604}, [], _image([1]), 1)[0].hangs
    # A coordinator partition on another broker may hold the producer: not known to hang.
    assert not judge({3: 604}, [], _image([2]), 1)[0].hangs
    assert not judge({3: 604}, [], None, 1)[0].hangs


def test_unfinished_zookeeper_migration_is_a_note_not_a_refusal() -> None:
    notes = zk_migration_notes(_image(zk_state=1), "4.4")
    assert len(notes) == 1
    assert "MIGRATION" in notes[0]
    assert "ignores it" in notes[0]
    assert "zookeeper.metadata.migration.enable" in zk_migration_notes(_image(zk_state=2), "3.9")[0]
    assert zk_migration_notes(_image(zk_state=3), "4.4") == []
    assert zk_migration_notes(_image(), "4.4") == []
