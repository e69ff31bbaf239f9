"""kdump's own Spark session: the driver JVM's noise stays off stderr, its errors do not.

The test runs `kdump verify --engine spark` as a user would (a new process, which starts its own
JVM) and reads what it printed on stderr; before the quiet session this was nine lines of launcher
notices, log4j banners and WARN lines on every run.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from spark.conftest import spark_unavailable  # tests/ is on sys.path (tests/conftest.py)

from kdump.spark import session

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "logdir"


def test_forward_drops_only_the_jvm_notices(capfd: pytest.CaptureFixture[str]) -> None:
    jvm = io.BytesIO(
        b"WARNING: Using incubator modules: jdk.incubator.vector\n"
        b'Setting default log level to "WARN".\n'
        b"To adjust logging level use sc.setLogLevel(newLevel). For SparkR, use setLogLevel(newLevel).\n"
        b"26/11/27 12:00:00 ERROR Executor: Exception in task 0.0\n"
        b"java.lang.OutOfMemoryError: Java heap space\n"
    )
    session._forward(jvm)
    assert capfd.readouterr().err == (
        "26/11/27 12:00:00 ERROR Executor: Exception in task 0.0\njava.lang.OutOfMemoryError: Java heap space\n"
    )


def _verify_on_spark(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    reason = spark_unavailable()
    if reason:
        pytest.skip(reason)
    return subprocess.run(
        [sys.executable, "-m", "kdump", "verify", "--engine", "spark", "--master", "local[1]", str(SAMPLES)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


@pytest.mark.spark
def test_fleet_verify_prints_nothing_of_the_jvm() -> None:
    env = {k: v for k, v in os.environ.items() if k not in (session.LOGS_SETTING, "SPARK_LOCAL_IP")}
    done = _verify_on_spark(env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines()[-1].startswith("Total: 10 partitions")


@pytest.mark.spark
def test_spark_logs_come_back_when_asked() -> None:
    env = {**os.environ, session.LOGS_SETTING: "1"}
    done = _verify_on_spark(env)
    assert done.returncode == 0, done.stderr
    assert "log4j" in done.stderr
