"""What Spark needs before kdump starts it: pyspark, pyarrow and a Java 17+ runtime.

Checked on the driver before a session is created, so that a missing piece is one sentence naming
what to install (exit 3), not a Java gateway's stack trace or an internal error.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from kdump.errors import MissingDependencyError, missing_module

JAVA_MIN = 17
JAVA_INSTALL = (
    "install a Java 17+ runtime (e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME to one"
)


def require_modules(needed_for: str, *modules: str) -> None:
    """Import each module, or raise MissingDependencyError naming the pip install command."""
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            missing = missing_module(exc, needed_for)
            if missing is None:
                raise
            raise missing from exc


def java_command() -> str | None:
    """The java Spark's launcher runs: `$JAVA_HOME/bin/java` when JAVA_HOME is set, else `java` on
    the PATH (None when there is none)."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if os.access(candidate, os.X_OK) and candidate.is_file() else None
    return shutil.which("java")


def java_major(java: str) -> int | None:
    """The major version `java -version` reports (8 for `1.8.0_292`), or None when it says none."""
    try:
        done = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if m is None:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def require_java(needed_for: str) -> None:
    """Raise MissingDependencyError unless a Java 17+ runtime is there for Spark."""
    java = java_command()
    if java is None:
        where = "JAVA_HOME has no bin/java" if os.environ.get("JAVA_HOME") else "no java on the PATH"
        raise MissingDependencyError(f"{needed_for} needs a Java runtime ({where}): {JAVA_INSTALL}")
    major = java_major(java)
    if major is None:
        raise MissingDependencyError(
            f"{needed_for} needs a Java runtime ({java} does not run): {JAVA_INSTALL}"
        )
    if major < JAVA_MIN:
        raise MissingDependencyError(
            f"{needed_for} needs Java {JAVA_MIN}+ ({java} is Java {major}): {JAVA_INSTALL}"
        )


def require_spark(needed_for: str) -> None:
    """pyspark, pyarrow and Java, checked in that order."""
    require_modules(needed_for, "pyspark", "pyarrow")
    require_java(needed_for)
