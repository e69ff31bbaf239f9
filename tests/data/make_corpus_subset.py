"""Rebuild ``tests/data/corpus-subset.tar.xz`` from the full corpus (``shared/corpus``).

Usage: ``python tests/data/make_corpus_subset.py [--corpus DIR] [--out FILE]``

The selection is described in ``tests/data/PROVENANCE.md``. Rules applied here:

* A partition keeps a contiguous run of segments (a dropped prefix and/or suffix, never a middle
  segment). Every file of the partition dir whose 20-digit base offset lies in ``[first kept base,
  first dropped base after the run)`` is kept (``.log``, ``.index``, ``.timeindex``, ``.snapshot``,
  ``.txnindex``, ``*.deleted``); a kept prefix also keeps older files (early snapshots). The dir's
  other files (``leader-epoch-checkpoint``, ``partition.metadata``, ``quorum-state``) are kept. The
  same range selects the oracles in ``expected/<partition-dir>/``.
* ``.log`` oracles (``*.txt.gz`` in the corpus) and producer manifests (``*.json.gz``) are stored
  gunzipped (xz then shares the text between the shallow, deep and print-data dumps and the
  uncompressed segment); ``tests/corpus.py`` gzips them again on extraction.
* ``expected/facts.json`` keeps only the selected partitions, each entry verbatim (its totals and
  segment list still describe the whole partition).
* ``expected/producer-manifests/<topic>.json.gz`` keeps the ``summary`` verbatim and only the
  ``records`` of the selected partitions whose offsets fall in the kept segments' offset ranges.
* The corpus README, a ``SUBSET`` marker and the ``_logdir-files`` are added at their usual places.
* Archive members are sorted, with mtime 0 and owner root, so the output is reproducible.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import lzma
import tarfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus"
DEFAULT_OUT = Path(__file__).resolve().parent / "corpus-subset.tar.xz"

ALL = None
# corpus dir -> partition dir -> kept segment bases (a contiguous run), or ALL.
SELECTION: dict[str, dict[str, list[int] | None]] = {
    "kafka-3.8.0": {
        "c-none-0": [2985],
        "c-snappy-0": [2982],
        "txn-1": [547],
        "compacted-sparse-0": [0, 1201],
        "timestamps-0": [1166],
        "log-append-time-0": [1358],
        "empty-0": ALL,
        "__consumer_offsets-0": ALL,
        "__transaction_state-0": ALL,
        "__cluster_metadata-0": ALL,
    },
    "kafka-3.8.0-zk-legacy": {
        "legacy-v0-none-0": [645],
        "legacy-v0-lz4-0": [770],
        "legacy-v1-lz4-0": [749],
        "legacy-v1-lat-0": [471],
        "mixed-formats-0": [1780],
    },
    "kafka-3.8.0-running-copy": {
        "live-0": [8074],
        "compacted-sparse-0-deleted-leftovers": [1201, 1500],
    },
}
# Oracles left out to stay within the size budget (~1.5 MB).
EXCLUDED_ORACLES = {
    "kafka-3.8.0-running-copy/expected/live-0/00000000000000008074.log.deep-print-data-log.txt.gz"
}
# Manifest topic of a partition dir ("<topic>-<partition>").
MANIFEST_TOPICS = {
    "c-none-0": "c-none",
    "c-snappy-0": "c-snappy",
    "txn-1": "txn",
    "compacted-sparse-0": "compacted-sparse",
    "timestamps-0": "timestamps",
    "log-append-time-0": "log-append-time",
    "legacy-v0-none-0": "legacy-v0-none",
    "legacy-v0-lz4-0": "legacy-v0-lz4",
    "legacy-v1-lz4-0": "legacy-v1-lz4",
    "legacy-v1-lat-0": "legacy-v1-lat",
    "mixed-formats-0": "mixed-formats",
    "live-0": "live",
}


def _base(name: str) -> int | None:
    head = name.split(".", 1)[0]
    return int(head) if len(head) == 20 and head.isdigit() else None


def _kept_range(part_dir: Path, kept: list[int] | None) -> tuple[int, float]:
    if kept is None:
        return 0, float("inf")
    bases = sorted({b for f in part_dir.iterdir() if (b := _base(f.name)) is not None and ".log" in f.name})
    first, last = min(kept), max(kept)
    run = [b for b in bases if first <= b <= last]
    if sorted(kept) != run:
        raise SystemExit(f"{part_dir}: kept segments {kept} are not a contiguous run of {bases}")
    later = [b for b in bases if b > last]
    # A kept prefix also keeps the files older than its first segment (e.g. early producer snapshots).
    return (first if first > bases[0] else 0), (later[0] if later else float("inf"))


class _Tar:
    def __init__(self) -> None:
        self.members: dict[str, bytes] = {}

    def add(self, name: str, data: bytes) -> None:
        self.members[name] = data

    def finish(self) -> bytes:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name in sorted(self.members):
                data = self.members[name]
                info = tarfile.TarInfo(name)
                info.size = len(data)
                info.mode = 0o644
                info.mtime = 0
                info.uname = info.gname = "root"
                tar.addfile(info, io.BytesIO(data))
        return buffer.getvalue()


def _offset_ranges(facts: dict[str, Any], part: str, lo: int, hi: float) -> list[tuple[int, int]]:
    ranges = []
    for seg in facts[part]["segments_from_dump"]:
        base = int(seg["segment"])
        if lo <= base < hi and seg["first_offset"] is not None:
            ranges.append((seg["first_offset"], seg["last_offset"]))
    return ranges


def build(corpus: Path) -> bytes:
    out = _Tar()
    for corpus_dir, parts in SELECTION.items():
        root = corpus / corpus_dir
        facts_path = root / "expected" / "facts.json"
        facts = json.loads(facts_path.read_text())
        kept_facts: dict[str, Any] = {}
        manifests: dict[str, list[tuple[int, int, int]]] = {}
        for part, kept in parts.items():
            part_dir = root / part
            lo, hi = _kept_range(part_dir, kept)
            for directory in (part_dir, root / "expected" / part):
                for f in sorted(directory.iterdir()):
                    base = _base(f.name)
                    if base is not None and not lo <= base < hi:
                        continue
                    rel = f.relative_to(corpus).as_posix()
                    if rel in EXCLUDED_ORACLES:
                        continue
                    data = f.read_bytes()
                    if f.name.endswith(".txt.gz"):
                        out.add(rel[: -len(".gz")], gzip.decompress(data))
                    else:
                        out.add(rel, data)
            if part in facts:
                kept_facts[part] = facts[part]
                if part in MANIFEST_TOPICS:
                    partition = int(part.rsplit("-", 1)[1])
                    for first, last in _offset_ranges(facts, part, lo, hi):
                        manifests.setdefault(MANIFEST_TOPICS[part], []).append((partition, first, last))
        out.add(f"{corpus_dir}/expected/facts.json", (json.dumps(kept_facts, indent=1) + "\n").encode())
        for topic, ranges in manifests.items():
            src = root / "expected" / "producer-manifests" / f"{topic}.json.gz"
            manifest = json.loads(gzip.decompress(src.read_bytes()))
            manifest["records"] = [
                r
                for r in manifest["records"]
                if any(
                    r["partition"] == p and r["offset"] is not None and a <= r["offset"] <= b
                    for p, a, b in ranges
                )
            ]
            text = json.dumps(manifest, separators=(",", ":")).encode()
            out.add(f"{corpus_dir}/expected/producer-manifests/{topic}.json", text)
        logdir = root / "_logdir-files"
        for f in sorted(logdir.iterdir()) if logdir.is_dir() else []:
            out.add(f.relative_to(corpus).as_posix(), f.read_bytes())
    out.add("README.md", (corpus / "README.md").read_bytes())
    out.add(
        "SUBSET", b"Partial copy of shared/corpus; see tests/data/PROVENANCE.md in the kdump repository.\n"
    )
    return lzma.compress(out.finish(), preset=9 | lzma.PRESET_EXTREME)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    data = build(args.corpus)
    args.out.write_bytes(data)
    print(f"wrote {args.out} ({len(data)} bytes)")


if __name__ == "__main__":
    main()
