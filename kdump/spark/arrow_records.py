"""The records of runs of batches as Arrow arrays for the data source (`formats.arrow_columns`).

The data source's record schema (`spark.schema.RECORD_COLUMNS`: key, value, offset, timestamp,
headers) is the one `formats.arrow_columns` builds from the compiled record path's buffers; this
module keeps the data source's names for it.
"""

from __future__ import annotations

from typing import Any

from kdump.formats.arrow_columns import Buffer, run_record_arrays
from kdump.formats.batch import BatchHeader

__all__ = ["batch_record_arrays", "run_record_arrays"]


def batch_record_arrays(buf: Buffer, h: BatchHeader) -> dict[str, Any] | None:
    """The per-record columns of one clean batch (see `run_record_arrays`); None to decode the
    batch the reference way."""
    for item in run_record_arrays(buf, [h]):
        if isinstance(item, BatchHeader):
            return None
        return item[1]
    return None
