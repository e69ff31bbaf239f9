"""`salvage`: the batches of a damaged partition that can still be trusted (`plan`, held packed by
`kept`, read back by `read`), records decoded before damage (`partial`), and the output: the clean
partition, `records.parquet` and the report (`output`, `parquet`, `report`).

May use: formats, scan, model, store, findings, errors, `ops.checks` and `ops.repair` (the clean
partition is reindexed, verified and written with the repairs' safety rules).
"""
