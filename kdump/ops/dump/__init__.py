"""`dump`: the event stream of segments, indexes and state files (`stream`), the events that describe
non-log files (`files`) and their decoding (`state_files`), Kafka's internal topics (`internal`), a
partition's transactions (`transactions`), and the options and events of decoded keys and values
(`payload_events`; `kdump.ops.payloads` decodes them).

May use: formats, scan, model, store, findings, errors, `ops.tiered`.
"""
