"""What a broker will do at start with its log dirs, forecast from the files alone.

Owns `kdump forecast`'s model: per log dir whether it goes offline or stops the broker, per partition
its load (clean, recovery, truncation, stray, pending delete, created empty) and its log start and end
after start-up, and the consumer groups that hurts. Nothing here writes.

May use: formats, scan, model, store, findings, errors, `ops.metadata` (the image the broker replays),
`ops.repair` (trim-tail's plan is the recovery's cut), `ops.consumers` (the groups hurt), `ops.checks` (the transaction coordinator's
state per producer).
"""

from __future__ import annotations

from kdump.ops.forecast.partitions import PartitionForecast
from kdump.ops.forecast.plan import Forecast, Verdict, forecast

__all__ = ["Forecast", "PartitionForecast", "Verdict", "forecast"]
