"""CRC-32C (Castagnoli) and CRC32 (IEEE): the two checksums of Kafka's formats.

CRC-32C comes from the `crc32c` package's hardware-accelerated extension. Its package
`__init__` imports `importlib.metadata` to read its own version, which costs about 45 ms at every
start; kdump loads the extension module directly instead and falls back to the package import.
"""

from __future__ import annotations

import importlib.util
import zlib
from collections.abc import Callable
from typing import Any

Buffer = bytes | bytearray | memoryview


def _load_crc32c() -> Callable[[Any], int]:
    try:
        from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader
        from pathlib import Path

        spec = importlib.util.find_spec("crc32c")
        if spec is not None and spec.submodule_search_locations:
            for location in spec.submodule_search_locations:
                for suffix in EXTENSION_SUFFIXES:
                    path = Path(location) / f"_crc32c{suffix}"
                    if path.is_file():
                        loader = ExtensionFileLoader("crc32c._crc32c", str(path))
                        ext_spec = importlib.util.spec_from_file_location(
                            "crc32c._crc32c", path, loader=loader
                        )
                        if ext_spec is not None:
                            module = importlib.util.module_from_spec(ext_spec)
                            loader.exec_module(module)
                            fn: Callable[[Any], int] = module.crc32c
                            return fn
    except (ImportError, OSError):
        pass
    import crc32c

    fallback: Callable[[Any], int] = crc32c.crc32c
    return fallback


crc32c: Callable[[Any], int] = _load_crc32c()


def crc32(data: Buffer) -> int:
    """CRC32 (IEEE), as legacy messages use it."""
    return zlib.crc32(data) & 0xFFFFFFFF
