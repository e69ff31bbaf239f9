"""verify on the compiled paths against the pure-Python reference: the same result for every segment.

`check_segment` reads runs of clean batches from the compiled walk, and asks the compiled index check
(`_fastwalk.index_agrees`) before running the index checks in Python; that check may only ever say
"nothing to report" where the Python checks report nothing. Compared here, shallow and deep, with the
reference (walk and compiled record path off): every corpus segment, and hypothesis damage to the
`.index` and `.timeindex` files (bit flips, set slots, cuts, zero and garbage tails, swapped and
repeated slots) and to the log beside them.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from builders import SegmentBuilder, records
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference_path import reference_path

from kdump.formats import fast_records, fast_walk
from kdump.formats.batch import decode_v2_header, encode_v2_batch
from kdump.formats.codecs import compress
from kdump.formats.constants import V2_HEADER_SIZE, Codec
from kdump.formats.records import build_v2_batch
from kdump.model.partition import PartitionDir
from kdump.ops.checks.segment import check_segment

pytestmark = pytest.mark.skipif(
    fast_walk.compiled is None, reason="the compiled batch walk is not built here"
)


def _result(seg: object, **kw: bool) -> str:
    r = check_segment(seg, keep_spans=True, **kw)  # type: ignore[arg-type]
    return repr((r.summary, r.findings, r.epochs, r.txn_events, r.txn_index, r.spans))


def _both(seg: object, deep: bool) -> tuple[str, str]:
    got = _result(seg, deep=deep)
    with reference_path():
        ref = _result(seg, deep=deep)
    return got, ref


def _segments(part: Path) -> list[object]:
    return [s for s in PartitionDir.load(part).segments if s.log is not None]


def test_every_corpus_segment(corpus_root: Path) -> None:
    seen = 0
    for part in sorted(p for d in corpus_root.iterdir() if d.is_dir() for p in d.iterdir() if p.is_dir()):
        if part.name in ("expected", "_logdir-files"):
            continue
        for seg in _segments(part):
            for deep in (False, True):
                got, ref = _both(seg, deep)
                assert got == ref, seg
            seen += 1
    assert seen > 0


def _partition(tmp: Path, seed: int) -> Path:
    rng = random.Random(seed)
    seg = SegmentBuilder(base_offset=rng.choice([0, 50]))
    for i in range(rng.randint(3, 40)):
        if rng.random() < 0.1:
            seg.next_offset += rng.randint(1, 3)
        if rng.random() < 0.08:
            seg.add_marker(9, commit=rng.random() < 0.5, leader_epoch=i // 5)
        else:
            seg.add_v2(
                records(rng.randint(1, 5), value_size=rng.randint(50, 900)),
                codec=rng.choice(list(Codec)),
                leader_epoch=i // 5,
                transactional=rng.random() < 0.2,
                producer_id=9,
                producer_epoch=0,
            )
    part = tmp / f"t-{seed}"
    seg.write(part, interval_bytes=rng.choice([1, 300, 4096]))
    return part


INDEX_DAMAGE = st.lists(
    st.tuples(
        st.sampled_from(["index", "timeindex", "log"]),
        st.sampled_from(["flip", "set", "cut", "zeros", "garbage", "swap", "repeat"]),
        st.floats(0, 1),
        st.integers(0, 2**32 - 1),
    ),
    min_size=1,
    max_size=3,
)


def _damage(path: Path, kind: str, where: float, value: int) -> None:
    data = bytearray(path.read_bytes())
    slot = 8 if path.suffix == ".index" else 12
    at = min(max(len(data) - 1, 0), int(where * len(data)))
    if kind == "flip" and data:
        data[at] ^= 1 << (value % 8)
    elif kind == "set" and data:
        data[at : at + 4] = value.to_bytes(4, "big")
    elif kind == "cut":
        del data[at:]
    elif kind == "zeros":
        data += bytes(slot * (value % 5) + (value % 3 == 0))
    elif kind == "garbage":
        data += random.Random(value).randbytes(value % 40)
    elif kind in ("swap", "repeat") and len(data) >= 2 * slot:
        i = (at // slot) * slot
        j = min(i + slot, len(data) - slot)
        j -= j % slot
        if kind == "swap":
            data[i : i + slot], data[j : j + slot] = data[j : j + slot], data[i : i + slot]
        else:
            data[j : j + slot] = data[i : i + slot]
    path.write_bytes(bytes(data))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), damage=INDEX_DAMAGE, deep=st.booleans())
def test_damaged_indexes_give_the_same_findings(
    tmp_path_factory: pytest.TempPathFactory, seed: int, damage: list, deep: bool
) -> None:
    part = _partition(tmp_path_factory.mktemp("fv"), seed)
    for target, kind, where, value in damage:
        path = next(part.glob(f"*.{target}"))
        _damage(path, kind, where, value)
    for seg in _segments(part):
        got, ref = _both(seg, deep)
        assert got == ref


def _spy(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[bool]:
    """Replace a compiled function by one that records each of its answers, and return them."""
    answers: list[bool] = []
    real = getattr(module, name)

    def spy(*args: object) -> bool:
        answers.append(real(*args))
        return answers[-1]

    monkeypatch.setattr(module, name, spy, raising=False)
    return answers


def test_the_compiled_index_check_answers_yes_for_sound_indexes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Guard against a fast path that never says yes (the comparisons above would then prove nothing)."""
    assert fast_walk.compiled is not None
    answers = _spy(monkeypatch, fast_walk.compiled, "index_agrees")
    for interval in (1, 300, 4096):
        seg = SegmentBuilder(base_offset=0)
        for i in range(30):
            seg.add_v2(records(3, value_size=200), codec=list(Codec)[i % 5], leader_epoch=i // 7)
        part = tmp_path / f"clean-{interval}"
        seg.write(part, interval_bytes=interval)
        for s in _segments(part):
            assert check_segment(s).findings == ()  # type: ignore[arg-type]
    assert len(answers) == 6
    assert all(answers)


def _lz4_batch_with_a_cut_record(seg: SegmentBuilder, n: int) -> None:
    """An lz4 batch whose checksum holds but whose last record runs past the decompressed payload."""
    plain = build_v2_batch(seg.next_offset, records(n, value_size=300), codec=Codec.NONE)
    payload = compress(Codec.LZ4, plain[V2_HEADER_SIZE:-3])
    h = decode_v2_header(plain, 0, len(plain))
    batch = encode_v2_batch(
        base_offset=h.base_offset,
        records_payload=payload,
        count=n,
        last_offset_delta=n - 1,
        base_timestamp=h.base_timestamp,
        max_timestamp=h.max_timestamp,
        attributes=Codec.LZ4,
    )
    seg._append(batch, n, h.max_timestamp)


def test_lz4_batches_big_and_small_share_a_buffer_and_give_the_same_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Deep checks decompress lz4 into one buffer per thread, kept from batch to batch: a small batch
    # after a big one (2 MiB, past the buffer's first size) and a damaged one after both must each be
    # checked on their own bytes only, on the pool's threads (runs over 1 MiB) as on the reference.
    assert fast_records.compiled is not None
    answers = _spy(monkeypatch, fast_records.compiled, "check_v2")
    seg = SegmentBuilder(base_offset=0)
    seg.add_v2(records(1), codec=Codec.LZ4)  # at the file name's offset: the walk's too
    for n in (6000, 2, 3000, 1):
        seg.add_v2(records(n, value_size=300), codec=Codec.LZ4)
        _lz4_batch_with_a_cut_record(seg, max(1, n // 2))
    seg.write(tmp_path / "lz4-0")
    (s,) = _segments(tmp_path / "lz4-0")
    got, ref = _both(s, deep=True)
    assert got == ref
    assert answers.count(True) == 5
    assert answers.count(False) == 4
    # The reference's finding about each cut batch, once each.
    findings = check_segment(s, deep=True).findings  # type: ignore[arg-type]
    assert len({f.position for f in findings}) == 4, findings
