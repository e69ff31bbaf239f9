"""The storage layer: where kdump's bytes come from, when they are not a local file.

Local paths are read as always (mapped by `kdump.scan.source`). URLs (`s3://…`, `gs://…`,
`hdfs://…`) go through pyarrow's filesystems, with the standard environment's endpoint and
credentials; tarballs of a log dir are read in place. Each tree is listed once (`Entry`: path as
given, kind, size, readable), files are read by ranges (`RangedReader.read(position, length)`).

Importing this package loads nothing heavy: pyarrow, gzip and zstandard load on first use.

- `kdump.store.locations`: which spelling is stored (`is_stored`, `is_url`, `archive_split`).
- `kdump.store.entries`: `Entry` and `Tree`, the listing a path classifier consumes.
- `kdump.store.held`: the trees this process has listed; `kdump.store.trees` lists them.
- `kdump.store.remote`: URLs (pyarrow.fs): one listing, ranged reads, bytes fetched.
- `kdump.store.readers`: `RangedReader`, and readers of whole files (local or at a URL).
- `kdump.store.archive`: tarball members (read through the file readers), damaged archives as findings.
- `kdump.store.opening`: `open_reader` for every kind of location.
- `kdump.store.hints`: a finding's repair command, on the location as spelled.
- `kdump.store.buffers`: stored files as the buffers the scanner reads, whole or by slices.
- `kdump.store.paths`, `kdump.store.queries`: `StoredPath` and the model's filesystem questions.
"""

from __future__ import annotations
