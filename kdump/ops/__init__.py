"""The commands as library functions: they return results or iterators of events and never print.

One sub-package per capability, each importing only those listed before it:

- `common`: worker process pools, the topic configuration a KRaft cluster recorded;
- `tiered`: tiered partitions and `__remote_log_metadata`;
- `checks`: `verify` and every integrity check it runs;
- `repair`: `reindex`, `trim-tail`, and the one place kdump writes (`safety`, `restore`);
- `salvage`: what a damaged partition still holds, and its output;
- `seek`: `seek-by-time`;
- `dump`: the event stream of `dump`;
- `payloads`: keys and values, schemas, `--where` (reads `_schemas` through `dump`, and adds decoded
  payloads to its stream);
- `replicas`: `compare`.
"""
