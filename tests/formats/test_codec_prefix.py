"""`decompress_prefix`: as much of a damaged payload as its codec frame gives, never an exception."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kdump.formats.codec_prefix import _snappy_block_prefix, decompress_prefix
from kdump.formats.codecs import compress, decompress
from kdump.formats.constants import Codec

CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]


def _text(seed: int, n: int) -> bytes:
    rng = random.Random(seed)
    words = [b"alpha", b"bravo", b"charlie", b"delta", b"echo", b"foxtrot"]
    return b" ".join(rng.choice(words) for _ in range(n)) + rng.randbytes(50)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_a_whole_payload_decodes_whole(codec: Codec) -> None:
    data = _text(1, 30000)
    assert decompress_prefix(codec, compress(codec, data)) == (data, None)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 1000), n=st.integers(0, 40000), cut=st.floats(0, 1))
def test_a_cut_payload_gives_a_prefix_of_the_data(codec: Codec, seed: int, n: int, cut: float) -> None:
    data = _text(seed, n)
    packed = compress(codec, data)
    out, error = decompress_prefix(codec, packed[: int(len(packed) * cut)])
    assert data.startswith(out)
    if error is None:
        assert out == decompress(codec, packed[: int(len(packed) * cut)])


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 1000), where=st.floats(0, 1), mask=st.integers(1, 255))
def test_damage_never_raises(codec: Codec, seed: int, where: float, mask: int) -> None:
    packed = bytearray(compress(codec, _text(seed, 5000)))
    packed[min(int(len(packed) * where), len(packed) - 1)] ^= mask
    out, _error = decompress_prefix(codec, bytes(packed))
    assert isinstance(out, bytes)


def test_a_raw_snappy_block_decodes_up_to_the_damage() -> None:
    snappy = pytest.importorskip("snappy")
    data = _text(3, 8000)
    block = snappy.compress(data)
    assert _snappy_block_prefix(block, 1 << 30)[0] == data
    out, error = _snappy_block_prefix(block[: len(block) // 2], 1 << 30)
    assert data.startswith(out)
    assert len(out) > len(data) // 4
    assert error
