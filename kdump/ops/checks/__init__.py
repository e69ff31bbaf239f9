"""`verify` and every integrity check it runs: one segment (`segment`), a partition across its segments
(`continuity`, `epochs`), state files (`state`), the remote index cache (`remote_cache`) and tiered
storage (`remote`); `verify` spreads them over worker processes and gathers the reports.

Nothing here writes. May use: formats, scan, model, store, findings, errors, `ops.common`, `ops.tiered`.
"""
