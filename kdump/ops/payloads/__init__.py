"""Keys and values decoded while dumping (`decode`, added to dump's stream by `dumped`), where schemas
come from (`schema_catalog`: `_schemas` partitions read through dump, files, a registry through
`registry_client`; .proto text through `proto_text`), `kdump schemas` (`schema_export`) and
`--where` (`where`).

May use: formats, scan, model, store, findings, errors, `ops.dump`.
"""
