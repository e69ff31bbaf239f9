"""`compare`: the replicas of one partition side by side (`compare`), each replica read batch header
by batch header (`replica`), and the leader epoch rules of follower truncation (`epochs`).

May use: formats, scan, model, store, findings, errors, `ops.tiered`.
"""
