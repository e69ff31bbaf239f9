"""The SparkSession kdump starts for its own commands (`verify` and `compare` with `--engine spark`).

A JVM started the default way writes a dozen lines to stderr before kdump has said anything: the
launcher's incubator-module warning, log4j's default-profile banner, a loopback-address warning,
the Hadoop native-library warning. On a terminal they bury kdump's own diagnostics; in CI they
look like failures. kdump's own session therefore starts its driver JVM with a log4j2
configuration that lets only errors through, binds a local master to 127.0.0.1, and reads the
JVM's stderr itself, passing on every line except the launcher's known notices. Set
`KDUMP_SPARK_LOGS=1` to get Spark's own logging back unchanged. A session the caller already
runs is used as it is.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

from kdump.spark.workers import worker_python

LOGS_SETTING = "KDUMP_SPARK_LOGS"
"""`1` keeps the JVM's own logging (Spark's defaults) for kdump's sessions."""

QUIET_LOG4J2 = Path(__file__).resolve().with_name("log4j2-quiet.properties")

# Lines the JVM writes to stderr itself, not through log4j: the launcher's module notice, and Spark's
# word on the level a Python driver starts at (kdump sets its own right after). Dropped.
_LAUNCHER_NOTICES = (
    b"WARNING: Using incubator modules:",
    b'Setting default log level to "',
    b"To adjust logging level use sc.setLogLevel(",
)


def _forward(stream: IO[bytes]) -> None:
    """Copy the JVM's stderr to the process's standard error (descriptor 2, where the JVM would
    have written), line by line, without the launcher's notices."""
    for line in iter(stream.readline, b""):
        if not line.startswith(_LAUNCHER_NOTICES):
            try:
                os.write(2, line)
            except OSError:
                return


def _quiet_gateway(conf: Any) -> Any:
    """Launch the driver JVM with its stderr read by a thread of ours (see the module docstring)."""
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})  # type: ignore[no-untyped-call]
    proc = getattr(gateway, "proc", None)
    if proc is not None and proc.stderr is not None:
        threading.Thread(target=_forward, args=(proc.stderr,), daemon=True).start()
    return gateway


def spark_session(master: str | None, needed_for: str = "--engine spark") -> tuple[Any, bool]:
    """The running SparkSession, or a new one on `master` (default `local[*]`); and whether it is new.

    For a local master the workers run this very Python (`PYSPARK_PYTHON`, unless already set), so
    they find kdump and pyarrow. pyspark, pyarrow and (for a new session) Java are checked first:
    `MissingDependencyError` names what to install.
    """
    from kdump.spark.requirements import require_java, require_modules

    require_modules(needed_for, "pyspark", "pyarrow")
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is not None:
        return SparkSession.builder.getOrCreate(), False
    require_java(needed_for)
    url = master or "local[*]"
    conf = SparkConf().setMaster(url).setAppName("kdump").set("spark.ui.showConsoleProgress", "false")
    local = url.startswith("local")
    if local:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        # A local master talks to itself only; binding the loopback address also spares the
        # "hostname resolves to a loopback address" warning.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if os.environ.get(LOGS_SETTING) == "1":
        sc = SparkContext(conf=conf)
    else:
        options = conf.get("spark.driver.extraJavaOptions", "") or ""
        conf.set(
            "spark.driver.extraJavaOptions",
            f"{options} -Dlog4j2.configurationFile={QUIET_LOG4J2.as_uri()}".strip(),
        )
        sc = SparkContext(conf=conf, gateway=_quiet_gateway(conf))
    spark = SparkSession(sc)
    sc.setLogLevel("ERROR")
    worker_python(spark)
    return spark, True
