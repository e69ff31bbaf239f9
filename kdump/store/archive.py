"""Broker tarballs read in place: a `.tar`, `.tar.gz` or `.tar.zst` of a log dir, never unpacked.

One pass over the archive lists its members (headers only for a plain `.tar`, read by ranges; the
whole stream for a compressed one, which cannot be entered in the middle). A member of a plain tar
is then a byte range of the archive; a member of a compressed one is reached by decompressing from
the start (one open stream per archive and process, moved forward, reopened only to go back).

Damage is reported, never raised: an archive that ends early or holds a corrupt header or
compressed block yields `archive-damaged`, a member cut short `archive-member-truncated`, and the
members before the damage are read as usual (their sizes are the bytes actually present).
"""

from __future__ import annotations

import io
import tarfile
import zlib
from dataclasses import dataclass, field
from typing import IO, Any, cast

from kdump.errors import NotFoundError, PathError
from kdump.findings import Finding, make_finding
from kdump.store.entries import Entry, EntryKind, Tree
from kdump.store.locations import compression_of
from kdump.store.readers import RangedReader, open_file_reader

_BLOCK = 512
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class Member:
    """One archive member: where its data starts in the (uncompressed) tar stream, its sizes."""

    name: str
    kind: EntryKind
    offset: int
    size: int  # as its header declares
    present: int  # bytes the archive actually holds


@dataclass(slots=True)
class ArchiveIndex:
    """The members of one tarball and what was wrong with it."""

    location: str
    compression: str
    members: dict[str, Member] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    def tree(self) -> Tree:
        """The archive as a tree rooted at its own location (a log dir, or what holds one)."""
        tree = Tree.build(
            self.location,
            (Entry(f"{self.location}/{m.name}", m.kind, m.present) for m in self.members.values()),
        )
        tree.findings = list(self.findings)
        tree.archive = self
        return tree


class _Damage(Exception):
    """Why the walk over the headers stopped before the end-of-archive marker, and where."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(message)
        self.position = position


class _PlainStream:
    """A plain tar read forward by ranges: headers are fetched, member data is skipped unread."""

    def __init__(self, reader: RangedReader) -> None:
        self.reader = reader
        self.pos = 0
        self._window = b""
        self._window_at = 0

    def read(self, n: int) -> bytes:
        lo = self.pos - self._window_at
        if lo < 0 or lo + n > len(self._window):
            # Small members (checkpoints, indexes) sit between headers: one request covers several.
            self._window = self.reader.read(self.pos, max(n, 64 << 10))
            self._window_at, lo = self.pos, 0
        data = self._window[lo : lo + n]
        self.pos += len(data)
        return data

    def skip(self, n: int) -> None:
        self.pos += n

    def end(self) -> int:
        return self.reader.size


class _CompressedStream:
    """A compressed tar read forward: everything passes through the decompressor."""

    def __init__(self, inner: IO[bytes]) -> None:
        self.inner = inner
        self.pos = 0

    def read(self, n: int) -> bytes:
        parts = []
        want = n
        while want > 0:
            data = self.inner.read(want)
            if not data:
                break
            parts.append(data)
            want -= len(data)
        out = b"".join(parts)
        self.pos += len(out)
        return out

    def skip(self, n: int) -> None:
        while n > 0:
            data = self.inner.read(min(n, _CHUNK))
            if not data:
                return
            self.pos += len(data)
            n -= len(data)

    def end(self) -> int:
        """Decompress to the end (or the damage): how many bytes the tar stream holds."""
        try:
            self.skip(1 << 62)
        except _errors():
            pass
        return self.pos


class _RawFile(io.RawIOBase):
    """A ranged reader as a sequential binary file (what the decompressors read)."""

    def __init__(self, reader: RangedReader) -> None:
        self.reader = reader
        self.pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self.reader.read(self.pos, len(b))
        n = len(data)
        memoryview(b)[:n] = data
        self.pos += n
        return n


def _decompressed(reader: RangedReader, compression: str) -> IO[bytes]:
    raw = io.BufferedReader(_RawFile(reader), buffer_size=_CHUNK)
    if compression == "gz":
        import gzip

        return cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb"))
    import zstandard

    stream: IO[bytes] = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    return stream


def _errors() -> tuple[type[BaseException], ...]:
    errors: tuple[type[BaseException], ...] = (tarfile.TarError, EOFError, OSError, zlib.error, ValueError)
    try:
        import zstandard

        errors += (zstandard.ZstdError,)
    except ImportError:
        pass
    return errors


def _kind_of(info: tarfile.TarInfo) -> EntryKind:
    if info.isreg():
        return "file"
    if info.isdir():
        return "dir"
    if info.issym() or info.islnk():
        return "symlink"
    return "other"


def _member_name(name: str) -> str:
    while name.startswith("./"):
        name = name[2:]
    return name.strip("/")


def _pax_records(data: bytes) -> dict[str, str]:
    """The `length key=value` records (one a line) of a pax extended header."""
    out: dict[str, str] = {}
    pos = 0
    while pos < len(data) and data[pos] != 0:
        space = data.find(b" ", pos)
        if space < 0:
            break
        try:
            length = int(data[pos:space])
        except ValueError:
            break
        if length <= 0:
            break
        key, _, value = data[space + 1 : pos + length - 1].partition(b"=")
        out[key.decode("utf-8", "replace")] = value.decode("utf-8", "surrogateescape")
        pos += length
    return out


def _walk(stream: _PlainStream | _CompressedStream) -> Any:
    """Yield (name, kind, data position, size) of each member, in archive order.

    Raises:
        _Damage: the headers end before the end-of-archive marker, or one does not decode.
    """
    long_name: str | None = None
    pax: dict[str, str] = {}
    while True:
        at = stream.pos
        block = stream.read(_BLOCK)
        if len(block) < _BLOCK:
            raise _Damage("the archive ends without its end-of-archive marker (cut short)", at)
        if block.count(0) == _BLOCK:
            return
        try:
            info = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
        except tarfile.HeaderError as exc:
            raise _Damage(f"a member header does not decode ({exc})", at) from None
        padded = -(-info.size // _BLOCK) * _BLOCK
        if info.type in (
            tarfile.GNUTYPE_LONGNAME,
            tarfile.GNUTYPE_LONGLINK,
            tarfile.XHDTYPE,
            tarfile.XGLTYPE,
        ):
            data = stream.read(padded)
            if len(data) < info.size:
                raise _Damage("the archive ends inside an extended header (cut short)", at)
            if info.type == tarfile.GNUTYPE_LONGNAME:
                long_name = data[: info.size].split(b"\x00", 1)[0].decode("utf-8", "surrogateescape")
            elif info.type == tarfile.XHDTYPE:
                pax = _pax_records(data[: info.size])
            continue
        name = pax.get("path") or long_name or info.name
        size = int(pax["size"]) if "size" in pax else info.size
        long_name, pax = None, {}
        kind = _kind_of(info)
        yield _member_name(name), kind, at + _BLOCK, size if kind == "file" else 0
        stream.skip(-(-size // _BLOCK) * _BLOCK if kind == "file" else padded)


def index_archive(location: str) -> ArchiveIndex:
    """List a tarball's members in one pass; damage becomes findings.

    Raises:
        PathError: the archive itself cannot be opened.
    """
    compression = compression_of(location)
    index = ArchiveIndex(location, compression)
    reader = open_file_reader(location)
    stream: _PlainStream | _CompressedStream = (
        _CompressedStream(_decompressed(reader, compression)) if compression else _PlainStream(reader)
    )
    damage: _Damage | None = None
    try:
        for name, kind, offset, size in _walk(stream):
            if name:
                index.members[name] = Member(name, kind, offset, size, size)
    except _Damage as exc:
        damage = exc
    except _errors() as exc:
        damage = _Damage(f"{type(exc).__name__}: {exc}", stream.pos)
    end = stream.end()
    reader.close()
    if damage is not None:
        index.findings.append(
            make_finding(
                "archive-damaged",
                location,
                f"{damage} at position {damage.position} of the tar stream; the {len(index.members)} "
                "members before it are read, anything after it is missing",
                position=damage.position,
            )
        )
    for name, m in list(index.members.items()):
        present = max(0, min(m.size, end - m.offset))
        if present < m.size:
            index.members[name] = Member(m.name, m.kind, m.offset, m.size, present)
            index.findings.append(
                make_finding(
                    "archive-member-truncated",
                    f"{location}/{name}",
                    f"the archive holds {present} of this member's {m.size} bytes",
                    position=present,
                )
            )
    return index


_INDEXES: dict[str, ArchiveIndex] = {}


def archive_index(location: str) -> ArchiveIndex:
    """The index of a tarball, listed once per process."""
    index = _INDEXES.get(location)
    if index is None:
        index = _INDEXES[location] = index_archive(location)
    return index


def remember_index(index: ArchiveIndex) -> None:
    """Adopt an index listed elsewhere (the driver), so this process does not list again."""
    _INDEXES.setdefault(index.location, index)


class _Streams:
    """One decompressing stream per compressed archive, moved forward, reopened to go back."""

    def __init__(self) -> None:
        self.open: dict[str, tuple[RangedReader, IO[bytes], int]] = {}

    def read(self, archive: ArchiveIndex, position: int, length: int) -> bytes:
        entry = self.open.get(archive.location)
        if entry is None or entry[2] > position:
            if entry is not None:
                entry[0].close()
            reader = open_file_reader(archive.location)
            stream = _decompressed(reader, archive.compression)
            entry = (reader, stream, 0)
        reader, stream, at = entry
        try:
            while at < position:
                skipped = len(stream.read(min(_CHUNK, position - at)))
                if not skipped:
                    break
                at += skipped
            data = stream.read(length) if at == position else b""
        except _errors() as exc:
            self.open.pop(archive.location, None)
            raise PathError(f"cannot read {archive.location} at {position}: {exc}") from None
        self.open[archive.location] = (reader, stream, at + len(data))
        return bytes(data)


_STREAMS = _Streams()


class MemberReader:
    """One member of a tarball, read by ranges (bounded by the bytes the archive holds)."""

    def __init__(self, archive: ArchiveIndex, member: Member) -> None:
        self.archive = archive
        self.member = member
        self.location = f"{archive.location}/{member.name}"
        self.size = member.present
        self._plain: RangedReader | None = None if archive.compression else open_file_reader(archive.location)

    def read(self, position: int, length: int) -> bytes:
        """Up to `length` bytes from `position` of the member."""
        length = max(0, min(length, self.size - position))
        if length == 0:
            return b""
        if self._plain is not None:
            return self._plain.read(self.member.offset + position, length)
        return _STREAMS.read(self.archive, self.member.offset + position, length)

    def close(self) -> None:
        """Release the archive file (a compressed archive's stream stays open for the next read)."""
        if self._plain is not None:
            self._plain.close()


def open_member(archive: str, name: str) -> MemberReader:
    """A reader of one member of a tarball.

    Raises:
        PathError: the archive holds no such file.
    """
    index = archive_index(archive)
    member = index.members.get(name.strip("/"))
    if member is None or member.kind != "file":
        raise NotFoundError(f"{archive}/{name}: no such file or directory in the archive")
    return MemberReader(index, member)
