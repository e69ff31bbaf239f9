"""Checks of a partition's and a log dir's state files: producer snapshots and the text files.

Each returns findings, never raises: a file that cannot be read is `unreadable-file`, one that
does not decode as the broker reads it `snapshot-corrupt` or `checkpoint-corrupt`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kdump.errors import DecodeError, KdumpError
from kdump.findings import Finding, make_finding
from kdump.scan.source import read_small_file

# Each text state file's decoder in `kdump.formats.checkpoints`, by kind. The module loads with the
# first file of such a kind: a clean partition given alone has none.
_TEXT_DECODERS = {
    "leader-epoch-checkpoint": "decode_leader_epoch_checkpoint",
    "offset-checkpoint": "decode_offset_checkpoint",
    "partition-metadata": "decode_partition_metadata",
    "meta-properties": "decode_meta_properties",
}
TEXT_KINDS = frozenset(_TEXT_DECODERS)


def check_snapshot(path: Path) -> list[Finding]:
    """A producer state snapshot decodes and its checksum holds."""
    from kdump.formats.producer_snapshot import decode_producer_snapshot

    try:
        snap = decode_producer_snapshot(read_small_file(path))
    except (DecodeError, ValueError) as exc:
        return [make_finding("snapshot-corrupt", str(path), str(exc))]
    except KdumpError as exc:
        return [make_finding("unreadable-file", str(path), str(exc))]
    if not snap.crc_ok:
        return [
            make_finding(
                "snapshot-corrupt",
                str(path),
                f"stored crc {snap.stored_crc} differs from computed crc {snap.computed_crc}",
                position=2,
            )
        ]
    return []


def text_decoder(kind: str) -> Callable[[bytes], Any]:
    """The decoder of a text state file of this kind (one of `TEXT_KINDS`)."""
    from kdump.formats import checkpoints

    decoder: Callable[[bytes], Any] = getattr(checkpoints, _TEXT_DECODERS[kind])
    return decoder


def check_text_state(path: Path, kind: str, *, probed: bool = False) -> list[Finding]:
    """A text state file (checkpoint, partition.metadata, meta.properties) decodes as the broker
    reads it. `probed`: a listing found a regular file there (`read_small_file`)."""
    try:
        text_decoder(kind)(read_small_file(path, probed=probed))
    except (DecodeError, ValueError) as exc:
        return [make_finding("checkpoint-corrupt", str(path), str(exc))]
    except KdumpError as exc:
        return [make_finding("unreadable-file", str(path), str(exc))]
    return []
