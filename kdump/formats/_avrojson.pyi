# Avro values to JSON (kdump/formats/_avrojson.c); kdump/formats/payloads/avro.py wraps it.
Buffer = bytes | bytearray | memoryview

def to_json(program: tuple[object, ...], skip: int, data: Buffer) -> bytes | None: ...
