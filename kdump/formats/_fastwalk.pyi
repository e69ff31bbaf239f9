# The compiled batch walk (kdump/formats/_fastwalk.c); kdump/formats/fast_walk.py wraps it.
Buffer = bytes | bytearray | memoryview

def walk_v2(
    buf: Buffer,
    pos: int,
    end: int,
    limit: int,
    soft_stop: int,
    prev_last: int,
    prev_epoch: int,
    base_offset: int | None,
    max_batches: int,
    threads: int = 1,
    thread_bytes: int = ...,
    release_from: int = -1,
    fd: int = -1,
) -> tuple[int, int, int, int, bytes, int, int, int, int]: ...
def headers(columns: bytes, n: int, header_type: type) -> list[tuple[object, ...]]: ...
def kafka_batch_lines(
    columns: Buffer, n: int, lo: int, hi: int, position: int, limit: int
) -> tuple[bytes, int, int]: ...
def crc32c(data: Buffer, crc: int = 0) -> int: ...
def crc32c_impl() -> str: ...
def crc32c_force_table(force: bool) -> None: ...
def index_agrees(
    kind: int,
    index: Buffer,
    base_offset: int,
    positions: Buffer,
    bases: Buffer,
    lasts: Buffer,
    max_timestamps: Buffer,
    valid_bytes: int,
) -> bool: ...
def build_indexes(
    positions: Buffer, last_offsets: Buffer, max_timestamps: Buffer, interval_bytes: int, base_offset: int
) -> tuple[bytes, bytes] | None: ...
