"""The record lines of Kafka's `kafka-dump-log.sh` for a whole batch, through the compiled record path;
and the batch lines of a run of batches, through the compiled walk's columns (`KafkaBatchLines`).

`kafka_tool.record_line` is the reference (and the definition of the text): this module gives the
same bytes for the records of a clean v2 data batch whose keys and values Kafka's StringDecoder
reads, or None, and then the caller decodes the batch the reference way and renders it record by
record, which also meets whatever is wrong with it. The compiled function
(`_fastrecords.render_kafka_v2`) declines wherever the compiled decoder would (a record that does
not decode, offsets outside the batch or out of order, a count or size that does not add up, a max
timestamp that differs); tests/render/test_kafka_tool_fast.py holds the two byte-identical.

The batch lines of a shallow dump (`--files`) are `text.batch_line`'s (the reference) for the batches
of a `BatchRun`, the scanner's own run of clean v2 batches: `_fastwalk.kafka_batch_lines` renders
them from the run's columns, many batches a call, as long as each starts where the one before ended
and ends within the bytes Kafka's tool reads (`--max-bytes`); the batches after that take the
reference path (tests/render/test_kafka_tool_batches.py holds the two byte-identical).
"""

from __future__ import annotations

from kdump.formats import fast_records, fast_walk
from kdump.formats.arrow_columns import payload_of
from kdump.formats.batch import BatchHeader
from kdump.formats.constants import TimestampType
from kdump.render import rows

Buffer = bytes | bytearray | memoryview
__all__ = ["KafkaBatchLines", "KafkaRecordLines"]

_PRINT_DATA, _SKIP_METADATA, _JAVA = 1, 2, 4


class KafkaRecordLines:
    """Renders the record lines of batches in one set of Kafka's flags (StringDecoder keys and values,
    no internal-topic decoder)."""

    def __init__(self, *, print_data: bool, skip_metadata: bool, java: bool) -> None:
        self.flags = (
            (_PRINT_DATA if print_data else 0)
            | (_SKIP_METADATA if skip_metadata else 0)
            | (_JAVA if java else 0)
        )
        self.labels = {t: rows.timestamp_type_label(t).encode() for t in (0, 1)}

    @staticmethod
    def enabled() -> bool:
        """Whether the compiled path is built, imported and not switched off (`KDUMP_PURE_PYTHON=1`)."""
        return fast_records.compiled is not None and hasattr(fast_records.compiled, "render_kafka_v2")

    def render(
        self, buf: Buffer, h: BatchHeader, previous: int
    ) -> tuple[bytes, int, list[tuple[int, int]]] | None:
        """The record lines (newline-terminated) of the batch `h` in `buf`, the last offset printed,
        and the non-consecutive pairs from `previous` (the offset printed before; -1 at a file's start);
        None when the batch needs the reference path (damaged, control, legacy, or the compiled path
        is off)."""
        compiled = fast_records.compiled
        if compiled is None or not 0 <= h.timestamp_type <= 1 or not fast_records.eligible(h):
            return None
        data = payload_of(buf, h)
        if data is None:
            return None
        log_append = h.timestamp_type == TimestampType.LOG_APPEND_TIME
        out: tuple[bytes, int, list[tuple[int, int]]] | None = compiled.render_kafka_v2(
            data,
            h.base_offset,
            h.last_offset,
            h.base_timestamp,
            h.max_timestamp,
            log_append,
            h.base_sequence,
            h.count,
            not log_append,  # the max timestamp check of CreateTime data batches
            self.flags,
            self.labels[h.timestamp_type],
            previous,
        )
        return out


class KafkaBatchLines:
    """The batch lines of the batches of a scanner's `BatchRun`, rendered in C."""

    @staticmethod
    def enabled() -> bool:
        """Whether the compiled walk is built, imported and not switched off (`KDUMP_PURE_PYTHON=1`)."""
        return fast_walk.compiled is not None and hasattr(fast_walk.compiled, "kafka_batch_lines")

    @staticmethod
    def render(run: fast_walk.BatchRun, position: int, limit: int) -> tuple[bytes, int, int]:
        """The lines (newline-terminated) of the run's first batches that Kafka's file iterator reads
        whole from `position` on, each starting where the one before ended and ending by `limit`; how
        many batches that is (0 to run.n) and the position after them."""
        compiled = fast_walk.compiled
        if compiled is None:
            return b"", 0, position
        out: tuple[bytes, int, int] = compiled.kafka_batch_lines(
            run.columns, run.n, 0, run.n, position, limit
        )
        return out
