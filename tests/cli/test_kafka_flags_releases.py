"""`kdump dump --kafka-version R` against the real `kafka-dump-log` of release R, on internal topics that
other releases wrote: an operator dumps with the tool of the cluster's release, whatever release wrote
the segments (logs outlive upgrades; a team may keep an older tool on its jump host).

Each release's tool runs once per decoder over the internal-topic segments of the 4.x corpus
(`tests/data/kafka4-corpus.tar.xz`: logs 3.9.1, 4.1.1 and 4.4.0 brokers wrote, and the ELR cluster's
node), and kdump must print the same lines: the decoder text of that release (Kafka 3.x's and 4.0's
transaction-log text, 4.1-4.3's numeric transaction states, 4.4's names), and only what that release
knows of newer records (tagged fields it skips, record types and versions it refuses or reads as its
own newest). A release's tool without the decoder flag stops at the flag, and so does kdump. The
same for the plain deep dump of every other partition with its summaries, and for the tiered
corpus's `__remote_log_metadata` with `--remote-log-metadata-decoder`.

Needs Java and Maven (each release is fetched into the cache outside git); skips with the reason
elsewhere, fails in CI.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path

import pytest
import tiered_corpus
from brokers.fixtures import require_release
from brokers.tools import dump_log_class, run_class
from click.testing import Result
from kafka4_corpus import DECODERS, kafka4_root

RELEASES = ("3.8.1", "3.9.1", "4.0.0", "4.1.1", "4.2.0", "4.3.1", "4.4.0")
WRITERS = ("kafka-3.9.1", "kafka-4.1.1", "kafka-4.4.0", "kafka-4.4.0-elr")
FLAG_SINCE = {"share-group-state-decoder": (4, 0)}


@pytest.fixture(scope="module")
def segments(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """Decoder flag -> every internal-topic segment of the corpus it decodes, in a fixed order."""
    root = kafka4_root(tmp_path_factory.getbasetemp())
    out: dict[str, list[Path]] = {}
    for writer in WRITERS:
        for topic, flag in DECODERS.items():
            out.setdefault(flag, []).extend(sorted((root / writer / f"{topic}-0").glob("*.log")))
    assert all(out.values()), out
    return out


def _release(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


@pytest.mark.slow
@pytest.mark.parametrize("flag", sorted(set(DECODERS.values())))
@pytest.mark.parametrize("version", RELEASES)
def test_kdump_prints_what_each_releases_tool_prints(
    version: str, flag: str, segments: dict[str, list[Path]], kdump: Callable[..., Result]
) -> None:
    release = require_release(version)
    files = ",".join(str(p) for p in segments[flag])
    args = ["--files", files, "--deep-iteration", "--print-data-log", f"--{flag}"]
    kafka = run_class(release, dump_log_class(release), *args, heap="1g", timeout=600)
    ours = kdump("dump", *args, "--kafka-version", version)
    if _release(version) < FLAG_SINCE.get(flag, (0, 0)):
        assert kafka.returncode == 1
        assert ours.exit_code == 1
        refused = f"joptsimple.UnrecognizedOptionException: {flag} is not a recognized option"
        assert refused in kafka.stderr.splitlines()[0]
        assert ours.stderr.strip() == f'Exception in thread "main" {refused}'
        assert ours.stdout == ""
        return
    assert kafka.returncode == 0, kafka.stderr[-2000:]
    assert ours.exit_code == 0, ours.output[-2000:]
    theirs = kafka.stdout.splitlines()
    mine = ours.stdout.splitlines()
    diff = list(difflib.unified_diff(theirs, mine, f"kafka-dump-log {version}", "kdump", n=0, lineterm=""))
    assert not diff, "\n".join(line[:400] for line in diff[:20])
    assert sum(line.startswith("| offset:") for line in theirs) >= 8  # not a vacuous comparison


@pytest.mark.slow
@pytest.mark.parametrize("version", RELEASES)
def test_kdump_prints_each_releases_deep_dump_and_summaries(
    version: str, tmp_path_factory: pytest.TempPathFactory, kdump: Callable[..., Result]
) -> None:
    """The plain deep dump of every other partition (every codec, transactions, a cleaned compacted
    topic whose gaps make 4.3's and 4.4's `Non-consecutive offsets` summary)."""
    release = require_release(version)
    root = kafka4_root(tmp_path_factory.getbasetemp())
    files = [
        p
        for writer in WRITERS
        for p in sorted((root / writer).glob("*/*.log"))
        if not p.parent.name.startswith("__")
    ]
    args = ["--files", ",".join(map(str, files)), "--deep-iteration", "--print-data-log"]
    kafka = run_class(release, dump_log_class(release), *args, heap="1g", timeout=600)
    ours = kdump("dump", *args, "--kafka-version", version)
    assert kafka.returncode == 0, kafka.stderr[-2000:]
    assert ours.exit_code == 0, ours.output[-2000:]
    assert ours.stdout == kafka.stdout
    assert ours.stderr == kafka.stderr
    # The cleaned segments' only gaps are before their first records: 3.x starts looking at the first
    # record, 4.0 to 4.2 print no summary at all.
    assert ("Non-consecutive offsets in" in kafka.stderr) == (_release(version) >= (4, 3))


@pytest.mark.slow
@pytest.mark.parametrize("version", RELEASES)
def test_kdump_prints_each_releases_remote_log_metadata(
    version: str, tmp_path_factory: pytest.TempPathFactory, kdump: Callable[..., Result]
) -> None:
    """`__remote_log_metadata` of the tiered corpus (3.9.1's and 4.4.0's brokers, and the synthetic
    records of every type and version) with `--remote-log-metadata-decoder`, which 3.8 does not have."""
    release = require_release(version)
    root = tiered_corpus.tiered_root(tmp_path_factory.getbasetemp())
    files = sorted(root.glob("*/__remote_log_metadata-0/*.log"))
    assert len(files) >= 3
    args = ["--files", ",".join(map(str, files)), "--deep-iteration", "--print-data-log"]
    args.append("--remote-log-metadata-decoder")
    kafka = run_class(release, dump_log_class(release), *args, heap="1g", timeout=600)
    ours = kdump("dump", *args, "--kafka-version", version)
    assert ours.exit_code == kafka.returncode, kafka.stderr[-2000:]
    assert ours.stdout == kafka.stdout
    if kafka.returncode == 0:
        assert ours.stderr == kafka.stderr
        assert kafka.stdout.count("| offset:") >= 8
    else:  # 3.8: joptsimple refuses the flag; Java adds a stack trace kdump has no use for
        assert ours.stderr.splitlines()[0] == kafka.stderr.splitlines()[0]
        assert _release(version) < (3, 9)
