# The compiled record path (kdump/formats/_fastrecords.c); kdump/formats/fast_records.py wraps it.
Buffer = bytes | bytearray | memoryview

def decode_v2(
    data: Buffer,
    record_type: type,
    base_offset: int,
    last_offset: int,
    base_ts: int,
    max_ts: int,
    log_append: bool,
    base_seq: int,
    count: int,
    check_max_ts: bool,
) -> tuple[list[tuple[object, ...]], bool] | None: ...
def render_v2(
    data: Buffer,
    base_offset: int,
    last_offset: int,
    base_ts: int,
    max_ts: int,
    log_append: bool,
    base_seq: int,
    count: int,
    check_max_ts: bool,
    fmt: int,
    encoding: int,
    prefix: bytes,
    middle: bytes,
    middle2: bytes,
) -> bytes | None: ...
def render_kafka_v2(
    data: Buffer,
    base_offset: int,
    last_offset: int,
    base_ts: int,
    max_ts: int,
    log_append: bool,
    base_seq: int,
    count: int,
    check_max_ts: bool,
    flags: int,
    label: bytes,
    previous: int,
) -> tuple[bytes, int, list[tuple[int, int]]] | None: ...

Column = tuple[bytes, bytes, bytes, int]

def columns_v2_many(
    items: list[tuple[Buffer, int, int, int, int, bool, int, bool]],
) -> tuple[int, int, bytes, bytes, Column, Column, bytes, Column, Column, bytes]: ...
def check_v2(
    data: Buffer,
    base_offset: int,
    last_offset: int,
    base_ts: int,
    max_ts: int,
    log_append: bool,
    count: int,
    check_max_ts: bool,
) -> bool: ...
def scale_i64(buf: Buffer, factor: int, /) -> bytes | None: ...
def take_fixed(values: Buffer, width: int, index: Buffer, /) -> bytes: ...
def nonempty_validity(offsets: Buffer, n: int, /) -> tuple[bytes, int]: ...
def zstd_frames(
    buf: Buffer, columns: Buffer, n: int, lo: int, hi: int, max_total: int, /
) -> tuple[bytes, bytes]: ...
def check_v2_run(
    buf: Buffer, columns: Buffer, n: int, lo: int, hi: int, index: Buffer, datas: list[Buffer], /
) -> bytes: ...
