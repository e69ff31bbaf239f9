"""A real Schema Registry for the tests: Apicurio Registry, its Quarkus app from Maven Central.

Maven Central serves the app's distribution as `io.apicurio:apicurio-registry-app:VERSION:tar.gz:all`
(the Quarkus fast-jar layout: `quarkus-run.jar` with `lib/`, `app/`, `quarkus/`). It needs Java 21+
(the harness's brokers run on Java 17). It starts with its default in-memory H2 storage on free
ports of 127.0.0.1 and serves Confluent's REST API at `/apis/ccompat/v7`; it is stopped by PID.
What it cannot do: it keeps no `_schemas` topic (its Kafka storage writes a journal of its own), and
its Confluent API has no schema GUIDs (a register answers `{"id": N}` only).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

if __package__ in (None, ""):  # run as a script: `python tests/brokers/apicurio.py`
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from brokers.cluster import free_port
from brokers.releases import cache_root

VERSION = "3.3.3"
ARTIFACT = f"io.apicurio:apicurio-registry-app:{VERSION}:tar.gz:all"


class RegistryUnavailable(Exception):
    """Why the registry cannot be fetched or started here."""


def java21() -> Path:
    """A Java 21+ runtime: $KDUMP_REGISTRY_JAVA, $JAVA_HOME, java on PATH, or one under /usr/lib/jvm."""
    candidates = [os.environ.get("KDUMP_REGISTRY_JAVA"), os.environ.get("JAVA_HOME")]
    candidates = [str(Path(c) / "bin" / "java") if c and Path(c).is_dir() else c for c in candidates]
    candidates.append(shutil.which("java"))
    candidates += [str(p) for p in sorted(Path("/usr/lib/jvm").glob("*/bin/java"), reverse=True)]
    seen = []
    for c in candidates:
        if not c or not Path(c).exists() or c in seen:
            continue
        seen.append(c)
        out = subprocess.run([c, "-version"], capture_output=True, text=True, check=False).stderr
        m = re.search(r'version "(\d+)', out)
        if m and int(m.group(1)) >= 21:
            return Path(c)
    raise RegistryUnavailable(
        f"Apicurio Registry {VERSION} needs Java 21+; found none (tried {', '.join(seen) or 'none'})"
    )


def fetch() -> Path:
    """The unpacked distribution (fetched with mvn on first use, file-locked like the Kafka releases)."""
    root = cache_root().parent / "apicurio" / VERSION
    if (root / "complete").exists():
        return root
    if shutil.which("mvn") is None:
        raise RegistryUnavailable(f"Apicurio Registry {VERSION} is not in {root} and mvn is not on PATH")
    root.mkdir(parents=True, exist_ok=True)
    with (root.parent / f"{VERSION}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / "complete").exists():
            return root
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            proc = subprocess.run(
                ["mvn", "-q", "-B", "dependency:copy", f"-Dartifact={ARTIFACT}", f"-DoutputDirectory={tmp}"],
                capture_output=True,
                text=True,
                check=False,
                timeout=900,
                cwd=tmp,
            )
            archives = list(Path(tmp).glob("*.tar.gz"))
            if proc.returncode != 0 or not archives:
                tail = " ".join((proc.stdout + proc.stderr).split()[-40:])
                raise RegistryUnavailable(f"mvn could not fetch {ARTIFACT}: {tail}")
            with tarfile.open(archives[0]) as tar:
                tar.extractall(root / "app", filter="data")
        (root / "complete").write_text(ARTIFACT + "\n")
    return root


class Apicurio:
    """A started registry; `url` is its Confluent-compatible API."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/apis/ccompat/v7"

    def start(self, timeout: float = 180.0) -> None:
        app = fetch() / "app"
        java = java21()
        self.workdir.mkdir(parents=True, exist_ok=True)
        log = (self.workdir / "registry.log").open("ab")
        cmd = [
            str(java),
            "-Xmx512m",
            f"-Dquarkus.http.port={self.port}",
            "-Dquarkus.http.host=127.0.0.1",
            # The management interface is built in; keep it off the fixed port 9000 and the network.
            f"-Dquarkus.management.port={free_port()}",
            "-Dquarkus.management.host=127.0.0.1",
            "-jar",
            str(app / "quarkus-run.jar"),
        ]
        self.process = subprocess.Popen(
            cmd, cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RegistryUnavailable(f"Apicurio exited while starting: {self.log_tail()}")
            with (
                contextlib.suppress(OSError, ValueError),
                urllib.request.urlopen(self.url + "/subjects", timeout=2) as r,
            ):
                if isinstance(json.loads(r.read()), list):
                    return
            time.sleep(0.5)
        self.stop()
        raise RegistryUnavailable(f"Apicurio did not answer within {timeout} s: {self.log_tail()}")

    def log_tail(self, lines: int = 20) -> str:
        path = self.workdir / "registry.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 30 s; by PID."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)


@contextlib.contextmanager
def running_registry(workdir: Path) -> Iterator[Apicurio]:
    registry = Apicurio(workdir)
    registry.start()
    try:
        yield registry
    finally:
        registry.stop()


if __name__ == "__main__":
    # `python tests/brokers/apicurio.py`: fetch the registry ahead of a test run (CI does), and say
    # which Java runs it.
    print(f"Apicurio Registry {VERSION}: {fetch() / 'app'} (Java: {java21()})")
