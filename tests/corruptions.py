"""Named, composable damages for segment and index files, plus the rig the repair tests share.

A `Damage` is a named function ``bytes -> bytes``; ``damage(data)`` returns damaged bytes and
``damage.apply(path)`` damages a file in place. Damages compose with ``+`` (left first), so
``flip_crc_byte(-1) + append_zeros(100)`` is one damage. Damages that name a batch (``batch_index``,
negative counts from the end) find the batches of the bytes they are given with kdump's own scanner,
so they work on real corpus segments and on built ones alike.

The second half holds what the verify/reindex/trim tests need around the damages: copying corpus
partitions into a writable temporary tree, a snapshot of a whole tree (hashes, sizes, modes, mtimes,
directories included) to prove nothing was written, a log dir with ``meta.properties``, a real
broker-style lock held by another process, and running the kdump CLI as a subprocess (exit code 4
and crash tests need the real entry point).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import shutil
import struct
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from kdump.formats.batch import BatchHeader
from kdump.scan.events import ScanMode
from kdump.scan.log_scanner import scan_log

# --- finding the batches of a log -------------------------------------------------------------


class LogEntry(NamedTuple):
    """One entry (v2 batch or legacy message/wrapper) of a log, as kdump's scanner framed it."""

    position: int
    size: int
    base_offset: int | None
    last_offset: int
    magic: int
    compression: int
    max_timestamp: int
    crc_ok: bool

    @property
    def end(self) -> int:
        return self.position + self.size

    @property
    def crc_position(self) -> int:
        """Where the stored checksum is: +17 in a v2 batch, +12 in a legacy message."""
        return self.position + (17 if self.magic == 2 else 12)


def log_entries(data: bytes | bytearray | memoryview, *, recovery: bool = False) -> list[LogEntry]:
    """Every framed entry of a log, in order (no resync past lost framing).

    With ``recovery=True`` only the entries the broker's recovery keeps (stops at the first bad one).
    """
    mode = ScanMode.RECOVERY if recovery else ScanMode.FORENSIC
    out = []
    for ev in scan_log(data, mode=mode, resync=False):
        if isinstance(ev, BatchHeader):
            out.append(
                LogEntry(
                    ev.position,
                    ev.size,
                    ev.base_offset,
                    ev.last_offset,
                    ev.magic,
                    ev.compression,
                    ev.max_timestamp,
                    ev.crc_ok,
                )
            )
    if recovery:
        # RECOVERY mode still yields the failing entry's header before it stops.
        out = [e for e in out if e.crc_ok]
    return out


def entry_at(data: bytes, batch_index: int) -> LogEntry:
    """The entry with this index (negative from the end)."""
    entries = log_entries(data)
    if not entries:
        raise ValueError("the log has no batches")
    return entries[batch_index]


# --- damages ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Damage:
    """A named damage: bytes in, damaged bytes out."""

    name: str
    fn: Callable[[bytes], bytes]

    def __call__(self, data: bytes | bytearray) -> bytes:
        return self.fn(bytes(data))

    def __add__(self, other: Damage) -> Damage:
        return Damage(f"{self.name}+{other.name}", lambda data: other(self(data)))

    def apply(self, path: Path) -> Path:
        """Damage a file in place."""
        path.write_bytes(self(path.read_bytes()))
        return path

    def __repr__(self) -> str:
        return f"Damage({self.name})"


def _xor(data: bytes, pos: int, mask: int) -> bytes:
    out = bytearray(data)
    out[pos] ^= mask
    return bytes(out)


def flip_bit(pos: int, bit: int = 0) -> Damage:
    """Flip one bit at byte `pos` (negative counts from the end)."""
    return Damage(f"flip_bit({pos},{bit})", lambda d: _xor(d, pos if pos >= 0 else len(d) + pos, 1 << bit))


def flip_crc_byte(batch_index: int, byte: int = 0) -> Damage:
    """Invert one byte of a batch's stored checksum: the batch fails `ensureValid()`."""

    def fn(d: bytes) -> bytes:
        return _xor(d, entry_at(d, batch_index).crc_position + byte, 0xFF)

    return Damage(f"flip_crc_byte({batch_index})", fn)


def flip_body_byte(batch_index: int, at: int = -1) -> Damage:
    """Invert one payload byte of a batch (`at` from its start, negative from its end): a bad CRC."""

    def fn(d: bytes) -> bytes:
        e = entry_at(d, batch_index)
        return _xor(d, e.position + at if at >= 0 else e.end + at, 0xFF)

    return Damage(f"flip_body_byte({batch_index},{at})", fn)


def truncate_at(pos: int) -> Damage:
    """Keep the first `pos` bytes."""
    return Damage(f"truncate_at({pos})", lambda d: d[:pos])


def truncate_tail(n: int) -> Damage:
    """Drop the last `n` bytes."""
    return Damage(f"truncate_tail({n})", lambda d: d[: max(len(d) - n, 0)])


def truncate_inside(batch_index: int, into: int) -> Damage:
    """Cut the file `into` bytes after the start of a batch (negative: before its end)."""

    def fn(d: bytes) -> bytes:
        e = entry_at(d, batch_index)
        return d[: e.position + into if into >= 0 else e.end + into]

    return Damage(f"truncate_inside({batch_index},{into})", fn)


def append_zeros(n: int) -> Damage:
    """Zeros after the end: preallocation, or pages a crash left unwritten."""
    return Damage(f"append_zeros({n})", lambda d: d + bytes(n))


def zero_range(start: int, end: int | None = None) -> Damage:
    """Zero bytes `start..end` (negative from the end; `end=None`: to the end of the file)."""

    def fn(d: bytes) -> bytes:
        s = start if start >= 0 else len(d) + start
        e = len(d) if end is None else (end if end >= 0 else len(d) + end)
        return d[:s] + bytes(e - s) + d[e:]

    return Damage(f"zero_range({start},{end})", fn)


def torn_page(page_size: int = 4096) -> Damage:
    """A torn write: the file's last page (from the last `page_size` boundary) reads as zeros."""

    def fn(d: bytes) -> bytes:
        boundary = ((len(d) - 1) // page_size) * page_size
        return d[:boundary] + bytes(len(d) - boundary)

    return Damage(f"torn_page({page_size})", fn)


def append_garbage(n: int, seed: int = 0) -> Damage:
    """Random bytes after the end (never a valid batch: a checksum would have to match)."""
    return Damage(f"append_garbage({n},{seed})", lambda d: d + random.Random(seed).randbytes(n))


def garble_length(batch_index: int, value: int) -> Damage:
    """Overwrite a batch's length field (position +8, int32)."""

    def fn(d: bytes) -> bytes:
        e = entry_at(d, batch_index)
        out = bytearray(d)
        struct.pack_into(">i", out, e.position + 8, value)
        return bytes(out)

    return Damage(f"garble_length({batch_index},{value})", fn)


def set_magic(batch_index: int, magic: int) -> Damage:
    """Overwrite a batch's magic byte (position +16)."""

    def fn(d: bytes) -> bytes:
        e = entry_at(d, batch_index)
        out = bytearray(d)
        out[e.position + 16] = magic & 0xFF
        return bytes(out)

    return Damage(f"set_magic({batch_index},{magic})", fn)


def reorder_batches(i: int = -2, j: int = -1) -> Damage:
    """Swap two whole batches: both keep valid checksums, but offsets go backwards."""

    def fn(d: bytes) -> bytes:
        entries = log_entries(d)
        a, b = sorted((entries[i], entries[j]), key=lambda e: e.position)
        return (
            d[: a.position]
            + d[b.position : b.end]
            + d[a.end : b.position]
            + d[a.position : a.end]
            + d[b.end :]
        )

    return Damage(f"reorder_batches({i},{j})", fn)


# --- index damages ----------------------------------------------------------------------------

INDEX_ENTRY = {"index": 8, "timeindex": 12, "txnindex": 34}


def shuffle_index_entries(seed: int = 0, entry_size: int = 8) -> Damage:
    """Permute the whole entries of an index (never the identity when there are two or more)."""

    def fn(d: bytes) -> bytes:
        n = len(d) // entry_size
        entries = [d[k * entry_size : (k + 1) * entry_size] for k in range(n)]
        if n < 2:
            return d
        order = list(range(n))
        rng = random.Random(seed)
        while order == sorted(order):
            rng.shuffle(order)
        return b"".join(entries[k] for k in order) + d[n * entry_size :]

    return Damage(f"shuffle_index_entries({seed},{entry_size})", fn)


def stale_index(log_size: int, last_relative_offset: int, count: int = 2, kind: str = "index") -> Damage:
    """Append entries beyond the log, as an index left behind by a truncated log looks.

    Offset index: (last_relative_offset + 10k, log_size + 100k). Time index: timestamps above the
    last entry's, relative offsets last_relative_offset + 10k (past the log's last offset).
    """

    def fn(d: bytes) -> bytes:
        extra = bytearray()
        if kind == "index":
            for k in range(1, count + 1):
                extra += struct.pack(">ii", last_relative_offset + 10 * k, log_size + 100 * k)
        else:
            n = len(d) // 12
            last_ts = struct.unpack_from(">q", d, (n - 1) * 12)[0] if n else 1_700_000_000_000
            for k in range(1, count + 1):
                extra += struct.pack(">qi", last_ts + 1000 * k, last_relative_offset + 10 * k)
        return d + bytes(extra)

    return Damage(f"stale_index({kind},{count})", fn)


def truncate_index(keep_entries: int | None = None, *, drop_bytes: int = 0, entry_size: int = 8) -> Damage:
    """Keep `keep_entries` whole entries (None: all), then drop `drop_bytes` more (a torn entry)."""

    def fn(d: bytes) -> bytes:
        size = len(d) if keep_entries is None else min(len(d), keep_entries * entry_size)
        return d[: max(size - drop_bytes, 0)]

    return Damage(f"truncate_index({keep_entries},-{drop_bytes})", fn)


def set_index_entry(slot: int, first: int, second: int, kind: str = "index") -> Damage:
    """Overwrite one slot: (relative offset, position) for `.index`, (timestamp, relative offset) for
    `.timeindex`."""
    fmt = ">ii" if kind == "index" else ">qi"

    def fn(d: bytes) -> bytes:
        out = bytearray(d)
        struct.pack_into(fmt, out, slot * struct.calcsize(fmt), first, second)
        return bytes(out)

    return Damage(f"set_index_entry({kind},{slot})", fn)


def index_entries(data: bytes, kind: str = "index") -> list[tuple[int, int]]:
    """Raw slots of an index (relative offsets as stored): (rel, pos) or (ts, rel)."""
    fmt = ">ii" if kind == "index" else ">qi"
    size = struct.calcsize(fmt)
    return [struct.unpack_from(fmt, data, k * size) for k in range(len(data) // size)]


# --- the rig: trees, log dirs, locks, subprocesses --------------------------------------------


def copy_tree(src: Path, dst: Path) -> Path:
    """Copy a corpus partition (or any tree) into a writable place (corpus files are read-only)."""
    shutil.copytree(src, dst, copy_function=shutil.copyfile)
    for d in [dst, *dst.rglob("*")]:
        if d.is_dir() and not d.is_symlink():
            d.chmod(0o755)
    return dst


class FileState(NamedTuple):
    kind: str  # "file" | "dir" | "other"
    size: int
    sha256: str | None
    mode: int
    mtime_ns: int


def tree_state(root: Path) -> dict[str, FileState]:
    """Every path under `root` (directories and root itself included) with hash, size, mode, mtime."""
    out: dict[str, FileState] = {}
    for p in [root, *sorted(root.rglob("*"))]:
        st = p.lstat()
        rel = str(p.relative_to(root))
        if p.is_symlink() or not (p.is_file() or p.is_dir()):
            out[rel] = FileState("other", st.st_size, None, st.st_mode, st.st_mtime_ns)
        elif p.is_dir():
            out[rel] = FileState("dir", 0, None, st.st_mode, st.st_mtime_ns)
        else:
            out[rel] = FileState(
                "file", st.st_size, hashlib.sha256(p.read_bytes()).hexdigest(), st.st_mode, st.st_mtime_ns
            )
    return out


def file_hashes(root: Path) -> dict[str, str]:
    """sha256 of every regular file directly in `root` (a partition directory)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.iterdir()) if p.is_file()}


def chmod_read_only(root: Path) -> None:
    """`chmod -R a-w`, directories included."""
    for p in [root, *root.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode & ~0o222)


def chmod_writable(root: Path) -> None:
    """Undo `chmod_read_only` (so pytest can clean up when not root)."""
    for p in [root, *root.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | 0o200)


META_PROPERTIES = (
    "version=1\nbroker.id=1\ncluster.id=kdump-test-cluster\nnode.id=1\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAA\n"
)


def make_log_dir(path: Path, partitions: dict[str, Path]) -> Path:
    """A broker log dir: `meta.properties`, an empty `.lock` (as a broker leaves it), and the
    given partitions copied in under the given names."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "meta.properties").write_text(META_PROPERTIES)
    (path / ".lock").touch()
    for name, src in partitions.items():
        copy_tree(src, path / name)
    return path


_LOCK_HOLDER = textwrap.dedent(
    """
    import fcntl, os, sys, time
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("locked", flush=True)
    time.sleep(120)
    """
)


@contextlib.contextmanager
def held_lock(log_dir: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holds `<log dir>/.lock` the way a broker does (a POSIX record lock)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _LOCK_HOLDER, str(log_dir / ".lock")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "locked", "the lock holder did not get the lock"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def run_kdump(
    *args: str, crash_at: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run the real `kdump` entry point (`python -m kdump`) in a subprocess."""
    env = {k: v for k, v in os.environ.items() if k != "KDUMP_CRASH_AT"}
    if crash_at is not None:
        env["KDUMP_CRASH_AT"] = crash_at
    env.setdefault("COLUMNS", "200")
    return subprocess.run(
        [sys.executable, "-m", "kdump", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
