"""Build a broker log dir of many partitions, one small segment each, for `bench_logdir_verify.py`.

Usage: python tests/bench/make_logdir.py DIR [--partitions 10000] [--size-kb 260]

Writes DIR/kafka-logs: meta.properties and `--partitions` partition directories (topics of 100
partitions, `topicNNN-P`), each as a broker leaves one: a segment of about `--size-kb` KB of zstd
batches of 22 records of 60-400 B (segment C's kind of batch;
~99 batches a segment, as in the issue's load), its offset and time indexes, a leader-epoch
checkpoint and partition.metadata (one topic id per topic). Sixteen template partitions are built
once and copied, so 10,000 partitions (2.6 GB) take about a minute; a log dir already built is
kept. Keep DIR outside the repository (e.g. /tmp/kdump-logdir).
"""

from __future__ import annotations

import argparse
import base64
import random
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from builders import SegmentBuilder
from make_segments import _value

from kdump.formats.constants import Codec
from kdump.formats.records import NewRecord

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "logdir"
TEMPLATES = 16
PER_TOPIC = 100
RECORDS = 22  # per batch


def _template(root: Path, i: int, size: int) -> Path:
    rng = random.Random(i)
    seg = SegmentBuilder(base_offset=0)
    ts = 1_790_000_000_000
    while len(seg.data) < size:
        recs = [
            NewRecord(f"key-{seg.next_offset + k}".encode(), _value(rng, rng.randint(60, 400)), ts + k, ())
            for k in range(RECORDS)
        ]
        ts += RECORDS
        seg.add_v2(recs, codec=Codec.ZSTD, producer_id=1000, producer_epoch=0, base_sequence=seg.next_offset)
    part = root / f"t{i}-0"
    seg.write(part)
    (part / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    return part


def _topic_id(topic: int) -> str:
    raw = random.Random(f"topic{topic}").randbytes(16)
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def build(root: Path, partitions: int, size_kb: int) -> Path:
    """DIR/kafka-logs (built unless there); returns its path."""
    logs = root / "kafka-logs"
    if logs.is_dir():
        return logs
    started = time.perf_counter()
    work = root / "building"
    shutil.rmtree(work, ignore_errors=True)
    templates = [_template(work / "templates", i, size_kb * 1000) for i in range(TEMPLATES)]
    out = work / "kafka-logs"
    out.mkdir(parents=True)
    shutil.copyfile(SAMPLES / "meta.properties", out / "meta.properties")
    for p in range(partitions):
        topic, index = divmod(p, PER_TOPIC)
        dest = out / f"topic{topic:03d}-{index}"
        dest.mkdir()
        for f in templates[p % TEMPLATES].iterdir():
            shutil.copyfile(f, dest / f.name)
        (dest / "partition.metadata").write_text(f"version: 0\ntopic_id: {_topic_id(topic)}\n")
    out.rename(logs)
    shutil.rmtree(work)
    total = sum(f.stat().st_size for f in logs.rglob("*.log"))
    print(
        f"built {partitions} partitions, {total / 1e9:.2f} GB of logs, in {time.perf_counter() - started:.0f} s"
    )
    return logs


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dir", type=Path)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--size-kb", type=int, default=260)
    args = parser.parse_args()
    print(build(args.dir, args.partitions, args.size_kb))


if __name__ == "__main__":
    main()
