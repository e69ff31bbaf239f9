"""Tiered storage on the tests' brokers: Kafka's own file-backed `LocalTieredStorage` as the remote store.

`LocalTieredStorage` ships in kafka-storage's test jar. Maven Central has none for some releases, so
`releases.fetch` puts the nearest earlier release's test jar beside them (4.3.1's for 4.4.0). That jar
was compiled against `org.apache.kafka.common.utils.LogContext`, which 4.4 moved to
`org.apache.kafka.common.utils.internals.LogContext`; everything else it uses is still there.
`tiered_release` then gives a release whose classpath adds a one-class shim of our own (compiled here
with `javac`, delegating to the moved class), in a directory of its own beside the release's jars:
the shared ``lib/`` is left as fetched.

`broker_config` is what a broker needs for tiered storage with that store and the default topic-based
remote log metadata manager, its metadata topic sized for one node.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import tempfile
from pathlib import Path

from brokers.releases import Release

LOCAL_TIERED_STORAGE = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
_OLD_LOG_CONTEXT = "org.apache.kafka.common.utils.LogContext"
_NEW_LOG_CONTEXT = "org.apache.kafka.common.utils.internals.LogContext"

_SHIM = """package org.apache.kafka.common.utils;

/** The pre-4.4 name of Kafka's LogContext, for plugins compiled against it. */
public class LogContext {
    private final org.apache.kafka.common.utils.internals.LogContext moved;

    public LogContext(String prefix) {
        moved = new org.apache.kafka.common.utils.internals.LogContext(prefix);
    }

    public LogContext() {
        this("");
    }

    public org.slf4j.Logger logger(Class<?> clazz) {
        return moved.logger(clazz);
    }

    public String logPrefix() {
        return moved.logPrefix();
    }
}
"""


class TieredUnavailable(Exception):
    """LocalTieredStorage cannot run on this release here; the message says why."""


def tiered_release(release: Release) -> Release:
    """`release`, or a copy of it whose classpath lets its LocalTieredStorage load (see the module doc)."""
    if not release.has_class(LOCAL_TIERED_STORAGE):
        raise TieredUnavailable(f"Kafka {release.version}'s classpath has no {LOCAL_TIERED_STORAGE}")
    if release.has_class(_OLD_LOG_CONTEXT) or not release.has_class(_NEW_LOG_CONTEXT):
        return release
    root = release.lib.parent / "tiered-lib"
    done = root / "complete"
    if done.exists():
        return Release(release.version, root)
    javac = shutil.which("javac")
    if javac is None:
        raise TieredUnavailable(
            f"Kafka {release.version}'s LocalTieredStorage needs a compiled shim and javac is not on PATH"
        )
    with (release.lib.parent / "tiered-lib.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return Release(release.version, root)
        with tempfile.TemporaryDirectory(dir=release.lib.parent) as tmp:
            work = Path(tmp)
            src = work / "src" / "org" / "apache" / "kafka" / "common" / "utils"
            src.mkdir(parents=True)
            (src / "LogContext.java").write_text(_SHIM)
            classes = work / "classes"
            proc = subprocess.run(
                [javac, "-d", str(classes), "-cp", release.classpath, str(src / "LogContext.java")],
                capture_output=True,
                text=True,
                check=False,
                timeout=300,
            )
            if proc.returncode != 0:
                raise TieredUnavailable(f"compiling the LogContext shim failed: {proc.stderr[-1000:]}")
            lib = work / "lib"
            lib.mkdir()
            for jar in sorted(release.lib.glob("*.jar")):
                (lib / jar.name).symlink_to(jar)
            shutil.make_archive(str(lib / "kdump-tests-logcontext-shim"), "zip", classes)
            (lib / "kdump-tests-logcontext-shim.zip").rename(lib / "kdump-tests-logcontext-shim.jar")
            if root.exists():
                shutil.rmtree(root)
            lib.rename(root)
        done.write_text(release.version + "\n")
    return Release(release.version, root)


def broker_config(remote_dir: Path, *, task_interval_ms: int = 500) -> dict[str, object]:
    """Broker settings for tiered storage in `remote_dir` (LocalTieredStorage adds `kafka-tiered-storage/`)."""
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": LOCAL_TIERED_STORAGE,
        "remote.log.storage.manager.impl.prefix": "rsm.config.",
        "rsm.config.dir": str(remote_dir),
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "remote.log.metadata.manager.impl.prefix": "rlmm.config.",
        "rlmm.config.remote.log.metadata.topic.replication.factor": 1,
        "rlmm.config.remote.log.metadata.topic.num.partitions": 1,
        "remote.log.manager.task.interval.ms": task_interval_ms,
        "log.retention.check.interval.ms": 1000,
    }
