"""Text checkpoints and small metadata files of partition and log directories.

Mirrors `org.apache.kafka.server.common.CheckpointFile` (with `LeaderEpochCheckpointFile` and
`OffsetCheckpointFile`), `PartitionMetadataReadBuffer`/`PartitionMetadataFile`, `CleanShutdownFileHandler`,
and `java.util.Properties` as used by Kafka's `PropertiesUtils` for `meta.properties`.

Checkpoint files (UTF-8 text, one record per line, lines end with "\\n"):

| line      | content                                       | meaning                              |
|-----------|-----------------------------------------------|--------------------------------------|
| 1         | int32 version                                 | must be 0                            |
| 2         | int32 entry count N                           |                                      |
| 3 .. N+2  | leader-epoch-checkpoint: `<epoch> <start>`    | epoch (int32) began at Kafka offset  |
|           | offset checkpoints: `<topic> <part> <offset>` | partition (int32), Kafka offset      |

The offset checkpoints live at the top of a log directory: `recovery-point-offset-checkpoint`,
`replication-offset-checkpoint`, `log-start-offset-checkpoint`, `cleaner-offset-checkpoint`. Fields are
separated by any run of whitespace; like Java's `String.split`, a blank at the start of a line makes an
empty first field (so ` 0 5` in an offset checkpoint reads as topic "" partition 0). Kafka's reader
treats a missing version line or a missing count line as "no entries" (an empty file is normal: Kafka
creates the file before it first writes it), checks the version, then parses every remaining line and
finally compares their number with the count.

`partition.metadata` (UTF-8, written without a final newline):

| line | content                 | meaning                                                         |
|------|-------------------------|-----------------------------------------------------------------|
| 1    | `version: <int32>`      | Kafka accepts any version >= 0 (downgrade compatibility)        |
| 2    | `topic_id: <base64url>` | the topic's 16-byte UUID, base64url without padding (22 chars)  |

Keys and values are split at the first `:` followed by whitespace; later lines are ignored; the all-zero
UUID is rejected.

`meta.properties` is a Java properties file (`#` or `!` comments, `key=value`, `key: value` or
`key value`, backslash escapes and continuations). Kafka loads it through an `InputStream`, so the bytes
are read as ISO-8859-1 and non-ASCII text only survives as `\\uXXXX` escapes; we read it the same way.

`.kafka_cleanshutdown` is JSON `{"version":0,"brokerEpoch":N}` since Kafka 3.7 (KIP-966); older brokers
left an empty file, which `decode_clean_shutdown` reports with both fields None.

Malformed input raises `CorruptFieldError` with messages modelled on Kafka's (without the file path,
which a pure decoder does not know).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from kdump.errors import CorruptFieldError

if TYPE_CHECKING:
    import mmap
    from typing import TypeAlias

    _Text: TypeAlias = str | bytes | bytearray | memoryview | mmap.mmap

__all__ = [
    "CHECKPOINT_VERSION",
    "CLEAN_SHUTDOWN_VERSION",
    "PARTITION_METADATA_VERSION",
    "CleanShutdown",
    "EpochEntry",
    "LeaderEpochCheckpoint",
    "OffsetCheckpoint",
    "OffsetCheckpointEntry",
    "PartitionMetadata",
    "decode_clean_shutdown",
    "decode_leader_epoch_checkpoint",
    "decode_meta_properties",
    "decode_offset_checkpoint",
    "decode_partition_metadata",
    "encode_clean_shutdown",
    "encode_leader_epoch_checkpoint",
    "encode_meta_properties",
    "encode_offset_checkpoint",
    "encode_partition_metadata",
    "topic_id_from_uuid",
]

CHECKPOINT_VERSION = 0
PARTITION_METADATA_VERSION = 0
CLEAN_SHUTDOWN_VERSION = 0

_INT32 = range(-(2**31), 2**31)
_INT64 = range(-(2**63), 2**63)
# Java's readLine() ends a line at "\n", "\r" or "\r\n"; str.splitlines() would also split at other
# characters (\x0b, \x1c, U+2028, ...) that Kafka keeps inside a line.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
# Java's regex \s is ASCII-only, unlike Python's.
_JAVA_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]+")
_PARTITION_METADATA_SEPARATOR = re.compile(r":[ \t\n\x0b\f\r]+")
# Java's parseInt/parseLong take any Unicode decimal digit, as Python's \d and int() do.
_DECIMAL = re.compile(r"[+-]?\d+")
_BASE64URL_UUID = re.compile(r"[A-Za-z0-9_-]{22}(?:==)?")
_PROPERTIES_BLANK = " \t\f"
_PROPERTIES_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_PROPERTIES_ESCAPE_CODES = {char: code for code, char in _PROPERTIES_ESCAPES.items()}


class EpochEntry(NamedTuple):
    """A leader epoch and the first Kafka offset written in it."""

    epoch: int
    start_offset: int


class OffsetCheckpointEntry(NamedTuple):
    """One line of a log-directory offset checkpoint."""

    topic: str
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class LeaderEpochCheckpoint:
    # None when the file is empty (Kafka reads that as no entries).
    version: int | None
    entries: tuple[EpochEntry, ...]


@dataclass(frozen=True, slots=True)
class OffsetCheckpoint:
    # None when the file is empty (Kafka reads that as no entries).
    version: int | None
    entries: tuple[OffsetCheckpointEntry, ...]


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    version: int
    # As written: base64url of the 16 UUID bytes.
    topic_id: str

    @property
    def topic_uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=_decode_topic_id(self.topic_id))


@dataclass(frozen=True, slots=True)
class CleanShutdown:
    # Both None for the empty marker file of brokers before 3.7. A JSON file without "version" reads as
    # 0 and one without "brokerEpoch" as None, as Kafka's JSON mapping does.
    version: int | None
    broker_epoch: int | None


# --- checkpoint files ---------------------------------------------------------------------------------

_Entry = TypeVar("_Entry")


# The largest file whose decoded value is kept for the next file of the same bytes. A log dir's
# partitions share a few contents (`0\n1\n0 0\n` wherever a leader never changed; one
# partition.metadata per topic): decoded once each, not once per partition. The values are
# immutable; a file that does not decode raises each time (exceptions are not kept).
_MEMO_MOST = 256
_Decoded = TypeVar("_Decoded")


def _kept_when_small(decode: Callable[[_Text], _Decoded]) -> Callable[[_Text], _Decoded]:
    """`decode`, its values kept by the bytes of files of at most `_MEMO_MOST` bytes."""
    kept = functools.lru_cache(maxsize=1024)(decode)

    @functools.wraps(decode)
    def decode_small_once(data: _Text) -> _Decoded:
        return kept(data) if type(data) is bytes and len(data) <= _MEMO_MOST else decode(data)

    return decode_small_once


@_kept_when_small
def decode_leader_epoch_checkpoint(data: _Text) -> LeaderEpochCheckpoint:
    """Decode `leader-epoch-checkpoint`."""
    version, entries = _decode_checkpoint(data, _parse_epoch_entry)
    return LeaderEpochCheckpoint(version=version, entries=entries)


def decode_offset_checkpoint(data: _Text) -> OffsetCheckpoint:
    """Decode one of the four log-directory offset checkpoints (recovery point, replication, ...)."""
    version, entries = _decode_checkpoint(data, _parse_offset_entry)
    return OffsetCheckpoint(version=version, entries=entries)


def encode_leader_epoch_checkpoint(entries: Iterable[EpochEntry | tuple[int, int]]) -> bytes:
    lines = []
    for epoch, start_offset in entries:
        _require_range("epoch", epoch, _INT32)
        _require_range("start offset", start_offset, _INT64)
        lines.append(f"{epoch} {start_offset}")
    return _encode_checkpoint(lines)


def encode_offset_checkpoint(entries: Iterable[OffsetCheckpointEntry | tuple[str, int, int]]) -> bytes:
    lines = []
    for topic, partition, offset in entries:
        if not topic or _JAVA_WHITESPACE.search(topic):
            raise CorruptFieldError(f"Topic name {topic!r} cannot be written as one checkpoint field")
        _require_range("partition", partition, _INT32)
        _require_range("offset", offset, _INT64)
        lines.append(f"{topic} {partition} {offset}")
    return _encode_checkpoint(lines)


def _decode_checkpoint(
    data: _Text, parse_entry: Callable[[list[str]], _Entry | None]
) -> tuple[int | None, tuple[_Entry, ...]]:
    lines = _java_lines(_decode_utf8(data, "checkpoint file"))
    if not lines:
        return None, ()
    version = _parse_header_int(lines[0])
    if version != CHECKPOINT_VERSION:
        raise CorruptFieldError(
            f"Unrecognised version:{version}, expected version: {CHECKPOINT_VERSION} in checkpoint file"
        )
    if len(lines) == 1:
        return version, ()
    expected = _parse_header_int(lines[1])
    if expected < 0:
        raise CorruptFieldError(f"Negative entry count {expected} in checkpoint file")
    entries = []
    for line in lines[2:]:
        entry = parse_entry(_java_split(line))
        if entry is None:
            raise CorruptFieldError(f"Malformed line in checkpoint file: {line}")
        entries.append(entry)
    if len(entries) != expected:
        raise CorruptFieldError(
            f"Expected [{expected}] entries in checkpoint file, but found only [{len(entries)}]"
        )
    return version, tuple(entries)


def _parse_header_int(line: str) -> int:
    value = _parse_java_int(line, _INT32)
    if value is None:
        raise CorruptFieldError(f"Malformed line in checkpoint file: {line}")
    return value


def _parse_epoch_entry(fields: list[str]) -> EpochEntry | None:
    if len(fields) != 2:
        return None
    epoch = _parse_java_int(fields[0], _INT32)
    start_offset = _parse_java_int(fields[1], _INT64)
    if epoch is None or start_offset is None:
        return None
    return EpochEntry(epoch, start_offset)


def _parse_offset_entry(fields: list[str]) -> OffsetCheckpointEntry | None:
    if len(fields) != 3:
        return None
    partition = _parse_java_int(fields[1], _INT32)
    offset = _parse_java_int(fields[2], _INT64)
    if partition is None or offset is None:
        return None
    return OffsetCheckpointEntry(fields[0], partition, offset)


def _encode_checkpoint(lines: Sequence[str]) -> bytes:
    header = [str(CHECKPOINT_VERSION), str(len(lines))]
    return "".join(f"{line}\n" for line in (*header, *lines)).encode("utf-8")


# --- partition.metadata -------------------------------------------------------------------------------


@_kept_when_small
def decode_partition_metadata(data: _Text) -> PartitionMetadata:
    """Decode `partition.metadata`."""
    lines = _java_lines(_decode_utf8(data, "partition metadata file"))
    version_line = lines[0] if lines else None
    version_text = _partition_metadata_value(version_line, "version")
    version = _parse_java_int(version_text, _INT32)
    if version is None:
        raise CorruptFieldError(f"Malformed line in partition metadata file: {version_line}")
    if version < PARTITION_METADATA_VERSION:
        raise CorruptFieldError(f"Unrecognized version of partition metadata file: {version}")
    topic_id_line = lines[1] if len(lines) > 1 else None
    topic_id = _partition_metadata_value(topic_id_line, "topic_id")
    try:
        raw_id = _decode_topic_id(topic_id)
    except ValueError as exc:
        raise CorruptFieldError(f"Malformed line in partition metadata file: {topic_id_line}") from exc
    if raw_id == bytes(16):
        raise CorruptFieldError("Invalid topic ID in partition metadata file")
    return PartitionMetadata(version=version, topic_id=topic_id)


def encode_partition_metadata(topic_id: str | uuid.UUID, version: int = PARTITION_METADATA_VERSION) -> bytes:
    """The file as Kafka writes it; the topic id may be given as a UUID or its base64url text."""
    text = topic_id_from_uuid(topic_id) if isinstance(topic_id, uuid.UUID) else topic_id
    if _decode_topic_id(text) == bytes(16):
        raise CorruptFieldError("Kafka rejects the all-zero topic ID")
    _require_range("partition metadata version", version, _INT32)
    return f"version: {version}\ntopic_id: {text}".encode()


def topic_id_from_uuid(value: uuid.UUID) -> str:
    """Kafka's text form of a topic id: base64url of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def _partition_metadata_value(line: str | None, key: str) -> str:
    parts = _PARTITION_METADATA_SEPARATOR.split(line, maxsplit=1) if line is not None else []
    if len(parts) != 2 or parts[0] != key:
        raise CorruptFieldError(f"Malformed line in partition metadata file: {line}")
    return parts[1]


def _decode_topic_id(text: str) -> bytes:
    # Kafka's Uuid.fromString accepts base64url with or without padding; 16 bytes or nothing.
    if not _BASE64URL_UUID.fullmatch(text):
        raise CorruptFieldError(f"Input string `{text}` is not a base64url-encoded 16-byte UUID")
    try:
        return base64.urlsafe_b64decode(text[:22] + "==")
    except binascii.Error as exc:
        raise CorruptFieldError(f"Input string `{text}` is not a base64url-encoded 16-byte UUID") from exc


# --- meta.properties ----------------------------------------------------------------------------------


def decode_meta_properties(data: _Text) -> dict[str, str]:
    """Decode a Java properties file such as `meta.properties`; later keys override earlier ones."""
    text = data if isinstance(data, str) else bytes(data).decode("latin-1")
    properties: dict[str, str] = {}
    for line in _properties_logical_lines(text):
        key, value = _split_property(line)
        properties[_unescape_property(key)] = _unescape_property(value)
    return properties


def encode_meta_properties(properties: Mapping[str, str], comments: Sequence[str] = ()) -> bytes:
    """A properties file that Kafka reads back to `properties`: pure ASCII, everything else escaped.

    Kafka's own writer adds a `#<date>` line; pass it in `comments` to reproduce one exactly.
    """
    lines = []
    for comment in comments:
        if _LINE_BREAK.search(comment):
            raise CorruptFieldError(f"Comment {comment!r} spans more than one line")
        lines.append("#" + "".join(c if " " <= c <= "~" else _unicode_escape(c) for c in comment))
    for key, value in properties.items():
        lines.append(f"{_escape_property(key, is_key=True)}={_escape_property(value, is_key=False)}")
    return "".join(f"{line}\n" for line in lines).encode("latin-1")


def _properties_logical_lines(text: str) -> list[str]:
    """The logical lines `Properties.load` hands to its key/value splitter.

    Leading blanks go, blank lines and comments (`#` or `!` first on an empty logical line) vanish, and
    an odd run of trailing backslashes joins the next line (minus its leading blanks). At end of input
    Java drops that backslash and keeps the line, even an empty one, except after a final "\\r\\n",
    which it treats as a real continuation into nothing.
    """
    naturals: list[tuple[str, str]] = []
    position = 0
    while position < len(text):
        match = _LINE_BREAK.search(text, position)
        if match is None:
            naturals.append((text[position:], ""))
            break
        naturals.append((text[position : match.start()], match.group()))
        position = match.end()
    logical: list[str] = []
    index = 0
    while index < len(naturals):
        joined = ""
        while True:
            raw, terminator = naturals[index]
            index += 1
            line = raw.lstrip(_PROPERTIES_BLANK)
            if not joined and line[:1] in ("#", "!"):
                break
            at_end = index == len(naturals)
            if (len(line) - len(line.rstrip("\\"))) % 2 == 0:
                if joined or line:
                    logical.append(joined + line)
                break
            joined += line[:-1]
            if at_end:
                if joined or terminator != "\r\n":
                    logical.append(joined)
                break
    return logical


def _split_property(line: str) -> tuple[str, str]:
    key_end = len(line)
    value_start = len(line)
    has_separator = False
    escaped = False
    for position, char in enumerate(line):
        if not escaped and char in "=:":
            key_end, value_start, has_separator = position, position + 1, True
            break
        if not escaped and char in _PROPERTIES_BLANK:
            key_end, value_start = position, position + 1
            break
        escaped = char == "\\" and not escaped
    # After the key: blanks, at most one separator if none was met yet, more blanks.
    while value_start < len(line):
        char = line[value_start]
        if char not in _PROPERTIES_BLANK:
            if has_separator or char not in "=:":
                break
            has_separator = True
        value_start += 1
    return line[:key_end], line[value_start:]


def _unescape_property(text: str) -> str:
    if "\\" not in text:
        return text
    out = []
    position = 0
    while position < len(text):
        char = text[position]
        position += 1
        if char != "\\":
            out.append(char)
            continue
        if position >= len(text):
            break  # unreachable from a file: the line reader drops an unpaired final backslash
        char = text[position]
        position += 1
        if char == "u":
            digits = text[position : position + 4]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise CorruptFieldError("Malformed \\uxxxx encoding.")
            out.append(chr(int(digits, 16)))
            position += 4
        else:
            out.append(_PROPERTIES_ESCAPES.get(char, char))
    # Java strings are UTF-16, so an escaped surrogate pair is one character there.
    return "".join(out).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _escape_property(text: str, *, is_key: bool) -> str:
    out = []
    for position, char in enumerate(text):
        if char == " ":
            out.append("\\ " if is_key or position == 0 else " ")
        elif char in "\t\n\r\f":
            out.append("\\" + _PROPERTIES_ESCAPE_CODES[char])
        elif char in "\\=:#!":
            out.append("\\" + char)
        elif " " < char <= "~":
            out.append(char)
        else:
            out.append(_unicode_escape(char))
    return "".join(out)


def _unicode_escape(char: str) -> str:
    # Characters beyond U+FFFF become a surrogate pair, as in Java's UTF-16 strings.
    units = char.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{units[i]:02X}{units[i + 1]:02X}" for i in range(0, len(units), 2))


# --- .kafka_cleanshutdown -----------------------------------------------------------------------------


def decode_clean_shutdown(data: _Text) -> CleanShutdown:
    """Decode `.kafka_cleanshutdown`."""
    text = _decode_utf8(data, "clean shutdown file")
    if not text:
        return CleanShutdown(version=None, broker_epoch=None)
    try:
        content = json.loads(text, parse_constant=_reject_json_constant)
    except (ValueError, RecursionError) as exc:
        raise CorruptFieldError(f"Clean shutdown file is not valid JSON: {exc}") from exc
    if not isinstance(content, dict):
        raise CorruptFieldError(f"Clean shutdown file holds {type(content).__name__}, not a JSON object")
    version = content.get("version", 0)
    broker_epoch = content.get("brokerEpoch")
    if not _is_int(version) or version not in _INT32:
        raise CorruptFieldError(f"Clean shutdown file has a malformed version: {version!r}")
    if broker_epoch is not None and (not _is_int(broker_epoch) or broker_epoch not in _INT64):
        raise CorruptFieldError(f"Clean shutdown file has a malformed brokerEpoch: {broker_epoch!r}")
    return CleanShutdown(version=version, broker_epoch=broker_epoch)


def encode_clean_shutdown(broker_epoch: int, version: int = CLEAN_SHUTDOWN_VERSION) -> bytes:
    """The file as Kafka 3.7+ writes it (compact JSON, no newline)."""
    _require_range("version", version, _INT32)
    _require_range("broker epoch", broker_epoch, _INT64)
    return json.dumps({"version": version, "brokerEpoch": broker_epoch}, separators=(",", ":")).encode()


def _reject_json_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --- shared -------------------------------------------------------------------------------------------


def _decode_utf8(data: _Text, what: str) -> str:
    if isinstance(data, str):
        return data
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptFieldError(f"Malformed input in {what}: not UTF-8 at byte {exc.start}") from exc


def _java_lines(text: str) -> list[str]:
    lines = _LINE_BREAK.split(text)
    # A final line break ends the last line rather than starting an empty one.
    if lines[-1] == "":
        lines.pop()
    return lines


def _java_split(line: str) -> list[str]:
    # Like Java's String.split: a leading separator yields an empty first field, trailing ones vanish.
    fields = _JAVA_WHITESPACE.split(line)
    while fields and fields[-1] == "":
        fields.pop()
    return fields


def _parse_java_int(text: str, bounds: range) -> int | None:
    if not _DECIMAL.fullmatch(text):
        return None
    value = int(text)
    return value if value in bounds else None


def _require_range(name: str, value: int, bounds: range) -> None:
    if not _is_int(value) or value not in bounds:
        raise CorruptFieldError(f"The {name} {value} is outside {bounds.start}..{bounds.stop - 1}")
