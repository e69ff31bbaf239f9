"""Tiered storage as the broker sees it: which partitions are tiered and their two log starts
(`partitions`), and what `__remote_log_metadata` says of their remote segments (`remote_metadata`).

May use: formats, scan, model, store, findings, errors, and `ops.common`.
"""
