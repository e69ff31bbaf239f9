"""Which Python the Spark workers run: the driver's own, unless something else was configured.

PySpark starts its workers with `PYSPARK_PYTHON`, else `python3` from the PATH. Run as
`.venv/bin/python script.py` without activating the venv, that `python3` is the system's, without
kdump or pyarrow, and every task dies with `ModuleNotFoundError` inside a Java stack trace. A
PySpark function (a data source, an RDD's map) records the interpreter when it is wrapped, so
setting it on the running context before `register` is in time.
"""

from __future__ import annotations

import os
import sys
from typing import Any

SETTING = "spark.pyspark.python"


class WorkerPythonError(RuntimeError):
    """The executors' Python cannot be chosen for the user (a cluster with nothing configured)."""


def worker_python(spark: Any) -> str:
    """Make the workers run a Python that has kdump; returns the interpreter they will run.

    `PYSPARK_PYTHON` or `spark.pyspark.python`, when set, win. Otherwise a local master's workers
    run this very interpreter (`sys.executable`). On a cluster this path may not exist on the
    executors, so kdump does not guess.

    Raises:
        WorkerPythonError: a cluster master and no worker Python configured.
    """
    sc = spark.sparkContext
    chosen = os.environ.get("PYSPARK_PYTHON") or sc.getConf().get(SETTING, None)
    if chosen:
        sc.pythonExec = chosen
        return str(chosen)
    master = str(sc.master)
    if master.startswith("local"):
        os.environ["PYSPARK_PYTHON"] = sys.executable
        sc.pythonExec = sys.executable
        return sys.executable
    raise WorkerPythonError(
        f"kdump: the executors of {master} would run `python3` from their PATH, which may lack kdump: "
        f'set {SETTING} (SparkSession.builder.config("{SETTING}", "/path/to/venv/bin/python"), '
        "or PYSPARK_PYTHON) to a Python that has kdump installed on every node"
    )
