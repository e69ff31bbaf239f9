"""`kdump forecast` against a real broker: a hanging transaction, a transaction the coordinator aborts,
and a group committed past a truncation, all in one copy and one broker start.

A node of the newest release, and one of 3.9, takes: on `txn-hang`, two committed transactions of one producer; on
`txn-open`, a transaction of another producer left open (the coordinator's log has it ongoing); on
`orders`, plain records in small batches, with group `g-past` committed at the log end and `g-in` in the
middle. The node stops cleanly; on a copy the clean-shutdown marker is removed and the last batch of
`txn-hang` (the second COMMIT marker) and of `orders` is torn, so recovery cuts both.

The forecast then says: `txn-hang`'s second transaction is open again while its coordinator says
CompleteCommit, so no marker will come: its last stable offset is pinned at the transaction's first
offset (it hangs); `txn-open`'s is pinned until the coordinator aborts it at the producer's timeout;
`g-past` is past the new log end of `orders`: reset to earliest re-reads, to latest skips nothing and
resumes at the new end. A broker started on the copy must agree: ListOffsets (read_uncommitted and
read_committed) after the coordinator's timeout has passed, the committed offsets through the admin
API, and where a consumer of each reset policy resumes.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from brokers.cluster import BrokerFailed, KafkaCluster
from brokers.fixtures import require_release, skip_or_fail
from brokers.recovery import copy_log_dir, segment_logs
from brokers.releases import NEWEST
from kdump.formats.filenames import CLEAN_SHUTDOWN_FILE
from kdump.ops.consumers import read_commits
from kdump.ops.forecast import Forecast, Verdict, forecast
from kdump.ops.forecast.consumers import groups_hurt

pytestmark = pytest.mark.slow

HANG, OPEN, ORDERS = "txn-hang", "txn-open", "orders"
TXN_RECORDS = 10
ORDERS_RECORDS = 300
IN_RANGE = 100
TIMEOUT_MS = 3000
CONFIG: dict[str, object] = {
    # The coordinator looks for timed-out transactions every second (the default is 10 s).
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 1000,
    "file.delete.delay.ms": 0,
}


@dataclass
class Outcome:
    forecast: Forecast
    text: str
    bounds: dict[str, tuple[int, int]] = field(default_factory=dict)
    committed_lso: dict[str, int] = field(default_factory=dict)
    committed: dict[str, int] = field(default_factory=dict)
    resume: dict[str, int] = field(default_factory=dict)


def _produce(bootstrap: str) -> None:
    from kafka import KafkaProducer

    committed = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="tx-hang")
    committed.init_transactions()
    for wave in range(2):
        committed.begin_transaction()
        for i in range(TXN_RECORDS):
            committed.send(HANG, key=b"k%d" % i, value=b"hang wave %d record %d" % (wave, i))
        committed.commit_transaction()
    committed.close()
    plain = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=0, acks=1)
    for i in range(ORDERS_RECORDS):
        plain.send(ORDERS, key=b"o%d" % i, value=b"order %d " % i * 3)
        if i % 10 == 9:
            plain.flush()
    plain.close()


def _leave_open(bootstrap: str) -> object:
    """A transactional producer whose transaction stays open (it is returned, not closed: a graceful
    close would abort it)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap, transactional_id="tx-open", transaction_timeout_ms=TIMEOUT_MS
    )
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(TXN_RECORDS):
        producer.send(OPEN, key=b"k%d" % i, value=b"open record %d" % i)
    producer.flush()
    return producer


def _commit(bootstrap: str, group: str, offset: int) -> None:
    from kafka import KafkaConsumer
    from kafka.structs import OffsetAndMetadata, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    tp = TopicPartition(ORDERS, 0)
    consumer.assign([tp])
    consumer.commit({tp: OffsetAndMetadata(offset, "", -1)})
    consumer.close()


def _tear_last_batch(partition: Path) -> None:
    last = segment_logs(partition)[-1]
    with last.open("r+b") as f:
        f.truncate(last.stat().st_size - 7)


def _offsets(bootstrap: str, isolation: str) -> dict[str, tuple[int, int]]:
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation)
    try:
        tps = [TopicPartition(t, 0) for t in (HANG, OPEN, ORDERS)]
        starts, ends = consumer.beginning_offsets(tps), consumer.end_offsets(tps)
        return {tp.topic: (starts[tp], ends[tp]) for tp in tps}
    finally:
        consumer.close()


def _committed(bootstrap: str) -> dict[str, int]:
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        deadline = time.monotonic() + 60
        out: dict[str, int] = {}
        for group in ("g-past", "g-in"):
            while True:
                try:
                    answer = admin.list_group_offsets({group: None})
                    break
                except KafkaError as exc:  # the coordinator is still loading __consumer_offsets
                    if not exc.retriable or time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
            out[group] = next(o.offset for tp, o in answer[group].items() if tp.topic == ORDERS)
        return out
    finally:
        admin.close()


def _resume(bootstrap: str, group: str, reset: str) -> int:
    """Where a consumer of `group` with auto.offset.reset=`reset` fetches once its first fetch at the
    commit has been answered (out of range: reset)."""
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition

    tp = TopicPartition(ORDERS, 0)
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False, auto_offset_reset=reset
    )
    try:
        consumer.assign([tp])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got = consumer.poll(timeout_ms=500).get(tp)
            if got:
                return int(got[0].offset)
            position = consumer.position(tp)
            if position is not None and position <= ORDERS_RECORDS - 1 and reset == "latest":
                return int(position)
        return int(consumer.position(tp))
    finally:
        consumer.close()


@pytest.fixture(scope="module", params=[NEWEST, "3.9.1"])
def outcome(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    release = require_release(str(request.param))
    version = ".".join(release.version.split(".")[:2])
    pytest.importorskip("kafka", reason="kafka-python (the dev extra) produces, commits and consumes")
    from kafka.admin import KafkaAdminClient, NewTopic

    workdir = tmp_path_factory.mktemp(f"txn-{release.version}")
    cluster = KafkaCluster(release, workdir / "origin", config=CONFIG)
    try:
        cluster.format()
        cluster.start()
    except BrokerFailed as exc:
        cluster.kill()
        skip_or_fail(f"a real Kafka {release.version} broker did not start here: {exc}")
    node = cluster.nodes[0]
    with cluster:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        admin.create_topics([NewTopic(t, 1, 1) for t in (HANG, OPEN, ORDERS)])
        admin.close()
        _produce(cluster.bootstrap)
        _commit(cluster.bootstrap, "g-past", ORDERS_RECORDS)
        _commit(cluster.bootstrap, "g-in", IN_RANGE)
        left_open = _leave_open(cluster.bootstrap)
        cluster.stop()
        left_open.close(timeout=0)  # type: ignore[attr-defined]
    log_dir = copy_log_dir(node.log_dir, workdir / "copy" / "node" / "data")
    (log_dir / CLEAN_SHUTDOWN_FILE).unlink()
    _tear_last_batch(log_dir / f"{HANG}-0")
    _tear_last_batch(log_dir / f"{ORDERS}-0")
    fc = forecast([log_dir], kafka_version=version)
    text = subprocess.run(
        [sys.executable, "-m", "kdump", "forecast", "--kafka-version", version, str(log_dir)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    out = Outcome(fc, text)
    copy = KafkaCluster(release, workdir / "copy", config=CONFIG, cluster_id=cluster.cluster_id)
    copy.nodes = [node]
    node.home = log_dir.parent
    with copy:
        copy.start()
        # Past the open transaction's timeout and a cleanup round or two: the coordinator has aborted
        # what it knows of; what it does not know of still pins the LSO.
        time.sleep(TIMEOUT_MS / 1000 + 4)
        out.bounds = _offsets(copy.bootstrap, "read_uncommitted")
        out.committed_lso = {t: end for t, (_s, end) in _offsets(copy.bootstrap, "read_committed").items()}
        out.committed = _committed(copy.bootstrap)
        out.resume = {
            "earliest": _resume(copy.bootstrap, "g-past", "earliest"),
            "latest": _resume(copy.bootstrap, "g-past", "latest"),
        }
        copy.stop()
    return out


def _part(fc: Forecast, topic: str):  # type: ignore[no-untyped-def]
    return fc.bounds()[(topic, 0)]


def test_bounds_are_the_brokers(outcome: Outcome) -> None:
    fc = outcome.forecast
    assert fc.verdict == Verdict.LOSES
    for topic in (HANG, OPEN, ORDERS):
        p = _part(fc, topic)
        # The coordinator aborts the open transaction after start-up (its timeout has passed): the
        # ABORT marker makes the broker's end one more than the forecast's, which is the end at start.
        extra = 1 if topic == OPEN else 0
        assert (p.log_start_offset, p.log_end_offset) == (
            outcome.bounds[topic][0],
            outcome.bounds[topic][1] - extra,
        )


def test_hanging_transaction_pins_the_lso(outcome: Outcome) -> None:
    hang = _part(outcome.forecast, HANG)
    assert len(hang.open_transactions) == 1
    t = hang.open_transactions[0]
    assert t.hangs
    assert t.coordinator_state == "CompleteCommit"
    assert t.first_offset == TXN_RECORDS + 1  # after the first transaction and its marker
    assert hang.last_stable_offset == t.first_offset
    assert outcome.committed_lso[HANG] == hang.last_stable_offset
    assert f"LSO pinned: {HANG}-0 at {t.first_offset}" in outcome.text
    assert "HANGS" in outcome.text
    assert outcome.forecast.summary()["hanging_transactions"] == 1


def test_open_transaction_is_aborted_at_its_timeout(outcome: Outcome) -> None:
    p = _part(outcome.forecast, OPEN)
    assert len(p.open_transactions) == 1
    t = p.open_transactions[0]
    assert not t.hangs
    assert t.coordinator_state == "Ongoing"
    assert p.last_stable_offset == 0
    # The coordinator aborted it: its marker at the old end, the LSO past it.
    assert outcome.committed_lso[OPEN] == p.log_end_offset + 1


def test_group_committed_past_the_truncation(outcome: Outcome) -> None:
    fc = outcome.forecast
    orders = _part(fc, ORDERS)
    assert orders.removed is not None
    new_end = orders.log_end_offset
    assert new_end < ORDERS_RECORDS
    impacts = {i.group: i for i in groups_hurt(fc, read_commits([fc.log_dirs[0].path])) if i.topic == ORDERS}
    past, inside = impacts["g-past"], impacts["g-in"]
    assert past.out_of_range == "past-log-end"
    assert past.hurt
    assert inside.out_of_range is None
    # What the broker's coordinator serves and where consumers resume.
    assert outcome.committed == {"g-past": ORDERS_RECORDS, "g-in": IN_RANGE}
    assert outcome.resume["earliest"] == past.resume_earliest == 0
    assert outcome.resume["latest"] == past.resume_latest == new_end
    assert "g-past" in outcome.text
