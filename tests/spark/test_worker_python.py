"""The README's Spark snippet runs as written with an unactivated venv's python, and a cluster
without a configured worker Python is refused at register() in one sentence."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark not installed; install kdump[spark]")

from kdump.spark.workers import WorkerPythonError, worker_python

REPO = Path(__file__).resolve().parents[2]


def spark_unavailable() -> str | None:
    """Why a real Spark job cannot run here, or None."""
    import shutil

    java_home = os.environ.get("JAVA_HOME")
    if shutil.which("java") is None and not (java_home and (Path(java_home) / "bin" / "java").exists()):
        return "no Java runtime: java is not on PATH and JAVA_HOME is unset"
    return None


def _snippet() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- spark-snippet -->\n```python\n(.*?)```", readme, re.S)
    assert found, "README.md has no Spark snippet after <!-- spark-snippet -->"
    return found.group(1)


@pytest.mark.slow
def test_readme_snippet_runs_from_an_unactivated_venv(tmp_path: Path) -> None:
    reason = spark_unavailable()
    if reason:
        pytest.skip(reason)
    script = tmp_path / "script.py"
    script.write_text(_snippet() + "spark.stop()\n", encoding="utf-8")
    venv_bin = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK_", "VIRTUAL_ENV", "SPARK_"))}
    env["PATH"] = path or "/usr/bin:/bin"
    done = subprocess.run(
        [sys.executable, str(script)], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "producerId" in done.stdout
    # The key query finds rows in the samples (an example that prints an empty table teaches nothing).
    assert re.search(r"^\|\s*[\w-]+\|\s*\d+\|\s*\d+\|samples/", done.stdout, re.M), done.stdout
    assert "ModuleNotFoundError" not in done.stderr


def _session(master: str, conf: dict[str, str]) -> Any:
    sc = SimpleNamespace(master=master, pythonExec="python3", getConf=lambda: SimpleNamespace(get=conf.get))
    return SimpleNamespace(sparkContext=sc)


def test_local_master_gets_the_drivers_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    spark = _session("local[2]", {})
    assert worker_python(spark) == sys.executable
    assert spark.sparkContext.pythonExec == sys.executable


def test_configured_python_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    spark = _session("spark://host:7077", {"spark.pyspark.python": "/opt/venv/bin/python"})
    assert worker_python(spark) == "/opt/venv/bin/python"
    assert spark.sparkContext.pythonExec == "/opt/venv/bin/python"


def test_cluster_without_a_worker_python_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    with pytest.raises(WorkerPythonError, match=r"set spark\.pyspark\.python"):
        worker_python(_session("spark://host:7077", {}))
