"""The repairs: `reindex` (rebuild indexes as recovery does), `trim` (`trim-tail`: the broker's tail
recovery, planned then applied), and `safety`, the one place kdump writes (broker-lock checks,
backups, atomic replacement, fsync, `restore`).

May use: formats, scan, model, store, findings, errors, `ops.common`, `ops.checks` (a repair's plan
starts from verify's report).
"""
