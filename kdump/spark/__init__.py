"""kdump on Apache Spark (the `kdump[spark]` extra): the `kdump` data source and fleet verify.

Importing this package costs nothing: pyspark and pyarrow load only when one of its names is used.

- `register(spark)`: make `spark.read.format("kdump")` available (`kdump.spark.datasource`).
- `KdumpDataSource`: the data source class itself.
- `run_fleet_verify(targets, options, master=..., output=...)`: `kdump verify --engine spark`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["KdumpDataSource", "register", "run_fleet_verify"]


def __getattr__(name: str) -> Any:
    if name in ("KdumpDataSource", "register"):
        from kdump.spark import datasource

        return getattr(datasource, name)
    if name == "run_fleet_verify":
        from kdump.spark.fleet import run_fleet_verify

        return run_fleet_verify
    raise AttributeError(f"module 'kdump.spark' has no attribute {name!r}")
