"""What Kafka's own `kafka-dump-log.sh` (DumpLogSegments) prints, line for line.

`kdump dump` given Kafka's flags (`--files`, `--deep-iteration`, `--print-data-log`, the decoders ...)
prints this instead of its own format, so runbooks written for Kafka's tool keep working and their
output can be compared with Kafka's. The text is the one of a chosen Kafka release (`ToolOptions.release`):

* 3.x (the Scala tool): legacy (v0/v1) record lines end with a stray `}`; the `Non-consecutive offsets`
  summary starts at the first record and lists the newest pair first; with `--skip-record-metadata` a
  payload of a record without key follows a bare space.
* 4.x (the Java tool): no stray `}`; the summary starts from offset -1 (a segment that does not start at
  offset 0 is reported) and lists pairs in ascending order (4.0 to 4.2 print none); with `--skip-record-metadata` the first
  printed part follows `| `. Decoded internal records are printed in each release's own text
  (`kafka_decoded`).

Stdout lines are yielded; what Kafka prints on stderr at once (`Ignoring unknown file`, a corrupt
snapshot) goes to `ToolReport.say`, and the summaries Kafka prints after the last file are kept in the
`ToolReport` (`summary_lines`). Where Kafka's tool dies with an exception, `ToolAbort` is raised.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kdump.errors import DecodeError
from kdump.findings import Finding
from kdump.formats.batch import BatchHeader
from kdump.formats.fast_walk import BatchRun
from kdump.formats.filenames import parse_segment_file_name
from kdump.formats.internal import decode_control_record, decode_with
from kdump.formats.internal.java_text import java_utf8_decode
from kdump.formats.internal.transaction_log import java_string_hash
from kdump.formats.records import Record
from kdump.render import rows
from kdump.render.kafka_decoded import NEWEST_KAFKA, kafka_release
from kdump.render.kafka_tool_fast import KafkaBatchLines, KafkaRecordLines
from kdump.render.text import batch_line
from kdump.scan import open_buffer, scan_log
from kdump.scan.batch_checks import decode_batch_records
from kdump.scan.events import Event

INT_MAX = 2**31 - 1
"""Kafka's default `--max-bytes` (Integer.MAX_VALUE): the whole file, and the trailing-bytes line."""
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
"""Kafka's default `--max-message-size`."""


@dataclass(frozen=True, slots=True)
class ToolOptions:
    """Kafka's flags, as DumpLogSegments derives them (a decoder implies the data, the data implies deep)."""

    deep: bool = False
    print_data: bool = False
    decoder: str | None = None
    key_class: str = "org.apache.kafka.tools.api.StringDecoder"
    value_class: str = "org.apache.kafka.tools.api.StringDecoder"
    skip_metadata: bool = False
    verify_only: bool = False
    sanity_only: bool = False
    max_bytes: int = INT_MAX
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    release: str = NEWEST_KAFKA

    @property
    def java(self) -> bool:
        """Whether the release ships the Java tool (4.0 and later)."""
        return kafka_release(self.release) >= (4, 0)


class ToolAbort(Exception):
    """Kafka's tool stops here with an uncaught exception (exit status 1); without a Java class, kdump
    cannot say which exception and says why it stops instead."""

    def __init__(self, java_class: str, message: str) -> None:
        super().__init__(f"{java_class}: {message}")
        self.java_class = java_class
        self.message = message
        self.partial = ""
        """What Kafka had already printed of the current line (it prints without a line break)."""


@dataclass
class PathPairs:
    """One of Kafka's summaries: pairs of numbers per file (absolute path), and every time Kafka looked
    a file up in its map, which decides the map's size and so the order files are printed in."""

    pairs: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    touches: list[str] = field(default_factory=list)

    def add(self, path: Path, pair: tuple[int, int]) -> None:
        name = str(path.absolute())
        self.touches.append(name)
        self.pairs.setdefault(name, []).append(pair)

    def files(self, java: bool, *, scala_puts_once: bool = False) -> list[str]:
        """The files in the order Kafka's map iterates them."""
        touches = self.touches
        if scala_puts_once and not java:
            touches = list(dict.fromkeys(touches))
        return hash_map_order(touches, java)


@dataclass
class ToolReport:
    """What Kafka prints on stderr: at once (`say`), and the summaries after the last file."""

    say: Callable[[str], None]
    index_mismatches: PathPairs = field(default_factory=PathPairs)
    timestamp_mismatches: PathPairs = field(default_factory=PathPairs)
    out_of_order_timestamps: PathPairs = field(default_factory=PathPairs)
    offsets_not_found: PathPairs = field(default_factory=PathPairs)
    non_consecutive: PathPairs = field(default_factory=PathPairs)

    def summary_lines(self, opts: ToolOptions) -> list[str]:
        """The summaries, in Kafka's order (its hash maps' order across files)."""
        java = opts.java
        out: list[str] = []
        for name in self.index_mismatches.files(java):
            out.append(f"Mismatches in :{name}")
            pairs = self.index_mismatches.pairs[name]
            # 3.x prepends to a list; 4.x keeps a map from index offset, largest first.
            shown = sorted(dict(pairs).items(), reverse=True) if java else pairs[::-1]
            out += [f"  Index offset: {a}, log offset: {b}" for a, b in shown]
        # 3.x puts a time index's list in its map once, when it is created.
        for name in self.timestamp_mismatches.files(java, scala_puts_once=True):
            out.append(f"Found timestamp mismatch in :{name}")
            out += [
                f"  Index timestamp: {a}, log timestamp: {b}"
                for a, b in self.timestamp_mismatches.pairs[name]
            ]
        for name in self.out_of_order_timestamps.files(java, scala_puts_once=True):
            out.append(f"Found out of order timestamp in :{name}")
            out += [
                f"  Index timestamp: {a}, Previously indexed timestamp: {b}"
                for a, b in self.out_of_order_timestamps.pairs[name]
            ]
        for name in self.offsets_not_found.files(java, scala_puts_once=True):
            out.append("The following indexed offsets are not found in the log.")
            out += [
                f"Indexed offset: {a}, found log offset: {b}" for a, b in self.offsets_not_found.pairs[name]
            ]
        if (4, 0) <= kafka_release(opts.release) < (4, 3):
            return out  # 4.0's to 4.2's tool print no such summary (seen on 4.0.0, 4.1.1 and 4.2.0)
        for name in self.non_consecutive.files(java):
            out.append(f"Non-consecutive offsets in {name}")
            pairs = self.non_consecutive.pairs[name]
            # 3.x prepends to a list; 4.x keeps a map from the earlier offset, smallest first.
            shown = sorted(dict(pairs).items()) if java else pairs[::-1]
            out += [f"  {a} is followed by {b}" for a, b in shown]
        return out


def _spread(name: str) -> int:
    """The hash both maps use: Java's String.hashCode with its high half folded into the low one."""
    h = java_string_hash(name)
    return h ^ (h >> 16)


def hash_map_order(touches: list[str], java: bool) -> list[str]:
    """The order in which a hash map iterates keys touched in this sequence (with repeats).

    Java's tool (4.x) calls `HashMap.computeIfAbsent` at every touch: the table (16 buckets at first)
    doubles at a touch that finds more entries than 3/4 of it, and a new key goes to the head of its
    bucket, so a bucket lists its keys newest first. Scala's tool (3.x) calls `mutable.HashMap.put` at
    every touch: the table doubles when one more entry would reach 3/4 of it, and a bucket keeps its
    keys sorted by hash (as a signed int).
    """
    capacity, size, seen = 16, 0, {}
    for name in touches:
        if java:
            if size > capacity * 3 // 4:
                capacity *= 2
        elif size + 1 >= capacity * 3 // 4:
            capacity *= 2
        if name not in seen:
            seen[name] = size
            size += 1

    def key(name: str) -> tuple[int, int]:
        h = _spread(name)
        if java:
            return h & (capacity - 1), -seen[name]
        return h & (capacity - 1), h - (1 << 32) if h >= 1 << 31 else h

    return sorted(seen, key=key)


def shown_path(arg: str) -> str:
    """How Java's `File.toString` shows a path given on the command line (`a//b/` -> `a/b`)."""
    text = re.sub("/+", "/", arg)
    return text[:-1] if len(text) > 1 and text.endswith("/") else text


def base_offset_of(path: Path) -> int:
    """The number before the first dot of the name, as Kafka's tool reads it."""
    head = path.name.split(".")[0]
    try:
        return int(head)
    except ValueError:
        raise ToolAbort("java.lang.NumberFormatException", f'For input string: "{head}"') from None


_API = "org.apache.kafka.tools.api."
DECODER_CLASSES = {
    f"{_API}StringDecoder": "string",
    f"{_API}IntegerDecoder": "int",
    f"{_API}LongDecoder": "long",
}
"""The `--key-decoder-class`/`--value-decoder-class` values kdump reads as Kafka's classes do."""
_OLD = "kafka.serializer."
OLD_DECODER_CLASSES = {f"{_OLD}StringDecoder", f"{_OLD}IntegerDecoder", f"{_OLD}LongDecoder"}
"""The 3.x names, which 3.x's tool maps to the classes above with a note and 4.x no longer loads."""


def _decoder_notes(opts: ToolOptions) -> Iterator[str]:
    """What building the decoders prints before each log (3.x), or Kafka's failure to load them (4.x)."""
    for name in (opts.value_class, opts.key_class):
        if name in OLD_DECODER_CLASSES:
            if opts.java:
                raise ToolAbort("java.lang.RuntimeException", "Failed to load decoder class")
            short = name.rsplit(".", 1)[1]
            yield f"{name} is deprecated. Please use {_API}{short} instead"


def log_lines(path: Path, shown: str, opts: ToolOptions, report: ToolReport) -> Iterator[str | bytes]:
    """A `.log` segment or a KRaft snapshot (`.checkpoint`): batches, and records when deep.

    Lines come as text without their line break, except the record lines of a batch, or the batch
    lines of a run of batches, that the compiled path rendered (`kafka_tool_fast`): one bytes block of
    newline-terminated UTF-8 lines.
    """
    if opts.decoder is None:
        yield from _decoder_notes(opts)
    if path.name.endswith(".log"):
        base: int | None = base_offset_of(path)
        yield f"Log starting offset: {base}"
    elif path.name == "bootstrap.checkpoint":
        base = None
        yield "KRaft bootstrap snapshot"
    else:
        parsed = parse_segment_file_name(path.name)
        if parsed is None or parsed.epoch is None:
            raise ToolAbort("java.util.NoSuchElementException", "No value present")
        base = None
        yield f"Snapshot end offset: {parsed.base_offset}, epoch: {parsed.epoch}"
    if not path.is_file():
        raise ToolAbort("java.nio.file.NoSuchFileException", str(path))
    java = opts.java
    valid = 0
    previous = -1
    batch: BatchHeader | None = None
    diverged = False
    fast = _fast_lines(opts)
    # A shallow dump takes the scanner's runs of clean v2 batches whole (their batch lines in C).
    runs = not opts.deep and KafkaBatchLines.enabled()
    stopped = False
    with open_buffer(path) as buf:
        end = min(len(buf), opts.max_bytes)
        # The batch-level scan; a deep dump decodes each batch's records here, as a deep scan would.
        events: Iterator[Event | BatchRun] = (
            scan_log(buf, file=str(path), base_offset=base, batch_runs=True)
            if runs
            else scan_log(buf, file=str(path), base_offset=base)
        )
        for ev in events:
            if isinstance(ev, BatchRun):
                # The batches Kafka reads whole from `valid` on, in one call; the one it stops at (if
                # any) and those after it take the reference path below, which stops there.
                lines, count, valid = KafkaBatchLines.render(ev, valid, end)
                if lines:
                    yield lines
                if count == ev.n:
                    continue
                headers = ev.headers()[count:]
            elif isinstance(ev, BatchHeader):
                headers = [ev]
            else:
                if isinstance(ev, Finding) and opts.deep and batch is not None:
                    _check_readable(ev, batch, shown)
                continue
            for h in headers:
                # Kafka reads batch after batch and stops at the first that does not fit.
                expected = next_batch_size(buf, valid, end, shown)
                if expected is None:
                    stopped = True
                    break
                if h.position != valid or h.size != expected:
                    diverged = stopped = True
                    break
                batch = h
                valid += h.size
                done = fast.render(buf, h, previous) if fast is not None else None
                if done is not None:
                    lines, previous, gaps = done
                    for gap in gaps:
                        report.non_consecutive.add(path, gap)
                    head = (batch_line(h) + "\n").encode("utf-8", "surrogatepass")
                    if len(lines) < _JOIN_BELOW:
                        yield head + lines  # small batches: one write for both
                    else:
                        yield head  # large ones: no copy of their lines
                        yield lines
                    continue
                yield batch_line(h)
                if not opts.deep:
                    continue
                records, findings = decode_batch_records(buf, h, str(path))
                for f in findings:
                    _check_readable(f, batch, shown)
                for r in records:
                    if (java or previous != -1) and r.offset != previous + 1:
                        report.non_consecutive.add(path, (previous, r.offset))
                    previous = r.offset
                    yield record_line(r, batch, opts)
            if stopped:
                break
        if not stopped:
            diverged = next_batch_size(buf, valid, end, shown) is not None
        size = len(buf)
    if diverged:
        # Kafka's tool would print a damaged batch here from whatever its header says; kdump does not
        # imitate that (its own dump shows the damage as findings).
        report.say(
            f"kdump: {shown}: a damaged batch at position {valid} is not printed as Kafka's tool would"
        )
        return
    if size > valid and opts.max_bytes == INT_MAX:
        yield f"Found {size - valid} invalid bytes at the end of {path.name}"


def _check_readable(f: Finding, batch: BatchHeader, shown: str) -> None:
    if f.code in _UNREADABLE and f.position == batch.position:
        # Kafka's tool dies in this batch, after printing the records it could read.
        raise ToolAbort(
            "",
            f"{shown}: the records of the batch at position {batch.position} do not decode "
            f"({f.message}); Kafka's tool stops here with an exception kdump does not imitate",
        )


def _fast_lines(opts: ToolOptions) -> KafkaRecordLines | None:
    """The compiled record lines, where they print what `record_line` would: StringDecoder keys and
    values, no internal-topic decoder, the compiled path built and on."""
    if not opts.deep or opts.decoder is not None or not KafkaRecordLines.enabled():
        return None
    if _decoder_kind(opts.key_class) != "string" or _decoder_kind(opts.value_class) != "string":
        return None
    return KafkaRecordLines(print_data=opts.print_data, skip_metadata=opts.skip_metadata, java=opts.java)


_JOIN_BELOW = 64 << 10
"""Record lines shorter than this go out in one write with their batch line."""

_UNREADABLE = frozenset(
    {"codec-unavailable", "decompression-failed", "record-decode-failed", "record-count-mismatch"}
)
"""Findings of a batch whose records Kafka's deep iteration cannot read to the end."""


def next_batch_size(data: memoryview, position: int, end: int, shown: str) -> int | None:
    """The size of the batch Kafka's file iterator reads at `position` (None: it stops there).

    Raises `ToolAbort` where Kafka's iterator throws: a size field below the smallest legacy message.
    """
    if position + 17 >= end:
        return None
    (size,) = struct.unpack_from(">i", data, position + 8)
    if size < 14:
        raise ToolAbort(
            "org.apache.kafka.common.errors.CorruptRecordException",
            f"Found record size {size} smaller than minimum record overhead (14) in file {shown}.",
        )
    if position > end - 12 - size:
        return None
    return int(size) + 12


def record_line(r: Record, batch: BatchHeader, opts: ToolOptions) -> str:
    """One `| offset: ...` line (or, with --skip-record-metadata, only the key and payload)."""
    java = opts.java
    line = ""
    if not opts.skip_metadata:
        key_size = -1 if r.key is None else len(r.key)
        value_size = -1 if r.value is None else len(r.value)
        line = (
            f"| offset: {r.offset} {rows.timestamp_type_label(batch.timestamp_type)}: {r.timestamp} "
            f"keySize: {key_size} valueSize: {value_size}"
        )
        if batch.magic >= 2:
            keys = ",".join(java_utf8_decode(bytes(k)) for k, _ in r.headers)
            line += f" sequence: {r.sequence} headerKeys: [{keys}]"
        else:
            # Kafka 3.x's format string has a stray closing brace.
            line += f" isValid: {'true' if r.crc_ok else 'false'} crc: {r.crc}{'' if java else '}'}"
        if batch.is_control:
            line += _control_text(r, opts)
    if opts.print_data and not batch.is_control:
        try:
            key, payload = _contents(r, opts)
        except ToolAbort as exc:
            exc.partial = line
            raise
        prefix = "| " if opts.skip_metadata else " "
        if key is not None:
            line += f"{prefix}key: {key}"
            prefix = " "
        if payload is not None:
            line += f"{prefix if java else ' '}payload: {payload}"
    return line


def _control_text(r: Record, opts: ToolOptions) -> str:
    try:
        return decode_control_record(r.key, r.value).oracle_suffix(r.offset, kafka_release(opts.release))
    except DecodeError as exc:
        raise ToolAbort("org.apache.kafka.common.InvalidRecordException", str(exc)) from None


def _contents(r: Record, opts: ToolOptions) -> tuple[str | None, str | None]:
    """The key and payload texts: Java's UTF-8 reading of the bytes, or the chosen decoder's text."""
    if opts.decoder is None:
        key = None if r.key is None else _decode_as(opts.key_class, bytes(r.key))
        return key, None if r.value is None else _decode_as(opts.value_class, bytes(r.value))
    if opts.decoder in ("offsets", "transactions", "share-group-state") and r.key is None:
        raise ToolAbort(
            "java.lang.RuntimeException",
            f"Failed to decode message at offset {r.offset} using "
            + ("the specified decoder" if opts.java else "offset topic decoder")
            + " (message had a missing key)",
        )
    try:
        decoded = decode_with(opts.decoder, r.key, r.value)
        return decoded.oracle_key_payload(r.offset, kafka_release(opts.release))
    except DecodeError as exc:
        return f"Error at offset {r.offset}, skipping. {exc}", None


def _decode_as(class_name: str, data: bytes) -> str:
    """What Kafka's String, Integer or Long decoder makes of the bytes (the number from the first ones)."""
    kind = _decoder_kind(class_name)
    if kind == "string":
        return java_utf8_decode(data)
    size = 4 if kind == "int" else 8
    if len(data) < size:
        raise ToolAbort("java.nio.BufferUnderflowException", "")
    return str(int.from_bytes(data[:size], "big", signed=True))


def _decoder_kind(class_name: str) -> str:
    """ "string", "int" or "long": the kind of Kafka's decoder class (3.x's old names included)."""
    return DECODER_CLASSES.get(class_name) or DECODER_CLASSES[_API + class_name.rsplit(".", 1)[1]]


_HEADER = struct.Struct(">qi")


def first_batch_last_offset(data: memoryview, position: int, limit: int) -> int | None:
    """The last offset of the batch at `position`, read as Kafka's file iterator reads it (None: no
    whole batch there within `limit` bytes)."""
    end = min(len(data), position + limit)
    if position + 17 >= end:
        return None
    offset, size = _HEADER.unpack_from(data, position)
    if position + 12 + size > end:
        return None
    if data[position + 16] >= 2:
        (delta,) = struct.unpack_from(">i", data, position + 23)
        return int(offset) + int(delta)
    return int(offset)
