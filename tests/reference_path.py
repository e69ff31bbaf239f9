"""The pure-Python reference path, for tests that compare the compiled paths against it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from kdump.formats import fast_records, fast_walk


@contextmanager
def reference_path() -> Iterator[None]:
    """Within the block the scanner and the record path run the reference: the compiled walk and
    the compiled record path are switched off, and switched back on after."""
    saved = fast_walk.compiled, fast_records.compiled
    fast_walk.compiled = fast_records.compiled = None
    try:
        yield
    finally:
        fast_walk.compiled, fast_records.compiled = saved
