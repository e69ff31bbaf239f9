"""Which C library this process runs on, for `kdump --version`: the host's glibc or musl for a pip
install, the glibc the one-file build carries for that build (staticx unpacks it with its loader,
so the host's C library, if it has one, is never used)."""

from __future__ import annotations

import os
from pathlib import Path


def _mapped_c_library() -> str | None:
    """The path of the C library mapped into this process (Linux: /proc/self/maps), if any."""
    try:
        maps = Path("/proc/self/maps").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in maps.splitlines():
        fields = line.split(maxsplit=5)  # address perms offset dev inode [path]
        path = fields[5] if len(fields) == 6 else ""
        name = path.rsplit("/", 1)[-1]
        if name.startswith(("libc.so", "libc-", "ld-musl-", "libc.musl-")):
            return path.strip()
    return None


def c_library() -> str:
    """E.g. "glibc 2.36 (the host's)", "musl (the host's)", "glibc 2.31, bundled in this file
    (staticx); ...", or "unknown"."""
    try:
        glibc = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"; musl refuses the name (EINVAL)
    except (ValueError, OSError):
        glibc = None
    path = _mapped_c_library()
    # musl's file: /lib/ld-musl-x86_64.so.1 on Alpine, /usr/lib/x86_64-linux-musl/libc.so on Debian.
    if glibc:
        name = glibc
    elif path is not None and "musl" in path:
        name = "musl"
    else:
        name = "unknown"
    bundle = os.environ.get("STATICX_BUNDLE_DIR")
    if bundle and path is not None and path.startswith(bundle.rstrip("/") + "/"):
        return f"{name}, bundled in this file (staticx); the host's C library is not used"
    return f"{name} (the host's)" if name != "unknown" else name
