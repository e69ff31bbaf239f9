"""The release's own command-line classes, run as Kafka's ``bin/*.sh`` scripts run them.

`dump_log` is the output oracle (``kafka-dump-log.sh``); `run_class` runs any main class (the console
tools, the metadata shell); `run_java_source` runs one of the tests' own small Java programs
(single-file source launch, Java 11+) against the release's client jars, for workloads only Java
clients produce (share groups, the Streams group protocol, transactions v2).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from brokers.cluster import java_command
from brokers.releases import Release

# DumpLogSegments moved from Scala in core (kafka.tools) to Java in the tools module.
_DUMP_LOG_CLASSES = ("org.apache.kafka.tools.DumpLogSegments", "kafka.tools.DumpLogSegments")


def dump_log_class(release: Release) -> str:
    for name in _DUMP_LOG_CLASSES:
        if release.has_class(name):
            return name
    raise LookupError(f"Kafka {release.version} has no DumpLogSegments class")


def run_class(
    release: Release,
    main_class: str,
    *args: str,
    timeout: float = 300,
    heap: str = "512m",
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `main_class` of the release; stdout and stderr captured, the exit code not checked.

    It runs in a temporary directory: some releases' bundled logging configuration writes files such
    as `storage.log` into the working directory, which would otherwise be the checkout."""
    cmd = java_command(release, main_class, *args, heap=heap)
    with tempfile.TemporaryDirectory(prefix="kdump-java-") as cwd:
        return subprocess.run(
            cmd, capture_output=True, text=True, check=False, timeout=timeout, input=input, cwd=cwd
        )


def dump_log(release: Release, files: list[Path], *flags: str, timeout: float = 600) -> str:
    """What ``kafka-dump-log.sh --files FILES FLAGS`` prints on stdout (raises on a non-zero exit)."""
    proc = run_class(
        release,
        dump_log_class(release),
        "--files",
        ",".join(str(f) for f in files),
        *flags,
        timeout=timeout,
        heap="1g",
    )
    if proc.returncode != 0:
        raise RuntimeError(f"DumpLogSegments exited {proc.returncode}: {proc.stderr[-2000:]}")
    return proc.stdout


def run_java_source(
    release: Release, source: Path, *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run a single-file Java program against the release's jars (the Java launcher compiles it)."""
    cmd = java_command(release, str(source), *args, heap="512m")
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
