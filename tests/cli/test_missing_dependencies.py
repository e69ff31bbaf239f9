"""A missing optional dependency is one sentence naming what to install, and exit 3, never an
internal error (exit 70): pyspark (and its py4j) and pyarrow for `--engine spark` and the Spark
data source, pyarrow for URLs, a Java 17+ runtime for Spark.

Each case runs kdump in a new process whose imports of the hidden package fail, as they do where it
is not installed (a meta path finder installed by a `sitecustomize` module), or whose PATH and
JAVA_HOME hold no java. No JVM is started: the checks come before Spark would be.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "logdir"
SPARK = "pip install 'kdump[spark]'"
JAVA = "install a Java 17+ runtime"

BLOCKER = """
import os, sys

HIDDEN = set(os.environ["KDUMP_TEST_HIDE"].split(","))


class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Hide())
"""


def _env(tmp_path: Path, hide: str | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("KDUMP_DEBUG", "PYTHONPATH")}
    paths = [str(REPO)]
    if hide is not None:
        (tmp_path / "blocker").mkdir(exist_ok=True)
        (tmp_path / "blocker" / "sitecustomize.py").write_text(BLOCKER)
        paths.insert(0, str(tmp_path / "blocker"))
        env["KDUMP_TEST_HIDE"] = hide
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra)
    return env


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _kdump(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return _run(env, "-m", "kdump", *args)


def _one_sentence(done: subprocess.CompletedProcess[str], *words: str) -> str:
    """The run exited 3 with one line on stderr (one per path given), naming what to install."""
    assert done.returncode == 3, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert lines
    for line in lines:
        assert line.startswith("kdump: "), line
        assert "internal error" not in line
        for word in words:
            assert word in line, line
    return lines[0]


SPARK_COMMANDS = [
    pytest.param(["verify", "--engine", "spark", str(SAMPLE / "txn-1")], id="verify"),
    pytest.param(
        ["verify", "--engine", "spark", "--output", "OUT", str(SAMPLE / "txn-1")], id="verify-output"
    ),
    pytest.param(["compare", "--engine", "spark", str(SAMPLE), str(SAMPLE)], id="compare"),
]


@pytest.mark.parametrize("args", SPARK_COMMANDS)
@pytest.mark.parametrize(
    ("hide", "package"), [("pyspark", "pyspark"), ("py4j", "pyspark"), ("pyarrow", "pyarrow")]
)
def test_engine_spark_without_a_package(tmp_path: Path, args: list[str], hide: str, package: str) -> None:
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    line = _one_sentence(_kdump(_env(tmp_path, hide), *args), f"needs {package}:", SPARK)
    assert line.startswith(f"kdump: {args[0]} --engine spark needs"), line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args", SPARK_COMMANDS)
def test_engine_spark_without_java(tmp_path: Path, args: list[str]) -> None:
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    empty = tmp_path / "empty"
    empty.mkdir()
    no_path = _env(tmp_path, PATH=str(empty))
    no_path.pop("JAVA_HOME", None)
    _one_sentence(_kdump(no_path, *args), "no java on the PATH", JAVA)
    _one_sentence(_kdump(_env(tmp_path, JAVA_HOME=str(empty)), *args), "JAVA_HOME has no bin/java", JAVA)


def test_engine_spark_with_an_old_java(tmp_path: Path) -> None:
    home = tmp_path / "jdk11"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text("#!/bin/sh\necho 'openjdk version \"11.0.21\" 2023-10-17' >&2\n")
    java.chmod(0o755)
    done = _kdump(_env(tmp_path, JAVA_HOME=str(home)), "verify", "--engine", "spark", str(SAMPLE / "txn-1"))
    _one_sentence(done, f"{java} is Java 11", JAVA)


@pytest.mark.parametrize("package", ["pyspark", "pyarrow"])
@pytest.mark.parametrize(
    "code",
    [
        "from kdump.spark import register",
        "from kdump.spark import KdumpDataSource",
        "import kdump.spark.datasource",
    ],
)
def test_data_source_entry_points_without_a_package(tmp_path: Path, code: str, package: str) -> None:
    done = _run(_env(tmp_path, package), "-c", code)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    expected = f"the kdump Spark data source needs {package}: {SPARK}"
    assert last == f"kdump.errors.MissingDependencyError: {expected}", done.stderr
    # An ImportError still, for code that falls back when the extra is absent.
    check = f"try:\n    {code}\nexcept ImportError as exc:\n    print(exc)"
    assert _run(_env(tmp_path, package), "-c", check).stdout.strip() == expected


@pytest.mark.parametrize(
    "args",
    [
        ["dump", "s3://bucket/kafka-logs/orders-0"],
        ["verify", "s3://bucket/kafka-logs/orders-0"],
        ["seek-by-time", "latest", "s3://bucket/kafka-logs/orders-0"],
        ["compare", "s3://bucket/a/orders-0", "s3://bucket/b/orders-0"],
    ],
    ids=["dump", "verify", "seek-by-time", "compare"],
)
def test_urls_without_pyarrow(tmp_path: Path, args: list[str]) -> None:
    done = _kdump(_env(tmp_path, "pyarrow"), *args)
    _one_sentence(done, "s3://bucket/", "reading URLs needs pyarrow:", SPARK)


def test_an_unchecked_import_of_an_extra_is_still_one_sentence(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Where no check named the package first, the entry point still says what to install."""
    from kdump import cli
    from kdump.cli import verify

    def missing(*_args: object, **_kw: object) -> None:
        raise ModuleNotFoundError("No module named 'pyarrow'", name="pyarrow")

    monkeypatch.setattr(verify, "verify_streamed", missing)
    monkeypatch.setattr(sys, "argv", ["kdump", "verify", str(SAMPLE / "txn-1")])
    monkeypatch.delenv("KDUMP_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code == 3
    assert capsys.readouterr().err == f"kdump: verify needs pyarrow: {SPARK}\n"


def test_another_missing_module_stays_an_internal_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kdump import cli
    from kdump.cli import verify

    def missing(*_args: object, **_kw: object) -> None:
        raise ModuleNotFoundError("No module named 'kdump.nothing'", name="kdump.nothing")

    monkeypatch.setattr(verify, "verify_streamed", missing)
    monkeypatch.setattr(sys, "argv", ["kdump", "verify", str(SAMPLE / "txn-1")])
    monkeypatch.delenv("KDUMP_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code == 70
    assert "internal error: ModuleNotFoundError" in capsys.readouterr().err
