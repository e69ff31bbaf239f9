"""Parsers for the output of Kafka's ``kafka-dump-log.sh`` (``kafka.tools.DumpLogSegments``, Kafka 3.8).

These are the golden oracles of ``shared/corpus/*/expected/`` (see the corpus README and
``shared/reference/kafka-internals.md`` sections 1.4 and 1.5). Every parser returns plain typed
structures whose field names use kdump's vocabulary (``base_offset``, ``producer_id``, ``position``,
``size`` ...), so a test can compare kdump's output with Kafka's field by field.

Reading the text faithfully needs care:

* Files are read as bytes and split on ``\\n`` only. Keys and values printed by ``--print-data-log``
  are raw decoded bytes and do contain ``\\r``, NUL, other control characters and ``\\n`` (random
  binary keys, the binary records of the internal topics), so universal-newline text mode or
  ``str.splitlines`` would break records apart.
* Kafka decodes keys and values as UTF-8 with replacement characters (U+FFFD, each standing for 1 to
  3 bytes of malformed input) and prints them as UTF-8. A record line is therefore cut into ``key``
  and ``payload`` using ``keySize``/``valueSize``: the split must give texts whose UTF-8 length ``L``
  and number ``n`` of U+FFFD satisfy ``L - 2n <= size <= L`` (exactly ``size`` for text without
  U+FFFD). A record ends at the first line break after which the next line starts a new record,
  batch or trailer *and* the sizes fit, so a value containing ``\\n``, ``\\n| offset: ...`` or the
  literal `` payload: `` is still cut correctly.
* Java's decoder is not Python's: Java turns an encoded-surrogate prefix such as ``ED BD`` into one
  U+FFFD where ``bytes.decode("utf-8", "replace")`` gives two, so do not expect Python's decoding of
  the raw bytes to equal the printed text for binary keys (4 keys of the corpus differ that way).
* The decoder variants (``--offsets-decoder``, ``--transaction-log-decoder``,
  ``--cluster-metadata-decoder``) print text unrelated to the sizes; their ``key``/``payload`` are
  kept raw, split at the first `` payload: `` and ended at the next structural line.

Ambiguities that cannot be resolved from the text alone (none occurs in the corpus):

* ``headerKeys: [a,b]`` joins header keys with ``,`` and no escaping: a key containing ``,`` or ``]``
  cannot be told apart. ``[]`` means "no headers", but one header with an empty key also prints
  ``[]``. Empty keys elsewhere are kept (``[h-id,trace,dup,dup,nullv,]`` gives six keys, the last one
  empty). The list ends at the first ``]`` followed by the end of the line or by a known tail
  (`` key: ``, `` payload: ``, a control marker).
* Legacy (v0/v1) record lines end with a stray ``}`` after the crc (``crc: 3803534975}``), a typo in
  Kafka 3.8's format string; it is accepted and dropped.
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

__all__ = [
    "AbortedTxnEntry",
    "ControlInfo",
    "LogDump",
    "OffsetIndexDump",
    "OffsetIndexEntry",
    "OracleBatch",
    "OracleDump",
    "OracleParseError",
    "OracleRecord",
    "OracleStderr",
    "ProducerSnapshotDump",
    "ProducerSnapshotEntry",
    "TimeIndexDump",
    "TimeIndexEntry",
    "TxnIndexDump",
    "facts_from_log_dump",
    "load_stderr",
    "parse_index_dump",
    "parse_log_dump",
    "parse_oracle",
    "parse_snapshot_dump",
    "parse_stderr",
    "parse_time_index_dump",
    "parse_txnindex_dump",
    "read_exit_code",
    "read_oracle_text",
]


class OracleParseError(ValueError):
    """An oracle file does not have the shape DumpLogSegments prints."""


ControlInfo = tuple[str, int] | str
"""``('COMMIT' | 'ABORT', coordinator_epoch)`` for end-transaction markers, else the raw control text
(e.g. ``'controlType: LEADER_CHANGE(2)'``)."""


@dataclass(frozen=True, slots=True)
class OracleRecord:
    """One ``| offset: ...`` line (deep iteration)."""

    offset: int
    timestamp_type: str
    """``CreateTime``, ``LogAppendTime`` or ``NoTimestampType`` (v0)."""
    timestamp: int
    key_size: int
    """-1 for a null key."""
    value_size: int
    """-1 for a null value."""
    sequence: int | None = None
    """v2 only."""
    header_keys: list[str] | None = None
    """v2 only (``None`` for v0/v1, where headers do not exist). Header values are never printed."""
    is_valid: bool | None = None
    """v0/v1 only: the per-message CRC check (``isValid:``)."""
    crc: int | None = None
    """v0/v1 only: the message's stored CRC-32 (unsigned)."""
    control: ControlInfo | None = None
    """Set for the records of control batches."""
    key: str | None = None
    """Printed key text (``--print-data-log``); ``None`` when not printed (null key or no print-data)."""
    payload: str | None = None
    """Printed value text (``--print-data-log``); ``None`` when not printed (null value or no print-data)."""

    @property
    def is_control(self) -> bool:
        return self.control is not None

    @property
    def control_type(self) -> str | None:
        """The label facts.json counts: ``COMMIT``/``ABORT`` for markers, ``LEADER_CHANGE(2)`` for
        ``controlType: LEADER_CHANGE(2)``, else the leading word (``LeaderChange``, ``SnapshotHeader``...)."""
        if self.control is None:
            return None
        if isinstance(self.control, tuple):
            return self.control[0]
        text = self.control
        if text.startswith("controlType: "):
            return text[len("controlType: ") :]
        return text.split(" ", 1)[0].rstrip(":")


@dataclass(frozen=True, slots=True)
class OracleBatch:
    """One batch line: ``baseOffset: ...`` (v2) or ``offset: ...`` (v0/v1 shallow message / wrapper).

    For v0/v1 the v2-only integer fields are ``None``; ``is_transactional`` and ``is_control`` are ``False``
    (what Kafka's legacy batch classes return; they are not printed).
    """

    base_offset: int | None
    last_offset: int
    """v0/v1: the ``offset:`` of the shallow entry (for a compressed wrapper, its last inner offset)."""
    count: int | None
    base_sequence: int | None
    last_sequence: int | None
    producer_id: int | None
    producer_epoch: int | None
    partition_leader_epoch: int | None
    is_transactional: bool
    is_control: bool
    delete_horizon_ms: int | None
    """``None`` for ``OptionalLong.empty`` and for v0/v1."""
    position: int
    timestamp_type: str
    max_timestamp: int
    size: int
    """Whole batch in bytes, including the 12-byte offset+length prefix."""
    magic: int
    compression: str
    """``none``, ``gzip``, ``snappy``, ``lz4`` or ``zstd``."""
    crc: int
    """Stored CRC (CRC-32C for v2, CRC-32 for v0/v1), unsigned."""
    crc_ok: bool
    """``isvalid:``."""
    records: list[OracleRecord] = field(default_factory=list)

    @property
    def is_legacy(self) -> bool:
        return self.magic < 2


@dataclass(frozen=True, slots=True)
class LogDump:
    """A parsed ``<base>.log.*.txt.gz`` oracle."""

    dumped_path: str
    """The path after ``Dumping`` (corpus-relative in this corpus)."""
    start_offset: int | None
    """``Log starting offset:`` (the file name's base offset)."""
    batches: list[OracleBatch]
    invalid_trailing_bytes: int | None
    """``Found N invalid bytes at the end of F``; ``None`` when the line is absent."""
    invalid_trailing_file: str | None
    decoded: bool
    """True for the ``--*-decoder`` variants: ``key``/``payload`` are decoder text, unrelated to the sizes."""
    other_lines: list[str]
    """Lines of no known shape (always empty in the corpus)."""
    stderr: OracleStderr | None
    """The sibling ``<oracle>.stderr`` when present (e.g. ``Non-consecutive offsets``); else the summary found
    inline at the end of stdout (see ``stderr_inline``); else None."""
    stderr_inline: bool
    """True when the stderr summary was captured into the stdout oracle itself (the running copy's
    ``*.log.deleted.deep.txt.gz`` end with ``Non-consecutive offsets in /tmp/lo/...`` lines)."""
    exit_code: int
    """The sibling ``<oracle>.rc`` when present, else 0."""

    def iter_records(self) -> Iterator[OracleRecord]:
        for batch in self.batches:
            yield from batch.records

    @property
    def records(self) -> list[OracleRecord]:
        return [r for b in self.batches for r in b.records]

    @property
    def record_count(self) -> int:
        return sum(len(b.records) for b in self.batches)


class OffsetIndexEntry(NamedTuple):
    offset: int
    """Absolute offset."""
    position: int


class TimeIndexEntry(NamedTuple):
    timestamp: int
    offset: int
    """Absolute offset."""


@dataclass(frozen=True, slots=True)
class OffsetIndexDump:
    """A parsed ``<base>.index.{dump,verify-index-only,index-sanity-check}.txt`` oracle."""

    dumped_path: str
    entries: list[OffsetIndexEntry]
    """Empty for ``verify-index-only`` and ``index-sanity-check`` (they print no entries)."""
    is_empty: bool
    """``<file> is empty.`` was printed (index of 0 entries; printed before any sanity check)."""
    sanity_check_passed: bool | None
    """True when ``<file> passed sanity check.`` was printed; False for a failed ``index-sanity-check``
    oracle; None otherwise, including an empty index (Kafka returns before running the check)."""
    other_lines: list[str]
    stderr: OracleStderr | None
    exit_code: int


@dataclass(frozen=True, slots=True)
class TimeIndexDump:
    """A parsed ``<base>.timeindex.{dump,verify-index-only,index-sanity-check}.txt`` oracle.

    A time index with 0 entries prints nothing after ``Dumping`` (no "is empty." line, unlike ``.index``).
    """

    dumped_path: str
    entries: list[TimeIndexEntry]
    sanity_check_passed: bool | None
    other_lines: list[str]
    stderr: OracleStderr | None
    exit_code: int


@dataclass(frozen=True, slots=True)
class ProducerSnapshotEntry:
    """One line of a ``.snapshot`` dump."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    current_txn_first_offset: int | None
    """``OptionalLong[x]`` -> x, ``OptionalLong.empty`` -> None."""
    last_timestamp: int
    first_sequence: int | None = None
    """The optional batch-metadata part (absent when the entry has no batch metadata)."""
    last_sequence: int | None = None
    last_offset: int | None = None
    offset_delta: int | None = None
    timestamp: int | None = None


@dataclass(frozen=True, slots=True)
class ProducerSnapshotDump:
    dumped_path: str
    entries: list[ProducerSnapshotEntry]
    other_lines: list[str]
    stderr: OracleStderr | None
    exit_code: int


class AbortedTxnEntry(NamedTuple):
    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


@dataclass(frozen=True, slots=True)
class TxnIndexDump:
    dumped_path: str
    entries: list[AbortedTxnEntry]
    other_lines: list[str]
    stderr: OracleStderr | None
    exit_code: int


@dataclass(frozen=True, slots=True)
class OracleStderr:
    """A parsed ``*.stderr`` file: the summaries DumpLogSegments prints after all files (section 1.5)."""

    text: str
    non_consecutive_offsets: dict[str, list[tuple[int, int]]]
    """path -> ``(a, b)`` pairs of ``a is followed by b``, in printed order (newest first)."""
    index_mismatches: dict[str, list[tuple[int, int]]]
    """path -> ``(index_offset, log_offset)`` pairs (``Mismatches in :<path>``), in printed order."""
    timestamp_mismatches: dict[str, list[tuple[int, int]]]
    """path -> ``(index_timestamp, log_timestamp)``."""
    out_of_order_timestamps: dict[str, list[tuple[int, int]]]
    """path -> ``(index_timestamp, previously_indexed_timestamp)``."""
    offsets_not_found: list[tuple[int, int]]
    """``(indexed_offset, found_log_offset)``; this section names no file."""
    exception: str | None
    """``<class>: <message>`` of an ``Exception in thread "main"`` abort."""
    traceback: list[str]
    ignored_files: list[str]
    other_lines: list[str]


def read_oracle_text(path: str | Path) -> str:
    """Read an oracle file (gzip'ed or plain) as text without touching any line ending.

    Undecodable bytes (none in the corpus) are kept as surrogate escapes, so UTF-8 lengths stay exact.
    """
    data = Path(path).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode("utf-8", "surrogateescape")


def _split_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _sibling(oracle_path: str | Path, suffix: str) -> Path:
    """``<oracle>.rc``/``.stderr``, named after the uncompressed oracle (``x.txt.rc`` for ``x.txt.gz``)."""
    path = Path(oracle_path)
    if path.name.endswith(".gz"):
        path = path.with_name(path.name[: -len(".gz")])
    return path.with_name(path.name + suffix)


def read_exit_code(oracle_path: str | Path) -> int:
    """The exit status kept in ``<oracle>.rc`` (only written when non-zero), else 0."""
    rc = _sibling(oracle_path, ".rc")
    if not rc.exists():
        return 0
    return int(rc.read_text().strip())


def load_stderr(oracle_path: str | Path) -> OracleStderr | None:
    """Parse ``<oracle>.stderr`` (only written when non-empty), or return None."""
    path = _sibling(oracle_path, ".stderr")
    return parse_stderr(path) if path.exists() else None


_V2_BATCH = re.compile(
    r"baseOffset: (-?\d+) lastOffset: (-?\d+) count: (-?\d+) baseSequence: (-?\d+) lastSequence: (-?\d+)"
    r" producerId: (-?\d+) producerEpoch: (-?\d+) partitionLeaderEpoch: (-?\d+)"
    r" isTransactional: (true|false) isControl: (true|false)"
    r" deleteHorizonMs: OptionalLong(?:\.empty|\[(-?\d+)\]) position: (-?\d+) (\w+): (-?\d+) size: (-?\d+)"
    r" magic: (-?\d+) compresscodec: (\w+) crc: (\d+) isvalid: (true|false)"
)
_LEGACY_BATCH = re.compile(
    r"offset: (-?\d+) position: (-?\d+) (\w+): (-?\d+) size: (-?\d+) magic: (-?\d+) compresscodec: (\w+)"
    r" crc: (\d+) isvalid: (true|false)"
)
_V2_RECORD = re.compile(
    r"\| offset: (-?\d+) (\w+): (-?\d+) keySize: (-?\d+) valueSize: (-?\d+) sequence: (-?\d+) headerKeys: \["
)
_LEGACY_RECORD = re.compile(
    r"\| offset: (-?\d+) (\w+): (-?\d+) keySize: (-?\d+) valueSize: (-?\d+) isValid: (true|false)"
    r" crc: (\d+)\}?"
)
_TRAILER = re.compile(r"Found (\d+) invalid bytes at the end of (.*)")
_END_TXN = re.compile(r"endTxnMarker: (\w+) coordinatorEpoch: (-?\d+)")

# What may follow the closing ``]`` of ``headerKeys: [...]``.
_AFTER_HEADERS = (
    " key: ",
    " payload: ",
    " endTxnMarker: ",
    " controlType: ",
    " LeaderChange: ",
    " SnapshotHeader ",
    " SnapshotFooter ",
    " KRaftVersion ",
    " KRaftVoters ",
)
# Headers of the stderr summaries (section 1.5), which may have been captured into stdout.
_STDERR_HEADERS = (
    "Non-consecutive offsets in ",
    "Mismatches in :",
    "Found timestamp mismatch in :",
    "Found out of order timestamp in :",
    "The following indexed offsets are not found in the log.",
    'Exception in thread "main" ',
)
_START_PREFIXES = (
    "| offset: ",
    "baseOffset: ",
    "offset: ",
    "Found ",
    "Dumping ",
    "Log starting offset: ",
    *_STDERR_HEADERS,
)


def _is_start_line(line: str) -> bool:
    """True if ``line`` begins a new record, batch, trailer or file section (not a continuation of data)."""
    if not line.startswith(_START_PREFIXES):
        return False
    if line.startswith("| offset: "):
        return bool(_V2_RECORD.match(line) or _LEGACY_RECORD.match(line))
    if line.startswith("baseOffset: "):
        return _V2_BATCH.fullmatch(line) is not None
    if line.startswith("offset: "):
        return _LEGACY_BATCH.fullmatch(line) is not None
    if line.startswith("Found ") and not line.startswith(_STDERR_HEADERS):
        return _TRAILER.fullmatch(line) is not None
    return True


def _fits(text: str, size: int) -> bool:
    """Could ``text`` be Kafka's UTF-8 decoding (with U+FFFD replacement) of exactly ``size`` bytes?"""
    if text.isascii():
        return len(text) == size
    encoded = len(text.encode("utf-8", "surrogateescape"))
    replaced = text.count("\ufffd")
    return encoded - 2 * replaced <= size <= encoded


def _split_sized(text: str, key_size: int, value_size: int) -> tuple[str | None, str | None] | None:
    """Cut `` key: K payload: V`` using the sizes; None if the text cannot be that record's data."""
    has_key, has_value = key_size >= 0, value_size >= 0
    if not has_key and not has_value:
        return (None, None) if text == "" else None
    if not has_key:
        if text.startswith(" payload: ") and _fits(text[10:], value_size):
            return None, text[10:]
        return None
    if not text.startswith(" key: "):
        return None
    if not has_value:
        return (text[6:], None) if _fits(text[6:], key_size) else None
    at = text.find(" payload: ", 6)
    while at >= 0:
        key, payload = text[6:at], text[at + 10 :]
        if _fits(key, key_size) and _fits(payload, value_size):
            return key, payload
        at = text.find(" payload: ", at + 1)
    return None


def _split_decoded(text: str) -> tuple[str | None, str | None] | None:
    """Cut decoder output: key up to the first `` payload: ``."""
    if text == "":
        return None, None
    if text.startswith(" key: "):
        at = text.find(" payload: ", 6)
        if at < 0:
            return text[6:], None
        return text[6:at], text[at + 10 :]
    if text.startswith(" payload: "):
        return None, text[10:]
    return None


def _split_header_keys(rest: str) -> tuple[list[str], str]:
    """Split ``k1,k2]<tail>`` (what follows ``headerKeys: [``) into the keys and the tail."""
    at = rest.find("]")
    while at >= 0:
        tail = rest[at + 1 :]
        if tail == "" or tail.startswith(_AFTER_HEADERS):
            inner = rest[:at]
            return (inner.split(",") if inner else []), tail
        at = rest.find("]", at + 1)
    raise OracleParseError(f"unterminated headerKeys list: {rest[:200]!r}")


def _parse_control(tail: str) -> ControlInfo:
    text = tail[1:] if tail.startswith(" ") else tail
    m = _END_TXN.fullmatch(text)
    if m:
        return m.group(1), int(m.group(2))
    return text


def _v2_batch(m: re.Match[str]) -> OracleBatch:
    g = m.groups()
    return OracleBatch(
        base_offset=int(g[0]),
        last_offset=int(g[1]),
        count=int(g[2]),
        base_sequence=int(g[3]),
        last_sequence=int(g[4]),
        producer_id=int(g[5]),
        producer_epoch=int(g[6]),
        partition_leader_epoch=int(g[7]),
        is_transactional=g[8] == "true",
        is_control=g[9] == "true",
        delete_horizon_ms=None if g[10] is None else int(g[10]),
        position=int(g[11]),
        timestamp_type=g[12],
        max_timestamp=int(g[13]),
        size=int(g[14]),
        magic=int(g[15]),
        compression=g[16],
        crc=int(g[17]),
        crc_ok=g[18] == "true",
    )


def _legacy_batch(m: re.Match[str]) -> OracleBatch:
    g = m.groups()
    return OracleBatch(
        base_offset=None,
        last_offset=int(g[0]),
        count=None,
        base_sequence=None,
        last_sequence=None,
        producer_id=None,
        producer_epoch=None,
        partition_leader_epoch=None,
        is_transactional=False,
        is_control=False,
        delete_horizon_ms=None,
        position=int(g[1]),
        timestamp_type=g[2],
        max_timestamp=int(g[3]),
        size=int(g[4]),
        magic=int(g[5]),
        compression=g[6],
        crc=int(g[7]),
        crc_ok=g[8] == "true",
    )


def _infer_print_data(name: str) -> bool | None:
    if "print-data-log" in name:
        return True
    if ".deep." in name or ".shallow." in name:
        return False
    return None


def parse_log_dump(
    path: str | Path, *, decoded: bool | None = None, print_data: bool | None = None
) -> LogDump:
    """Parse a ``.log`` dump: shallow, deep, deep with ``--print-data-log``, or a decoder variant.

    Args:
        path: the oracle file (``.txt.gz`` or plain text).
        decoded: whether key/payload text comes from a ``--*-decoder`` (default: ``-decoder.`` in the name).
        print_data: whether ``--print-data-log`` was given (default: from the name; ``None`` = accept both).

    Raises:
        OracleParseError: the text does not have DumpLogSegments' shape, or a printed key/value cannot be
            reconciled with its ``keySize``/``valueSize``.
    """
    path = Path(path)
    if decoded is None:
        decoded = "-decoder." in path.name
    if print_data is None:
        print_data = _infer_print_data(path.name)
    lines = _split_lines(read_oracle_text(path))
    n = len(lines)

    dumped_path = ""
    start_offset: int | None = None
    batches: list[OracleBatch] = []
    trailing: int | None = None
    trailing_file: str | None = None
    other: list[str] = []
    batch: OracleBatch | None = None
    inline: OracleStderr | None = None

    i = 0
    while i < n:
        line = lines[i]
        if line.startswith("| offset: "):
            if batch is None:
                raise OracleParseError(f"{path}:{i + 1}: record line before any batch line")
            i = _parse_record(path, lines, i, batch, decoded, print_data)
            continue
        i += 1
        if line.startswith("baseOffset: "):
            m = _V2_BATCH.fullmatch(line)
            if m is None:
                raise OracleParseError(f"{path}:{i}: malformed batch line {line[:200]!r}")
            batch = _v2_batch(m)
            batches.append(batch)
        elif line.startswith("offset: "):
            m = _LEGACY_BATCH.fullmatch(line)
            if m is None:
                raise OracleParseError(f"{path}:{i}: malformed legacy batch line {line[:200]!r}")
            batch = _legacy_batch(m)
            batches.append(batch)
        elif line.startswith("Dumping ") and not dumped_path:
            dumped_path = line[len("Dumping ") :]
        elif line.startswith("Log starting offset: ") and start_offset is None:
            start_offset = int(line[len("Log starting offset: ") :])
        elif (m := _TRAILER.fullmatch(line)) is not None:
            trailing, trailing_file = int(m.group(1)), m.group(2)
        elif line.startswith(_STDERR_HEADERS):
            # stderr captured into stdout: everything from here on is the summary.
            inline = _parse_stderr_text("\n".join(lines[i - 1 :]) + "\n")
            break
        else:
            other.append(line)

    stderr = load_stderr(path)
    return LogDump(
        dumped_path=dumped_path,
        start_offset=start_offset,
        batches=batches,
        invalid_trailing_bytes=trailing,
        invalid_trailing_file=trailing_file,
        decoded=decoded,
        other_lines=other,
        stderr=stderr if stderr is not None else inline,
        stderr_inline=stderr is None and inline is not None,
        exit_code=read_exit_code(path),
    )


def _next_start(lines: list[str], j: int) -> int:
    n = len(lines)
    while j < n and not _is_start_line(lines[j]):
        j += 1
    return j


def _parse_record(
    path: Path, lines: list[str], i: int, batch: OracleBatch, decoded: bool, print_data: bool | None
) -> int:
    """Parse the record starting at ``lines[i]`` into ``batch``; return the index of the next line."""
    line = lines[i]
    if batch.magic >= 2:
        m = _V2_RECORD.match(line)
        if m is None:
            raise OracleParseError(f"{path}:{i + 1}: malformed v2 record line {line[:200]!r}")
        header_keys, tail = _split_header_keys(line[m.end() :])
        sequence: int | None = int(m.group(6))
        is_valid: bool | None = None
        crc: int | None = None
    else:
        m = _LEGACY_RECORD.match(line)
        if m is None:
            raise OracleParseError(f"{path}:{i + 1}: malformed legacy record line {line[:200]!r}")
        header_keys, tail = None, line[m.end() :]
        sequence = None
        is_valid = m.group(6) == "true"
        crc = int(m.group(7))
    offset, ts_type, ts = int(m.group(1)), m.group(2), int(m.group(3))
    key_size, value_size = int(m.group(4)), int(m.group(5))

    control: ControlInfo | None = None
    key: str | None = None
    payload: str | None = None
    end = i + 1
    if batch.is_control:
        control = _parse_control(tail)
    else:
        end = _next_start(lines, i + 1)
        parts = [tail, *lines[i + 1 : end]]
        if len(parts) == 1 and tail == "":
            if print_data and not decoded and (key_size >= 0 or value_size >= 0):
                raise OracleParseError(f"{path}:{i + 1}: --print-data-log record without key/payload text")
        else:
            if print_data is False:
                raise OracleParseError(f"{path}:{i + 1}: unexpected text after a record: {tail[:200]!r}")
            text = "\n".join(parts)
            split = _split_decoded(text) if decoded else _split_sized(text, key_size, value_size)
            # A value holding "\n" followed by something that looks like a new line of the dump: extend the
            # record to the next structural line until the sizes fit.
            while split is None and not decoded and end < len(lines):
                nxt = _next_start(lines, end + 1)
                text = "\n".join([text, *lines[end:nxt]])
                end = nxt
                split = _split_sized(text, key_size, value_size)
            if split is None:
                raise OracleParseError(
                    f"{path}:{i + 1}: cannot reconcile printed data with keySize {key_size} / valueSize"
                    f" {value_size}: {parts[0][:200]!r}"
                )
            key, payload = split

    batch.records.append(
        OracleRecord(
            offset=offset,
            timestamp_type=ts_type,
            timestamp=ts,
            key_size=key_size,
            value_size=value_size,
            sequence=sequence,
            header_keys=header_keys,
            is_valid=is_valid,
            crc=crc,
            control=control,
            key=key,
            payload=payload,
        )
    )
    return end


def facts_from_log_dump(dump: LogDump) -> dict[str, Any]:
    """Compute the per-segment fields of ``expected/facts.json`` (``segments_from_dump``) from a deep dump.

    Keys: ``batches``, ``records``, ``control_batches``, ``transactional_batches``, ``first_offset``,
    ``last_offset``, ``magic`` (str(magic) -> count), ``codecs``, ``control_records`` (control type -> count),
    ``batch_record_count_gaps`` (v2 batches with ``last_offset - base_offset + 1 != count``).
    """
    offsets = [r.offset for r in dump.iter_records()]
    control_records: Counter[str] = Counter()
    for record in dump.iter_records():
        label = record.control_type
        if label is not None:
            control_records[label] += 1
    return {
        "batches": len(dump.batches),
        "records": len(offsets),
        "control_batches": sum(b.is_control for b in dump.batches),
        "transactional_batches": sum(b.is_transactional for b in dump.batches),
        "first_offset": min(offsets) if offsets else None,
        "last_offset": max(offsets) if offsets else None,
        "magic": dict(Counter(str(b.magic) for b in dump.batches)),
        "codecs": dict(Counter(b.compression for b in dump.batches)),
        "control_records": dict(control_records),
        "batch_record_count_gaps": sum(
            1
            for b in dump.batches
            if b.base_offset is not None
            and b.count is not None
            and b.last_offset - b.base_offset + 1 != b.count
        ),
    }


_INDEX_ENTRY = re.compile(r"offset: (-?\d+) position: (-?\d+)")
_TIME_ENTRY = re.compile(r"timestamp: (-?\d+) offset: (-?\d+)")
_SNAPSHOT_ENTRY = re.compile(
    r"producerId: (-?\d+) producerEpoch: (-?\d+) coordinatorEpoch: (-?\d+)"
    r" currentTxnFirstOffset: OptionalLong(?:\.empty|\[(-?\d+)\]) lastTimestamp: (-?\d+)"
    r"(?: +firstSequence: (-?\d+) lastSequence: (-?\d+) lastOffset: (-?\d+) offsetDelta: (-?\d+)"
    r" timestamp: (-?\d+))? *"
)
_TXN_ENTRY = re.compile(
    r"version: (-?\d+) producerId: (-?\d+) firstOffset: (-?\d+) lastOffset: (-?\d+) lastStableOffset: (-?\d+)"
)


def _dumped_path(lines: list[str], path: Path) -> tuple[str, list[str]]:
    if not lines:
        # A run that aborted before printing anything (never the case in this corpus).
        return "", []
    if not lines[0].startswith("Dumping "):
        raise OracleParseError(f"{path}:1: expected a 'Dumping <file>' line, got {lines[0][:200]!r}")
    return lines[0][len("Dumping ") :], lines[1:]


def _sanity_flag(passed: bool, path: Path) -> bool | None:
    if passed:
        return True
    return False if ".index-sanity-check." in path.name else None


def parse_index_dump(path: str | Path) -> OffsetIndexDump:
    """Parse an ``.index`` oracle: ``dump``, ``verify-index-only`` or ``index-sanity-check``."""
    path = Path(path)
    dumped, body = _dumped_path(_split_lines(read_oracle_text(path)), path)
    entries: list[OffsetIndexEntry] = []
    other: list[str] = []
    is_empty = passed = False
    for line in body:
        m = _INDEX_ENTRY.fullmatch(line)
        if m:
            entries.append(OffsetIndexEntry(int(m.group(1)), int(m.group(2))))
        elif line == f"{dumped} is empty.":
            is_empty = True
        elif line == f"{dumped} passed sanity check.":
            passed = True
        else:
            other.append(line)
    return OffsetIndexDump(
        dumped_path=dumped,
        entries=entries,
        is_empty=is_empty,
        sanity_check_passed=None if is_empty else _sanity_flag(passed, path),
        other_lines=other,
        stderr=load_stderr(path),
        exit_code=read_exit_code(path),
    )


def parse_time_index_dump(path: str | Path) -> TimeIndexDump:
    """Parse a ``.timeindex`` oracle: ``dump``, ``verify-index-only`` or ``index-sanity-check``."""
    path = Path(path)
    dumped, body = _dumped_path(_split_lines(read_oracle_text(path)), path)
    entries: list[TimeIndexEntry] = []
    other: list[str] = []
    passed = False
    for line in body:
        m = _TIME_ENTRY.fullmatch(line)
        if m:
            entries.append(TimeIndexEntry(int(m.group(1)), int(m.group(2))))
        elif line == f"{dumped} passed sanity check.":
            passed = True
        else:
            other.append(line)
    return TimeIndexDump(
        dumped_path=dumped,
        entries=entries,
        sanity_check_passed=_sanity_flag(passed, path),
        other_lines=other,
        stderr=load_stderr(path),
        exit_code=read_exit_code(path),
    )


def _opt_int(text: str | None) -> int | None:
    return None if text is None else int(text)


def parse_snapshot_dump(path: str | Path) -> ProducerSnapshotDump:
    """Parse a ``.snapshot`` (producer state) oracle."""
    path = Path(path)
    dumped, body = _dumped_path(_split_lines(read_oracle_text(path)), path)
    entries: list[ProducerSnapshotEntry] = []
    other: list[str] = []
    for line in body:
        m = _SNAPSHOT_ENTRY.fullmatch(line)
        if m is None:
            other.append(line)
            continue
        g = m.groups()
        entries.append(
            ProducerSnapshotEntry(
                producer_id=int(g[0]),
                producer_epoch=int(g[1]),
                coordinator_epoch=int(g[2]),
                current_txn_first_offset=_opt_int(g[3]),
                last_timestamp=int(g[4]),
                first_sequence=_opt_int(g[5]),
                last_sequence=_opt_int(g[6]),
                last_offset=_opt_int(g[7]),
                offset_delta=_opt_int(g[8]),
                timestamp=_opt_int(g[9]),
            )
        )
    return ProducerSnapshotDump(
        dumped_path=dumped,
        entries=entries,
        other_lines=other,
        stderr=load_stderr(path),
        exit_code=read_exit_code(path),
    )


def parse_txnindex_dump(path: str | Path) -> TxnIndexDump:
    """Parse a ``.txnindex`` (aborted transactions) oracle."""
    path = Path(path)
    dumped, body = _dumped_path(_split_lines(read_oracle_text(path)), path)
    entries: list[AbortedTxnEntry] = []
    other: list[str] = []
    for line in body:
        m = _TXN_ENTRY.fullmatch(line)
        if m:
            entries.append(AbortedTxnEntry(*(int(x) for x in m.groups())))
        else:
            other.append(line)
    return TxnIndexDump(
        dumped_path=dumped,
        entries=entries,
        other_lines=other,
        stderr=load_stderr(path),
        exit_code=read_exit_code(path),
    )


_PAIR_SECTIONS: dict[str, tuple[str, re.Pattern[str]]] = {
    "Non-consecutive offsets in ": (
        "non_consecutive_offsets",
        re.compile(r"  (-?\d+) is followed by (-?\d+)"),
    ),
    "Mismatches in :": ("index_mismatches", re.compile(r"  Index offset: (-?\d+), log offset: (-?\d+)")),
    "Found timestamp mismatch in :": (
        "timestamp_mismatches",
        re.compile(r"  Index timestamp: (-?\d+), log timestamp: (-?\d+)"),
    ),
    "Found out of order timestamp in :": (
        "out_of_order_timestamps",
        re.compile(r"  Index timestamp: (-?\d+), Previously indexed timestamp: (-?\d+)"),
    ),
}
_NOT_FOUND_HEADER = "The following indexed offsets are not found in the log."
_NOT_FOUND_ITEM = re.compile(r"Indexed offset: (-?\d+), found log offset: (-?\d+)")


def parse_stderr(path: str | Path) -> OracleStderr:
    """Parse a ``*.stderr`` oracle (summaries, an aborting exception, ``Ignoring unknown file``)."""
    return _parse_stderr_text(read_oracle_text(path))


def _parse_stderr_text(text: str) -> OracleStderr:
    sections: dict[str, dict[str, list[tuple[int, int]]]] = {name: {} for name, _ in _PAIR_SECTIONS.values()}
    not_found: list[tuple[int, int]] = []
    exception: str | None = None
    traceback: list[str] = []
    ignored: list[str] = []
    other: list[str] = []
    current: list[tuple[int, int]] | None = None
    item: re.Pattern[str] | None = None
    for line in _split_lines(text):
        if item is not None and current is not None and (m := item.fullmatch(line)):
            current.append((int(m.group(1)), int(m.group(2))))
            continue
        current, item = None, None
        for header, (name, pattern) in _PAIR_SECTIONS.items():
            if line.startswith(header):
                current = sections[name].setdefault(line[len(header) :], [])
                item = pattern
                break
        else:
            if line == _NOT_FOUND_HEADER:
                current, item = not_found, _NOT_FOUND_ITEM
            elif line.startswith('Exception in thread "main" '):
                exception = line[len('Exception in thread "main" ') :]
            elif exception is not None and (line.startswith(("\tat ", "\t... ", "Caused by: "))):
                traceback.append(line)
            elif line.startswith("Ignoring unknown file "):
                ignored.append(line[len("Ignoring unknown file ") :])
            else:
                other.append(line)
    return OracleStderr(
        text=text,
        non_consecutive_offsets=sections["non_consecutive_offsets"],
        index_mismatches=sections["index_mismatches"],
        timestamp_mismatches=sections["timestamp_mismatches"],
        out_of_order_timestamps=sections["out_of_order_timestamps"],
        offsets_not_found=not_found,
        exception=exception,
        traceback=traceback,
        ignored_files=ignored,
        other_lines=other,
    )


OracleDump = LogDump | OffsetIndexDump | TimeIndexDump | ProducerSnapshotDump | TxnIndexDump


def parse_oracle(path: str | Path) -> OracleDump:
    """Parse any stdout oracle by its name (``<base>.<ext>.<variant>.txt[.gz]``)."""
    name = Path(path).name
    parts = name.split(".")
    if len(parts) < 3:
        raise OracleParseError(f"not an oracle file name: {name}")
    ext = parts[1]
    if ext == "log":
        return parse_log_dump(path)
    if ext == "index":
        return parse_index_dump(path)
    if ext == "timeindex":
        return parse_time_index_dump(path)
    if ext == "snapshot":
        return parse_snapshot_dump(path)
    if ext == "txnindex":
        return parse_txnindex_dump(path)
    raise OracleParseError(f"not an oracle file name: {name}")
