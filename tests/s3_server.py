"""A real S3 server for the tests: moto's standalone server on 127.0.0.1, on a free port.

Ceph's radosgw (with its dbstore backend) is the other S3 server one could run here, but it needs
a Ceph configuration, keyring and user set up as root before it answers; moto's server is a pip
install (`moto[server]`, in the dev extra) and speaks the same S3 REST API over HTTP, so kdump's
client (pyarrow's S3 filesystem, configured only by the standard AWS environment) is exercised
exactly as against a real store: listings, HEAD, ranged GETs.

`s3_store` (session scope) starts it, points `AWS_ENDPOINT_URL` and dummy credentials at it, and
stops it after the run. Tests using it skip, saying why, when it cannot start.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

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


def _why_not() -> str | None:
    try:
        import moto.server  # noqa: F401
        import pyarrow.fs  # noqa: F401
    except ImportError as exc:
        return f"no S3 server: {exc.name} is not installed (pip install -e '.[dev,spark]')"
    return None


class ServerUnavailable(Exception):
    """The S3 server could not be started here (the reason is the message)."""


@contextlib.contextmanager
def running_server() -> Iterator[S3Store]:
    """moto's S3 server on a free local port, with the AWS environment pointed at it, then stopped.

    Raises:
        ServerUnavailable: it is not installed, exits at start, or does not answer within 30 s.
    """
    reason = _why_not()
    if reason:
        raise ServerUnavailable(reason)
    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    saved = {k: os.environ.get(k) for k in _ENV}
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise ServerUnavailable(f"the S3 server (moto) exited at start with status {proc.returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise ServerUnavailable("the S3 server (moto) did not answer within 30 s") from None
                time.sleep(0.1)
        os.environ.update(
            AWS_ENDPOINT_URL=endpoint,
            AWS_ACCESS_KEY_ID="kdump-test",
            AWS_SECRET_ACCESS_KEY="kdump-test-secret",
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
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def s3_store() -> Iterator[S3Store]:
    """A running S3 server for the session; tests using it skip, saying why, when it cannot start."""
    try:
        server = running_server()
        store = server.__enter__()
    except ServerUnavailable as exc:
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
