"""Exceptions: the environment is unusable, or a pure decoder met bytes it cannot decode.

Bad bytes on disk are never reported to the user as exceptions: `kdump.scan` is the one boundary
that turns a `DecodeError` into a finding. The other exceptions describe an unusable environment
(a path that cannot be read, a broker holding the log dir) and map to exit codes in the CLI.
"""

from __future__ import annotations

import sys


class KdumpError(Exception):
    """Root of every exception kdump raises on purpose."""


class DecodeError(KdumpError, ValueError):
    """Bytes that do not decode as the structure asked for (raised by `kdump.formats` only).

    `java` is what Kafka's generated reader says at the same place, where kdump's message differs
    (None: the same, or for a `TruncatedError` Java's buffer underflow, whose message is null).
    """

    def __init__(self, message: str = "", java: str | None = None) -> None:
        super().__init__(message)
        self.java = java


class TruncatedError(DecodeError):
    """The structure needs more bytes than the buffer holds."""


class CorruptFieldError(DecodeError):
    """A field holds a value the format does not allow."""


class MessageTooShortError(CorruptFieldError):
    """A legacy inner message whose length is below its format's minimum (14 bytes; 22 for v1).

    `offset` is the message's own offset field as stored (absolute for v0, relative for v1).
    """

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


class WrapperOffsetError(CorruptFieldError):
    """A compressed legacy wrapper whose offset is not its last inner message's offset."""

    def __init__(self, message: str, wrapper_offset: int, last_inner_offset: int) -> None:
        super().__init__(message)
        self.wrapper_offset = wrapper_offset
        self.last_inner_offset = last_inner_offset


class UnsupportedMagicError(DecodeError):
    """A message format (magic byte) outside 0..2."""


class CodecError(DecodeError):
    """A compressed payload that the codec cannot decompress."""


class CodecUnavailableError(CodecError):
    """The library for a codec is missing or failed to import."""


class PathError(KdumpError, OSError):
    """A path that cannot be read or written (exit code 3)."""


class LogDirLockedError(KdumpError, PermissionError):
    """A broker holds the log directory's `.lock` (exit code 4)."""


class RefusedError(KdumpError):
    """A repair that kdump refuses to carry out (exit code 4)."""


class CannotRepairError(KdumpError):
    """A repair's pre-flight found it cannot be carried out here (no room for the backup or the
    rewritten files, a read-only or unwritable filesystem, a path that is not a partition); nothing
    was touched (exit code 5)."""


class RepairFaultError(PathError):
    """A write, rename or fsync failed part way through a repair (exit code 3). The message says
    whether every change was undone (the partition is as before) or not, and the one command that
    finishes or undoes it."""

    def __init__(self, message: str, *, undone: bool) -> None:
        super().__init__(message)
        self.undone = undone


class NotFoundError(PathError, FileNotFoundError):
    """Nothing at a path (a stored location whose listing holds no such entry; exit code 3)."""


class MissingDependencyError(KdumpError, ImportError):
    """An optional package or runtime that a feature needs is not installed (exit code 3). Its
    message is one sentence naming what to install."""


# The extra that installs each optional package kdump imports on demand.
_EXTRAS = {"pyspark": "spark", "py4j": "spark", "pyarrow": "spark"}


def missing_module(exc: ImportError, needed_for: str) -> MissingDependencyError | None:
    """The error to report for an optional package that failed to import (None for any other
    module: that is a bug, or a broken install, and stays as it is)."""
    root = (exc.name or "").split(".")[0]
    extra = _EXTRAS.get(root)
    if extra is None:
        return None
    package = "pyspark" if root == "py4j" else root
    if getattr(sys, "frozen", False):
        # The one-file build carries the codecs, not the extras: pip cannot add to it.
        return MissingDependencyError(
            f"{needed_for} needs {package}, which the one-file build of kdump leaves out: "
            f"use a pip install of kdump (pip install 'kdump[{extra}]')"
        )
    return MissingDependencyError(f"{needed_for} needs {package}: pip install 'kdump[{extra}]'")
