"""kdump: forensic dump, verify and repair for Apache Kafka's on-disk logs.

`import kdump` is kept cheap: codecs, rich and pyspark load only when used.

How it is built
===============

Record-level work (`dump --records`, `verify --deep`, the Spark data source's rows) has two paths.
The pure-Python one (`formats/records.py`, `render/jsonl.py`, `render/text.py`) is the reference:
it defines the output and reports every kind of damage. The compiled one
(`formats/_fastrecords.c`, wrapped by `formats/fast_records.py`) only ever sees a batch whose
checksum and framing already passed; it decodes its records (or renders their JSON Lines or text
lines straight to bytes, or lays them out as Arrow buffers) and declines, sending the batch back
to the reference path, at the first thing it does not expect: a record that does not decode, a
count or size that does not add up, offsets out of order, a max timestamp that differs, a control
or legacy batch. Tests hold the two byte-identical on every corpus segment and on generated
batches of every codec, damaged ones included (`tests/formats/test_fast_records.py`,
`tests/cli/test_dump_paths.py`); CI runs them, then the record-level tests on the reference path
alone.

One streaming scanner (`kdump/scan`) frames batches over a memory-mapped file exactly as the
broker's reader does, checks CRC-32C or CRC32 in place, and yields batches, records (only when
asked: headers are read without decompressing), findings and a summary whose `valid_bytes` is
the broker's recovery count. Every command consumes it. One segment reader
(`kdump/model/segment_view.py`) turns an offset or a time into a checked position for `dump`,
`seek-by-time` and the Spark planner; it reads files through a small byte-source interface
(`kdump/model/byte_source.py`: local files mapped, other stores by ranges). A path given is
resolved once and each directory under it listed once (`kdump/model/log_dir.py`,
`kdump/model/listing.py`); every command starts from that one classification. Layers import
downward only, with no import circle (`tests/test_layering.py` holds both, and keeps every module
outside `formats` under 500 lines): `formats` (pure decoding and encoding, no I/O) → `store`
(URLs and tarballs) → `scan` → `model` → `ops` (library functions that return results and never
print) → `render` → `cli` and `spark`; `findings` and `errors` are the vocabulary all of them
share, and import nothing above `formats`. `ops` has one sub-package per capability, each
importing only those before it: `common` (worker pools, topic configs), `tiered`, `checks`
(verify), `repair` (reindex, trim-tail, restore, and `safety`, the one place kdump writes),
`salvage`, `seek`, `dump`, `payloads`, `replicas` (compare). `import kdump` loads no codec, no
rich and no pyspark.
"""

from __future__ import annotations

__version__ = "0.1.0"
