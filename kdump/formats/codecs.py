"""Decompression and compression of batch payloads: gzip, snappy, lz4 and zstd.

- gzip: an RFC 1952 stream (`GZIPInputStream`); concatenated members are accepted.
- snappy: the Java client writes xerial's "snappy-java stream" framing: a 16-byte header
  (`0x82 'SNAPPY' 0x00`, int32 version, int32 compatible version) followed by
  `[int32 compressed length][raw snappy block]` chunks. Input that does not start with that header
  is one raw snappy block, as snappy-java's reader falls back to (`SnappyInputStream`).
- lz4: the LZ4 frame format (`Lz4BlockInputStream`): magic `0x184D2204` (little-endian), FLG, BD,
  optional 8-byte content size, a header checksum byte HC, then blocks of `int32 LE size` (high bit:
  stored uncompressed; 0: end mark) each optionally followed by a 4-byte checksum. Kafka wrote a
  wrong HC in magic-0 messages (it hashed the frame from byte 0, magic included, KAFKA-3160) and
  skips the HC check for magic 0; we do the same. Like Kafka, the content checksum is not verified.
- zstd: standard frames, possibly without a content size; allowed only in v2 batches.

Codec libraries are imported on first use so `import kdump` stays cheap. A library that is missing or
fails raises `CodecUnavailableError`; undecodable input raises `CodecError`. Output is bounded by
`max_size` so a crafted payload cannot claim gigabytes of memory.
"""

from __future__ import annotations

import struct
import sys
import zlib
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from kdump.errors import CodecError, CodecUnavailableError
from kdump.formats.constants import Codec

Buffer = bytes | bytearray | memoryview
_T = TypeVar("_T")

# A generous bound: Kafka limits a batch's compressed size (message.max.bytes), not what it expands
# to; 1 GiB is far beyond any real batch and keeps a decompression bomb from exhausting memory.
DEFAULT_MAX_DECOMPRESSED_SIZE = 1 << 30

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_INT32_BE = struct.Struct(">i")
_INT32_LE = struct.Struct("<I")
LZ4_FRAME_MAGIC = 0x184D2204
_LZ4_BLOCK_SIZES = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}
_ZSTD_FEED = 4096  # zstd input slice per decompress call: at most ~128 MiB of output each

_modules: dict[str, Any] = {}

# Each codec module: (codec name, the Python distribution that provides it, the command to install it).
LIBRARIES = {
    "snappy": ("snappy", "python-snappy", "pip install python-snappy"),
    "lz4.block": ("lz4", "lz4", "pip install lz4"),
    "lz4.frame": ("lz4", "lz4", "pip install lz4"),
    "zstandard": ("zstd", "zstandard", "pip install zstandard"),
}
# What kdump calls in each: a module of that name without them is another package (`pip install snappy`
# installs SnapPy, a topology program) or a broken one, never a reason to call the data damaged.
_NEEDED = {
    "snappy": ("compress", "uncompress"),
    "lz4.block": ("compress", "decompress"),
    "lz4.frame": (),
    "zstandard": ("ZstdCompressor", "ZstdDecompressor", "ZstdError", "frame_content_size"),
}


def unavailable_message(name: str, exc: BaseException) -> str:
    """What a missing or broken codec module means, and how to get it: the text of the finding."""
    codec, library, install = LIBRARIES.get(name, (name, name, f"pip install {name}"))
    return (
        f"{codec} payloads cannot be decompressed here: the Python library {library} (module {name}) "
        f"cannot be loaded ({type(exc).__name__}: {exc}); install it with `{install}`"
    )


def _load(name: str) -> Any:
    module = _modules.get(name)
    if module is None:
        try:
            if name not in LIBRARIES:  # pragma: no cover
                raise CodecUnavailableError(f"unknown codec module {name}")
            __import__(name)
            module = sys.modules[name]
            lacking = [attr for attr in _NEEDED[name] if not hasattr(module, attr)]
            if lacking:
                raise ImportError(
                    f"the module {name} found has no {', '.join(lacking)}: another package or a broken one"
                )
        except Exception as exc:  # any import failure means the codec cannot be used
            raise CodecUnavailableError(unavailable_message(name, exc)) from exc
        _modules[name] = module
    return module


def load(name: str) -> Any:
    """A codec library's module (`snappy`, `lz4.block`, `zstandard`), once loaded and checked.

    Raises:
        CodecUnavailableError: it is missing, fails to import, or lacks what kdump calls.
    """
    return _load(name)


def decompress(
    codec: int, data: Buffer, *, magic: int = 2, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
) -> bytes:
    """Decompress a batch (v2) or wrapper-message (v0/v1) payload.

    Raises:
        CodecError: the payload does not decompress, or expands beyond `max_size`.
        CodecUnavailableError: the codec's library is missing.
    """
    if codec == Codec.NONE:
        return bytes(data)
    if codec == Codec.GZIP:
        return _gunzip(data, max_size)
    if codec == Codec.SNAPPY:
        return _unsnappy(data, max_size)
    if codec == Codec.LZ4:
        return _unlz4(data, magic, max_size)
    if codec == Codec.ZSTD:
        if magic < 2:
            raise CodecError("zstd is not allowed in message format v0/v1")
        return _unzstd(data, max_size)
    raise CodecError(f"unknown compression type id: {codec}")


def _checked(fn: Callable[[], _T], name: str) -> _T:
    try:
        return fn()
    except CodecError:
        raise
    except MemoryError as exc:
        # Under a memory limit a decompression bomb fails before `max_size` is reached; MemoryError
        # carries no message, so say what happened. (Found by tests/test_memory_bound.py.)
        raise CodecError(f"{name} payload expands beyond the memory available") from exc
    except Exception as exc:  # codec libraries raise their own assorted types
        raise CodecError(f"{name} payload does not decompress: {exc}") from exc


def _gunzip(data: Buffer, max_size: int) -> bytes:
    def run() -> bytes:
        out = bytearray()
        rest = bytes(data)
        while rest:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            out += d.decompress(rest, max_size + 1 - len(out))
            if len(out) > max_size:
                raise CodecError(f"gzip payload expands beyond {max_size} bytes")
            if not d.eof:
                raise CodecError("gzip stream ends before its end marker")
            rest = d.unused_data
            # Like Java's GZIPInputStream.readTrailer: what follows a member is read as another member
            # only when it starts with the gzip magic; other trailing bytes are ignored, as Kafka does.
            if not rest.startswith(b"\x1f\x8b"):
                break
        return bytes(out)

    return _checked(run, "gzip")


def is_xerial(raw: bytes) -> bool:
    """Whether a snappy payload uses xerial's stream framing (else it is one raw block)."""
    return len(raw) >= _XERIAL_HEADER.size and raw[:8] == XERIAL_MAGIC


def xerial_chunks(raw: bytes) -> Iterator[tuple[int, bytes]]:
    """The raw snappy blocks of a xerial-framed payload, with the position of each chunk.

    Raises:
        CodecError: a chunk's length field does not fit the payload (after the chunks before it
            were yielded, so a caller can keep what they decode to).
    """
    pos = 0
    while pos < len(raw):
        # Newer snappy-java tolerates a repeated stream header between chunks.
        if raw.startswith(XERIAL_MAGIC, pos) and pos + _XERIAL_HEADER.size <= len(raw):
            pos += _XERIAL_HEADER.size
            continue
        if pos + 4 > len(raw):
            raise CodecError(f"xerial snappy chunk length at {pos} runs past the end of the payload")
        (length,) = _INT32_BE.unpack_from(raw, pos)
        if length < 0 or pos + 4 + length > len(raw):
            raise CodecError(f"xerial snappy chunk of {length} bytes at {pos} does not fit the payload")
        yield pos, raw[pos + 4 : pos + 4 + length]
        pos += 4 + length


def _unsnappy(data: Buffer, max_size: int) -> bytes:
    snappy = _load("snappy")
    raw = bytes(data)

    def run() -> bytes:
        if not is_xerial(raw):
            return _snappy_block(snappy, raw, max_size)
        out = bytearray()
        for _pos, chunk in xerial_chunks(raw):
            out += _snappy_block(snappy, chunk, max_size - len(out))
        return bytes(out)

    return _checked(run, "snappy")


def _snappy_block(snappy: Any, block: bytes, max_size: int) -> bytes:
    # A raw block starts with its uncompressed length as an unsigned varint: check it before allocating.
    length = 0
    for i in range(min(5, len(block))):
        length |= (block[i] & 0x7F) << (7 * i)
        if block[i] < 0x80:
            break
    if length > max_size:
        raise CodecError(f"snappy block expands beyond {max_size} bytes")
    return bytes(snappy.uncompress(block))


def _unlz4(data: Buffer, magic: int, max_size: int) -> bytes:
    return b"".join(lz4_blocks(data, magic=magic, max_size=max_size))


def lz4_blocks(
    data: Buffer, *, magic: int = 2, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
) -> list[bytes | memoryview]:
    """An lz4 payload decompressed block by block: the decompressed payload is these parts joined
    (`decompress` joins them; a caller that copies them into a buffer of its own saves that copy).

    Raises:
        CodecError: the payload does not decompress, or expands beyond `max_size`.
        CodecUnavailableError: the codec's library is missing.
    """
    block = _load("lz4.block")
    # Read where it is (a batch in a mapped file): a copy of the payload cost more than its checks.
    raw = memoryview(data).cast("B")

    def run() -> list[bytes | memoryview]:
        if len(raw) < 7:
            raise CodecError("lz4 frame shorter than its header")
        if _INT32_LE.unpack_from(raw, 0)[0] != LZ4_FRAME_MAGIC:
            raise CodecError("lz4 frame magic missing")
        flg, bd = raw[4], raw[5]
        if flg >> 6 != 1:
            raise CodecError(f"lz4 frame version {flg >> 6} is not supported")
        if not flg & 0x20:
            raise CodecError("lz4 frames with dependent blocks are not supported")
        if flg & 0x03 or bd & 0x8F:
            raise CodecError("lz4 frame descriptor has reserved bits set")
        block_max = _LZ4_BLOCK_SIZES.get((bd >> 4) & 0x07)
        if block_max is None:
            raise CodecError(f"lz4 block size code {(bd >> 4) & 0x07} is not supported")
        pos = 6
        if flg & 0x08:
            pos += 8  # content size: not trusted, not needed
        if pos >= len(raw):
            raise CodecError("lz4 frame header runs past the end of the payload")
        hc = raw[pos]
        if magic >= 1:
            expected = (xxhash32(bytes(raw[4:pos])) >> 8) & 0xFF
            if hc != expected:
                raise CodecError("lz4 stream frame descriptor corrupted (header checksum mismatch)")
        pos += 1
        block_checksum = bool(flg & 0x10)
        # Blocks are views of the payload, joined once by the caller (a 1 MiB batch was copied
        # four times over, which cost more than decompressing it).
        parts: list[bytes | memoryview] = []
        total = 0
        while True:
            if pos + 4 > len(raw):
                raise CodecError("lz4 frame ends without its end mark")
            (word,) = _INT32_LE.unpack_from(raw, pos)
            pos += 4
            if word == 0:
                break
            size = word & 0x7FFFFFFF
            if size > block_max or pos + size > len(raw):
                raise CodecError(f"lz4 block of {size} bytes does not fit the frame")
            chunk = raw[pos : pos + size]
            pos += size + (4 if block_checksum else 0)
            part = chunk if word & 0x80000000 else block.decompress(chunk, uncompressed_size=block_max)
            parts.append(part)
            total += len(part)
            if total > max_size:
                raise CodecError(f"lz4 payload expands beyond {max_size} bytes")
        return parts

    return _checked(run, "lz4")


def _unzstd(data: Buffer, max_size: int) -> bytes:
    zstandard = _load("zstandard")
    raw = bytes(data)

    def run() -> bytes:
        dctx = _modules.get("zstd-dctx")
        if dctx is None:
            dctx = _modules["zstd-dctx"] = zstandard.ZstdDecompressor()
        # One shot for a single frame that states its content size (bounded before allocating);
        # frames without it (Kafka's Java client does not always write it), several frames or an
        # oversized one go through the streaming reader, which enforces `max_size` as it reads.
        try:
            size = zstandard.frame_content_size(raw)
            if 0 <= size <= max_size:
                return bytes(dctx.decompress(raw, max_output_size=max_size, allow_extra_data=False))
        except zstandard.ZstdError:
            pass
        # A decompression object per frame, fed in slices so that one call cannot expand far past
        # `max_size` (a block of at most 128 KiB needs at least 4 input bytes). Unlike a stream reader,
        # which returns a truncated frame's output silently, it tells whether the last frame ended:
        # zstd-jni fails on a truncated source, and so must we. (It is also faster than the reader.)
        out = bytearray()
        obj: Any = None
        pending = b""
        pos = 0
        while pos < len(raw) or pending:
            if pending:
                chunk, pending = pending, b""
            else:
                chunk = raw[pos : pos + _ZSTD_FEED]
                pos += len(chunk)
            if obj is None:
                obj = dctx.decompressobj()
            out += obj.decompress(chunk)
            if len(out) > max_size:
                raise CodecError(f"zstd payload expands beyond {max_size} bytes")
            if obj.eof:
                pending = obj.unused_data  # the next frame (concatenated frames are read as one stream)
                obj = None
        if obj is not None:
            raise CodecError("zstd payload ends inside a frame (truncated)")
        return bytes(out)

    return _checked(run, "zstd")


def compress(codec: int, data: bytes, *, magic: int = 2) -> bytes:
    """Compress a payload the way Kafka's Java client frames it (for writers and tests)."""
    if codec == Codec.NONE:
        return data
    if codec == Codec.GZIP:
        c = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return c.compress(data) + c.flush()
    if codec == Codec.SNAPPY:
        snappy = _load("snappy")
        out = bytearray(_XERIAL_HEADER.pack(XERIAL_MAGIC, 1, 1))
        for i in range(0, len(data), 32 << 10):
            chunk = snappy.compress(data[i : i + (32 << 10)])
            out += _INT32_BE.pack(len(chunk)) + chunk
        return bytes(out)
    if codec == Codec.LZ4:
        block = _load("lz4.block")
        flg, bd = 0x60, 0x40  # version 01, independent blocks; 64 KiB blocks
        hc_source = _INT32_LE.pack(LZ4_FRAME_MAGIC) + bytes([flg, bd]) if magic == 0 else bytes([flg, bd])
        out = bytearray(_INT32_LE.pack(LZ4_FRAME_MAGIC) + bytes([flg, bd, (xxhash32(hc_source) >> 8) & 0xFF]))
        for i in range(0, len(data), 64 << 10):
            piece = data[i : i + (64 << 10)]
            packed = block.compress(piece, store_size=False)
            if len(packed) >= len(piece):
                out += _INT32_LE.pack(len(piece) | 0x80000000) + piece
            else:
                out += _INT32_LE.pack(len(packed)) + packed
        out += _INT32_LE.pack(0)
        return bytes(out)
    if codec == Codec.ZSTD:
        zstandard = _load("zstandard")
        return bytes(zstandard.ZstdCompressor().compress(data))
    raise ValueError(f"unknown compression type id: {codec}")


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxhash32(data: bytes, seed: int = 0) -> int:
    """xxHash32 of a short input (the lz4 frame descriptor is at most 11 bytes)."""
    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for i in range(4):
                (lane,) = struct.unpack_from("<I", data, pos)
                v[i] = (_rotl((v[i] + lane * _P2) & _M32, 13) * _P1) & _M32
                pos += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        (lane,) = struct.unpack_from("<I", data, pos)
        h = (_rotl((h + lane * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h
