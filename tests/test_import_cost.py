"""Importing kdump stays cheap: no pyspark, rich or codec library until something needs it.

Each import runs in a fresh interpreter, since this test process may already hold those modules.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("pyspark", "py4j", "pyarrow", "rich", "lz4", "snappy", "zstandard")


def _heavy_modules_after(statement: str) -> list[str]:
    code = (
        "import json, sys\n"
        f"{statement}\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & set(heavy))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


@pytest.mark.parametrize(
    "statement",
    [
        "import kdump",
        "import kdump.cli",
        "import kdump.scan",
        "import kdump.ops.verify",
        "import kdump.spark",
        "import kdump.spark.schema",
        "import kdump.spark.fleet",
    ],
)
def test_import_does_not_load_heavy_modules(statement: str) -> None:
    assert _heavy_modules_after(statement) == []


def test_the_check_sees_a_heavy_import() -> None:
    # The probe itself works: a module that pulls in a codec library is noticed.
    pytest.importorskip("zstandard")
    assert _heavy_modules_after("import zstandard") == ["zstandard"]
