"""Memory bound: files whose fields claim gigabytes are verified and dumped by the real CLI under a memory limit.

Each command runs `kdump` in a subprocess whose address space is capped with `setrlimit` (`RLIMIT_AS`,
512 MiB; Python with kdump's imports needs under 100 MiB of it), and must finish with exit code 0 or 1: no
internal error (70), no MemoryError traceback, no abort. The crafted files:

* **length claims**: a v2 header claiming `batchLength` 2^31-1 at the end of a small segment, and one in the
  middle with garbage and a valid batch after it; checksum-valid v2 batches whose `recordsCount`, record
  length, key, value and header count claim 2^31-1, and whose payloads claim 2 GiB to the codecs (a raw
  snappy block, a xerial chunk, an lz4 block, a zstd frame with a 1 TiB content size); legacy messages and
  wrappers whose key or value length claims 2^31-1.
* **decompression bombs** with valid checksums: zstd (RLE blocks, 4 GiB from 128 KiB), gzip (32 members of
  64 MiB zeros, 2 GiB from 2 MiB) and lz4 (4 MiB blocks, 1.5 GiB from 6 MiB). kdump's decompression bound is
  1 GiB, beyond this limit: what stops them here is the memory limit, reported as `decompression-failed`.
* **tiny records**: a zstd batch of 20 million 7-byte records (13 KiB compressed) that claims and holds
  them all; decoding them needs gigabytes of Python objects, so under the limit (256 MiB here, so the
  failing allocation comes sooner) the batch is reported as `record-decode-failed`, not a crash.
* **2 GiB sparse files**: a segment `.log`, `.index` and `.timeindex` of 2 GiB of zeros each (sparse, no
  disk used; hard links to one inode, so the kernel zero-fills its page cache once). File mappings count in
  `RLIMIT_AS`, so these run with `RLIMIT_DATA` (heap and private mappings) at 512 MiB instead. The log
  scanner hands its mapped pages back as it goes (its peak stays small, which is checked); the index
  decoders' peak RSS is the mapped file's clean page cache, not heap.

Peak memory (`ru_maxrss` of the command and of its worker processes) is printed for every run; run this
module as a script (`python tests/test_memory_bound.py`) for a table of them.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from builders import SegmentBuilder, records

from kdump.formats.batch import encode_legacy_message, encode_v2_batch
from kdump.formats.codecs import compress
from kdump.formats.constants import Codec
from kdump.formats.varint import encode_varint

MiB = 1 << 20
LIMIT = 512 * MiB
TINY_RECORDS_LIMIT = 256 * MiB
BASE_TS = 1_700_000_000_000
CLAIM = 2**31 - 1
# After the batch that claims 2^31-1 records (and offsets to match), offsets go on above them.
LEGACY_BASE = 2**31 + 400

_RUNNER = textwrap.dedent(
    """
    import atexit, os, resource, sys

    kind, limit = os.environ["KDUMP_TEST_RLIMIT"].split(":")
    which = {"as": resource.RLIMIT_AS, "data": resource.RLIMIT_DATA}[kind]
    resource.setrlimit(which, (int(limit), int(limit)))

    def report():
        # VmHWM: the peak RSS of this process's own memory since exec (ru_maxrss of RUSAGE_SELF would
        # also count the parent's pages from before the exec).
        with open("/proc/self/status") as fh:
            own = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
        kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        with open(os.environ["KDUMP_TEST_PEAK"], "w") as fh:
            fh.write(f"{own} {kids}")

    atexit.register(report)
    sys.argv = ["kdump", *sys.argv[1:]]
    from kdump.cli import main

    main()
    """
)


@dataclass
class Run:
    args: tuple[str, ...]
    limit: str
    returncode: int
    stdout: str
    stderr: str
    peak_kib: int  # the command's own peak RSS
    workers_peak_kib: int  # the largest of its worker processes
    seconds: float

    @property
    def peak_mib(self) -> float:
        return max(self.peak_kib, self.workers_peak_kib) / 1024

    def codes(self) -> list[str]:
        out = []
        for line in self.stdout.splitlines():
            if line.startswith("{"):
                row = json.loads(line)
                if row.get("type") == "finding":
                    out.append(row["code"])
        return out

    def describe(self) -> str:
        return (
            f"kdump {' '.join(self.args)} [{self.limit}]: exit {self.returncode}, peak {self.peak_mib:.0f} MiB "
            f"(command {self.peak_kib // 1024} MiB, workers {self.workers_peak_kib // 1024} MiB), {self.seconds:.1f} s"
        )


RUNS: list[Run] = []


def run_limited(*args: str, cwd: Path, limit: int = LIMIT, kind: str = "as") -> Run:
    """Run `kdump ARGS` with `setrlimit` applied in the child before kdump is imported."""
    peak_file = cwd / f".peak-{len(RUNS)}"
    env = {**os.environ, "KDUMP_TEST_RLIMIT": f"{kind}:{limit}", "KDUMP_TEST_PEAK": str(peak_file)}
    env.pop("KDUMP_DEBUG", None)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _RUNNER, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    seconds = time.perf_counter() - t0
    own, kids = (int(v) for v in peak_file.read_text().split()) if peak_file.exists() else (0, 0)
    run = Run(
        args,
        f"RLIMIT_{kind.upper()} {limit // MiB} MiB",
        proc.returncode,
        proc.stdout,
        proc.stderr,
        own,
        kids,
        seconds,
    )
    RUNS.append(run)
    print(run.describe())
    return run


def assert_survived(run: Run) -> None:
    assert run.returncode in (0, 1), f"{run.describe()}\n{run.stderr[-3000:]}"
    for bad in ("internal error", "Traceback", "MemoryError", "Fatal Python error"):
        assert bad not in run.stderr, f"{run.describe()}\n{run.stderr[-3000:]}"


# --- crafted files --------------------------------------------------------------------------------


def _v2(
    base_offset: int, payload: bytes, count: int, codec: int = Codec.NONE, last_delta: int | None = None
) -> bytes:
    return encode_v2_batch(
        base_offset=base_offset,
        records_payload=payload,
        count=count,
        last_offset_delta=max(count - 1, 0) if last_delta is None else last_delta,
        base_timestamp=BASE_TS,
        max_timestamp=BASE_TS,
        attributes=codec,
    )


def _record(
    *, length: int | None = None, key: int | None = None, value: int | None = None, headers: int = 0
) -> bytes:
    body = b"\x00" + encode_varint(0) + encode_varint(0)
    body += encode_varint(-1 if key is None else key) + (b"k" * 8 if key is not None else b"")
    body += encode_varint(-1 if value is None else value) + (b"v" * 8 if value is not None else b"")
    body += encode_varint(headers)
    return encode_varint(len(body) if length is None else length) + body


def _good(n: int = 3) -> SegmentBuilder:
    seg = SegmentBuilder(base_offset=0)
    seg.add_v2(records(n, value_size=50))
    return seg


def length_claims(part: Path) -> None:
    part.mkdir(parents=True)
    claim_header = struct.pack(">qiib", 3, CLAIM, 0, 2) + bytes(44)
    # A 2 GiB batchLength claim at the end, and one in the middle with garbage and a good batch after it.
    (part / "00000000000000000000.log").write_bytes(bytes(_good().data) + claim_header)
    seg = SegmentBuilder(base_offset=10)
    seg.add_v2(records(3, value_size=50))
    garbage = bytes(range(256)) * 256
    after = _v2(100, _record(), 1)
    (part / "00000000000000000010.log").write_bytes(bytes(seg.data) + claim_header + garbage + after)
    # Checksum-valid batches whose fields claim 2 GiB.
    zstd_header = struct.pack("<IB", 0xFD2FB528, 0xC0) + struct.pack("<Q", 1 << 40) + b"\x01\x00\x00"
    lz4 = bytearray(compress(Codec.LZ4, b"x" * 100))
    struct.pack_into("<I", lz4, 7, 0x7FFFFFFF)
    batches = [
        _v2(200, _record(), CLAIM, last_delta=0),  # recordsCount, beyond the batch's offsets
        _v2(201, _record(), CLAIM),  # recordsCount, with offsets to match
        _v2(2**31 + 300, _record(length=CLAIM), 1),  # record length
        _v2(2**31 + 301, _record(key=CLAIM), 1),  # key length
        _v2(2**31 + 302, _record(value=CLAIM), 1),  # value length
        _v2(2**31 + 303, _record(headers=CLAIM), 1),  # header count
        _v2(2**31 + 304, b"\x80\x80\x80\x80\x08" + bytes(20), 1, Codec.SNAPPY),  # raw snappy block: 2 GiB
        _v2(2**31 + 305, b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, CLAIM) + bytes(20), 1, Codec.SNAPPY),
        _v2(2**31 + 306, bytes(lz4), 1, Codec.LZ4),  # an lz4 block of 2 GiB
        _v2(2**31 + 307, zstd_header, 1, Codec.ZSTD),  # a zstd frame of 1 TiB
    ]
    (part / "00000000000000000200.log").write_bytes(b"".join(batches))
    # Legacy: a v0 key and a v1 value claiming 2 GiB (valid checksums), and a wrapper around such a message.
    v0 = bytearray(encode_legacy_message(offset=LEGACY_BASE, magic=0, key=b"abc", value=b"def"))
    struct.pack_into(">i", v0, 18, CLAIM)
    v1 = bytearray(
        encode_legacy_message(offset=LEGACY_BASE + 1, magic=1, key=None, value=b"xyz", timestamp=BASE_TS)
    )
    struct.pack_into(">i", v1, 30, CLAIM)
    legacy = b""
    for msg in (v0, v1):
        body = bytes(msg[16:])
        crc = zlib.crc32(body) & 0xFFFFFFFF
        fixed = bytes(msg[:12]) + struct.pack(">I", crc) + body
        legacy += fixed
    wrapper = encode_legacy_message(
        offset=LEGACY_BASE + 2, magic=0, key=None, value=compress(Codec.GZIP, bytes(v0)), attributes=1
    )
    (part / f"{LEGACY_BASE:020d}.log").write_bytes(legacy + wrapper)


def _zstd_rle_bomb(total: int) -> bytes:
    """A zstd frame without a content size whose RLE blocks (4 bytes per 128 KiB) expand to `total` bytes."""
    block = 128 << 10
    n = total // block
    out = bytearray(struct.pack("<I", 0xFD2FB528) + bytes([0x00, 0x58]))  # no content size; 2 MiB window
    for i in range(n):
        header = (1 if i == n - 1 else 0) | (1 << 1) | (block << 3)  # last flag, RLE, size
        out += header.to_bytes(3, "little") + b"\x00"
    return bytes(out)


def _gzip_bomb(members: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    one = c.compress(bytes(64 * MiB)) + c.flush()
    return one * members


def _lz4_bomb(blocks: int) -> bytes:
    import lz4.block

    from kdump.formats.codecs import LZ4_FRAME_MAGIC, xxhash32

    flg, bd = 0x60, 0x70  # version 01, independent blocks; 4 MiB blocks
    out = bytearray(
        struct.pack("<I", LZ4_FRAME_MAGIC) + bytes([flg, bd, (xxhash32(bytes([flg, bd])) >> 8) & 0xFF])
    )
    packed = lz4.block.compress(bytes(4 * MiB), store_size=False)
    for _ in range(blocks):
        out += struct.pack("<I", len(packed)) + packed
    out += struct.pack("<I", 0)
    return bytes(out)


def bombs(part: Path) -> None:
    part.mkdir(parents=True)
    for base, payload, codec in (
        (0, _zstd_rle_bomb(4 << 30), Codec.ZSTD),
        (10, _gzip_bomb(32), Codec.GZIP),
        (20, _lz4_bomb(384), Codec.LZ4),
    ):
        seg = SegmentBuilder(base_offset=base)
        seg.add_v2(records(2, value_size=20))
        data = bytes(seg.data) + _v2(base + 2, payload, 1, codec)
        (part / f"{base:020d}.log").write_bytes(data)


def tiny_records(part: Path, count: int = 20_000_000) -> None:
    part.mkdir(parents=True)
    record = bytes([12, 0, 0, 0, 1, 1, 0])  # length 6, attributes, deltas 0, null key and value, no headers
    payload = compress(Codec.ZSTD, record * count)
    (part / "00000000000000000000.log").write_bytes(bytes(_good().data) + _v2(3, payload, count, Codec.ZSTD))


def sparse(part: Path, size: int = 2 << 30) -> None:
    """A 2 GiB sparse `.log`, with its `.index` and `.timeindex` hard links to the same inode: three files of
    2 GiB of zeros whose pages the kernel zero-fills once (seconds for 2 GiB), not three times."""
    part.mkdir(parents=True)
    log = part / "00000000000000000000.log"
    with log.open("wb") as fh:
        fh.truncate(size)
    for ext in ("index", "timeindex"):
        os.link(log, part / f"00000000000000000000.{ext}")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("memory-bound")
    length_claims(root / "claims-0")
    bombs(root / "bombs-0")
    tiny_records(root / "tiny-0")
    sparse(root / "sparse-0")
    return root


# --- the runs -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("verify", "--format", "json"),
        ("verify", "--deep", "--format", "json"),
        ("dump", "--records", "--format", "json"),
    ],
    ids=["verify", "verify-deep", "dump-records"],
)
def test_length_claims(work: Path, args: tuple[str, ...]) -> None:
    run = run_limited(*args, "claims-0", cwd=work)
    assert_survived(run)
    codes = set(run.codes())
    assert {
        "partial-trailing-batch",
        "invalid-batch-length",
        "skipped-bytes",
        "record-count-mismatch",
    } <= codes
    if "--deep" in args or "--records" in args:
        assert {"record-decode-failed", "decompression-failed"} <= codes


@pytest.mark.parametrize(
    "args",
    [("verify", "--deep", "--format", "json"), ("dump", "--records", "--format", "json")],
    ids=["verify-deep", "dump-records"],
)
def test_decompression_bombs(work: Path, args: tuple[str, ...]) -> None:
    run = run_limited(*args, "bombs-0", cwd=work)
    assert_survived(run)
    failed = [c for c in run.codes() if c == "decompression-failed"]
    assert len(failed) == 3, run.stdout[-2000:]
    assert run.peak_kib < LIMIT // 1024
    assert run.workers_peak_kib < LIMIT // 1024


def test_millions_of_tiny_records(work: Path) -> None:
    run = run_limited("verify", "--deep", "--format", "json", "tiny-0", cwd=work, limit=TINY_RECORDS_LIMIT)
    assert_survived(run)
    assert "record-decode-failed" in run.codes()
    assert "do not fit in the memory available" in run.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("verify", "--deep", "--format", "json", "sparse-0"),
        ("dump", "--records", "--format", "json", "sparse-0/00000000000000000000.log"),
        ("dump", "--format", "json", "sparse-0/00000000000000000000.index"),
        ("dump", "--format", "json", "sparse-0/00000000000000000000.timeindex"),
    ],
    ids=["verify-deep", "dump-log", "dump-index", "dump-timeindex"],
)
def test_two_gibibyte_sparse_files(work: Path, args: tuple[str, ...]) -> None:
    run = run_limited(*args, cwd=work, kind="data")
    assert_survived(run)
    codes = run.codes()
    if args[-1].endswith(".log") or args[0] == "verify":
        assert "zero-filled-tail" in codes
    if "--records" in args:
        # Regression: the zero tail used to be one regex search over 2 GiB (27 s) whose pages all became
        # resident; chunked and handed back, the scan stays small.
        assert run.peak_mib < 128, run.describe()


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        length_claims(root / "claims-0")
        bombs(root / "bombs-0")
        tiny_records(root / "tiny-0")
        sparse(root / "sparse-0")
        for args in (("verify",), ("verify", "--deep"), ("dump", "--records")):
            for target in ("claims-0", "bombs-0"):
                run_limited(*args, "--format", "json", target, cwd=root)
        run_limited("verify", "--deep", "--format", "json", "tiny-0", cwd=root, limit=TINY_RECORDS_LIMIT)
        run_limited("verify", "--deep", "--format", "json", "sparse-0", cwd=root, kind="data")
        run_limited("dump", "--records", "sparse-0/00000000000000000000.log", cwd=root, kind="data")
        run_limited("dump", "sparse-0/00000000000000000000.index", cwd=root, kind="data")
        print("\n| command | limit | exit | peak RSS (MiB) | seconds |\n|---|---|---:|---:|---:|")
        for r in RUNS:
            print(
                f"| `kdump {' '.join(r.args)}` | {r.limit} | {r.returncode} | {r.peak_mib:.0f} | {r.seconds:.1f} |"
            )
