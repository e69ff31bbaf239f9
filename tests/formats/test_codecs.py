"""Batch payload codecs (`kdump.formats.codecs`): round trips and the framing quirks Kafka's readers have.

The reference readers are Kafka's (`GZIPInputStream`, xerial's `SnappyInputStream`, `Lz4BlockInputStream`,
zstd-jni); the independent encoders used here are the codec libraries themselves (python-snappy,
lz4.frame, zstandard, zlib/gzip) and kafka-python's Kafka-specific framings.
"""

from __future__ import annotations

import builtins
import gzip
import os
import struct

import lz4.block
import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from kdump.errors import CodecError, CodecUnavailableError
from kdump.formats import codecs
from kdump.formats.codecs import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    LZ4_FRAME_MAGIC,
    XERIAL_MAGIC,
    compress,
    decompress,
    xxhash32,
)
from kdump.formats.constants import Codec

ALL = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]
payloads = st.one_of(
    st.binary(max_size=3000),
    st.tuples(st.binary(min_size=1, max_size=20), st.integers(1, 5000)).map(lambda t: t[0] * t[1]),
)


def _xerial(*blocks: bytes, header: bool = True) -> bytes:
    out = struct.pack(">8sii", XERIAL_MAGIC, 1, 1) if header else b""
    for b in blocks:
        out += struct.pack(">i", len(b)) + b
    return out


# --- round trips -------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(payloads, st.sampled_from(ALL))
def test_round_trip_every_codec(data: bytes, codec: int) -> None:
    assert decompress(codec, compress(codec, data)) == data
    assert decompress(codec, memoryview(compress(codec, data))) == data


@settings(max_examples=30, deadline=None)
@given(payloads, st.sampled_from([Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4]), st.sampled_from([0, 1]))
def test_round_trip_legacy_magic(data: bytes, codec: int, magic: int) -> None:
    assert decompress(codec, compress(codec, data, magic=magic), magic=magic) == data


@pytest.mark.parametrize("codec", ALL, ids=lambda c: Codec(c).label)
def test_large_payload_spans_many_blocks(codec: int) -> None:
    data = os.urandom(50_000) + b"kafka " * 60_000  # incompressible and compressible parts, > 64 KiB
    assert decompress(codec, compress(codec, data)) == data


def test_none_returns_a_copy_as_bytes() -> None:
    buf = bytearray(b"abc")
    out = decompress(Codec.NONE, memoryview(buf))
    assert out == b"abc"
    assert type(out) is bytes


@pytest.mark.parametrize("codec", [5, 6, 7, 8, -1])
def test_unknown_codec(codec: int) -> None:
    with pytest.raises(CodecError, match=f"unknown compression type id: {codec}"):
        decompress(codec, b"whatever")
    with pytest.raises(ValueError, match="unknown compression type"):
        compress(codec, b"whatever")


@pytest.mark.parametrize("codec", ALL[1:], ids=lambda c: Codec(c).label)
@pytest.mark.parametrize("garbage", [b"", b"\x00", b"garbage that is not compressed at all", os.urandom(64)])
def test_garbage_raises_codec_error(codec: int, garbage: bytes) -> None:
    try:
        out = decompress(codec, garbage)
    except CodecError:
        return
    # A few short inputs are valid in some framings (e.g. a raw snappy block of length 0); they must then
    # decode to something small, never raise anything else.
    assert len(out) <= 64


# --- gzip ----------------------------------------------------------------------------------------------


def test_gzip_reads_other_encoders_output() -> None:
    data = b"gzip member " * 500
    assert decompress(Codec.GZIP, gzip.compress(data, compresslevel=9, mtime=0)) == data
    kp_codec = pytest.importorskip("kafka.codec")
    assert decompress(Codec.GZIP, kp_codec.gzip_encode(data)) == data


def test_gzip_concatenated_members() -> None:
    # GZIPInputStream reads concatenated members as one stream (RFC 1952 allows it).
    parts = [b"first " * 100, b"", b"third member " * 50]
    payload = b"".join(gzip.compress(p, mtime=0) for p in parts)
    assert decompress(Codec.GZIP, payload) == b"".join(parts)


def test_gzip_trailing_bytes_after_a_member_are_ignored_like_java() -> None:
    # GZIPInputStream.readTrailer: bytes after a member that do not start another member are ignored.
    data = b"payload " * 100
    assert decompress(Codec.GZIP, gzip.compress(data, mtime=0) + b"\x00\x00\x00junk") == data


def test_gzip_truncated_stream() -> None:
    payload = gzip.compress(b"x" * 10_000 + os.urandom(1000), mtime=0)
    with pytest.raises(CodecError):
        decompress(Codec.GZIP, payload[: len(payload) // 2])
    with pytest.raises(CodecError):
        decompress(Codec.GZIP, payload[:-4])  # the trailer's ISIZE missing


def test_gzip_corrupt_member_after_a_good_one() -> None:
    good = gzip.compress(b"a" * 100, mtime=0)
    bad = bytearray(gzip.compress(os.urandom(300), mtime=0))
    bad[20:40] = b"\xff" * 20
    with pytest.raises(CodecError):
        decompress(Codec.GZIP, good + bytes(bad))


# --- snappy ---------------------------------------------------------------------------------------------


def test_snappy_writes_xerial_framing() -> None:
    data = b"abc" * 40_000  # more than one 32 KiB xerial chunk
    out = compress(Codec.SNAPPY, data)
    assert out[:16] == struct.pack(">8sii", XERIAL_MAGIC, 1, 1)
    (first_len,) = struct.unpack_from(">i", out, 16)
    assert snappy.uncompress(out[20 : 20 + first_len]) == data[: 32 << 10]


def test_snappy_reads_raw_blocks() -> None:
    # Without the xerial header snappy-java decodes the whole input as one raw block.
    data = b"raw snappy block " * 100
    assert decompress(Codec.SNAPPY, snappy.compress(data)) == data
    assert decompress(Codec.SNAPPY, snappy.compress(b"")) == b""


def test_snappy_reads_kafka_python_xerial() -> None:
    kp_codec = pytest.importorskip("kafka.codec")
    data = os.urandom(10_000) + b"z" * 100_000
    assert decompress(Codec.SNAPPY, kp_codec.snappy_encode(data)) == data
    assert decompress(Codec.SNAPPY, kp_codec.snappy_encode(data, xerial_compatible=False)) == data


def test_snappy_xerial_chunks_and_repeated_header() -> None:
    a, b = b"chunk one " * 50, b"chunk two " * 70
    assert decompress(Codec.SNAPPY, _xerial(snappy.compress(a), snappy.compress(b))) == a + b
    # Newer snappy-java accepts a second stream header between chunks (concatenated streams).
    concatenated = _xerial(snappy.compress(a)) + _xerial(snappy.compress(b))
    assert decompress(Codec.SNAPPY, concatenated) == a + b
    assert decompress(Codec.SNAPPY, _xerial()) == b""


def test_snappy_xerial_bad_chunk_lengths() -> None:
    block = snappy.compress(b"data " * 30)
    with pytest.raises(CodecError, match="does not fit"):
        decompress(Codec.SNAPPY, _xerial(block) + struct.pack(">i", -5) + b"xx")
    with pytest.raises(CodecError, match="does not fit"):
        decompress(Codec.SNAPPY, _xerial(block)[:-3])
    with pytest.raises(CodecError, match="runs past"):
        decompress(Codec.SNAPPY, _xerial(block) + b"\x00\x00")
    with pytest.raises(CodecError):
        decompress(Codec.SNAPPY, _xerial(b"\xff\xff\xff\x7f not snappy"))


def test_snappy_short_header_is_a_raw_block() -> None:
    # Shorter than the 16-byte xerial header: decoded as a raw block (which this is not).
    with pytest.raises(CodecError):
        decompress(Codec.SNAPPY, XERIAL_MAGIC + b"\x00")


# --- lz4 -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", 0x02CC5D05),
        (b"a", 0x550D7456),
        (b"abc", 0x32D153FF),
        (b"Nobody inspects the spammish repetition", 0xE2293B2F),
    ],
)
def test_xxhash32_known_values(data: bytes, expected: int) -> None:
    assert xxhash32(data) == expected


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=64))
def test_xxhash32_matches_lz4_frame_header_checksums(data: bytes) -> None:
    # The lz4 C library writes HC = (xxh32(descriptor) >> 8) & 0xff; kdump accepts exactly its frames.
    frame = lz4.frame.compress(data, block_linked=False, store_size=False)
    assert frame[6] == (xxhash32(frame[4:6]) >> 8) & 0xFF
    assert decompress(Codec.LZ4, frame) == data


@pytest.mark.parametrize("store_size", [False, True])
@pytest.mark.parametrize("content_checksum", [False, True])
@pytest.mark.parametrize("block_checksum", [False, True])
@pytest.mark.parametrize("block_size", [lz4.frame.BLOCKSIZE_MAX64KB, lz4.frame.BLOCKSIZE_MAX4MB])
def test_lz4_frame_options(
    store_size: bool, content_checksum: bool, block_checksum: bool, block_size: int
) -> None:
    data = os.urandom(70_000) + b"lz4 " * 40_000  # stored (incompressible) and compressed blocks
    frame = lz4.frame.compress(
        data,
        block_linked=False,
        store_size=store_size,
        content_checksum=content_checksum,
        block_checksum=block_checksum,
        block_size=block_size,
    )
    for magic in (0, 1, 2):
        assert decompress(Codec.LZ4, frame, magic=magic) == data


def test_lz4_v0_broken_header_checksum() -> None:
    """KAFKA-3160: magic-0 messages carry an HC hashed from frame byte 0 (magic included)."""
    data = b"old kafka lz4 " * 100
    frame = compress(Codec.LZ4, data, magic=0)
    expected_broken = (xxhash32(frame[:6]) >> 8) & 0xFF
    correct = (xxhash32(frame[4:6]) >> 8) & 0xFF
    assert frame[6] == expected_broken != correct
    # Kafka skips the HC check for magic 0 and validates it for v1/v2.
    assert decompress(Codec.LZ4, frame, magic=0) == data
    for magic in (1, 2):
        with pytest.raises(CodecError, match="frame descriptor corrupted"):
            decompress(Codec.LZ4, frame, magic=magic)
    # and a correct frame is fine for magic 0 too
    assert decompress(Codec.LZ4, compress(Codec.LZ4, data, magic=1), magic=0) == data


def test_lz4_v0_kafka_python_old_framing(monkeypatch: pytest.MonkeyPatch) -> None:
    """kafka-python's encoder for 0.8/0.9 brokers (broken HC, content size stripped) reads for magic 0."""
    kp_codec = pytest.importorskip("kafka.codec")
    if kp_codec.xxhash is None:
        # kafka-python needs the xxhash package only to compute the HC byte, which magic 0 never checks.
        class _Digest:
            def __init__(self, data: bytes) -> None:
                self._h = xxhash32(bytes(data))

            def digest(self) -> bytes:
                return struct.pack(">I", self._h)

        monkeypatch.setattr(kp_codec, "xxhash", type("xxhash", (), {"xxh32": _Digest}))
    data = b"x" * 5000 + os.urandom(100)
    frame = kp_codec.lz4_encode_old_kafka(data)
    assert frame[4] & 0x08 == 0  # no content size (old Kafka refused it)
    assert decompress(Codec.LZ4, frame, magic=0) == data
    with pytest.raises(CodecError, match="corrupted"):
        decompress(Codec.LZ4, frame, magic=1)


def _frame(flg: int, bd: int, body: bytes, *, hc: int | None = None) -> bytes:
    descriptor = bytes([flg, bd])
    if hc is None:
        hc = (xxhash32(descriptor) >> 8) & 0xFF
    return struct.pack("<I", LZ4_FRAME_MAGIC) + descriptor + bytes([hc]) + body


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (b"\x04\x22\x4d", "shorter than its header"),
        (b"\x00\x00\x00\x00\x60\x40\x00\x00", "magic missing"),
        (_frame(0xA0, 0x40, b"\x00" * 4), "version"),
        (_frame(0x40, 0x40, b"\x00" * 4), "dependent blocks"),
        (_frame(0x61, 0x40, b"\x00" * 4), "reserved bits"),
        (_frame(0x60, 0xC0, b"\x00" * 4), "reserved bits"),
        (_frame(0x60, 0x30, b"\x00" * 4), "block size code 3"),
        (_frame(0x68, 0x40, b"\x00\x00"), "runs past"),  # content size flag, 8 bytes missing
        (_frame(0x60, 0x40, b"\x00" * 4, hc=0x00), "corrupted"),
        (_frame(0x60, 0x40, b""), "without its end mark"),
        (_frame(0x60, 0x40, struct.pack("<I", 10) + b"abc"), "does not fit"),
        (_frame(0x60, 0x40, struct.pack("<I", (64 << 10) + 1) + b"a" * 70_000), "does not fit"),
        (_frame(0x60, 0x40, struct.pack("<I", 3) + b"\xff\xff\xff" + b"\x00" * 4), "does not decompress"),
    ],
)
def test_lz4_malformed_frames(frame: bytes, message: str) -> None:
    with pytest.raises(CodecError, match=message):
        decompress(Codec.LZ4, frame, magic=2)


def test_lz4_stored_block() -> None:
    body = struct.pack("<I", 5 | 0x80000000) + b"hello" + struct.pack("<I", 0)
    assert decompress(Codec.LZ4, _frame(0x60, 0x40, body)) == b"hello"


# --- zstd ----------------------------------------------------------------------------------------------


def test_zstd_without_content_size() -> None:
    data = b"zstd streaming frame " * 5000
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(data)
    assert zstandard.get_frame_parameters(frame).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert decompress(Codec.ZSTD, frame) == data
    # A streamed frame (what zstd-jni's output stream writes) has no content size either.
    cctx = zstandard.ZstdCompressor()
    chunker = cctx.chunker(chunk_size=4096)
    streamed = b"".join([*chunker.compress(data), *chunker.finish()])
    assert decompress(Codec.ZSTD, streamed) == data


def test_zstd_concatenated_frames() -> None:
    a, b = b"frame a " * 100, b"frame b " * 100
    cctx = zstandard.ZstdCompressor()
    assert decompress(Codec.ZSTD, cctx.compress(a) + cctx.compress(b)) == a + b


def test_zstd_only_in_v2() -> None:
    frame = compress(Codec.ZSTD, b"data")
    with pytest.raises(CodecError, match="not allowed"):
        decompress(Codec.ZSTD, frame, magic=1)
    with pytest.raises(CodecError, match="not allowed"):
        decompress(Codec.ZSTD, frame, magic=0)


@pytest.mark.parametrize("content_size", [True, False])
def test_zstd_truncated(content_size: bool) -> None:
    # zstd-jni fails on a truncated source ("Read error or truncated source"); so does kdump.
    frame = zstandard.ZstdCompressor(write_content_size=content_size).compress(os.urandom(5000))
    for cut in (1, 10, len(frame) // 2):
        with pytest.raises(CodecError):
            decompress(Codec.ZSTD, frame[:-cut])
    second = zstandard.ZstdCompressor().compress(b"second frame")
    with pytest.raises(CodecError):
        decompress(Codec.ZSTD, frame + second[:-3])


def test_zstd_trailing_garbage() -> None:
    frame = compress(Codec.ZSTD, b"data " * 100)
    with pytest.raises(CodecError):
        decompress(Codec.ZSTD, frame + b"not a frame")


# --- decompression bombs --------------------------------------------------------------------------------

BOMB = b"\x00" * (8 << 20)  # 8 MiB of zeros compresses to a few KiB with every codec


@pytest.mark.parametrize("codec", ALL[1:], ids=lambda c: Codec(c).label)
def test_max_size_bounds_output(codec: int) -> None:
    payload = compress(codec, BOMB)
    assert len(payload) < len(BOMB) // 20
    with pytest.raises(CodecError, match="beyond"):
        decompress(codec, payload, max_size=1 << 20)
    assert decompress(codec, payload, max_size=len(BOMB)) == BOMB


def test_max_size_exact_boundary() -> None:
    data = b"q" * 1000
    for codec in ALL[1:]:
        assert decompress(codec, compress(codec, data), max_size=1000) == data
        with pytest.raises(CodecError):
            decompress(codec, compress(codec, data), max_size=999)


def test_snappy_block_length_claim_is_checked_before_allocating() -> None:
    # A raw block whose varint header claims 2 GiB: refused from the header alone.
    claim = b"\x80\x80\x80\x80\x08" + b"\x00" * 10
    with pytest.raises(CodecError, match="beyond"):
        decompress(Codec.SNAPPY, claim)
    with pytest.raises(CodecError, match="beyond"):
        decompress(Codec.SNAPPY, _xerial(claim))


def test_zstd_frame_claiming_a_huge_content_size() -> None:
    frame = bytearray(zstandard.ZstdCompressor(write_content_size=True).compress(b"\x00" * (4 << 20)))
    with pytest.raises(CodecError, match="beyond"):
        decompress(Codec.ZSTD, bytes(frame), max_size=1 << 16)


def test_default_bound_is_generous() -> None:
    assert DEFAULT_MAX_DECOMPRESSED_SIZE >= 1 << 30


def test_gzip_bomb_many_members() -> None:
    member = gzip.compress(b"\x00" * (1 << 20), mtime=0)
    with pytest.raises(CodecError, match="beyond"):
        decompress(Codec.GZIP, member * 8, max_size=(4 << 20) + 10)


def test_lz4_bomb_many_blocks() -> None:
    block = lz4.block.compress(b"\x00" * (64 << 10), store_size=False)
    body = (struct.pack("<I", len(block)) + block) * 64 + struct.pack("<I", 0)
    frame = _frame(0x60, 0x40, body)
    assert len(decompress(Codec.LZ4, frame)) == 64 << 16
    with pytest.raises(CodecError, match="beyond"):
        decompress(Codec.LZ4, frame, max_size=1 << 20)


# --- libraries that cannot be loaded ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("codec", "module"),
    [(Codec.SNAPPY, "snappy"), (Codec.LZ4, "lz4.block"), (Codec.ZSTD, "zstandard")],
    ids=["snappy", "lz4", "zstd"],
)
def test_codec_unavailable(monkeypatch: pytest.MonkeyPatch, codec: int, module: str) -> None:
    payload = compress(codec, b"data " * 10)
    monkeypatch.setattr(codecs, "_modules", {})
    real_import = builtins.__import__

    def fake_import(name: str, *args: object, **kwargs: object) -> object:
        if name == module or name.startswith(module + "."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(CodecUnavailableError, match=module):
        decompress(codec, payload)
    assert issubclass(CodecUnavailableError, CodecError)
    # gzip needs only the standard library
    assert decompress(Codec.GZIP, compress(Codec.GZIP, b"ok")) == b"ok"
