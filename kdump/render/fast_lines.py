"""Record lines of a whole batch straight to bytes, through the compiled record path.

The JSON Lines and text renderers (`render.jsonl`, `render.text`) are the reference: this module
gives the same bytes for a clean v2 data batch, or None, and then the caller renders the batch the
reference way (decode_batch_records, then the renderers), which also reports whatever is wrong.
"""

from __future__ import annotations

from kdump.errors import KdumpError
from kdump.formats import fast_records
from kdump.formats.batch import BatchHeader
from kdump.formats.codecs import decompress
from kdump.formats.constants import V2_HEADER_SIZE
from kdump.render import jsonl, rows, text

Buffer = bytes | bytearray | memoryview


def enabled() -> bool:
    """Whether the compiled path is built, imported and not switched off (`KDUMP_PURE_PYTHON=1`)."""
    return fast_records.compiled is not None


def _line_parts(h: BatchHeader, file_json: str, fmt: str) -> tuple[bytes, bytes, bytes]:
    """What a record line holds around its offset and timestamp (the same for the whole batch)."""
    if fmt == "json":
        tt = "LogAppendTime" if h.timestamp_type == 1 else "CreateTime"
        return (
            f'{{"type":"record","file":{file_json},"offset":'.encode(),
            f',"position":{h.position},"timestamp":'.encode(),
            f',"timestamp_type":"{tt}","key":'.encode(),
        )
    label = rows.timestamp_type_label(h.timestamp_type)
    return b"| offset: ", f" {label}: ".encode(), b" keySize: "


def payload_of(buf: Buffer, h: BatchHeader) -> Buffer | None:
    """The decompressed records of a batch the compiled path may take; None for any other, or when
    the payload does not decompress (the reference path reports why)."""
    if not fast_records.eligible(h):
        return None
    payload = buf[h.position + V2_HEADER_SIZE : h.position + h.size]
    try:
        return decompress(h.compression, payload, magic=2) if h.compression else payload
    except (KdumpError, MemoryError):
        return None


def render_batch(buf: Buffer, h: BatchHeader, file_json: str, fmt: str, encoding: str) -> bytes | None:
    """The batch's line then its records' lines, newline-terminated, as the reference renders them.

    Args:
        buf: the log's bytes.
        h: a batch header from the scan of `buf`.
        file_json: the file's name as a JSON string (what `render.jsonl` puts in "file").
        fmt: "json" or "text".
        encoding: "utf8", "hex" or "base64".

    Returns:
        None when the batch needs the reference path (damaged, control, legacy, or the compiled path
        is off).
    """
    if not enabled():
        return None
    data = payload_of(buf, h)
    if data is None:
        return None
    prefix, middle, middle2 = _line_parts(h, file_json, fmt)
    lines = fast_records.render_v2(data, h, fmt, encoding, prefix, middle, middle2)
    if lines is None:
        return None
    head = jsonl.batch_line(h, file_json) if fmt == "json" else text.batch_line(h)
    return head.encode("utf-8") + b"\n" + lines
