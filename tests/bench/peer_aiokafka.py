"""The peer of the record-level benchmarks: a segment's records as JSON lines with aiokafka.

aiokafka's compiled record reader (`MemoryRecords`, its C extension) walks the batches, checks each
batch's CRC, decompresses it and yields its records; each record is written with `json.dumps` to a
64 KiB buffered stdout. What a team would write today to dump a segment with a well-known library.

Usage: python tests/bench/peer_aiokafka.py SEGMENT.log > /dev/null
(needs `pip install aiokafka`; a benchmark peer, not a dependency of kdump)
"""

from __future__ import annotations

import io
import json
import mmap
import sys


def main() -> None:
    """Print every record of the segment as one JSON line."""
    from aiokafka.record.memory_records import MemoryRecords

    with (
        open(sys.stdout.fileno(), "wb", closefd=False, buffering=1 << 16) as raw,
        io.TextIOWrapper(raw, encoding="utf-8") as out,
        open(sys.argv[1], "rb") as f,
        mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as data,
    ):
        records = MemoryRecords(bytes(data))
        while (batch := records.next_batch()) is not None:
            if not batch.validate_crc():
                raise SystemExit(f"crc mismatch at offset {batch.base_offset}")
            for r in batch:
                key, value = r.key, r.value
                out.write(
                    json.dumps(
                        {
                            "offset": r.offset,
                            "timestamp": r.timestamp,
                            "key": None if key is None else key.decode("utf-8", "replace"),
                            "value": None if value is None else value.decode("utf-8", "replace"),
                            "headers": [
                                [k, None if v is None else v.decode("utf-8", "replace")] for k, v in r.headers
                            ],
                        }
                    )
                )
                out.write("\n")
        out.flush()


if __name__ == "__main__":
    main()
