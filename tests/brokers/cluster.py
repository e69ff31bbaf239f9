"""KRaft clusters of real brokers on 127.0.0.1: formatted, started, stopped by PID.

Every node is a combined broker+controller (``process.roles=broker,controller``) with its own log
dir and two free ports. The quorum is dynamic (KIP-853, Kafka 3.9+) unless asked otherwise, so the
metadata log holds the voters records a 4.x cluster writes: one node is formatted ``--standalone``,
three with ``--initial-controllers``. With ``controllers=N`` the cluster is N controller-only nodes
(a static quorum) and ``size`` broker-only ones instead: every broker can then be stopped while
the quorum stays up (a leader election among brokers that come and go).

Stopping: `stop()` sends SIGTERM and waits, as an operator's ``kafka-server-stop.sh`` does (the broker
writes ``.kafka_cleanshutdown`` and trims its active indexes); `kill()` sends SIGKILL and leaves what a
crash leaves. Every process started is stopped when the cluster's ``with`` block ends, and at exit.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from brokers.releases import Release

_LIVE: set[int] = set()


def _stop_all_at_exit() -> None:
    for pid in list(_LIVE):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


atexit.register(_stop_all_at_exit)


def kafka_uuid() -> str:
    """A random Kafka Uuid in Kafka's own text form (URL-safe base64, no padding).

    Like Kafka's Uuid.randomUuid, never one whose text starts with '-': command-line parsers (the
    StorageTool's `-t`) take it for an option (1 draw in 64 did, and failed a CI run)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(cond: Callable[[], bool], timeout: float) -> bool:
    """Ask `cond` every half second until it holds (True) or `timeout` seconds have passed (False):
    brokers do their work (cleaning, tiering, deleting) on their own schedule."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


class BrokerFailed(Exception):
    """A broker did not start or stop as asked; the message carries the tail of its log."""


# XML, which log4j2 reads with the JDK alone: Kafka 3.9's dependencies carry no YAML parser for it.
_LOG4J2 = """<?xml version="1.0" encoding="UTF-8"?>
<Configuration>
  <Appenders>
    <File name="F" fileName="{log}">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </File>
  </Appenders>
  <Loggers>
    <Root level="INFO"><AppenderRef ref="F"/></Root>
  </Loggers>
</Configuration>
"""

_LOG4J1 = """log4j.rootLogger=INFO, F
log4j.appender.F=org.apache.log4j.FileAppender
log4j.appender.F.File={log}
log4j.appender.F.layout=org.apache.log4j.PatternLayout
log4j.appender.F.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


@dataclass
class Node:
    """One combined broker+controller."""

    node_id: int
    home: Path
    broker_port: int
    controller_port: int
    directory_id: str = field(default_factory=kafka_uuid)
    process: subprocess.Popen[bytes] | None = None
    roles: str = "broker,controller"

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    @property
    def log_dir(self) -> Path:
        return self.home / "data"

    @property
    def server_log(self) -> Path:
        return self.home / "server.log"

    @property
    def config(self) -> Path:
        return self.home / "server.properties"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        text = ""
        for path in (self.server_log, self.home / "stdout.log"):
            if path.exists():
                text += "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) + "\n"
        return text


def java_command(
    release: Release, main_class: str, *args: str, heap: str = "512m", log_config: Path | None = None
) -> list[str]:
    """The JVM command line that runs `main_class` of `release`, as Kafka's scripts would."""
    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else "java"
    cmd = [
        java,
        f"-Xmx{heap}",
        "-Xms64m",
        # C1 only: start-up dominates the tests' brokers, and this machine has two cores.
        "-XX:TieredStopAtLevel=1",
        "-XX:+UseSerialGC",
        "-Djava.awt.headless=true",
    ]
    if log_config is not None:
        cmd += [
            f"-Dlog4j2.configurationFile={log_config}",
            f"-Dlog4j.configuration=file:{log_config.with_suffix('.properties')}",
        ]
    return [*cmd, "-cp", release.classpath, main_class, *args]


class KafkaCluster:
    """`size` combined nodes of `release` under `workdir`; a context manager that stops them all."""

    def __init__(
        self,
        release: Release,
        workdir: Path,
        *,
        size: int = 1,
        config: Mapping[str, object] | None = None,
        dynamic_quorum: bool = True,
        cluster_id: str | None = None,
        controllers: int = 0,
    ) -> None:
        self.release = release
        self.workdir = workdir
        self.cluster_id = cluster_id or kafka_uuid()
        self.dynamic_quorum = dynamic_quorum and release.minor >= (3, 9) and controllers == 0
        self.extra = dict(config or {})
        roles = ["controller"] * controllers + ["broker" if controllers else "broker,controller"] * size
        self.nodes = [
            Node(
                node_id=i + 1,
                home=workdir / f"node-{i + 1}",
                broker_port=free_port(),
                controller_port=free_port(),
                roles=role,
            )
            for i, role in enumerate(roles)
        ]

    @property
    def brokers(self) -> list[Node]:
        return [n for n in self.nodes if n.is_broker]

    # -- configuration -------------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.broker_port}" for n in self.brokers)

    def _properties(self, node: Node) -> dict[str, object]:
        replicas = min(3, len(self.brokers))
        listeners = [f"PLAINTEXT://127.0.0.1:{node.broker_port}"] if node.is_broker else []
        listeners += [f"CONTROLLER://127.0.0.1:{node.controller_port}"] if node.is_controller else []
        props: dict[str, object] = {
            "process.roles": node.roles,
            "node.id": node.node_id,
            "listeners": ",".join(listeners),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(node.log_dir),
            "num.partitions": 1,
            "offsets.topic.num.partitions": 1,
            "offsets.topic.replication.factor": replicas,
            "transaction.state.log.num.partitions": 1,
            "transaction.state.log.replication.factor": replicas,
            "transaction.state.log.min.isr": 1,
            "share.coordinator.state.topic.num.partitions": 1,
            "share.coordinator.state.topic.replication.factor": replicas,
            "share.coordinator.state.topic.min.isr": 1,
            "group.initial.rebalance.delay.ms": 0,
            "auto.create.topics.enable": "false",
        }
        if node.is_broker:
            props["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{node.broker_port}"
        else:
            del props["inter.broker.listener.name"]
        quorum = [n for n in self.nodes if n.is_controller]
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in quorum)
        if self.dynamic_quorum:
            props["controller.quorum.bootstrap.servers"] = ",".join(
                f"127.0.0.1:{n.controller_port}" for n in quorum
            )
        else:
            props["controller.quorum.voters"] = voters
        props.update(self.extra)
        return props

    def _write_config(self, node: Node) -> None:
        node.home.mkdir(parents=True, exist_ok=True)
        lines = [f"{k}={v}" for k, v in self._properties(node).items()]
        node.config.write_text("\n".join(lines) + "\n")
        (node.home / "log4j2.xml").write_text(_LOG4J2.format(log=node.server_log))
        (node.home / "log4j2.properties").write_text(_LOG4J1.format(log=node.server_log))

    # -- lifecycle -----------------------------------------------------------------------------------

    def format(self) -> None:
        """Write each node's configuration and format its storage (the release's StorageTool)."""
        for node in self.nodes:
            self._write_config(node)
            args = ["format", "-t", self.cluster_id, "-c", str(node.config)]
            if self.dynamic_quorum and len(self.nodes) == 1:
                args.append("--standalone")
            elif self.dynamic_quorum:
                initial = ",".join(
                    f"{n.node_id}@127.0.0.1:{n.controller_port}:{n.directory_id}" for n in self.nodes
                )
                args += ["--initial-controllers", initial]
            cmd = java_command(
                self.release,
                "kafka.tools.StorageTool",
                *args,
                heap="256m",
                log_config=node.home / "log4j2.xml",
            )
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
            if proc.returncode != 0:
                raise BrokerFailed(f"formatting node {node.node_id} failed: {proc.stdout}{proc.stderr}")

    def start(self, nodes: list[Node] | None = None, *, timeout: float = 120.0) -> None:
        """Start the nodes (all by default) and wait until each serves its broker listener."""
        chosen = nodes if nodes is not None else self.nodes
        for node in chosen:
            if node.running():
                continue
            if not node.config.exists():
                self._write_config(node)
            out = (node.home / "stdout.log").open("ab")
            cmd = java_command(
                self.release, "kafka.Kafka", str(node.config), log_config=node.home / "log4j2.xml"
            )
            node.process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            _LIVE.add(node.process.pid)
        deadline = time.monotonic() + timeout
        for node in chosen:
            self._wait_started(node, deadline)

    def _wait_started(self, node: Node, deadline: float) -> None:
        while time.monotonic() < deadline:
            if not node.running():
                raise BrokerFailed(f"node {node.node_id} exited while starting:\n{node.log_tail()}")
            log = node.server_log.read_text(errors="replace") if node.server_log.exists() else ""
            if "Kafka Server started" in log:
                port = node.broker_port if node.is_broker else node.controller_port
                with (
                    contextlib.suppress(OSError),
                    socket.create_connection(("127.0.0.1", port), timeout=1),
                ):
                    return
            time.sleep(0.2)
        raise BrokerFailed(f"node {node.node_id} did not start in time:\n{node.log_tail()}")

    def stop(self, nodes: list[Node] | None = None, *, timeout: float = 60.0) -> None:
        """SIGTERM, then wait: a clean shutdown, as the broker's stop script does."""
        self._signal(nodes, signal.SIGTERM, timeout)

    def kill(self, nodes: list[Node] | None = None) -> None:
        """SIGKILL: what a crash or power loss leaves behind."""
        self._signal(nodes, signal.SIGKILL, 30.0)

    def _signal(self, nodes: list[Node] | None, sig: signal.Signals, timeout: float) -> None:
        chosen = nodes if nodes is not None else self.nodes
        for node in chosen:
            if node.running():
                assert node.process is not None
                node.process.send_signal(sig)
        for node in chosen:
            if node.process is None:
                continue
            try:
                node.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait(timeout=30)
                if sig != signal.SIGKILL:
                    raise BrokerFailed(
                        f"node {node.node_id} ignored SIGTERM for {timeout} s:\n{node.log_tail()}"
                    ) from None
            finally:
                _LIVE.discard(node.process.pid)

    def __enter__(self) -> KafkaCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


@contextlib.contextmanager
def running_cluster(release: Release, workdir: Path, **kwargs: object) -> Iterator[KafkaCluster]:
    """A formatted, started cluster; killed when the block ends (tests copy what they need first)."""
    cluster = KafkaCluster(release, workdir, **kwargs)  # type: ignore[arg-type]
    cluster.format()
    with cluster:
        cluster.start()
        yield cluster
