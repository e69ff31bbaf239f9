"""`seek-by-time`: the offset a broker's ListOffsets would answer, from local segments (`by_time`)
and on tiered storage (`tiered`); the answer and its JSON object (`result`).

May use: formats, scan, model, store, findings, errors, `ops.tiered`.
"""
