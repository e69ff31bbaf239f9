"""Pinned Kafka releases, fetched with Maven into a cache outside git.

A release is a directory ``<cache>/<version>/lib`` of jars (the broker, its tools and storage, the
Java clients and Streams, log4j2 with its SLF4J binding). It is resolved once by a generated
``pom.xml`` and ``mvn dependency:copy-dependencies``, under a file lock, into a temporary directory
renamed into place, so concurrent test processes never see half a release.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

NEWEST = "4.4.0"
"""The newest release the project runs against."""

PINNED: tuple[str, ...] = ("3.8.1", "3.9.1", "4.0.0", "4.1.1", "4.2.0", "4.3.1", "4.4.0")
"""Every release the tests and the corpus script may start (Maven Central serves each)."""

# LocalTieredStorage (Kafka's own file-backed RemoteStorageManager) ships in kafka-storage's test jar;
# Maven Central has no test jar for some releases, so those take the nearest earlier release's (for 4.4.0
# with a one-class shim for a moved class: tests/brokers/tiered.py).
_TIERED_TEST_JAR = {"4.4.0": "4.3.1"}

_BASE_ARTIFACTS = ("kafka_2.13", "kafka-tools", "kafka-storage", "kafka-streams", "kafka-clients")


class ReleaseUnavailable(Exception):
    """The release cannot be used here; the message says why, for a test's skip reason."""


@dataclass(frozen=True)
class Release:
    """A fetched release: its version and the jars of its classpath."""

    version: str
    lib: Path

    @property
    def classpath(self) -> str:
        return str(self.lib / "*")

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def minor(self) -> tuple[int, int]:
        major, minor = self.version.split(".")[:2]
        return int(major), int(minor)

    def has_class(self, name: str) -> bool:
        """Whether some jar of the release holds the class `name` (dotted)."""
        import zipfile

        member = name.replace(".", "/") + ".class"
        for jar in self.lib.glob("*.jar"):
            with zipfile.ZipFile(jar) as zf:
                try:
                    zf.getinfo(member)
                except KeyError:
                    continue
                return True
        return False


def cache_root() -> Path:
    env = os.environ.get("KDUMP_KAFKA_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "kdump" / "kafka"


def java_missing() -> str | None:
    """Why Java cannot run a broker here, or None."""
    java = shutil.which("java")
    if java is None:
        return (
            "no Java runtime on PATH (Kafka brokers need Java 17+; apt-get install openjdk-17-jre-headless)"
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False).stderr
    first = out.splitlines()[0] if out else ""
    try:
        quoted = first.split('"')[1]
        major = int(quoted.split(".")[0])
    except (IndexError, ValueError):
        return f"cannot read the Java version from {first!r}"
    if major < 17:
        return f"Java {major} is too old for Kafka 4.x brokers (17+ needed)"
    return None


def _pom(version: str) -> str:
    deps = [f"org.apache.kafka:{artifact}:{version}" for artifact in _BASE_ARTIFACTS]
    tiered = _TIERED_TEST_JAR.get(version, version)
    deps.append(f"org.apache.kafka:kafka-storage:{tiered}:test")
    # Kafka's distribution logs through log4j2 behind SLF4J 2; Maven's resolution alone brings an
    # SLF4J 1 API with no binding, and the broker would log nothing.
    deps.append("org.slf4j:slf4j-api:2.0.17")
    deps.append("org.apache.logging.log4j:log4j-slf4j2-impl:2.25.2")
    entries = []
    for dep in deps:
        parts = dep.split(":")
        classifier = f"<classifier>{parts[3]}</classifier>" if len(parts) > 3 else ""
        entries.append(
            f"<dependency><groupId>{parts[0]}</groupId><artifactId>{parts[1]}</artifactId>"
            f"<version>{parts[2]}</version>{classifier}</dependency>"
        )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        f"<groupId>kdump.tests</groupId><artifactId>kafka-{version}</artifactId><version>1</version>"
        f"<dependencies>{''.join(entries)}</dependencies></project>\n"
    )


def fetch(version: str) -> Release:
    """The release `version`, fetched on first use; raises ReleaseUnavailable saying why not."""
    root = cache_root() / version
    lib = root / "lib"
    if (root / "complete").exists():
        return Release(version, lib)
    if shutil.which("mvn") is None:
        raise ReleaseUnavailable(
            f"Kafka {version} is not in {root} and Maven (mvn) is not on PATH to fetch it"
        )
    root.mkdir(parents=True, exist_ok=True)
    with (root.parent / f"{version}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / "complete").exists():
            return Release(version, lib)
        with tempfile.TemporaryDirectory(dir=root) as tmp:
            pom = Path(tmp) / "pom.xml"
            pom.write_text(_pom(version))
            out = Path(tmp) / "lib"
            proc = subprocess.run(
                [
                    "mvn",
                    "-q",
                    "-B",
                    "-f",
                    str(pom),
                    "dependency:copy-dependencies",
                    f"-DoutputDirectory={out}",
                ],
                capture_output=True,
                text=True,
                check=False,
                timeout=900,
            )
            if proc.returncode != 0:
                tail = " ".join((proc.stdout + proc.stderr).split()[-40:])
                raise ReleaseUnavailable(f"mvn could not fetch Kafka {version}: {tail}")
            # SLF4J 1 beside 2 would pick no binding: keep the one the distribution ships.
            for stale in out.glob("slf4j-api-1.*.jar"):
                stale.unlink()
            if lib.exists():
                shutil.rmtree(lib)
            out.rename(lib)
        (root / "complete").write_text(version + "\n")
    return Release(version, lib)


if __name__ == "__main__":
    # `python tests/brokers/releases.py [VERSION ...]`: fetch releases (all pinned ones by default) ahead
    # of a test run (CI does).
    import sys

    for wanted in sys.argv[1:] or PINNED:
        print(f"Kafka {wanted}: {fetch(wanted).lib}")
