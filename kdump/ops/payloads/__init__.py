"""Keys and values decoded while dumping (`decode`, its options and events in `events`), where schemas
come from (`schema_catalog`: `_schemas` partitions, files, a registry through `registry_client`;
.proto text through `proto_text`), `kdump schemas` (`schema_export`) and `--where` (`where`).

May use: formats, scan, model, store, findings, errors.
"""
