"""The metadata image replay at 1,000 and 10,000 partitions, without a broker.

`python tests/bench/bench_metadata_image.py [--partitions 10000] [--rounds 3]` writes a
`__cluster_metadata-0` log: the 3.8 corpus' own records (features, broker registration, its topics)
followed by one TopicRecord per 10 partitions and a PartitionRecord (v0) per partition, encoded here
from the schema (frame version 1, flexible versions), then times `load_image` in a fresh process per
round: wall, CPU and peak RSS. Needs /work/shared/corpus (or KDUMP_CORPUS); a bench, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from kdump.formats.batch import BatchHeader
from kdump.formats.records import NewRecord, Record, build_v2_batch
from kdump.formats.varint import encode_uvarint
from kdump.scan import open_buffer, scan_log

CORPUS = Path(os.environ.get("KDUMP_CORPUS", "/work/shared/corpus"))


def _int32(v: int) -> bytes:
    return v.to_bytes(4, "big", signed=True)


def _ints(values: list[int]) -> bytes:
    return encode_uvarint(len(values) + 1) + b"".join(_int32(v) for v in values)


def topic_record(name: str, topic_id: uuid.UUID) -> bytes:
    raw = name.encode()
    return b"\x01\x02\x00" + encode_uvarint(len(raw) + 1) + raw + topic_id.bytes + b"\x00"


def partition_record(partition: int, topic_id: uuid.UUID, node: int) -> bytes:
    return (
        b"\x01\x03\x00"
        + _int32(partition)
        + topic_id.bytes
        + _ints([node])
        + _ints([node])
        + _ints([])
        + _ints([])
        + _int32(node)
        + _int32(0)
        + _int32(0)
        + b"\x00"
    )


def corpus_records() -> list[bytes]:
    path = CORPUS / "kafka-3.8.0" / "__cluster_metadata-0" / f"{0:020d}.log"
    out: list[bytes] = []
    with open_buffer(path) as buf:
        control = False
        for ev in scan_log(buf, file=str(path), deep=True):
            if isinstance(ev, BatchHeader):
                control = ev.is_control
            elif isinstance(ev, Record) and not control and ev.value is not None:
                out.append(bytes(ev.value))
    return out


def write_metadata_log(dir_: Path, partitions: int, per_topic: int = 10) -> int:
    values = corpus_records()
    for t in range(partitions // per_topic):
        tid = uuid.UUID(int=(1 << 64) + t)
        values.append(topic_record(f"bench-{t:05d}", tid))
        values.extend(partition_record(p, tid, 1) for p in range(per_topic))
    dir_.mkdir(parents=True, exist_ok=True)
    batches = []
    for i in range(0, len(values), 100):  # the controller writes batches of a few hundred records
        chunk = values[i : i + 100]
        batches.append(
            build_v2_batch(i, [NewRecord(timestamp=1_700_000_000_000, key=None, value=v) for v in chunk])
        )
    (dir_ / f"{0:020d}.log").write_bytes(b"".join(batches))
    return len(values)


_CHILD = """
import resource, sys, time
from pathlib import Path
t0 = time.perf_counter(); c0 = time.process_time()
from kdump.ops.metadata import load_image
image = load_image(Path(sys.argv[1]))
n = sum(len(t.partitions) for t in image.topics.values()) if isinstance(image.topics, dict) else -1
print(time.perf_counter() - t0, time.process_time() - c0,
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, len(image.findings), n)
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--partitions", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.partitions:
            d = Path(tmp) / str(n) / "__cluster_metadata-0"
            records = write_metadata_log(d, n)
            rows = []
            for _ in range(args.rounds):
                out = subprocess.run(
                    [sys.executable, "-c", _CHILD, str(d)], check=True, capture_output=True, text=True
                ).stdout.split()
                rows.append([float(x) for x in out])
            med = [statistics.median(col) for col in zip(*rows, strict=True)]
            print(
                json.dumps(
                    {
                        "partitions": n,
                        "records": records,
                        "wall_s": round(med[0], 3),
                        "cpu_s": round(med[1], 3),
                        "peak_rss_mib": round(med[2], 1),
                        "findings": int(med[3]),
                        "image_partitions": int(med[4]),
                    }
                )
            )


if __name__ == "__main__":
    main()
