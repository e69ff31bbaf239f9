"""`kdump dump` with Kafka's flags against Kafka 4.4's own DumpLogSegments, run on the same files.

The corpus oracles were written by Kafka 3.8's tool; this runs the newest pinned release's tool (Java,
from its jars: no broker) on every file of the corpus (the bundled subset when ../shared is absent),
all in one `--files` list as runbooks do, and compares stdout byte for byte and stderr line for line
(Kafka's summaries for over a hundred files, in the order Java's hash map gives them). Each invocation is one short JVM run.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from brokers.cluster import java_command
from brokers.releases import Release
from brokers.tools import dump_log_class
from click.testing import Result
from corpus import CORPUS_DIRS

Kdump = Callable[..., Result]

# One run per set of flags; decoders are run on the partitions they are made for.
RUNS: list[tuple[str, list[str], str]] = [
    ("shallow", [], "*"),
    ("deep data", ["--deep-iteration", "--print-data-log"], "*"),
    ("verify indexes", ["--verify-index-only"], "*"),
    # The running copy's preallocated time index fails the check and ends the run, as in Kafka.
    ("sanity check", ["--index-sanity-check"], "*"),
    ("skip metadata", ["--skip-record-metadata", "--print-data-log"], "txn-*"),
    ("offsets decoder", ["--offsets-decoder"], "__consumer_offsets-0"),
    ("transaction log decoder", ["--transaction-log-decoder"], "__transaction_state-0"),
    ("metadata decoder", ["--cluster-metadata-decoder"], "__cluster_metadata-0"),
    (
        "decoder classes",
        ["--key-decoder-class", "--value-decoder-class", "org.apache.kafka.tools.api.StringDecoder"],
        "txn-*",
    ),
    ("max bytes", ["--max-bytes", "100000", "--deep-iteration"], "c-none-0"),
    ("bootstrap snapshot", ["--cluster-metadata-decoder"], "kafka-3.8.0/_logdir-files/bootstrap.checkpoint"),
    # Kafka's LongDecoder dies on the first key shorter than 8 bytes, in the middle of a line.
    ("long keys", ["--key-decoder-class", "org.apache.kafka.tools.api.LongDecoder"], "txn-1"),
]


def _files(root: Path, partitions: str) -> list[str]:
    """The segment files of the partitions matching a pattern, or one file named by its path."""
    if "/" in partitions:
        return [partitions] if (root / partitions).is_file() else []
    found: list[str] = []
    for corpus_dir in CORPUS_DIRS:
        for part in sorted((root / corpus_dir).glob(partitions)):
            if not part.is_dir() or part.name in ("expected", "_logdir-files"):
                continue
            for f in sorted(part.iterdir()):
                if re.fullmatch(r"\d{20}\.(log|index|timeindex|snapshot|txnindex)", f.name):
                    found.append(f"{corpus_dir}/{part.name}/{f.name}")
    return found


@pytest.mark.parametrize(("label", "flags", "partitions"), RUNS, ids=[r[0] for r in RUNS])
def test_kdump_prints_what_kafka_44_prints(
    kafka_newest: Release,
    kdump: Kdump,
    corpus_root: Path,
    monkeypatch: pytest.MonkeyPatch,
    label: str,
    flags: list[str],
    partitions: str,
) -> None:
    files = _files(corpus_root, partitions)
    if not files:
        pytest.skip(f"no {partitions} partition in this corpus")
    monkeypatch.chdir(corpus_root)
    listed = ",".join(files)
    cmd = java_command(kafka_newest, dump_log_class(kafka_newest), *flags, "--files", listed, heap="1g")
    # Bytes, not text: printed keys and values hold "\r", which text mode would turn into "\n".
    kafka = subprocess.run(cmd, capture_output=True, check=False, timeout=600)
    kafka_stderr = kafka.stderr.decode("utf-8", "replace")
    ours = kdump("dump", "--kafka-version", kafka_newest.version, *flags, "--files", listed)
    assert ours.exit_code == kafka.returncode, kafka_stderr[-2000:]
    assert ours.stdout_bytes == kafka.stdout, label
    root = f"{Path.cwd()}/"
    if kafka.returncode:
        # Kafka's tool died: its exception's line (kdump prints no Java stack trace).
        assert ours.stderr.splitlines() == kafka_stderr.splitlines()[:1], label
        return
    # The summaries after the last file, in Kafka's order across files (its hash map's order).
    assert ours.stderr.replace(root, "") == kafka_stderr.replace(root, ""), label


def _damaged(src: Path, how: str) -> bytes:
    """A copy of a real segment, damaged the way crashes and disks damage them."""
    data = bytearray(src.read_bytes())
    first = int.from_bytes(data[8:12], "big") + 12
    if how == "zero tail":  # preallocated or never written after a crash
        return bytes(data) + bytes(4096)
    if how == "torn tail":
        return bytes(data[:-100])
    if how == "zeros between batches":
        return bytes(data[:first]) + bytes(40) + bytes(data[first:])
    if how == "flipped byte":  # in the first batch's checksum: it fails, the records still read
        data[17] ^= 0x20
        return bytes(data)
    raise AssertionError(how)


@pytest.mark.parametrize("how", ["zero tail", "torn tail", "zeros between batches", "flipped byte"])
@pytest.mark.parametrize("flags", [[], ["--deep-iteration", "--print-data-log"]], ids=["shallow", "deep"])
def test_damaged_segments_end_as_kafka_44s_tool_ends(
    kafka_newest: Release,
    kdump: Kdump,
    corpus_root: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
    flags: list[str],
) -> None:
    logs = sorted((corpus_root / "kafka-3.8.0").glob("c-none-0/*.log"))
    logs = [log for log in logs if log.stat().st_size > 20_000]
    if not logs:
        pytest.skip("no segment of c-none-0 in this corpus")
    part = tmp_path / "damaged-0"
    part.mkdir()
    (part / logs[0].name).write_bytes(_damaged(logs[0], how))
    monkeypatch.chdir(tmp_path)
    listed = f"damaged-0/{logs[0].name}"
    cmd = java_command(kafka_newest, dump_log_class(kafka_newest), *flags, "--files", listed, heap="512m")
    kafka = subprocess.run(cmd, capture_output=True, check=False, timeout=300)
    ours = kdump("dump", *flags, "--files", listed)
    assert ours.exit_code == kafka.returncode
    assert ours.stdout_bytes == kafka.stdout
    theirs = kafka.stderr.decode().splitlines()
    # Where Kafka's tool dies, its exception's trace follows the first line; kdump prints that line.
    assert ours.stderr.splitlines() == (theirs if kafka.returncode == 0 else theirs[:1])
