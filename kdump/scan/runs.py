"""Deep checks of a compiled walk's run of batches, for scans that check records without yielding them.

`scan_log(batch_runs=True, deep=True)` (verify --deep) needs to know what each batch's records say,
not the records themselves. Each batch of a `BatchRun` is decompressed and asked of the compiled
record path's `check_v2` (does `decode_v2` find it clean?); a batch it does not find clean takes the
reference (`decode_batch_records`), and the run is cut there so its findings stand right after it,
where the reference scan puts them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from kdump.findings import Finding
from kdump.formats import fast_records, fast_walk
from kdump.formats.batch import BatchHeader
from kdump.formats.codecs import decompress
from kdump.formats.constants import CONTROL_MASK, TIMESTAMP_TYPE_MASK, V2_HEADER_SIZE

Buffer = bytes | bytearray | memoryview
DecodeBatch = Callable[[Buffer, BatchHeader, str], tuple[Sequence[object], list[Finding]]]


def sub_run(run: fast_walk.BatchRun, i: int, j: int) -> fast_walk.BatchRun:
    """Batches i..j-1 of a run, as a run of their own."""
    if i == 0 and j == run.n:
        return run
    n = run.n
    view = memoryview(run.columns).cast("q")
    columns = b"".join(view[k * n + i : k * n + j].tobytes() for k in range(fast_walk.N_COLUMNS))
    part = fast_walk.BatchRun(j - i, 0, 0, columns, 0, -1, 0, 0, 0)
    positions, sizes = part.column(fast_walk.POSITION), part.column(fast_walk.SIZE)
    counts, lasts = part.column(fast_walk.COUNT), part.column(fast_walk.LAST_OFFSET)
    attrs, max_ts = part.column(fast_walk.ATTRIBUTES), part.column(fast_walk.MAX_TIMESTAMP)
    best = max(range(j - i), key=lambda k: (max_ts[k], -k))
    attributes_or = 0
    for a in attrs:
        attributes_or |= a
    return part._replace(
        start=positions[0],
        end=positions[-1] + sizes[-1],
        records=sum(counts),
        max_timestamp=max_ts[best],
        offset_of_max_timestamp=lasts[best],
        attributes_or=attributes_or,
        last_offset=lasts[-1],
    )


def check_run_records(
    buf: Buffer, run: fast_walk.BatchRun, file: str, decode_batch: DecodeBatch
) -> Iterator[fast_walk.BatchRun | Finding | int]:
    """The run, cut after each batch whose records need the reference, with that batch's findings.

    Yields runs and findings in scan order, and ints: how many records the batches before held
    (the scanner's record count).
    """
    check = fast_records.compiled.check_v2 if fast_records.compiled is not None else None
    positions = run.column(fast_walk.POSITION)
    sizes = run.column(fast_walk.SIZE)
    attrs = run.column(fast_walk.ATTRIBUTES)
    counts = run.column(fast_walk.COUNT)
    bases = run.column(fast_walk.BASE_OFFSET)
    lasts = run.column(fast_walk.LAST_OFFSET)
    base_ts = run.column(fast_walk.BASE_TIMESTAMP)
    max_ts = run.column(fast_walk.MAX_TIMESTAMP)
    cut = 0
    held = 0
    headers: list[BatchHeader] | None = None
    for k in range(run.n):
        a = attrs[k]
        codec = a & 0x07
        control = a & CONTROL_MASK
        if check is not None and not control:
            pos = positions[k]
            payload = buf[pos + V2_HEADER_SIZE : pos + sizes[k]]
            try:
                data = decompress(codec, payload, magic=2) if codec else payload
            except Exception:
                data = None  # the reference reports it
            log_append = bool(a & TIMESTAMP_TYPE_MASK)
            if data is not None and check(
                data, bases[k], lasts[k], base_ts[k], max_ts[k], log_append, counts[k], not log_append
            ):
                held += counts[k]
                continue
        if headers is None:
            headers = run.headers()
        records, findings = decode_batch(buf, headers[k], file)
        yield sub_run(run, cut, k + 1)
        yield held + len(records)
        held = 0
        cut = k + 1
        yield from findings
    if cut < run.n:
        yield sub_run(run, cut, run.n)
    yield held
