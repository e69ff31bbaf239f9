"""What a broker will do at start with its log dirs, forecast from the files alone."""

from __future__ import annotations

from kdump.ops.forecast.partitions import PartitionForecast
from kdump.ops.forecast.plan import Forecast, Verdict, forecast

__all__ = ["Forecast", "PartitionForecast", "Verdict", "forecast"]
