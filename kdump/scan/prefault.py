"""The mapped pages the compiled walk is about to read, made present in one call per window.

A walk over a mapped segment otherwise takes a page fault every 16 pages (the kernel's fault-around):
about 16,000 faults per GiB, each an exception into the kernel that costs more than the page-table
work it does, and on a segment of small batches (~500k in a GiB) the walk's first read of each
header waits on them. `MADV_POPULATE_READ` (Linux 5.14) maps a whole window of the page cache in
one system call. Where it is missing (an older kernel, another system) the faults simply happen as
before; where a page cannot be read (a file cut shorter while mapped) the call fails instead of
raising SIGBUS, and the walk's own read meets the fault, which `_mapguard` turns into a finding as
before.
"""

from __future__ import annotations

import errno
import mmap
import sys
from collections.abc import Callable

Buffer = bytes | bytearray | memoryview

# Linux's value; Python 3.11's mmap module does not name it.
MADV_POPULATE_READ: int | None = getattr(
    mmap, "MADV_POPULATE_READ", 22 if sys.platform.startswith("linux") else None
)


def page_populater(buf: Buffer) -> Callable[[int, int], None] | None:
    """For a buffer that is a whole file mapping, a function that maps the pages of [start, end)."""
    mm = buf.obj if isinstance(buf, memoryview) else None
    if MADV_POPULATE_READ is None or not isinstance(mm, mmap.mmap):
        return None
    advice = MADV_POPULATE_READ
    size = len(mm)
    works = True

    def populate(start: int, end: int) -> None:
        nonlocal works
        if not works:
            return
        first = (start // mmap.PAGESIZE) * mmap.PAGESIZE
        end = min(end, size)
        if end <= first:
            return
        try:
            mm.madvise(advice, first, end - first)
        except ValueError:  # the mapping was closed under the scan: nothing to do ahead of it
            works = False
        except OSError as exc:
            # EINVAL: a kernel without the advice (or a mapping it does not apply to): stop asking.
            # EFAULT/EIO/ENOMEM: some page cannot be made present now; the walk's read finds out.
            if exc.errno == errno.EINVAL:
                works = False

    return populate
