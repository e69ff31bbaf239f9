"""`formats.arrow_columns`: the compiled helpers that build the record columns without
pyarrow.compute (`scale_i64`, `take_fixed`, `nonempty_validity`) give what pyarrow.compute gives,
and `record_arrays` builds the same arrays with them as with pyarrow.compute."""

from __future__ import annotations

from array import array
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

pa = pytest.importorskip("pyarrow")
pc = pytest.importorskip("pyarrow.compute")

from builders import BASE_TS, SegmentBuilder, records  # noqa: E402

from kdump.formats import arrow_columns, fast_records  # noqa: E402
from kdump.formats.records import NewRecord  # noqa: E402
from kdump.scan.log_scanner import scan_log  # noqa: E402

pytestmark = pytest.mark.skipif(fast_records.compiled is None, reason="the compiled record path is not built")

INT64 = st.integers(-(2**63), 2**63 - 1)


@given(
    st.lists(st.one_of(INT64, st.integers(-(10**13), 10**13)), max_size=40), st.sampled_from([1000, -1, 3])
)
def test_scale_is_arrows_checked_multiply(values: list[int], factor: int) -> None:
    assert fast_records.compiled is not None
    got = fast_records.compiled.scale_i64(array("q", values).tobytes(), factor)
    try:
        want = pc.multiply_checked(pa.array(values, pa.int64()), factor).to_pylist()
    except pa.ArrowInvalid:
        assert got is None
        return
    assert got is not None
    assert array("q", got).tolist() == want


@given(st.data(), st.sampled_from([("i", 4, pa.int32()), ("q", 8, pa.int64())]))
def test_take_is_arrows_take(data: st.DataObject, kind: tuple[str, int, object]) -> None:
    code, width, arrow_type = kind
    values = data.draw(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=1, max_size=20))
    index = data.draw(st.lists(st.integers(0, len(values) - 1), max_size=60))
    raw = array("i", index).tobytes()
    got = arrow_columns.take_per_batch(array(code, values).tobytes(), width, raw, arrow_type)
    assert got.equals(pc.take(pa.array(values, arrow_type), pa.array(index, pa.int32())))


def test_take_refuses_an_index_out_of_range() -> None:
    assert fast_records.compiled is not None
    with pytest.raises(IndexError):
        fast_records.compiled.take_fixed(array("q", [1, 2]).tobytes(), 8, array("i", [0, 2]).tobytes())


@given(st.lists(st.integers(0, 3), max_size=70))
def test_validity_marks_the_nonempty_runs(sizes: list[int]) -> None:
    assert fast_records.compiled is not None
    cuts = [0]
    for n in sizes:
        cuts.append(cuts[-1] + n)
    bitmap, nulls = fast_records.compiled.nonempty_validity(array("i", cuts).tobytes(), len(sizes))
    assert len(bitmap) == (len(sizes) + 7) // 8
    assert [bool(bitmap[i >> 3] >> (i & 7) & 1) for i in range(len(sizes))] == [n > 0 for n in sizes]
    assert nulls == sizes.count(0)


def _columns(tmp_path: Path, start_ts: int) -> fast_records.RecordColumns:
    seg = SegmentBuilder()
    seg.add_v2(records(5, start_ts=start_ts))
    seg.add_v2(
        [
            NewRecord(b"k", b"v", start_ts, ((b"a", b"1"), (b"b", None))),
            NewRecord(None, b"", start_ts + 1, ()),
            NewRecord(b"k2", None, start_ts + 2, ((b"c", b""),)),
        ]
    )
    seg.add_v2(records(3, key=False, start_ts=start_ts + 3))
    buf = seg.write(tmp_path / "t-0").read_bytes()
    items = []
    for h in scan_log(buf, resync=False):
        data = arrow_columns.payload_of(buf, h) if hasattr(h, "crc_ok") else None
        if data is not None:
            items.append((data, h))
    out = fast_records.columns_v2_many(items)
    assert out is not None
    assert out[0] == len(items) == 3
    return out[1]


@pytest.mark.parametrize("start_ts", [BASE_TS, -5, 2**62], ids=["now", "negative", "overflows-in-us"])
def test_record_arrays_are_the_same_with_or_without_compute(
    tmp_path: Path, start_ts: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    cols = _columns(tmp_path, start_ts)
    built = arrow_columns.record_arrays(cols)
    monkeypatch.setattr(arrow_columns, "_helpers", lambda: None)
    reference = arrow_columns.record_arrays(cols)
    if start_ts == 2**62:
        assert built is None
        assert reference is None
        return
    assert built is not None
    assert reference is not None
    assert built.keys() == reference.keys()
    for name, arr in built.items():
        arr.validate(full=True)
        assert arr.equals(reference[name]), name
    assert built["headers"].null_count == 1  # the one record without headers (`records` gives each one)
