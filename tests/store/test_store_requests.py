"""How many requests a store answers for verify: counted on the wire, between kdump and the server.

A TCP proxy on 127.0.0.1 sits between pyarrow's S3 client and the S3 server and counts the HTTP
request lines the client sends (GET and HEAD carry no body, so every request line is one request).
verify lists the tree once, then needs one request per file with bytes (its ranged GET): the
listing gave every size, so no file is opened with a metadata request (HEAD), and an empty file is
never requested.
"""

from __future__ import annotations

import re
import shutil
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

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


def test_verify_requests_one_get_per_file_with_bytes_and_no_head(
    kdump: Any, s3_store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kdump.store import remote, trees

    local = tmp_path / "logdir"
    shutil.copytree(Path(__file__).resolve().parents[2] / "samples" / "logdir", local)
    url = s3_store.upload(local, f"requests/{tmp_path.name}")
    files = {p.relative_to(local).as_posix(): p.stat().st_size for p in local.rglob("*") if p.is_file()}
    with counting_proxy(s3_store.endpoint) as (proxy, counting):
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy)
        monkeypatch.setattr(remote, "_FILESYSTEMS", {})
        monkeypatch.setattr(trees, "_TREES", {})
        result = kdump("verify", "--jobs", "1", "--format", "json", "--fail-on", "info", url)
    assert result.exit_code in (0, 1), result.output
    prefix = "/" + url.removeprefix("s3://") + "/"
    gets = Counter(
        p.removeprefix(prefix) for m, p in counting.requests if m == "GET" and p.startswith(prefix)
    )
    listings = [p for m, p in counting.requests if m == "GET" and not p.startswith(prefix)]
    # The listing's look at its root is the only metadata request: no file is opened with one.
    assert [p for m, p in counting.requests if m == "HEAD"] == [prefix.rstrip("/")]
    with_bytes = {name for name, size in files.items() if size > 0}
    assert with_bytes
    assert len(with_bytes) < len(files), "samples/logdir holds empty files too"
    # Ranged GETs only for files with bytes: one for a file within the first request's 64 KiB, and
    # a second for the rest of a larger one (the reads grow: 64 KiB, then the rest up to 8 MiB).
    assert set(gets) == with_bytes
    assert all(gets[name] == (1 if files[name] <= 64 << 10 else 2) for name in with_bytes), gets
    assert 1 <= len(listings) <= 2  # the listing (the bucket's own path, the prefix as a query)
    assert len(counting.requests) == sum(gets.values()) + len(listings) + 1
    print(
        f"requests: {len(counting.requests)} for {len(with_bytes)} files with bytes ({len(files)} files): "
        f"{sum(gets.values()) / len(with_bytes):.3f} reads per file with bytes, no metadata request"
    )
