"""kdump against Kafka's own kafka-dump-log, on log dirs real 4.4.0 and 3.9.1 brokers wrote (the committed
`tests/data/kafka4-corpus.tar.xz`; no Java needed): every file of the clean-stop copy, the copy taken
while it ran and the copy taken after SIGKILL, each against the tool of the release that wrote it, and
node 1's log dir of a 3-node 4.4.0 cluster whose metadata log holds eligible leader replicas (ELR).

* `kdump dump <segment>` prints the tool's shallow dump line for line (plus findings, all INFO, and
  its summary);
* `kdump dump --records <segment>` prints the tool's `--deep-iteration --print-data-log` dump line for
  line, batch and record lines (kdump adds the header values at the end of a record line), and for an
  internal topic the tool's decoder output: `--offsets-decoder` (KIP-848 consumer, share and streams
  groups), `--transaction-log-decoder` (transactions v2), `--share-group-state-decoder`,
  `--cluster-metadata-decoder` (the metadata log and its snapshots, KRaft voters records). kdump's text
  mode prints the newest release's decoder text; against 3.9.1's tool the decoded record lines are
  kdump's in that release's style (`internal_record_line(..., kafka="3.9")`), the rest as printed;
* index, time index, aborted-transaction index and producer snapshot entries equal the tool's
  (compared field by field: kdump prints those files in its own words);
* `verify` of each copy reports no error and no warning but the ones listed in `EXPECTED_WARNINGS`,
  each a state the broker itself leaves (see there).

`test_the_corpus_holds_the_4x_features` (and its 3.9 sibling) say what the archive holds, so a rebuild
that lost a feature fails here rather than proving less in silence.
"""

from __future__ import annotations

import json
import tarfile
from collections import Counter
from collections.abc import Callable
from dataclasses import astuple
from pathlib import Path

import pytest
from click.testing import Result
from kafka4_corpus import (
    ARCHIVE,
    CORPUS_DIRS,
    VERSIONS,
    decoder_of,
    kafka4_root,
    log_dir_copy,
    oracle,
    partitions,
    version_of,
)
from oracle import parse_index_dump, parse_snapshot_dump, parse_time_index_dump, parse_txnindex_dump

from kdump.findings import Finding, Severity
from kdump.formats.batch import BatchHeader
from kdump.model.log_dir import discover
from kdump.ops.checks.verify import VerifyOptions, verify_targets
from kdump.ops.dump.internal import InternalRecord
from kdump.ops.dump.stream import DumpOptions, dump_file
from kdump.render.kafka_decoded import NEWEST_KAFKA
from kdump.render.text import internal_record_line

Run = Callable[..., Result]


def _member_ids(suffixes: tuple[str, ...]) -> list[str]:
    """`<corpus dir>/<partition>/<file>` of the archive's files ending in `suffixes` (no extraction)."""
    with tarfile.open(ARCHIVE, "r:xz") as tar:
        names = sorted(m.name for m in tar.getmembers() if m.isfile())
    return [
        n
        for n in names
        if n.count("/") == 2 and n.split("/")[1] not in ("expected", "_logdir-files") and n.endswith(suffixes)
    ]


SEGMENTS = _member_ids((".log",))
CHECKPOINTS = _member_ids((".checkpoint",))
INDEXES = _member_ids((".index", ".timeindex", ".txnindex", ".snapshot"))


@pytest.fixture(scope="session")
def kafka4(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return kafka4_root(tmp_path_factory.getbasetemp())


def _lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _ours(kdump: Run, root: Path, rel: str, monkeypatch: pytest.MonkeyPatch, *flags: str) -> list[bytes]:
    """kdump's text dump of `rel`, run from the corpus root as the tool was, without findings and summary."""
    monkeypatch.chdir(root)
    result = kdump("dump", "--format", "text", *flags, rel)
    assert result.exit_code == 0, result.stderr
    lines = _lines(result.stdout_bytes)
    assert lines.pop().startswith(b"Summary: ")
    findings = [ln for ln in lines if ln.split(b" ", 1)[0] in (b"INFO", b"WARNING", b"ERROR")]
    assert all(ln.startswith(b"INFO ") for ln in findings), findings
    return [ln for ln in lines if ln not in findings]


def _same_record_line(ours: bytes, kafka: bytes) -> bool:
    """Equal, or equal but for the header values kdump prints after Kafka's record line."""
    return ours == kafka or (
        kafka.startswith(b"| offset: ") and ours.startswith(kafka + b" headers: [") and ours.endswith(b"]")
    )


@pytest.mark.parametrize("rel", SEGMENTS)
def test_batch_lines_equal_kafkas(
    kafka4: Path, kdump: Run, rel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = kafka4 / rel
    corpus = kafka4 / rel.split("/")[0]
    kafka = _lines(oracle(corpus, path, "shallow").read_bytes())
    assert _ours(kdump, kafka4, rel, monkeypatch) == kafka


@pytest.mark.parametrize("rel", SEGMENTS + CHECKPOINTS)
def test_record_lines_equal_kafkas(
    kafka4: Path, kdump: Run, rel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = kafka4 / rel
    corpus = kafka4 / rel.split("/")[0]
    decoder = decoder_of(path.parent)
    variant = f"deep-print-data-log.{decoder}" if decoder else "deep-print-data-log"
    kafka = _lines(oracle(corpus, path, variant).read_bytes())
    ours = _ours(kdump, kafka4, rel, monkeypatch, "--records")
    release = ".".join(version_of(rel.split("/")[0]).split(".")[:2])
    if decoder and release != NEWEST_KAFKA:
        styled = iter(_record_lines_in_style(path, release))
        ours = [next(styled) if ln.startswith(b"| offset: ") else ln for ln in ours]
    assert len(ours) == len(kafka), rel
    for mine, theirs in zip(ours, kafka, strict=True):
        assert _same_record_line(mine, theirs), (rel, mine, theirs)
    records = sum(ln.startswith(b"| offset: ") for ln in kafka)
    if path.stat().st_size:
        assert records > 0, rel


def _record_lines_in_style(path: Path, kafka: str) -> list[bytes]:
    """kdump's decoded record lines of `path` as Kafka `kafka`'s tool prints them."""
    lines: list[bytes] = []
    batch: BatchHeader | None = None
    for ev in dump_file(path, DumpOptions(records=True)):
        if isinstance(ev, BatchHeader):
            batch = ev
        elif isinstance(ev, InternalRecord):
            lines.append(internal_record_line(ev, batch, kafka=kafka).encode("utf-8", "surrogateescape"))
    return lines


def _rows(kdump: Run, path: Path) -> list[dict[str, object]]:
    result = kdump("dump", "--format", "json", str(path))
    assert result.exit_code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def _producer_state(r: dict[str, object]) -> tuple[object, ...]:
    """A producer snapshot entry as Kafka's tool prints it: no batch part for a producer without one."""
    txn_first = None if r["current_txn_first_offset"] == -1 else r["current_txn_first_offset"]
    head = (r["producer_id"], r["producer_epoch"], r["coordinator_epoch"], txn_first, r["timestamp"])
    if r["first_sequence"] is None:
        return (*head, None, None, None, None, None)
    batch = (r["first_sequence"], r["last_sequence"], r["last_offset"], r["offset_delta"], r["timestamp"])
    return (*head, *batch)


@pytest.mark.parametrize("rel", INDEXES)
def test_index_entries_equal_kafkas(kafka4: Path, kdump: Run, rel: str) -> None:
    path = kafka4 / rel
    dump = oracle(kafka4 / rel.split("/")[0], path, "dump")
    rows = _rows(kdump, path)
    if dump.with_name(dump.name + ".rc").exists():
        # 3.9.1's tool throws on the all-zero preallocated index of an empty active segment (its
        # NoSuchElementException is in the .stderr): no entries to compare; kdump still reads the file.
        assert "NoSuchElementException" in dump.with_name(dump.name + ".stderr").read_text()
        assert path.stat().st_size > 0
        assert rows
        return
    if path.suffix in (".index", ".timeindex"):
        if path.suffix == ".index":
            ours = [(r["offset"], r["position"]) for r in rows if r["type"] == "index-entry"]
            theirs = [tuple(e) for e in parse_index_dump(dump).entries]
        else:
            ours = [(r["timestamp"], r["offset"]) for r in rows if r["type"] == "time-index-entry"]
            theirs = [tuple(e) for e in parse_time_index_dump(dump).entries]
        if path.stat().st_size and not path.read_bytes().strip(b"\0"):
            # A running or killed broker's preallocated index with nothing written yet: Kafka's tool
            # prints its first zero slot as an entry at the base offset; kdump, like the broker's own
            # reads (which never write a first entry at relative offset 0, position 0), shows none.
            assert len(theirs) == 1, theirs
            assert 0 in theirs[0], theirs
            assert ours == []
        else:
            assert ours == theirs
    elif path.suffix == ".snapshot":
        ours = [_producer_state(r) for r in rows if r["type"] == "producer-state"]
        assert ours == [astuple(e) for e in parse_snapshot_dump(dump).entries]
    else:
        fields = ("producer_id", "first_offset", "last_offset", "last_stable_offset")
        ours = [tuple(r[f] for f in fields) for r in rows if r["type"] == "aborted-txn"]
        assert ours == [tuple(getattr(e, f) for f in fields) for e in parse_txnindex_dump(dump).entries]
        assert ours


# verify: what it may say about a real broker's log dir. Each entry is a state Kafka itself leaves:
#
# * (`leftover-file` on the `.deleted` files of `compacted-0` in the copies of the running and the killed
#   broker is info: the cleaner renames replaced segments to `.deleted` and removes them
#   `file.delete.delay.ms` (60 s) later; a broker starting on the copy deletes them.)
# * `leader-epoch-mismatch` at offset 0 of `deleted-records-0`: DeleteRecords before 12 truncated the
#   leader epoch checkpoint from the start at once (epoch 0 from 12), but the log start offset reaches
#   `log-start-offset-checkpoint` only on its 60 s schedule, so every copy (and the broker restarted
#   after SIGKILL: its log says `logStartOffset=0`) has log start 0 under batches of epoch 0 from 0.
_EPOCH_AFTER_DELETE_RECORDS = ("leader-epoch-mismatch", "deleted-records-0", 0)
EXPECTED_WARNINGS = {
    f"kafka-{v}{copy}": {_EPOCH_AFTER_DELETE_RECORDS}
    for v in VERSIONS
    for copy in ("", "-running-copy", "-killed-copy")
} | {"kafka-4.4.0-elr": set()}


def _verify(log_dir: Path) -> list[Finding]:
    reports = list(verify_targets([discover(str(log_dir))], VerifyOptions(jobs=1)))
    return [f for r in reports for f in r.findings]


@pytest.mark.parametrize("corpus_dir", CORPUS_DIRS)
def test_verify_says_nothing_the_broker_would_not(kafka4: Path, tmp_path: Path, corpus_dir: str) -> None:
    log_dir = log_dir_copy(kafka4, corpus_dir, tmp_path / "data")
    findings = _verify(log_dir)
    serious = {
        (f.code, Path(f.file).relative_to(log_dir).parts[0], f.offset)
        for f in findings
        if f.severity >= Severity.WARNING
    }
    # The epoch checkpoint DeleteRecords truncated ahead of the log start checkpoint: kdump reports it
    # only where a clean stop recorded a log start the epochs contradict (tests/ops/checks/test_epoch_checks.py);
    # a running or killed broker's lagging checkpoint is legal.
    assert serious - {_EPOCH_AFTER_DELETE_RECORDS} == EXPECTED_WARNINGS[corpus_dir] - {
        _EPOCH_AFTER_DELETE_RECORDS
    }
    leftovers = [f for f in findings if f.code == "leftover-file"]
    assert all(f.file.endswith(".deleted") for f in leftovers), leftovers


def _decoded(kdump: Run, part: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    files = sorted(part.glob("*.log")) + sorted(part.glob("*.checkpoint"))
    for f in files:
        for row in _rows_records(kdump, f):
            decoded = row.get("decoded")
            if isinstance(decoded, dict):
                counts[str(decoded["record"])] += 1
    return counts


def _rows_records(kdump: Run, path: Path) -> list[dict[str, object]]:
    result = kdump("dump", "--records", "--format", "json", str(path))
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert not [r for r in rows if r.get("code") in ("unknown-internal-record", "unknown-tagged-field")]
    return [r for r in rows if r["type"] == "record"]


def test_the_corpus_holds_the_4x_features(kafka4: Path, kdump: Run) -> None:
    corpus = kafka4 / "kafka-4.4.0"
    names = {p.name for p in partitions(corpus)}
    assert {f"codec-{c}-0" for c in ("none", "gzip", "snappy", "lz4", "zstd")} <= names
    codecs = set()
    for c in ("none", "gzip", "snappy", "lz4", "zstd"):
        text = oracle(corpus, corpus / f"codec-{c}-0" / "00000000000000000000.log", "shallow").read_text()
        codecs |= {
            ln.split("compresscodec: ")[1].split()[0] for ln in text.splitlines() if "compresscodec" in ln
        }
    assert codecs == {"none", "gzip", "snappy", "lz4", "zstd"}
    offsets = _decoded(kdump, corpus / "__consumer_offsets-0")
    assert {
        "OffsetCommit",
        "GroupMetadata",
        "ConsumerGroupMetadata",
        "ConsumerGroupMemberMetadata",
        "ConsumerGroupRegularExpression",
        "ShareGroupMetadata",
        "ShareGroupMemberMetadata",
        "StreamsGroupMetadata",
        "StreamsGroupTopology",
    } <= set(offsets), offsets
    share = _decoded(kdump, corpus / "__share_group_state-0")
    assert "ShareSnapshot" in share, share
    txn = _decoded(kdump, corpus / "__transaction_state-0")
    assert txn["TransactionLog"] > 0, txn
    metadata = _decoded(kdump, corpus / "__cluster_metadata-0")
    assert {"KRAFT_VOTERS", "SNAPSHOT_HEADER", "FEATURE_LEVEL_RECORD", "TOPIC_RECORD"} <= set(metadata), (
        metadata
    )
    # Transactions v2: every marker carries an epoch above its transaction's data.
    shallow = oracle(corpus, corpus / "txn-0" / "00000000000000000000.log", "shallow").read_text()
    batches = [ln for ln in shallow.splitlines() if ln.startswith("baseOffset: ")]
    epochs = [(int(ln.split("producerEpoch: ")[1].split()[0]), "isControl: true" in ln) for ln in batches]
    assert len(epochs) == 10
    assert all(marker[0] == data[0] + 1 for data, marker in zip(epochs[::2], epochs[1::2], strict=True))
    txnindex = oracle(corpus, corpus / "txn-0" / "00000000000000000000.txnindex", "dump")
    assert len(parse_txnindex_dump(txnindex).entries) == 2
    compacted = oracle(corpus, corpus / "compacted-0" / "00000000000000000000.log", "shallow").read_text()
    assert "deleteHorizonMs: OptionalLong[" in compacted


def test_the_39_corpus_holds_what_39_writes(kafka4: Path, kdump: Run) -> None:
    corpus = kafka4 / "kafka-3.9.1"
    offsets = _decoded(kdump, corpus / "__consumer_offsets-0")
    assert {"OffsetCommit", "GroupMetadata", "ConsumerGroupMetadata", "ConsumerGroupMemberMetadata"} <= set(
        offsets
    ), offsets
    metadata = _decoded(kdump, corpus / "__cluster_metadata-0")
    assert {"KRAFT_VOTERS", "SNAPSHOT_HEADER", "FEATURE_LEVEL_RECORD"} <= set(metadata), metadata
    # Transactions v1: each marker carries its transaction's epoch.
    shallow = oracle(corpus, corpus / "txn-0" / "00000000000000000000.log", "shallow").read_text()
    epochs = {
        int(ln.split("producerEpoch: ")[1].split()[0]) for ln in shallow.splitlines() if "producerEpoch" in ln
    }
    assert epochs == {0}


def test_the_elr_corpus_holds_eligible_leader_replicas(kafka4: Path) -> None:
    """Node 1 of a 3-node 4.4.0 cluster: the ELR the controller recorded when node 3 was fenced, when
    `min.insync.replicas` changed (CLEAR_ELR_RECORD) and when all three stopped (leader -1)."""
    corpus = kafka4 / "kafka-4.4.0-elr"
    log = corpus / "__cluster_metadata-0" / "00000000000000000000.log"
    text = oracle(corpus, log, "deep-print-data-log.cluster-metadata-decoder").read_text()
    payloads = [json.loads(ln.split(" payload: ", 1)[1]) for ln in text.splitlines() if " payload: {" in ln]
    elr = [
        p["data"]["eligibleLeaderReplicas"] for p in payloads if "eligibleLeaderReplicas" in p.get("data", {})
    ]
    assert [3] in elr
    assert any(len(e) >= 2 for e in elr)
    assert any(p["type"] == "CLEAR_ELR_RECORD" for p in payloads)
    # The tool prints KRaft control records as `KRaftVoters {...}`.
    voters = [json.loads(ln.split("KRaftVoters ", 1)[1]) for ln in text.splitlines() if "KRaftVoters {" in ln]
    assert voters
    assert [v["voterId"] for v in voters[0]["voters"]] == [1, 2, 3]
