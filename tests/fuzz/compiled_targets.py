"""Fuzz targets of the compiled paths (kdump/formats/_fastrecords.c, _fastwalk.c, _avrojson.c), each
holding the compiled answer to the reference's (the pure-Python path, or fastavro + orjson):

* `compiled_records`: every checksum-valid v2 data batch of a log fragment through `decode_v2`,
  `check_v2`, `render_v2` (JSON Lines and text, in each encoding) and `columns_v2_many`: the records,
  findings and lines are the reference's byte for byte, or the compiled path declined (`None`).
* `compiled_kafka_lines`: every checksum-valid v2 batch of a log fragment through `render_kafka_v2`
  (`render.kafka_tool_fast`) in every flag set of Kafka's tool, from a previous offset the input
  picks: the lines, last offset and non-consecutive pairs are `kafka_tool.record_line`'s on the
  reference's records, or declined.
* `compiled_batch_lines`: the batch lines of Kafka's tool for a run of batches (`kafka_batch_lines`):
  `text.batch_line` of the run's headers on the walk's columns and on columns the input garbles, and
  whole files through `kafka_tool.log_lines` (`--files`, a `--max-bytes` the input picks) as the
  reference prints them.
* `compiled_walk`: `scan_log` with and without the compiled walk (`walk_v2`, `headers`) gives the same
  events in every mode; `walk_v2` handing back a mapping's pages (`release_from`) gives what it gives
  on the bytes.
* `compiled_deep_run`: verify --deep's check of a run of batches (`zstd_frames`, `check_v2_run`)
  gives the reference's events; both calls stay in bounds on columns the input garbles.
* `compiled_indexes`: `build_indexes` equals `build_segment_indexes` + the encoders (or declines where
  those refuse), also for crafted base offsets near -2**63 and 2**63; `index_agrees` says True only
  when the index checks in Python have nothing to say, for a fuzzed index of either kind; an unknown
  kind is a ValueError.
* `compiled_avro_json`: an Avro value of one of a few schemas (the first byte picks it) to JSON: the
  compiled text is the reference's, or declined.

Registered in `fuzz_targets.TARGETS` (so test_fuzz_short.py, run_long.py and the sanitizer step,
.ci/sanitizers, drive them). Without the compiled modules they only run the reference (and pass).
"""

from __future__ import annotations

import array
import functools
import io
import json
import mmap
import struct
import tempfile
from pathlib import Path
from typing import Any

from avro_schemas import ALL_TYPES  # type: ignore[import-not-found]
from fuzz_targets import (  # type: ignore[import-not-found]
    FuzzTarget,
    _entries,
    _fix_crcs,
    _log_seeds,
    _trim,
    join_fields,
    split_fields,
)
from reference_path import reference_path  # type: ignore[import-not-found]

from kdump.errors import CodecError, DecodeError
from kdump.findings import Finding
from kdump.formats import fast_records, fast_walk
from kdump.formats.batch import BatchHeader
from kdump.formats.codecs import decompress
from kdump.formats.offset_index import decode_offset_index, encode_offset_index
from kdump.formats.records import Record
from kdump.formats.time_index import decode_time_index, encode_time_index
from kdump.ops.dump.files import FileStart
from kdump.render import fast_lines
from kdump.render.jsonl import write_jsonl
from kdump.render.kafka_tool import INT_MAX, ToolAbort, ToolOptions, ToolReport, log_lines, record_line
from kdump.render.kafka_tool_fast import KafkaRecordLines
from kdump.render.text import batch_line, write_text
from kdump.scan.events import ScanMode
from kdump.scan.index_checks import BatchSpan, BatchTable, check_offset_index, check_time_index
from kdump.scan.log_scanner import decode_batch_records, scan_log

FILE = "logs/orders-0/00000000000000000000.log"
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _reference(fn: Any) -> Any:
    """`fn()` with both compiled modules switched off (the reference path)."""
    with reference_path():
        return fn()


def _rendered(events: list[object], fmt: str, encoding: str) -> bytes:
    out = io.StringIO()
    writer = write_jsonl if fmt == "json" else write_text
    writer([FileStart(FILE, "log", 0, None), *events], out, encoding=encoding)
    return out.getvalue().split("\n", 1)[1].encode("utf-8")


def _payload(data: bytes, h: BatchHeader) -> bytes | None:
    body = data[h.position + 61 : h.position + h.size]
    if not h.compression:
        return body
    try:
        return decompress(h.compression, body, magic=2, max_size=1 << 20)
    except (CodecError, DecodeError):
        return None


def fuzz_compiled_records(data: bytes) -> None:
    """decode_v2, check_v2, render_v2 and columns_v2_many against the reference, batch by batch."""
    data = _fix_crcs(data)
    taken: list[tuple[bytes, BatchHeader, list[Any]]] = []
    for h in _entries(data):
        if not fast_records.eligible(h):
            continue
        ref = _reference(lambda h=h: decode_batch_records(data, h, FILE))
        fast = decode_batch_records(data, h, FILE)
        assert fast == ref, h
        records, findings = ref
        payload = _payload(data, h)
        compiled = fast_records.compiled
        if compiled is None or payload is None:
            continue
        decoded = fast_records.decode_v2(payload, h)
        check = compiled.check_v2(
            payload,
            h.base_offset,
            h.last_offset,
            h.base_timestamp,
            h.max_timestamp,
            h.timestamp_type == 1,
            h.count,
            h.timestamp_type == 0,
        )
        assert check == (decoded is not None and decoded[1]), h
        if decoded is not None and decoded[1]:
            assert decoded[0] == records, h
        for fmt in ("json", "text"):
            for encoding in ("utf8", "hex", "base64"):
                lines = fast_lines.render_batch(data, h, json.dumps(FILE), fmt, encoding)
                if lines is not None:
                    assert lines == _rendered([h, *findings, *records], fmt, encoding), (fmt, encoding)
        if not any(isinstance(f, Finding) for f in findings):
            taken.append((payload, h, records))
    if fast_records.compiled is None or not taken:
        return
    got = fast_records.columns_v2_many([(p, h) for p, h, _ in taken])
    if got is None:
        return
    done, cols = got
    expected = [r for _, _, records in taken[:done] for r in records]
    assert cols.rows == len(expected)
    assert array.array("q", cols.offsets).tolist() == [r.offset for r in expected]
    assert array.array("q", cols.timestamps).tolist() == [r.timestamp for r in expected]


def fuzz_compiled_kafka_lines(data: bytes) -> None:
    """render_kafka_v2 against kafka_tool.record_line, batch by batch, in every flag set."""
    data = _fix_crcs(data)
    previous = (-1, 0, 2**63 - 1)[data[0] % 3] if data else -1
    for h in _entries(data):
        if not fast_records.eligible(h):
            continue
        records, findings = _reference(lambda h=h: decode_batch_records(data, h, FILE))
        for flags in range(8):
            print_data, skip, java = bool(flags & 1), bool(flags & 2), bool(flags & 4)
            lines = KafkaRecordLines(print_data=print_data, skip_metadata=skip, java=java)
            got = lines.render(data, h, previous)
            if got is None:
                continue
            assert not findings, (h, findings)
            opts = ToolOptions(
                deep=True, print_data=print_data, skip_metadata=skip, release="4.4.0" if java else "3.8.1"
            )
            prev, gaps, text = previous, [], []
            for r in records:
                if (java or prev != -1) and r.offset != prev + 1:
                    gaps.append((prev, r.offset))
                prev = r.offset
                text.append(record_line(r, h, opts) + "\n")
            assert got == ("".join(text).encode("utf-8", "surrogatepass"), prev, gaps), (h, flags)


def _reference_batch_lines(columns: bytes, n: int, position: int, limit: int) -> tuple[bytes, int, int]:
    assert fast_walk.compiled is not None
    out, at = [], position
    for h in fast_walk.compiled.headers(columns, n, BatchHeader):
        if h.position != at or h.size < 61 or h.position + h.size > limit:
            break
        out.append(batch_line(h) + "\n")
        at += h.size
    return "".join(out).encode(), len(out), at


def fuzz_compiled_batch_lines(data: bytes) -> None:
    """kafka_batch_lines against text.batch_line on a run's columns (as walked, then garbled by the
    input's last bytes), and log_lines of the input as a file against the reference."""
    fixed = _fix_crcs(data)
    max_bytes = INT_MAX if not data or data[0] & 1 else len(fixed) * data[0] // 256
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "00000000000000000000.log"
        path.write_bytes(fixed)
        for release in ("3.8.1", "4.4.0"):
            opts = ToolOptions(max_bytes=max_bytes, release=release)

            def printed(opts: ToolOptions = opts) -> tuple[bytes, list[str], str]:
                out, said = bytearray(), []
                try:
                    for line in log_lines(path, str(path), opts, ToolReport(say=said.append)):
                        out += (
                            line
                            if isinstance(line, bytes)
                            else (line + "\n").encode("utf-8", "surrogatepass")
                        )
                except ToolAbort as exc:
                    return bytes(out), said, f"{exc.java_class}: {exc.message} [{exc.partial}]"
                return bytes(out), said, ""

            assert printed() == _reference(printed), release
    first = int.from_bytes(fixed[:8], "big", signed=True) - 1 if len(fixed) >= 8 else -1
    walked = fast_walk.walk(fixed, 0, len(fixed), len(fixed), len(fixed), max(first, -1), -1, None)
    if fast_walk.compiled is None or walked is None:
        return
    run = walked[0]
    n, limit = run.n, run.start + (run.end - run.start) * (data[-1] + 1) // 256
    lines = fast_walk.compiled.kafka_batch_lines
    assert lines(run.columns, n, 0, n, run.start, limit) == _reference_batch_lines(
        run.columns, n, run.start, limit
    )
    cols = bytearray(run.columns)
    for i, b in enumerate(data[-16:]):
        cols[((i % fast_walk.N_COLUMNS) * n + (b >> 3) % n) * 8 + (b & 7)] ^= b | 1
    garbled = bytes(cols)
    assert lines(garbled, n, 0, n, run.start, limit) == _reference_batch_lines(garbled, n, run.start, limit)


def fuzz_compiled_walk(data: bytes) -> None:
    """scan_log with the compiled walk gives the reference's events, in every mode; and `walk_v2`
    with a helper thread walking half of each window (every window helped: threshold 0; 2 to 4 threads,
    the input's first byte picks) gives what it gives on one thread, from every entry it frames."""
    for fixed in (data, _fix_crcs(data)):
        for deep in (False, True):
            for mode in (ScanMode.FORENSIC, ScanMode.RECOVERY):
                base = 0 if deep else None

                def run(
                    fixed: bytes = fixed, deep: bool = deep, mode: ScanMode = mode, base: int | None = base
                ) -> list[object]:
                    return list(scan_log(fixed, deep=deep, mode=mode, base_offset=base))

                assert run() == _reference(run), (deep, mode)
    walk = fast_walk.compiled
    if walk is None or not data:
        return
    threads = 2 + data[0] % 3
    fixed = _fix_crcs(data)
    for buf in (data, fixed):
        size = len(buf)
        # From each entry (the first eight), as the scanner would call it after the batch before.
        starts = [(h.position, h.base_offset - 1) for h in _entries(buf) if h.base_offset is not None]
        for pos, prev_last in [(0, -1), *starts[:8]]:
            if not INT64_MIN <= prev_last < INT64_MAX:
                continue
            for limit, soft_stop, most in (
                (size, size, 8192),
                (size * 2 // 3, size, 8192),
                (size, size // 2, 3),
            ):
                args = (buf, pos, size, limit, soft_stop, prev_last, -1, None, most)
                assert walk.walk_v2(*args, threads, 0) == walk.walk_v2(*args), (pos, limit, soft_stop)
    _walk_releasing(walk, fixed, threads, data[0] % 7)


def _walk_releasing(walk: Any, data: bytes, threads: int, skew: int) -> None:
    """`walk_v2` on a read-only mapping of the input (at an odd start when `skew`), handing back the
    pages before each entry it starts from (`release_from`, from the first byte, the middle, the
    entry), and (unskewed) reading the file through its descriptor: the result is the one of the
    bytes, and the mapping still reads as the input."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "segment.log"
        path.write_bytes(b"\xff" * skew + data)
        with (
            open(path, "rb") as f,
            mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm,
            memoryview(mm) as whole,
            whole[skew:] as view,
        ):
            size = len(view)
            starts = [(h.position, h.base_offset - 1) for h in _entries(data) if h.base_offset is not None]
            for pos, prev_last in [(0, -1), *starts[:8]]:
                if not INT64_MIN <= prev_last < INT64_MAX:
                    continue
                args = (pos, size, size, size, prev_last, -1, None, 8192, threads, 0)
                expected = walk.walk_v2(data, *args)
                for release_from in (0, pos // 2, pos):
                    assert walk.walk_v2(view, *args, release_from) == expected, (pos, release_from)
                if not skew:
                    # Read through the descriptor (`fd`), in CHUNK-sized reads, split with a helper.
                    assert walk.walk_v2(view, *args, -1, f.fileno()) == expected, pos
            assert bytes(view) == data


def fuzz_compiled_deep_run(data: bytes) -> None:
    """verify --deep's run check (`scan_log(batch_runs=True, deep=True)`: `zstd_frames`, the zstd
    loop, `check_v2_run`) gives the reference's events less its records; and the two
    compiled calls, on the input's first run with positions, sizes, counts and attributes garbled by
    the input's last bytes, read nothing outside their buffers (the sanitizer build aborts if so)."""
    fixed = _fix_crcs(data)

    def reference() -> list[str]:
        return [repr(e) for e in scan_log(fixed, deep=True, base_offset=0) if not isinstance(e, Record)]

    expected = _reference(reference)
    got: list[str] = []
    for e in scan_log(fixed, deep=True, base_offset=0, batch_runs=True):
        got += [repr(h) for h in e.headers()] if isinstance(e, fast_walk.BatchRun) else [repr(e)]
    assert got == expected
    compiled = fast_records.compiled
    walked = fast_walk.walk(fixed, 0, len(fixed), len(fixed), len(fixed), -1, -1, 0)
    if compiled is None or walked is None:
        return
    n = walked[0].n
    cols = bytearray(walked[0].columns)
    garbled = (fast_walk.POSITION, fast_walk.SIZE, fast_walk.COUNT, fast_walk.ATTRIBUTES)
    for i, b in enumerate(data[-16:]):
        cols[(garbled[i % 4] * n + (b >> 3) % n) * 8 + (b & 7)] ^= b | 1
    index, _segments = compiled.zstd_frames(fixed, cols, n, 0, n, 1 << 20)
    compiled.check_v2_run(fixed, cols, n, 0, n, index, [fixed[:k] for k in range(len(index) // 8)])


def _spans(data: bytes) -> list[BatchHeader]:
    return [h for h in _entries(_fix_crcs(data)) if h.magic == 2 and h.crc_ok]


def _reference_indexes(hs: list[BatchHeader], interval: int, base: int) -> tuple[bytes, bytes] | None:
    from kdump.ops.repair.reindex import build_segment_indexes

    spans = [(h.position, 0, h.last_offset, h.max_timestamp) for h in hs]
    offsets, times = build_segment_indexes(spans, interval)
    try:
        return encode_offset_index(offsets, base), encode_time_index(times, base)
    except (ValueError, DecodeError, OverflowError, struct.error):
        return None


def fuzz_compiled_indexes(data: bytes) -> None:
    """build_indexes equals the reference's rebuild; index_agrees never says True where the index
    checks report something; an unknown kind is refused."""
    log, index = (f or b"" for f in split_fields(data, 2))
    hs = _spans(log)
    walk = fast_walk.compiled
    cols = [array.array("q", [getattr(h, k) for h in hs]) for k in ("position", "base_offset", "last_offset")]
    cols.append(array.array("q", [h.max_timestamp for h in hs]))
    positions, bases, lasts, maxts = cols
    first = hs[0].base_offset if hs else 0
    for interval in (0, 4096, len(index) * 7):
        for base in (first, 0, INT64_MIN, INT64_MIN + 1, INT64_MAX, first - 2**31, -1):
            if not INT64_MIN <= base <= INT64_MAX:
                continue  # not a base offset a segment's name can hold (nor a C int64 argument)
            ref = _reference_indexes(hs, interval, base)
            if walk is None:
                continue
            built = walk.build_indexes(positions, lasts, maxts, interval, base)
            assert built is None or built == ref, (interval, base)
            if built is None and base >= 0 and ref is not None:
                # Declines only where an entry does not fit (the encoders then refuse too).
                raise AssertionError(f"build_indexes declined what encodes: {interval} {base}")
    if walk is None:
        return
    table = BatchTable([BatchSpan(h.position, h.base_offset, h.last_offset, h.max_timestamp) for h in hs])
    valid = hs[-1].position + hs[-1].size if hs else 0
    for base in (first, 0, INT64_MIN, INT64_MAX - 5):
        for kind in (0, 1):
            agrees = walk.index_agrees(kind, index, base, positions, bases, lasts, maxts, valid)
            if agrees and base >= 0:
                if kind == 0:
                    found = list(
                        check_offset_index(decode_offset_index(index, base), table, valid, "x.index")
                    )
                else:
                    found = list(check_time_index(decode_time_index(index, base), table, "x.timeindex"))
                assert not found, (kind, base, found)
        for kind in (2, -1):
            try:
                walk.index_agrees(kind, index, base, positions, bases, lasts, maxts, valid)
            except ValueError:
                pass
            else:
                raise AssertionError(f"index_agrees took kind {kind}")
    # Columns that are not 8-aligned (a memoryview slice) read the same as aligned ones.
    if hs:
        shifted = [memoryview(b"\0" + c.tobytes())[1:] for c in cols]
        assert walk.index_agrees(0, index, first, *shifted, valid) == walk.index_agrees(
            0, index, first, positions, bases, lasts, maxts, valid
        )
        assert walk.build_indexes(shifted[0], shifted[2], shifted[3], 4096, first) == walk.build_indexes(
            positions, lasts, maxts, 4096, first
        )


def _index_seeds(root: Path | None) -> list[bytes]:
    out = []
    for log in _log_seeds(root)[:30]:
        hs = _spans(log)
        if not hs:
            continue
        built = _reference_indexes(hs, 0, hs[0].base_offset)
        if built is not None:
            out.append(join_fields(log, built[0]))
            out.append(join_fields(log, built[1]))
    return _trim(out, 40)


# --- Avro to JSON -------------------------------------------------------------------------------------

AVRO_SCHEMAS: tuple[Any, ...] = (
    ALL_TYPES,
    {"type": "array", "items": {"type": "map", "values": ["null", "string", "boolean"]}},
    "string",
    ["null", "long", "double", {"type": "array", "items": "int"}],
    {"type": "record", "name": "Empty", "fields": []},
)
_AVRO_VALUES: tuple[Any, ...] = (
    {
        "n": None,
        "b": True,
        "i": -7,
        "l": 2**62,
        "f": 1.5,
        "d": -0.25,
        "s": 'q"\\\n\u00e9\U0001f600',
        "e": "C9",
        "a": [None, -1, "x", ""],
        "m": {"k": [1.0, 2.5], "": []},
        "home": {"zip": 12345},
        "work": {"zip": 1},
        "_last9": "z",
    },
    [{"a": None, "b": "c", "": True}, {}],
    "",
    [1, 2, 3],
    {},
)


@functools.cache
def _avro_functions(i: int) -> tuple[Any, Any]:
    from kdump.formats.payloads.avro import avro_json, avro_reader

    text = json.dumps(AVRO_SCHEMAS[i])
    return avro_json(text), avro_reader(text)


def fuzz_compiled_avro_json(data: bytes) -> None:
    """An Avro value (schema picked by the first byte) to JSON: the reference's text, or declined."""
    if not data:
        return
    from kdump.formats.payloads.values import JsonWriter

    compiled, reader = _avro_functions(data[0] % len(AVRO_SCHEMAS))
    value = data[1:]
    out = compiled(value) if compiled is not None else None
    if out is None:
        return
    try:
        ref = JsonWriter().dumps(reader(value))
    except DecodeError:
        raise AssertionError("the compiled path decoded a value the reference refuses") from None
    assert out == ref


def _avro_seeds(_root: Path | None) -> list[bytes]:
    import fastavro

    out = []
    for i, (schema, value) in enumerate(zip(AVRO_SCHEMAS, _AVRO_VALUES, strict=True)):
        b = io.BytesIO()
        fastavro.schemaless_writer(b, fastavro.parse_schema(schema), value)
        out.append(bytes([i]) + b.getvalue())
    return out


COMPILED_TARGETS = [
    FuzzTarget("compiled_records", fuzz_compiled_records, _log_seeds, 300),
    FuzzTarget("compiled_kafka_lines", fuzz_compiled_kafka_lines, _log_seeds, 200),
    FuzzTarget("compiled_batch_lines", fuzz_compiled_batch_lines, _log_seeds, 150),
    FuzzTarget("compiled_walk", fuzz_compiled_walk, _log_seeds, 200),
    FuzzTarget("compiled_deep_run", fuzz_compiled_deep_run, _log_seeds, 200),
    FuzzTarget("compiled_indexes", fuzz_compiled_indexes, _index_seeds, 400),
    FuzzTarget("compiled_avro_json", fuzz_compiled_avro_json, _avro_seeds, 1000),
]
