"""Fuzz targets: one function per decoder, each taking the fuzzer's bytes and asserting kdump's contracts.

The same targets are driven by hypothesis in CI (`test_fuzz_short.py`, about a minute) and by atheris,
coverage-guided, for hours (`run_long.py`). Contracts asserted:

* `scan_log` never raises, whatever the bytes, in every mode (shallow and deep, FORENSIC and RECOVERY,
  with and without a segment base offset, with a `max_bytes` prefix); it ends with exactly one summary;
  `valid_bytes` is the same in every mode; batches come in position order inside the buffer; every
  finding's code is in the catalog. `scan_log_fixed_crc` first rewrites the checksum of every framed
  entry, so mutations also reach the checks that only run on checksum-valid batches (offsets, counts,
  leader epochs, codecs) and the record decoders of wrappers.
* `dump_pipeline`: the whole `kdump dump --records` chain in memory (scan, internal-topic decoders,
  text, JSON Lines and rich renderers) never raises.
* Decoders (`kdump.formats`) raise only `kdump.errors.DecodeError` (subclasses) on bad bytes; the index
  decoders never raise at all; codecs raise only `CodecError` and never return more than `max_size`.
  Where a decoder has an encoder, a successful decode survives the round trip.
* Index checks (`kdump.scan.index_checks`) never raise, whatever an index holds.

A target takes `bytes` and returns None; a broken contract is an exception (AssertionError for the
contracts above), which is what both engines report as a crash. `TARGETS` maps each name to its target,
`seed_inputs(name, corpus_root)` gives it real inputs to start from: fragments of the real Kafka 3.8.0
corpus (every magic and codec), real index/snapshot/checkpoint files, records of the internal topics, and
segments built by `tests/builders.py`, so mutations reach deep code instead of failing the first check.

Inputs that carry more than one value (key and value of a record, a codec and its payload) use a small
framing, `split_fields`/`join_fields`, that the seeds are encoded with.
"""

from __future__ import annotations

import functools
import io
import json
import struct
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[1]
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))

from kdump.errors import CodecError, DecodeError  # noqa: E402
from kdump.findings import CATALOG, Finding  # noqa: E402
from kdump.formats import checkpoints  # noqa: E402
from kdump.formats.batch import BatchHeader, decode_v2_header, legacy_crc, v2_crc  # noqa: E402
from kdump.formats.codecs import compress, decompress  # noqa: E402
from kdump.formats.constants import Codec, ControlType  # noqa: E402
from kdump.formats.control import decode_control_key, decode_end_txn_marker  # noqa: E402
from kdump.formats.filenames import (  # noqa: E402
    parse_partition_dir_name,
    parse_segment_file_name,
    partition_dir_name,
    segment_file_name,
)
from kdump.formats.internal import (  # noqa: E402
    DecodedRecord,
    decode_control_record,
    decode_metadata_record,
    decode_offsets_record,
    decode_transaction_log_record,
)
from kdump.formats.internal.consumer_offsets import decode_consumer_protocol  # noqa: E402
from kdump.formats.offset_index import (  # noqa: E402
    decode_offset_index,
    encode_offset_index,
    lookup_offset,
    offset_index_entry_at,
    offset_index_entry_count,
)
from kdump.formats.producer_snapshot import decode_producer_snapshot, encode_producer_snapshot  # noqa: E402
from kdump.formats.records import (  # noqa: E402
    NewRecord,
    Record,
    build_legacy_entry,
    build_v2_batch,
    decode_legacy_message,
    decode_legacy_records,
    decode_v2_records,
)
from kdump.formats.time_index import (  # noqa: E402
    decode_time_index,
    encode_time_index,
    lookup_timestamp,
    time_index_entry_at,
    time_index_entry_count,
)
from kdump.formats.txn_index import decode_txn_index, encode_txn_index  # noqa: E402
from kdump.formats.varint import decode_uvarint, decode_varint, encode_uvarint, encode_varint  # noqa: E402
from kdump.scan.events import ScanMode, ScanSummary  # noqa: E402
from kdump.scan.index_checks import BatchSpan, BatchTable, check_offset_index, check_time_index  # noqa: E402
from kdump.scan.log_scanner import scan_log  # noqa: E402

Target = Callable[[bytes], None]

# Decoded payloads are capped well below the scanner's 1 GiB: a fuzzer finds bombs quickly, and a
# target must not need gigabytes to run. The cap itself is part of the contract checked.
FUZZ_MAX_DECOMPRESSED = 4 << 20
# Seeds and generated inputs stay small enough for thousands of executions a second.
MAX_SEED_SIZE = 24 << 10

# --- input framing --------------------------------------------------------------------------------

_NULL = 0xFFFF


def join_fields(*fields: bytes | None) -> bytes:
    """Frame several byte strings (None: null) as one input: each but the last is a 2-byte big-endian
    length (0xFFFF: null) and its bytes; the last takes the rest (a leading 0xFF byte: null)."""
    out = bytearray()
    for f in fields[:-1]:
        if f is None:
            out += struct.pack(">H", _NULL)
        else:
            out += struct.pack(">H", min(len(f), _NULL - 1)) + f[: _NULL - 1]
    last = fields[-1]
    out += b"\xff" if last is None else b"\x00" + last
    return bytes(out)


def split_fields(data: bytes, n: int) -> list[bytes | None]:
    """The inverse of `join_fields` for any bytes (missing fields are empty, never an error)."""
    out: list[bytes | None] = []
    pos = 0
    for _ in range(n - 1):
        if pos + 2 > len(data):
            out.append(b"")
            pos = len(data)
            continue
        (length,) = struct.unpack_from(">H", data, pos)
        pos += 2
        if length == _NULL:
            out.append(None)
        else:
            out.append(data[pos : pos + length])
            pos += length
    rest = data[pos:]
    out.append(None if rest[:1] == b"\xff" else rest[1:])
    return out


# --- contract helpers -----------------------------------------------------------------------------


def _only_decode_errors(fn: Callable[[], object]) -> object | None:
    """Run a decoder: a DecodeError is an accepted outcome (None), anything else propagates."""
    try:
        return fn()
    except DecodeError:
        return None


def _check_stream(events: list[object], size: int, start: int = 0) -> ScanSummary:
    summaries = [e for e in events if isinstance(e, ScanSummary)]
    assert len(summaries) == 1, "exactly one summary"
    assert events[-1] is summaries[0], "the summary comes last"
    summary = summaries[0]
    last = -1
    for ev in events:
        if isinstance(ev, BatchHeader):
            assert ev.position > last, "batches in increasing positions"
            assert start <= ev.position, "a batch inside the buffer"
            assert ev.position + ev.size <= size, "a batch inside the buffer"
            last = ev.position
        elif isinstance(ev, Finding):
            assert ev.code in CATALOG, ev.code
        else:
            assert isinstance(ev, Record | ScanSummary), type(ev)
    assert start <= summary.valid_bytes <= summary.scanned_bytes <= size
    assert summary.size == size
    return summary


def _fix_crcs(data: bytes) -> bytes:
    """Rewrite the stored checksum of every entry the scanner frames (no resync), so they all pass."""
    buf = bytearray(data)
    pos = 0
    while pos + 17 <= len(buf):
        (length,) = struct.unpack_from(">i", buf, pos + 8)
        magic = buf[pos + 16]
        size = length + 12
        if length < 14 or pos + size > len(buf) or magic > 2 or (magic == 2 and size < 61):
            break
        if magic == 2:
            struct.pack_into(">I", buf, pos + 17, v2_crc(buf, pos, size))
        else:
            struct.pack_into(">I", buf, pos + 12, legacy_crc(buf, pos, size))
        pos += size
    return bytes(buf)


# --- targets: the log -----------------------------------------------------------------------------


def fuzz_scan_log(data: bytes) -> None:
    """`scan_log` in every mode: never raises, one summary last, the same `valid_bytes` everywhere."""
    size = len(data)
    valid = set()
    for deep in (False, True):
        for mode in (ScanMode.FORENSIC, ScanMode.RECOVERY):
            events = list(scan_log(data, deep=deep, mode=mode, base_offset=0 if deep else None))
            valid.add(_check_stream(events, size).valid_bytes)
    assert len(valid) == 1, f"valid_bytes differs between modes: {valid}"
    # A prefix (a live broker's --max-bytes) and a start inside the buffer never raise either.
    _check_stream(list(scan_log(data, max_bytes=size // 2)), size)
    start = min(size, 61)
    _check_stream(list(scan_log(data, start=start, deep=True, resync=False)), size, start)


def fuzz_scan_log_fixed_crc(data: bytes) -> None:
    """`scan_log` over entries whose checksums all match: the post-checksum checks and decoders."""
    fuzz_scan_log(_fix_crcs(data))


def fuzz_dump_pipeline(data: bytes) -> None:
    """`kdump dump --records` in memory: scan, internal-topic decoders, and every renderer."""
    from kdump.ops.dump.internal import attach_decoded
    from kdump.render.jsonl import write_jsonl
    from kdump.render.rich_tty import write_rich
    from kdump.render.text import write_text

    if not data:
        return
    decoder = (None, "offsets", "transactions", "metadata")[data[0] % 4]
    log = _fix_crcs(data[1:]) if data[0] & 4 else data[1:]
    events = list(attach_decoded(scan_log(log, file="fuzz.log", deep=True, base_offset=0), decoder, "f"))
    for write in (write_text, write_jsonl):
        for encoding in ("utf8", "hex", "base64"):
            write(iter(events), io.StringIO(), encoding=encoding)
    if len(log) <= 4096:  # rich tables are slow; small inputs exercise the same code
        write_rich(iter(events), io.StringIO(), encoding="utf8")


# --- targets: index files -------------------------------------------------------------------------


def fuzz_offset_index(data: bytes) -> None:
    """`.index`: never raises; slots read in place agree; entries survive the encoder."""
    base = 1000
    contents = decode_offset_index(data, base)
    assert len(contents.entries) + contents.zero_tail_entries == contents.slot_count == len(data) // 8
    assert contents.trailing_bytes == len(data) % 8
    count = offset_index_entry_count(data)
    assert 0 <= count <= contents.slot_count
    for slot in range(min(len(contents.entries), 16)):
        assert offset_index_entry_at(data, slot, base) == contents.entries[slot]
    for target in (base, base + 5, 2**40):
        lookup_offset(contents.entries, target)
    if all(e.offset >= base and e.position >= 0 for e in contents.entries):
        assert encode_offset_index(contents.entries, base) == data[: len(contents.entries) * 8]


def fuzz_time_index(data: bytes) -> None:
    """`.timeindex`: never raises; slots read in place agree; entries survive the encoder."""
    base = 1000
    contents = decode_time_index(data, base)
    assert len(contents.entries) + contents.zero_tail_entries == contents.slot_count == len(data) // 12
    assert contents.trailing_bytes == len(data) % 12
    count = time_index_entry_count(data)
    assert 0 <= count <= contents.slot_count
    for slot in range(min(len(contents.entries), 16)):
        assert time_index_entry_at(data, slot, base) == contents.entries[slot]
    for target in (-1, 0, 1_700_000_000_000, 2**62):
        lookup_timestamp(contents.entries, target)
    if all(e.offset >= base for e in contents.entries):
        assert encode_time_index(contents.entries, base) == data[: len(contents.entries) * 12]


def fuzz_txn_index(data: bytes) -> None:
    """`.txnindex`: never raises; entries survive the encoder byte for byte."""
    contents = decode_txn_index(data)
    whole = len(data) - contents.trailing_bytes
    assert len(contents.entries) * 34 == whole
    assert encode_txn_index(contents.entries) == data[:whole]
    for entry in contents.entries:
        entry.kafka_version  # noqa: B018


def _index_table() -> BatchTable:
    spans = [BatchSpan(i * 100, 1000 + i * 10, 1000 + i * 10 + 9, 1_700_000_000_000 + i) for i in range(20)]
    return BatchTable(spans)


def fuzz_index_checks(data: bytes) -> None:
    """Index checks against a log never raise, whatever the index holds (both kinds, any base)."""
    table = _index_table()
    for base in (1000, 0, 2**40):
        for f in check_offset_index(decode_offset_index(data, base), table, 2000, "x.index"):
            assert f.code in CATALOG
        for f in check_time_index(decode_time_index(data, base), table, "x.timeindex"):
            assert f.code in CATALOG


# --- targets: state files -------------------------------------------------------------------------


def fuzz_producer_snapshot(data: bytes) -> None:
    """`.snapshot`: only DecodeError; a checksum-valid snapshot is what the encoder writes."""
    snap = _only_decode_errors(lambda: decode_producer_snapshot(data))
    if snap is not None:
        assert snap.crc_ok == (snap.stored_crc == snap.computed_crc)  # type: ignore[attr-defined]
        for e in snap.entries:  # type: ignore[attr-defined]
            e.first_sequence, e.first_offset, e.open_txn_first_offset, e.has_batch_metadata  # noqa: B018
        if snap.crc_ok:  # type: ignore[attr-defined]
            assert encode_producer_snapshot(snap.entries) == data  # type: ignore[attr-defined]


def fuzz_leader_epoch_checkpoint(data: bytes) -> None:
    """`leader-epoch-checkpoint`: only DecodeError; entries survive encode and decode."""
    cp = _only_decode_errors(lambda: checkpoints.decode_leader_epoch_checkpoint(data))
    if cp is not None:
        again = checkpoints.decode_leader_epoch_checkpoint(
            checkpoints.encode_leader_epoch_checkpoint(cp.entries)  # type: ignore[attr-defined]
        )
        assert again.entries == cp.entries  # type: ignore[attr-defined]


def fuzz_offset_checkpoint(data: bytes) -> None:
    """Log-dir offset checkpoints: only DecodeError; entries survive encode and decode."""
    cp = _only_decode_errors(lambda: checkpoints.decode_offset_checkpoint(data))
    # A line with leading whitespace reads, as in Kafka's Java split, as an empty topic name, which no
    # broker writes and the encoder refuses: only other entries make the round trip.
    if cp is not None and all(e.topic for e in cp.entries):  # type: ignore[attr-defined]
        again = checkpoints.decode_offset_checkpoint(
            checkpoints.encode_offset_checkpoint(cp.entries)  # type: ignore[attr-defined]
        )
        assert again.entries == cp.entries  # type: ignore[attr-defined]


def fuzz_partition_metadata(data: bytes) -> None:
    """`partition.metadata`: only DecodeError; the topic id survives encode and decode."""
    pm = _only_decode_errors(lambda: checkpoints.decode_partition_metadata(data))
    if pm is not None:
        pm.topic_uuid  # type: ignore[attr-defined]  # noqa: B018
        encoded = checkpoints.encode_partition_metadata(pm.topic_id, pm.version)  # type: ignore[attr-defined]
        assert checkpoints.decode_partition_metadata(encoded) == pm


def fuzz_meta_properties(data: bytes) -> None:
    """`meta.properties` (Java properties): only DecodeError; properties survive encode and decode."""
    props = _only_decode_errors(lambda: checkpoints.decode_meta_properties(data))
    if props is not None:
        assert checkpoints.decode_meta_properties(checkpoints.encode_meta_properties(props)) == props  # type: ignore[arg-type]


def fuzz_clean_shutdown_and_json_state(data: bytes) -> None:
    """`.kafka_cleanshutdown`, and the JSON state files `dump` shows (`quorum-state`): only DecodeError."""
    from kdump.ops.dump.state_files import _decode_small

    _only_decode_errors(lambda: checkpoints.decode_clean_shutdown(data))
    for kind in ("clean-shutdown", "quorum-state"):
        _only_decode_errors(lambda kind=kind: list(_decode_small(data, kind, "x")))  # type: ignore[misc]


def fuzz_file_names(data: bytes) -> None:
    """Segment and partition directory names (as `os.listdir` gives them): never raise; a parsed name
    written back is the same name (or an equivalent spelling of the same numbers)."""
    name = data.decode("utf-8", "surrogateescape")
    seg = parse_segment_file_name(name)
    if seg is not None and seg.remote_segment_id is None:
        again = segment_file_name(seg.base_offset, seg.kind, seg.suffix, seg.epoch)
        assert parse_segment_file_name(again) == seg
    part = parse_partition_dir_name(name)
    if part is not None and (part.status is None or part.unique_id):
        again = partition_dir_name(part.topic, part.partition, part.status, part.unique_id)
        assert parse_partition_dir_name(again) == part


# --- targets: records -----------------------------------------------------------------------------

_V2_TEMPLATE = build_v2_batch(0, [NewRecord(b"k", b"v", 1_700_000_000_000)])


def _v2_header(count: int, attributes: int = 0, base_sequence: int = -1) -> BatchHeader:
    header = bytearray(_V2_TEMPLATE[:61])
    struct.pack_into(">h", header, 21, attributes)
    struct.pack_into(">i", header, 53, base_sequence)
    struct.pack_into(">i", header, 57, count)
    return decode_v2_header(bytes(header), 0, 61)


def fuzz_v2_records(data: bytes) -> None:
    """`decode_v2_records` never raises: records up to the damage, and the damage as a DecodeError."""
    if len(data) < 4:
        return
    (count,) = struct.unpack_from(">i", data, 0)
    payload = data[4:]
    for attributes, base_sequence in ((0, -1), (0x08, 2**31 - 5)):
        header = _v2_header(count, attributes, base_sequence)
        records, error = decode_v2_records(payload, header)
        assert error is None or isinstance(error, DecodeError)
        assert len(records) <= max(count, 0)
        if error is None:
            assert len(records) == max(count, 0)


def _legacy_header(magic: int, offset: int, compression: int, lat: bool) -> BatchHeader:
    attributes = compression | (0x08 if lat else 0)
    return BatchHeader(
        0, None, offset, None, 0, magic, 0, True, 0, attributes, compression, 1 if lat else 0,
        1_700_000_000_000, 1_700_000_000_000, -1, -1, -1, -1, False, False, False,
    )  # fmt: skip


def fuzz_legacy_records(data: bytes) -> None:
    """Legacy messages: `decode_legacy_message` raises only DecodeError; `decode_legacy_records` never
    raises, for a message on its own and as the inner messages of a v0/v1 wrapper."""
    if not data:
        return
    flags, rest = data[0], data[1:]
    magic = flags & 1
    offset = (0, 5, 2**31, 2**62)[(flags >> 1) & 3]
    _only_decode_errors(lambda: decode_legacy_message(rest, 0))
    header = _legacy_header(magic, offset, (flags >> 3) & 3, bool(flags & 0x20))
    for entry, inner in ((rest, None), (b"", rest)):
        records, error = decode_legacy_records(entry, header, inner)
        assert error is None or isinstance(error, DecodeError)
        assert isinstance(records, list)


def fuzz_control_records(data: bytes) -> None:
    """Control record key and COMMIT/ABORT value: only DecodeError (the scanner's own decoders)."""
    key, value = split_fields(data, 2)
    k = _only_decode_errors(lambda: decode_control_key(key))
    if k is not None and k.type in (ControlType.ABORT, ControlType.COMMIT):  # type: ignore[attr-defined]
        _only_decode_errors(lambda: decode_end_txn_marker(value))


def fuzz_varint(data: bytes) -> None:
    """Varints: only DecodeError; a value fits its Java type (int, long) and re-encodes to itself."""
    for max_bytes in (5, 10):
        got = _only_decode_errors(lambda max_bytes=max_bytes: decode_varint(data, 0, max_bytes))  # type: ignore[misc]
        if got is not None:
            value, end = got  # type: ignore[misc]
            assert 0 < end <= min(len(data), max_bytes)
            bits = 32 if max_bytes == 5 else 64
            assert -(2 ** (bits - 1)) <= value < 2 ** (bits - 1), "a varint wraps to its Java type"
            assert decode_varint(encode_varint(value), 0, 10)[0] == value
        got = _only_decode_errors(lambda max_bytes=max_bytes: decode_uvarint(data, 0, max_bytes))  # type: ignore[misc]
        if got is not None:
            value, _end = got  # type: ignore[misc]
            assert decode_uvarint(encode_uvarint(value), 0, 10)[0] == value


# --- targets: internal topics ---------------------------------------------------------------------


def _render(decoded: DecodedRecord) -> None:
    """What `dump` does with a decoded record must not raise either (a DecodeError where Kafka's tool
    aborts is allowed: the oracle text says so)."""
    json.dumps(decoded.to_dict())
    _only_decode_errors(lambda: decoded.oracle_suffix(7))


def _internal(fn: Callable[[bytes | None, bytes | None], DecodedRecord]) -> Target:
    def target(data: bytes) -> None:
        key, value = split_fields(data, 2)
        decoded = _only_decode_errors(lambda: fn(key, value))
        if decoded is not None:
            assert isinstance(decoded, DecodedRecord)
            _render(decoded)

    return target


fuzz_consumer_offsets = _internal(decode_offsets_record)
fuzz_consumer_offsets.__doc__ = "`__consumer_offsets` key and value: only DecodeError; the result renders."
fuzz_transaction_log = _internal(decode_transaction_log_record)
fuzz_transaction_log.__doc__ = "`__transaction_state` key and value: only DecodeError; the result renders."
fuzz_internal_control = _internal(decode_control_record)
fuzz_internal_control.__doc__ = (
    "Control records (markers, KRaft control): only DecodeError; the result renders."
)


def fuzz_cluster_metadata(data: bytes) -> None:
    """`__cluster_metadata` values: only DecodeError; the result renders."""
    decoded = _only_decode_errors(lambda: decode_metadata_record(data))
    if decoded is not None:
        _render(decoded)  # type: ignore[arg-type]


def fuzz_consumer_protocol(data: bytes) -> None:
    """Embedded consumer-protocol subscriptions and assignments: None or a JSON-able dict, never raises."""
    for assignment in (False, True):
        got = decode_consumer_protocol(data, assignment=assignment)
        if got is not None:
            json.dumps(got)


# --- targets: codecs ------------------------------------------------------------------------------


def _codec(codec: int) -> Target:
    def target(data: bytes) -> None:
        for magic in (2,) if codec == Codec.ZSTD else (0, 1, 2):
            try:
                out = decompress(codec, data, magic=magic, max_size=FUZZ_MAX_DECOMPRESSED)
            except CodecError:
                continue
            assert isinstance(out, bytes)
            assert len(out) <= FUZZ_MAX_DECOMPRESSED

    return target


fuzz_codec_gzip = _codec(Codec.GZIP)
fuzz_codec_snappy = _codec(Codec.SNAPPY)
fuzz_codec_lz4 = _codec(Codec.LZ4)
fuzz_codec_zstd = _codec(Codec.ZSTD)
for _fn, _name in ((fuzz_codec_gzip, "gzip"), (fuzz_codec_snappy, "snappy"), (fuzz_codec_lz4, "lz4"), (fuzz_codec_zstd, "zstd")):  # fmt: skip
    _fn.__doc__ = (
        f"`decompress` of {_name} payloads (every magic that allows it): only CodecError, output capped."
    )


# --- the registry ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FuzzTarget:
    name: str
    fn: Target
    seeds: Callable[[Path | None], list[bytes]]
    # Examples for the ~1 minute CI run (test_fuzz_short.py), weighed by cost per example.
    examples: int


def _trim(
    seeds: Iterator[bytes] | list[bytes], limit: int = 80, kind: Callable[[bytes], bytes] | None = None
) -> list[bytes]:
    """Distinct seeds, cut to MAX_SEED_SIZE, at most `limit`; with `kind`, one of each kind first."""
    unique = list(dict.fromkeys(s[:MAX_SEED_SIZE] for s in seeds))
    if kind is not None:
        firsts: dict[bytes, bytes] = {}
        for s in unique:
            firsts.setdefault(kind(s), s)
        chosen = set(firsts.values())
        unique = list(firsts.values()) + [s for s in unique if s not in chosen]
    return unique[:limit]


def _corpus_files(root: Path | None, pattern: str, limit: int = 40) -> list[bytes]:
    if root is None:
        return []
    files = sorted(p for p in root.glob(pattern) if p.is_file() and "expected" not in p.parts)
    return [p.read_bytes() for p in files[:limit]]


# Real segments of every magic and codec that the bundled subset also holds.
CORPUS_LOGS = (
    "kafka-3.8.0/c-none-0/00000000000000002985.log",
    "kafka-3.8.0/c-snappy-0/00000000000000002982.log",
    "kafka-3.8.0/txn-1/00000000000000000547.log",
    "kafka-3.8.0/compacted-sparse-0/00000000000000001201.log",
    "kafka-3.8.0/log-append-time-0/00000000000000001358.log",
    "kafka-3.8.0/__consumer_offsets-0/00000000000000000000.log",
    "kafka-3.8.0/__transaction_state-0/00000000000000000000.log",
    "kafka-3.8.0/__cluster_metadata-0/00000000000000000000.log",
    "kafka-3.8.0-zk-legacy/legacy-v0-none-0/00000000000000000645.log",
    "kafka-3.8.0-zk-legacy/legacy-v0-lz4-0/00000000000000000770.log",
    "kafka-3.8.0-zk-legacy/legacy-v1-lz4-0/00000000000000000749.log",
    "kafka-3.8.0-zk-legacy/legacy-v1-lat-0/00000000000000000471.log",
    "kafka-3.8.0-zk-legacy/mixed-formats-0/00000000000000001780.log",
    "kafka-3.8.0-running-copy/live-0/00000000000000008074.log",
)


def _entries(data: bytes) -> list[BatchHeader]:
    return [e for e in scan_log(data, resync=False) if isinstance(e, BatchHeader)]


def log_fragments(data: bytes, budget: int = MAX_SEED_SIZE) -> list[bytes]:
    """Runs of whole consecutive entries of a real log, each within `budget` bytes: from the start, the
    smallest entries with their neighbours, and the end."""
    entries = _entries(data)
    out: list[bytes] = []
    if not entries:
        return out
    for i, _e in [
        *sorted(enumerate(entries), key=lambda ie: ie[1].size)[:4],
        (len(entries) - 1, entries[-1]),
    ]:
        first = max(i - 1, 0)
        last = min(i + 1, len(entries) - 1)
        while last > first and entries[last].position + entries[last].size - entries[first].position > budget:
            last -= 1
        start, end = entries[first].position, entries[last].position + entries[last].size
        if end - start <= budget:
            out.append(data[start:end])
    run = [e for e in entries if e.position + e.size <= budget]
    if run:
        out.append(data[: run[-1].position + run[-1].size])
    return out


@functools.cache
def _built_logs() -> tuple[bytes, ...]:
    """Segments built from records: every codec in v2 (with headers, nulls, LogAppendTime, markers) and
    every codec in v0/v1, plus an idempotent transactional run."""
    from builders import SegmentBuilder, records

    out = []
    for codec in Codec:
        seg = SegmentBuilder(base_offset=0)
        seg.add_v2(records(3, value_size=20), codec=codec)
        seg.add_v2(
            [NewRecord(None, None, 1), NewRecord(b"", b"", 2, ((b"", None), (b"h", b"")))],
            codec=codec,
            log_append_time=1_700_000_000_123,
        )
        seg.add_v2(records(2, value_size=8), codec=codec, producer_id=7, producer_epoch=1, base_sequence=0, transactional=True)  # fmt: skip
        seg.add_marker(7, commit=codec % 2 == 0)
        out.append(bytes(seg.data))
    for magic in (0, 1):
        for codec in (Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4):
            seg = SegmentBuilder(base_offset=0)
            seg.add_legacy(records(3, value_size=16), magic=magic, codec=codec)
            seg.add_legacy(records(1, value_size=4, key=False), magic=magic)
            out.append(bytes(seg.data))
    out.append(build_legacy_entry(10, records(2, value_size=4), magic=1, codec=Codec.GZIP, log_append_time=5))
    return tuple(out)


def _log_seeds(root: Path | None) -> list[bytes]:
    seeds = list(_built_logs())
    if root is not None:
        for rel in CORPUS_LOGS:
            path = root / rel
            if path.is_file():
                seeds += log_fragments(path.read_bytes())
        seeds += _corpus_files(root, "*/_logdir-files/bootstrap.checkpoint")
    return _trim(seeds)


def _dump_seeds(root: Path | None) -> list[bytes]:
    out = []
    for log in _log_seeds(root):
        out += [bytes([0]) + log, bytes([1 | 4]) + log, bytes([2]) + log, bytes([3]) + log]
    return _trim(out[::2] + out[1::2])


def _payload_seeds(root: Path | None, codec: int) -> list[bytes]:
    """Compressed payloads of real batches and wrappers of this codec, and built ones."""
    seeds = [
        compress(codec, b"x" * 100),
        compress(codec, bytes(range(256)) * 8, magic=0),
        compress(codec, b""),
    ]
    for log in _log_seeds(root):
        for h in _entries(log):
            if h.compression != codec or not h.crc_ok:
                continue
            if h.magic == 2:
                seeds.append(log[h.position + 61 : h.position + h.size])
            else:
                try:
                    value = decode_legacy_message(log[h.position : h.position + h.size], 0)[6]
                except DecodeError:
                    continue
                if value is not None:
                    seeds.append(value)
    return _trim(seeds, 40)


def _records_payloads(root: Path | None) -> list[bytes]:
    """Decompressed v2 record payloads with their count in front (`fuzz_v2_records`)."""
    out = []
    for log in _log_seeds(root):
        for h in _entries(log):
            if h.magic == 2 and h.crc_ok:
                payload = log[h.position + 61 : h.position + h.size]
                try:
                    data = decompress(h.compression, payload, magic=2) if h.compression else payload
                except CodecError:
                    continue
                out.append(struct.pack(">i", h.count or 0) + data)
    return _trim(out, 60)


def _legacy_seeds(root: Path | None) -> list[bytes]:
    """Legacy messages and decompressed wrapper contents, with a flags byte (`fuzz_legacy_records`)."""
    out = []
    for log in _log_seeds(root):
        for h in _entries(log):
            if h.magic == 2:
                continue
            entry = log[h.position : h.position + h.size]
            flags = h.magic | (0x20 if h.timestamp_type == 1 else 0)
            out.append(bytes([flags]) + entry)
            if h.compression:
                try:
                    value = decode_legacy_message(entry, 0)[6]
                    inner = decompress(h.compression, value or b"", magic=h.magic)
                except DecodeError:
                    continue
                out.append(bytes([flags | (h.compression << 3) | (1 << 1)]) + inner)
    return _trim(out, 60)


def _record_pairs(root: Path | None, partition: str) -> list[bytes]:
    """Key/value pairs of the records of an internal topic's real log (control records when
    `partition` is "control")."""
    out = []
    logs: list[bytes] = []
    if root is not None:
        for corpus in ("kafka-3.8.0", "kafka-3.8.0-zk-legacy"):
            part = root / corpus / (partition if partition != "control" else "__consumer_offsets-0")
            logs += [p.read_bytes() for p in sorted(part.glob("*.log"))] if part.is_dir() else []
        if partition == "control":
            logs += [(root / rel).read_bytes() for rel in CORPUS_LOGS if (root / rel).is_file()]
    if partition == "control":
        logs += list(_built_logs())
    want_control = partition == "control"
    for log in logs:
        batch: BatchHeader | None = None
        for ev in scan_log(log, deep=True):
            if isinstance(ev, BatchHeader):
                batch = ev
            elif isinstance(ev, Record) and batch is not None and batch.is_control == want_control:
                out.append(join_fields(ev.key, ev.value))
    return _trim(out, kind=lambda pair: _pair_kind(pair))


def _pair_kind(pair: bytes) -> bytes:
    key, value = split_fields(pair, 2)
    return (key or b"-")[:4] + b"/" + (value or b"-")[:6]


def _metadata_values(root: Path | None) -> list[bytes]:
    pairs = _record_pairs(root, "__cluster_metadata-0")
    out = []
    if root is not None:
        for path in sorted(root.glob("*/_logdir-files/bootstrap.checkpoint")):
            for ev in scan_log(path.read_bytes(), deep=True):
                if isinstance(ev, Record) and ev.value is not None:
                    out.append(ev.value)
    out += [v for p in pairs if (v := split_fields(p, 2)[1]) is not None]
    return _trim(out, kind=lambda v: v[:6])


def _consumer_protocol_seeds(root: Path | None) -> list[bytes]:
    """Subscriptions and assignments embedded in real GroupMetadata values."""
    import base64

    out = [b"\x00\x00", b"\x00\x03\x00\x00\x00\x01\x00\x01t\xff\xff\xff\xff"]
    from kdump.formats.internal.consumer_offsets import GROUP_METADATA_VALUE
    from kdump.formats.internal.schema import decode_message

    for pair in _record_pairs(root, "__consumer_offsets-0"):
        key, value = split_fields(pair, 2)
        if key is None or value is None or key[:2] != b"\x00\x02" or len(value) < 2:
            continue
        try:  # the GroupMetadataValue as stored, before `dump` expands the embedded protocol
            data = decode_message(GROUP_METADATA_VALUE, value, int.from_bytes(value[:2], "big"), pos=2).data
        except DecodeError:
            continue
        for member in data.get("members") or ():
            for name in ("subscription", "assignment"):
                v = member.get(name)
                if isinstance(v, str):
                    out.append(base64.b64decode(v))
    return _trim(out)


def _state_seeds(pattern: str, extra: list[bytes]) -> Callable[[Path | None], list[bytes]]:
    def seeds(root: Path | None) -> list[bytes]:
        return _trim(extra + _corpus_files(root, pattern))

    return seeds


def _snapshot_seeds(root: Path | None) -> list[bytes]:
    from kdump.formats.producer_snapshot import ProducerSnapshotEntry

    built = encode_producer_snapshot(
        [ProducerSnapshotEntry(7, 1, 41, 100, 9, 1_700_000_000_000, 3, 90), ProducerSnapshotEntry(8, 0, -1, -1, 0, -1, -1, -1)]
    )  # fmt: skip
    return _trim([built, *_corpus_files(root, "*/*/*.snapshot*", limit=60)])


def _index_seeds(ext: str) -> Callable[[Path | None], list[bytes]]:
    def seeds(root: Path | None) -> list[bytes]:
        built = (
            encode_offset_index([(1000, 0), (1010, 4100), (1020, 8200)], 1000)
            if ext == "index"
            else encode_time_index([(1_700_000_000_000, 1009), (1_700_000_000_050, 1019)], 1000)
        )
        files = [f for f in _corpus_files(root, f"*/*/*.{ext}", limit=400) if 0 < len(f) <= MAX_SEED_SIZE]
        return _trim([built, built + bytes(48), *files[:30]])

    return seeds


def _txn_index_seeds(root: Path | None) -> list[bytes]:
    from kdump.formats.txn_index import AbortedTxn

    built = encode_txn_index([AbortedTxn(0, 7, 10, 20, 21), AbortedTxn(0, 8, 15, 30, 15)])
    return _trim([built, built[:40], *_corpus_files(root, "*/*/*.txnindex")])


def _varint_seeds(_root: Path | None) -> list[bytes]:
    return [encode_varint(v) for v in (0, -1, 1, 63, -64, 2**31 - 1, -(2**31), 2**62)] + [b"\x80" * 11]


def _name_seeds(_root: Path | None) -> list[bytes]:
    names = [
        "00000000000000000000.log",
        "00000000000000001201.index.deleted",
        "00000000000000000692-0000000001.checkpoint",
        "00000000000000000692-0000000001.checkpoint.part",
        "123-AAAAAAAAAAAAAAAAAAAAAA.log",
        "orders-0",
        "__consumer_offsets-49",
        "orders-3.0123456789abcdef0123456789abcdef-delete",
        "a-b-+7",
    ]
    return [n.encode() for n in names]


def _control_seeds(root: Path | None) -> list[bytes]:
    from kdump.formats.control import encode_control_key, encode_end_txn_marker

    built = [join_fields(encode_control_key(t), encode_end_txn_marker(5)) for t in range(7)]
    return _trim(built + _record_pairs(root, "control"))


_REGISTRY = [
    FuzzTarget("scan_log", fuzz_scan_log, _log_seeds, 1500),
    FuzzTarget("scan_log_fixed_crc", fuzz_scan_log_fixed_crc, _log_seeds, 1500),
    FuzzTarget("dump_pipeline", fuzz_dump_pipeline, _dump_seeds, 300),
    FuzzTarget("offset_index", fuzz_offset_index, _index_seeds("index"), 600),
    FuzzTarget("time_index", fuzz_time_index, _index_seeds("timeindex"), 600),
    FuzzTarget("txn_index", fuzz_txn_index, _txn_index_seeds, 500),
    FuzzTarget(
        "index_checks",
        fuzz_index_checks,
        lambda r: _index_seeds("index")(r) + _index_seeds("timeindex")(r),
        500,
    ),
    FuzzTarget("producer_snapshot", fuzz_producer_snapshot, _snapshot_seeds, 600),
    FuzzTarget(
        "leader_epoch_checkpoint",
        fuzz_leader_epoch_checkpoint,
        _state_seeds("*/*/leader-epoch-checkpoint", [b"0\n2\n0 0\n1 57\n"]),
        600,
    ),
    FuzzTarget(
        "offset_checkpoint",
        fuzz_offset_checkpoint,
        _state_seeds("*/_logdir-files/*-checkpoint", [b"0\n2\norders 0 17\n__consumer_offsets 49 0\n"]),
        600,
    ),
    FuzzTarget(
        "partition_metadata",
        fuzz_partition_metadata,
        _state_seeds("*/*/partition.metadata", [b"version: 0\ntopic_id: Dq0sr5qKRzS2BSqyEW2Wlw"]),
        600,
    ),
    FuzzTarget(
        "meta_properties",
        fuzz_meta_properties,
        _state_seeds(
            "*/_logdir-files/meta.properties", [b"#c\nversion=1\nnode.id=1\\\n  2\nk\\:\\u00e9 = v\\tx\n"]
        ),
        600,
    ),
    FuzzTarget(
        "clean_shutdown_and_json_state",
        fuzz_clean_shutdown_and_json_state,
        _state_seeds("*/*/quorum-state", [b'{"version":0,"brokerEpoch":12}', b""]),
        400,
    ),
    FuzzTarget("file_names", fuzz_file_names, _name_seeds, 500),
    FuzzTarget("v2_records", fuzz_v2_records, _records_payloads, 900),
    FuzzTarget("legacy_records", fuzz_legacy_records, _legacy_seeds, 900),
    FuzzTarget("control_records", fuzz_control_records, _control_seeds, 400),
    FuzzTarget("varint", fuzz_varint, _varint_seeds, 400),
    FuzzTarget(
        "consumer_offsets", fuzz_consumer_offsets, lambda r: _record_pairs(r, "__consumer_offsets-0"), 900
    ),
    FuzzTarget(
        "transaction_log", fuzz_transaction_log, lambda r: _record_pairs(r, "__transaction_state-0"), 900
    ),
    FuzzTarget("cluster_metadata", fuzz_cluster_metadata, _metadata_values, 900),
    FuzzTarget("internal_control", fuzz_internal_control, _control_seeds, 500),
    FuzzTarget("consumer_protocol", fuzz_consumer_protocol, _consumer_protocol_seeds, 500),
    FuzzTarget("codec_gzip", fuzz_codec_gzip, lambda r: _payload_seeds(r, Codec.GZIP), 600),
    FuzzTarget("codec_snappy", fuzz_codec_snappy, lambda r: _payload_seeds(r, Codec.SNAPPY), 600),
    FuzzTarget("codec_lz4", fuzz_codec_lz4, lambda r: _payload_seeds(r, Codec.LZ4), 600),
    FuzzTarget("codec_zstd", fuzz_codec_zstd, lambda r: _payload_seeds(r, Codec.ZSTD), 600),
]

TARGETS: dict[str, FuzzTarget] = {t.name: t for t in _REGISTRY}


@functools.cache
def _seed_cache(name: str, root: Path | None) -> tuple[bytes, ...]:
    seeds = TARGETS[name].seeds(root)
    return tuple(seeds) if seeds else (b"",)


def seed_inputs(name: str, corpus_root: Path | None) -> list[bytes]:
    """The seed inputs of a target (never empty), from the corpus under `corpus_root` and built data."""
    return list(_seed_cache(name, corpus_root))


def limit_decompression(max_size: int) -> None:
    """Lower the default bound of `decompress` (1 GiB) in this process: for long fuzzing runs only, where
    a bomb must be reported as kdump's finding rather than exhaust the fuzzer's memory limit."""
    from kdump.formats import codecs

    assert codecs.decompress.__kwdefaults__ is not None
    codecs.decompress.__kwdefaults__["max_size"] = max_size


def default_corpus_root() -> Path | None:
    """The full corpus if present, else the bundled subset extracted under the temp dir (None if neither)."""
    import tempfile

    from corpus import SUBSET_ARCHIVE, available_corpus_root

    try:
        if not SUBSET_ARCHIVE.is_file():
            from corpus import CORPUS_ROOT, full_corpus_available

            return CORPUS_ROOT if full_corpus_available() else None
        return available_corpus_root(Path(tempfile.gettempdir()) / "kdump-fuzz")
    except OSError:
        return None


# --- the hypothesis engine's inputs ---------------------------------------------------------------

_INTERESTING_INT32 = (0, 1, -1, 13, 14, 48, 49, 61, 0x7F, 0x80, 0xFF, 2**15 - 1, 2**31 - 1, -(2**31), 2**16)


def fuzz_strategy(seeds: list[bytes], max_size: int = MAX_SEED_SIZE):  # type: ignore[no-untyped-def]
    """Inputs for a target: its seeds with a few mutations (bit flips, interesting bytes and int32s,
    cuts, inserted, deleted, duplicated and zeroed ranges, appended bytes, splices with another seed),
    and now and then plain random bytes. Positions lean towards the first 64 bytes, where headers are."""
    from hypothesis import strategies as st

    @st.composite
    def mutated(draw: st.DrawFn) -> bytes:
        data = bytearray(draw(st.sampled_from(seeds)))
        for _ in range(draw(st.integers(0, 4))):
            n = len(data)
            op = draw(st.integers(0, 9))
            at = draw(st.one_of(st.integers(0, max(min(n, 64) - 1, 0)), st.integers(0, max(n - 1, 0))))
            if op == 0 and n:
                data[at] ^= 1 << draw(st.integers(0, 7))
            elif op == 1 and n:
                data[at] = draw(st.sampled_from((0, 1, 2, 0x7F, 0x80, 0xFF)))
            elif op == 2 and n >= 4:
                value = draw(st.sampled_from(_INTERESTING_INT32))
                at = min(at, n - 4)
                data[at : at + 4] = (value & 0xFFFFFFFF).to_bytes(4, "big")
            elif op == 3:
                del data[at:]
            elif op == 4:
                data[at:at] = draw(st.binary(min_size=1, max_size=32))
            elif op == 5 and n:
                del data[at : at + draw(st.integers(1, 64))]
            elif op == 6 and n:
                size = draw(st.integers(1, 256))
                data[at:at] = data[at : at + size]
            elif op == 7 and n:
                size = draw(st.integers(1, 256))
                data[at : at + size] = bytes(len(data[at : at + size]))
            elif op == 8:
                data += draw(st.binary(min_size=1, max_size=64))
            else:
                other = draw(st.sampled_from(seeds))
                cut = draw(st.integers(0, len(other)))
                data = data[:at] + bytearray(other[cut:])
        return bytes(data[:max_size])

    return st.one_of(mutated(), mutated(), mutated(), st.binary(max_size=512))
