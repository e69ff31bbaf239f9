"""`ops.salvage.parquet.load_pyarrow`: pyarrow's default pool is the system allocator for a salvage
(what the Arrow calls freed stays out of mimalloc's keeping), unless the environment chose one, and
the environment is left as it was. Each case in a fresh interpreter: the pool is made once, at
pyarrow's import."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("pyarrow")

PROBE = """
import json, os, sys
from kdump.ops.salvage.parquet import load_pyarrow
pa, _ = load_pyarrow()
print(json.dumps([pa.default_memory_pool().backend_name, os.environ.get("ARROW_DEFAULT_MEMORY_POOL")]))
"""


def _probe(pool: str | None) -> list[str | None]:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if pool is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = pool
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    answer: list[str | None] = json.loads(out.stdout)
    return answer


def test_the_default_pool_is_the_system_allocator_and_the_environment_is_untouched() -> None:
    assert _probe(None) == ["system", None]


def test_a_pool_the_environment_chose_is_left_alone() -> None:
    import pyarrow as pa

    try:
        pa.mimalloc_memory_pool()
    except NotImplementedError:
        pytest.skip("this pyarrow is built without mimalloc")
    assert _probe("mimalloc") == ["mimalloc", "mimalloc"]
