"""`dump`: the event stream of segments, indexes and state files (`stream`), the events that describe
non-log files (`files`) and their decoding (`state_files`), Kafka's internal topics (`internal`) and a
partition's transactions (`transactions`).

May use: formats, scan, model, store, findings, errors, `ops.payloads`, `ops.tiered`.
"""
