"""Importing kdump stays cheap: no pyspark, rich or codec library until something needs it.

Each import runs in a fresh interpreter, since this test process may already hold those modules.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kdump.formats.fast_walk import compiled as compiled_walk

HEAVY = ("pyspark", "py4j", "pyarrow", "rich", "lz4", "snappy", "zstandard")


def _last_line(code: str) -> str:
    """The last line a fresh interpreter running `code` prints."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.strip().splitlines()[-1]


def _heavy_modules_after(statement: str) -> list[str]:
    code = (
        "import json, sys\n"
        f"{statement}\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & set(heavy))))\n"
    )
    loaded: list[str] = json.loads(_last_line(code))
    return loaded


@pytest.mark.parametrize(
    "statement",
    [
        "import kdump",
        "import kdump.cli",
        "import kdump.scan",
        "import kdump.ops.checks.verify",
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


SAMPLES = Path(__file__).resolve().parent.parent / "samples"
# Loaded only where a shallow verify needs them: a metadata log, remote metadata, a remote store given,
# a finding to render, a deep check's thread pool.
NOT_FOR_SHALLOW_VERIFY = (
    "concurrent.futures",
    "kdump.formats.internal",
    "kdump.model.remote_store",
    "kdump.ops.tiered.remote_metadata",
    "kdump.ops.checks.remote",
    "kdump.render.rows",
    "kdump.render.text",
)


def _loaded_by_verify(path: Path, *args: str, probe: tuple[str, ...] = NOT_FOR_SHALLOW_VERIFY) -> list[str]:
    code = (  # json is imported only after the look, so that it can be probed for too
        "import sys\n"
        f"sys.argv = ['kdump', 'verify', *{list(args)!r}, {str(path)!r}]\n"
        "from kdump.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        f"loaded = sorted(m for m in {probe!r} if m in sys.modules)\n"
        "import json\n"
        "print(json.dumps(loaded))\n"
    )
    loaded: list[str] = json.loads(_last_line(code))
    return loaded


def test_shallow_verify_of_a_clean_partition_loads_only_what_it_uses() -> None:
    assert _loaded_by_verify(SAMPLES / "logdir" / "c-lz4-0") == []


COMPILED_INDEX_CHECK_SPARES = (
    ()
    if compiled_walk is None
    else (
        "kdump.formats.offset_index",
        "kdump.formats.time_index",
        "kdump.formats.txn_index",
        "kdump.scan.index_checks",
    )
)
# Loaded only where a partition has files that need them: a checkpoint, a producer snapshot, a remote
# index cache (and json, which the checkpoints' decoders use, or a JSON report), a .txnindex or an
# abort marker, an index the compiled check is not sure of, a stored file (a URL, a tarball).
NOT_FOR_SEGMENTS_ALONE = (
    "json",
    "shlex",
    "base64",
    "kdump.formats.checkpoints",
    "kdump.formats.producer_snapshot",
    "kdump.model.remote_index_cache",
    "kdump.ops.checks.remote_cache",
    "kdump.store.buffers",
    "kdump.store.readers",
    # The reference path checks every index in Python, with the index decoders and checks.
    *COMPILED_INDEX_CHECK_SPARES,
)


def _segments_only(tmp_path: Path) -> Path:
    """A copy of a sample partition holding its segment files and nothing else (no state files)."""
    part = tmp_path / "c-lz4-0"
    part.mkdir()
    for f in (SAMPLES / "logdir" / "c-lz4-0").iterdir():
        if f.suffix in (".log", ".index", ".timeindex"):
            shutil.copy(f, part / f.name)
    return part


def test_shallow_verify_of_segments_alone_loads_no_state_file_decoder(tmp_path: Path) -> None:
    assert _loaded_by_verify(_segments_only(tmp_path), probe=NOT_FOR_SEGMENTS_ALONE) == []


def test_the_verify_probe_sees_what_state_files_load() -> None:
    # The probe itself works: the sample partition, with its checkpoint, snapshot and partition.metadata,
    # loads their decoders; and a JSON report loads json.
    part = SAMPLES / "logdir" / "c-lz4-0"
    assert {"kdump.formats.checkpoints", "kdump.formats.producer_snapshot"} <= set(
        _loaded_by_verify(part, probe=NOT_FOR_SEGMENTS_ALONE)
    )


def test_the_verify_probe_sees_what_an_index_in_doubt_loads(tmp_path: Path) -> None:
    # The probe itself works: an offset index with a torn slot is checked (and reported) in Python.
    part = _segments_only(tmp_path)
    index = next(part.glob("*.index"))
    index.write_bytes(index.read_bytes() + b"\x00\x00\x00")
    assert _loaded_by_verify(part, probe=("kdump.scan.index_checks",)) == ["kdump.scan.index_checks"]


def test_a_json_report_loads_json(tmp_path: Path) -> None:
    assert _loaded_by_verify(_segments_only(tmp_path), "--format", "json", probe=NOT_FOR_SEGMENTS_ALONE) == [
        "json"
    ]


def test_the_verify_probe_sees_what_a_finding_loads() -> None:
    # The probe itself works: a partition with a finding to print loads the text renderer.
    assert "kdump.render.text" in _loaded_by_verify(SAMPLES / "damaged" / "bad-crc-0")
    assert "kdump.render.rows" in _loaded_by_verify(SAMPLES / "damaged" / "bad-crc-0", "--format", "json")


def test_the_objects_of_a_run_are_frozen_before_the_process_ends() -> None:
    # The collector's passes at exit would walk every object the imports made; `main` freezes them
    # (gc.freeze) so that the interpreter's teardown alone frees them.
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count()))\n"
        f"sys.argv = ['kdump', 'verify', {str(SAMPLES / 'logdir' / 'c-lz4-0')!r}]\n"
        "from kdump.cli import main\n"
        "main()\n"
    )
    frozen = int(_last_line(code).split()[1])
    # Every module verify loaded, its classes and functions: some 18,000 objects (none without the freeze).
    assert frozen > 10_000
