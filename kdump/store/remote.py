"""URLs through pyarrow's filesystems: one recursive listing of a tree, ranged reads of a file.

pyarrow.fs (already in the `[spark]` extra) rather than fsspec: one native client for S3 (and
S3-compatible stores), GCS, Azure and HDFS, whose `read_at` is a single ranged GET without a
read-ahead cache to defeat, and whose S3 client takes endpoint and credentials from the standard
AWS environment (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
`AWS_DEFAULT_REGION`, profiles and instance roles). kdump has no flag that holds a secret.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kdump.errors import NotFoundError, PathError, missing_module
from kdump.store.entries import Entry, EntryKind

_FILESYSTEMS: dict[str, Any] = {}
_S3_CLIENT: list[Any] = []


# A forked worker (verify's pool) opens its own client: sharing the parent's kept-alive connections
# would let two processes read each other's responses (found against SeaweedFS, which keeps them).
def _forget_clients() -> None:
    _FILESYSTEMS.clear()
    _S3_CLIENT.clear()


os.register_at_fork(after_in_child=_forget_clients)


@dataclass(slots=True)
class FetchStats:
    """Bytes and requests fetched from remote stores by this process (for tests and benchmarks)."""

    bytes: int = 0
    requests: int = 0


FETCHED = FetchStats()


def _filesystem(url: str) -> tuple[Any, str]:
    """The pyarrow filesystem for a URL (one per scheme and host, per process) and the path in it."""
    pafs = _pyarrow_fs(url)
    parts = urlsplit(url)
    key = f"{parts.scheme}://{parts.netloc}"
    fs = _FILESYSTEMS.get(key)
    try:
        if fs is None:
            fs, _ = pafs.FileSystem.from_uri(url)
            _FILESYSTEMS[key] = fs
    except (OSError, ValueError) as exc:
        raise PathError(f"{url}: {exc}") from None
    if parts.scheme in ("hdfs", "viewfs", "file"):
        return fs, parts.path
    return fs, f"{parts.netloc}{parts.path}".rstrip("/")


def _pyarrow_fs(url: str) -> Any:
    """`pyarrow.fs`, or MissingDependencyError naming the install command."""
    try:
        import pyarrow.fs as pafs
    except ImportError as exc:
        missing = missing_module(exc, f"{url}: reading URLs")
        if missing is None:
            raise
        raise missing from None
    return pafs


def _kind(info: Any) -> EntryKind:
    import pyarrow.fs as pafs

    if info.type == pafs.FileType.File:
        return "file"
    if info.type == pafs.FileType.Directory:
        return "dir"
    return "other"


def list_remote(url: str) -> list[Entry]:
    """Every entry under a URL (or the URL's own entry when it is a file), in one listing.

    Raises:
        PathError: nothing is there, or the store refused.
    """
    fs, path = _filesystem(url)
    pafs = _pyarrow_fs(url)
    root = url.rstrip("/")
    try:
        info = fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            raise NotFoundError(f"{url}: no such file or directory")
        if info.type == pafs.FileType.File:
            return [Entry(root, "file", int(info.size or 0), True, int(info.mtime_ns or 0))]
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=True))
    except PathError:
        raise
    except (OSError, ValueError) as exc:
        raise PathError(f"cannot list {url}: {exc}") from None
    return [
        Entry(root + i.path[len(path) :], _kind(i), int(i.size or 0), True, int(i.mtime_ns or 0))
        for i in infos
        if i.path.startswith(path)
    ]


class RemoteReader:
    """A file at a URL, read by ranges: `read(position, length)` is one ranged request.

    Opening a file asks the store for its size (a metadata request) unless `size` is given (the
    listing said it): then the first read is the first request.
    """

    def __init__(self, url: str, size: int | None = None) -> None:
        self.location = url
        self._file: Any = None
        self._object: tuple[Any, str, str] | None = None
        parts = urlsplit(url)
        client = _s3_client() if size is not None and parts.scheme == "s3" else None
        if client is not None and size is not None:
            # pyarrow's Python API opens a file only by path, with a metadata request for its size
            # (its C++ API takes a FileInfo, its Python bindings do not); botocore's ranged GET
            # needs none, so a file the listing sized costs one request per read.
            self._object = (client, parts.netloc, parts.path.lstrip("/"))
            self.size = size
            return
        fs, path = _filesystem(url)
        try:
            self._file = fs.open_input_file(path)
            self.size = int(self._file.size())
        except (OSError, ValueError) as exc:
            raise PathError(f"cannot read {url}: {exc}") from None

    def read(self, position: int, length: int) -> bytes:
        """Up to `length` bytes from `position` (fewer at the end of the file)."""
        length = max(0, min(length, self.size - position))
        if length == 0:
            return b""
        try:
            if self._object is not None:
                data = _ranged_get(*self._object, position, length)
            else:
                data = self._file.read_at(length, position)
        except (OSError, ValueError) as exc:
            raise PathError(f"cannot read {self.location} at {position}: {exc}") from None
        FETCHED.bytes += len(data)
        FETCHED.requests += 1
        return bytes(data) if not isinstance(data, bytes) else data

    def close(self) -> None:
        """Release the connection."""
        if self._file is not None:
            self._file.close()


def _s3_client() -> Any:
    """One botocore S3 client per process (None without botocore): the AWS credential chain and
    endpoint of the environment, as pyarrow's client takes them."""
    if _S3_CLIENT:
        return _S3_CLIENT[0]
    try:
        import botocore.session
        from botocore.config import Config
    except ImportError:
        _S3_CLIENT.append(None)
        return None
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL") or None
    session = botocore.session.get_session()
    region = session.get_config_variable("region") or "us-east-1"
    config = Config(
        s3={"addressing_style": "path" if endpoint else "auto"},
        max_pool_connections=32,
        retries={"max_attempts": 5, "mode": "standard"},
    )
    client = session.create_client("s3", endpoint_url=endpoint, region_name=region, config=config)
    _S3_CLIENT.append(client)
    return client


def _ranged_get(client: Any, bucket: str, key: str, position: int, length: int) -> bytes:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        response = client.get_object(
            Bucket=bucket, Key=key, Range=f"bytes={position}-{position + length - 1}"
        )
        data: bytes = response["Body"].read()
    except (BotoCoreError, ClientError) as exc:
        raise OSError(str(exc)) from None
    return data
