"""How many requests a store answers for verify: counted on the wire, between kdump and the server.

A TCP proxy on 127.0.0.1 sits between pyarrow's S3 client and the S3 server and counts the HTTP
request lines the client sends (GET and HEAD carry no body, so every request line is one request).
verify lists the tree once, then needs one request per file with bytes (its ranged GET): the
listing gave every size, so no file is opened with a metadata request (HEAD), and an empty file is
never requested.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from s3_server import counting_proxy


def test_verify_requests_one_get_per_file_with_bytes_and_no_head(
    kdump: Any, s3_store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kdump.store import held, remote

    local = tmp_path / "logdir"
    shutil.copytree(Path(__file__).resolve().parents[2] / "samples" / "logdir", local)
    url = s3_store.upload(local, f"requests/{tmp_path.name}")
    files = {p.relative_to(local).as_posix(): p.stat().st_size for p in local.rglob("*") if p.is_file()}
    with counting_proxy(s3_store.endpoint) as (proxy, counting):
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy)
        # Every client this process keeps was made for the server's own endpoint by earlier tests:
        # forget them all, or their requests bypass the proxy.
        monkeypatch.setattr(remote, "_FILESYSTEMS", {})
        monkeypatch.setattr(remote, "_S3_CLIENT", [])
        monkeypatch.setattr(held, "_TREES", {})
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
    # One ranged GET for each file with bytes (a scan's first request takes up to 16 MiB), none else.
    assert set(gets) == with_bytes
    assert all(n == 1 for n in gets.values()), gets
    assert 1 <= len(listings) <= 2  # the listing (the bucket's own path, the prefix as a query)
    assert len(counting.requests) == sum(gets.values()) + len(listings) + 1
    print(
        f"requests: {len(counting.requests)} for {len(with_bytes)} files with bytes ({len(files)} files): "
        f"{sum(gets.values()) / len(with_bytes):.3f} reads per file with bytes, no metadata request"
    )
