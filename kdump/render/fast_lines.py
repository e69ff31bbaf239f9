"""Record lines of a whole batch straight to bytes, through the compiled record path.

The JSON Lines and text renderers (`render.jsonl`, `render.text`) are the reference: this module
gives the same bytes for a clean v2 data batch, or None, and then the caller renders the batch the
reference way (decode_batch_records, then the renderers), which also reports whatever is wrong.
"""

from __future__ import annotations

from kdump.formats import fast_records
from kdump.formats.arrow_columns import payload_of
from kdump.formats.batch import BatchHeader
from kdump.formats.constants import TimestampType
from kdump.render import jsonl, rows, text

Buffer = bytes | bytearray | memoryview
__all__ = ["LineRenderer", "enabled", "payload_of", "render_batch"]


def enabled() -> bool:
    """Whether the compiled path is built, imported and not switched off (`KDUMP_PURE_PYTHON=1`)."""
    return fast_records.compiled is not None


class LineRenderer:
    """Renders the batches of one file in one format and encoding (what is the same for every
    record line of the file is built once)."""

    def __init__(self, file_json: str, fmt: str, encoding: str) -> None:
        """`file_json` is the file's name as a JSON string (what `render.jsonl` puts in "file")."""
        self.file_json = file_json
        self.json = fmt == "json"
        self.fmt = fast_records.FORMATS[fmt]
        self.encoding = fast_records.ENCODINGS[encoding]
        if self.json:
            self.prefix = jsonl.record_head(file_json).encode()
            self.after_ts = {
                t: f',"timestamp_type":"{"LogAppendTime" if t == 1 else "CreateTime"}","key":'.encode()
                for t in (0, 1)
            }
        else:
            self.prefix = b"| offset: "
            self.labels = {t: f" {rows.timestamp_type_label(t)}: ".encode() for t in (0, 1)}

    def render(self, buf: Buffer, h: BatchHeader) -> bytes | None:
        """The batch's line then its records' lines, newline-terminated, as the reference renders
        them; None when the batch needs the reference path (damaged, control, legacy, or the
        compiled path is off)."""
        parts: list[bytes] = []
        return b"".join(parts) if self.render_into(buf, h, parts) else None

    def render_into(self, buf: Buffer, h: BatchHeader, parts: list[bytes]) -> bool:
        """`render`, appending the lines to `parts` (no copy of the records' lines); False, with
        `parts` untouched, when the batch needs the reference path."""
        if fast_records.compiled is None or not 0 <= h.timestamp_type <= 1:
            return False
        data = payload_of(buf, h)
        lines = self.record_lines(data, h) if data is not None else None
        if lines is None:
            return False
        head = jsonl.batch_line(h, self.file_json) if self.json else text.batch_line(h)
        parts.append(head.encode() + b"\n")
        parts.append(lines)
        return True

    def record_lines(self, data: Buffer, h: BatchHeader) -> bytes | None:
        """The record lines alone (no batch line) of a batch whose decompressed records are
        `data`; None when the batch needs the reference path."""
        compiled = fast_records.compiled
        if compiled is None or not 0 <= h.timestamp_type <= 1 or not fast_records.eligible(h):
            return None
        if self.json:
            middle = f',"position":{h.position},"timestamp":'.encode()
            middle2 = self.after_ts[h.timestamp_type]
        else:
            middle = self.labels[h.timestamp_type]
            middle2 = b" keySize: "
        log_append = h.timestamp_type == TimestampType.LOG_APPEND_TIME
        lines: bytes | None = compiled.render_v2(
            data,
            h.base_offset,
            h.last_offset,
            h.base_timestamp,
            h.max_timestamp,
            log_append,
            h.base_sequence,
            h.count,
            not log_append,  # the max timestamp check of CreateTime data batches
            self.fmt,
            self.encoding,
            self.prefix,
            middle,
            middle2,
        )
        return lines


def render_batch(buf: Buffer, h: BatchHeader, file_json: str, fmt: str, encoding: str) -> bytes | None:
    """One batch through a `LineRenderer` (see there)."""
    return LineRenderer(file_json, fmt, encoding).render(buf, h)
