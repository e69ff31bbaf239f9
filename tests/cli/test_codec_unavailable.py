"""A codec library that cannot be loaded: every command that needed it says so and exits 3.

Each codec's Python library is hidden in turn from a real `kdump` process (a `sitecustomize` on
PYTHONPATH that makes its import fail), or made to fail on import with something other than an
ImportError (a broken install). What the commands print is compared with a normal run on the same
data: a count or offset is either the normal run's or marked unknown, never a wrong number.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.corpus import SUBSET_ARCHIVE, subset_root

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples" / "logdir"

# codec -> (modules to hide, the Python distribution the finding names)
CODECS = {
    "lz4": (("lz4", "lz4.block", "lz4.frame"), "lz4"),
    "snappy": (("snappy",), "python-snappy"),
    "zstd": (("zstandard",), "zstandard"),
}

MISSING = """import sys
for _name in {names!r}:
    sys.modules[_name] = None
"""

BROKEN = """import sys


class _Broken:
    def find_spec(self, name, path=None, target=None):
        if name in {names!r}:
            raise RuntimeError("simulated: the library's shared object does not match this Python")
        return None


sys.meta_path.insert(0, _Broken())
"""


def _hide(tmp_path: Path, codec: str, template: str = MISSING) -> Path:
    d = tmp_path / f"hide-{codec}-{len(template)}"
    d.mkdir(exist_ok=True)
    (d / "sitecustomize.py").write_text(template.format(names=CODECS[codec][0]), encoding="utf-8")
    return d


def _run(args: list[str], hide: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    path = [str(REPO)] if hide is None else [str(hide), str(REPO)]
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), **env}
    return subprocess.run(
        [sys.executable, "-m", "kdump", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=REPO,
        timeout=300,
    )


def _rows(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _summaries(out: str) -> dict[str, dict[str, Any]]:
    return {r["file"]: r for r in _rows(out) if r["type"] == "summary" and r.get("scope") == "partition"}


def _assert_never_wrong(normal: dict[str, dict[str, Any]], hidden: dict[str, dict[str, Any]]) -> int:
    """Each partition's counts and offsets are the normal run's, or marked unknown; how many were."""
    assert normal.keys() == hidden.keys()
    unknown = 0
    for label, n in normal.items():
        h = hidden[label]
        assert n["uncounted_batches"] == 0
        assert n["records"] == n["records_counted"]
        assert (h["batches"], h["last_offset"]) == (n["batches"], n["last_offset"]), label
        if h["uncounted_batches"]:
            unknown += 1
            assert h["records"] is None, label
            assert h["records_counted"] < n["records"], label
        else:
            assert h["records"] == n["records"], label
        if h["first_offset"] is None and n["first_offset"] is not None:
            assert h["first_offset_at_most"] >= n["first_offset"], label
        else:
            assert (h["first_offset"], h["first_offset_at_most"]) == (n["first_offset"], None), label
    return unknown


def _codec_findings(out: str) -> list[dict[str, Any]]:
    return [r for r in _rows(out) if r["type"] == "finding" and r["code"] == "codec-unavailable"]


def _assert_names_library(
    findings: list[dict[str, Any]], codec: str, error: str = "ModuleNotFoundError"
) -> None:
    library = CODECS[codec][1]
    assert findings
    for f in findings:
        assert f["message"].startswith(
            f"{codec} payloads cannot be decompressed here: the Python library {library}"
        )
        assert f"install it with `pip install {library}`" in f["message"]
        assert error in f["message"]


@pytest.fixture(scope="module")
def normal() -> dict[tuple[str, bool], dict[str, dict[str, Any]]]:
    """verify --format json of samples/logdir in a normal install, shallow and deep."""
    out = {}
    for deep in (False, True):
        r = _run(["verify", "--format", "json", *(["--deep"] if deep else []), str(SAMPLES)])
        assert r.returncode == 0, r.stderr
        out[("samples", deep)] = _summaries(r.stdout)
    return out


@pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
@pytest.mark.parametrize("codec", sorted(CODECS))
def test_verify_samples(
    tmp_path: Path, normal: dict[tuple[str, bool], dict[str, dict[str, Any]]], codec: str, deep: bool
) -> None:
    r = _run(
        ["verify", "--format", "json", *(["--deep"] if deep else []), str(SAMPLES)], _hide(tmp_path, codec)
    )
    found = _codec_findings(r.stdout)
    overall = _rows(r.stdout)[-1]
    unknown = _assert_never_wrong(normal[("samples", deep)], _summaries(r.stdout))
    if not deep and codec == "zstd":
        # The shallow check reads v2 headers only, and zstd is never in a legacy wrapper.
        assert (r.returncode, found, unknown) == (0, [], 0)
        return
    # Every batch of this codec that needed decompressing is named, and the run is not a pass.
    assert r.returncode == 3, r.stderr
    assert overall["exit_code"] == 3
    assert overall["records"] is None
    _assert_names_library(found, codec)
    assert unknown > 0
    if not deep:
        # Only the legacy wrappers, decoded even by a shallow check for their offsets and counts.
        legacy = {"lz4": {"legacy-v1-lz4-0", "mixed-formats-0"}, "snappy": {"mixed-formats-0"}}[codec]
        assert {f["file"].split("/")[-2] for f in found} == legacy


def test_verify_text_marks_unknown(tmp_path: Path) -> None:
    # The case: 3 lz4 wrappers of 51 records, offsets 749..799 in a normal install.
    r = _run(["verify", str(SAMPLES / "legacy-v1-lz4-0")], _hide(tmp_path, "lz4"))
    assert r.returncode == 3
    lines = r.stdout.splitlines()
    assert lines[-2] == (
        f"UNCHECKED: {SAMPLES / 'legacy-v1-lz4-0'}: 1 segments, 3 batches, unknown records (0 counted, 3 batches "
        "not decompressed), offsets ?..799 (the first unknown, at most 758); 0 errors, 3 warnings, 0 info; "
        "checked 34302 of 34302 log bytes (100.0%)"
    )
    assert lines[-1].endswith("; exit 3")
    assert "unknown records (0 counted, 3 batches not decompressed)" in lines[-1]
    assert sum("WARNING codec-unavailable" in line and "pip install lz4" in line for line in lines) == 3
    assert "its inner messages were not read: the last offset is 758, the first is unknown" in lines[0]
    rich = _run(
        ["verify", "--format", "rich", str(SAMPLES / "legacy-v1-lz4-0")],
        _hide(tmp_path, "lz4"),
        COLUMNS="200",
    )
    assert rich.returncode == 3
    assert any(" 0+? " in line and " ?..799 " in line for line in rich.stdout.splitlines())


@pytest.mark.parametrize("deep", [False, True], ids=["shallow", "deep"])
def test_verify_corpus_subset(tmp_path: Path, deep: bool) -> None:
    if not SUBSET_ARCHIVE.exists():
        pytest.skip("tests/data/corpus-subset.tar.xz is absent")
    root = subset_root(tmp_path)
    legacy = root / "kafka-3.8.0-zk-legacy"
    paths = [
        str(legacy / p) for p in ("legacy-v0-lz4-0", "legacy-v1-lz4-0", "mixed-formats-0", "legacy-v1-lat-0")
    ]
    args = ["verify", "--format", "json", *(["--deep"] if deep else []), *paths]
    base = _run(args)
    assert base.returncode == 0, base.stdout
    for codec in ("lz4", "zstd"):
        r = _run(args, _hide(tmp_path, codec))
        unknown = _assert_never_wrong(_summaries(base.stdout), _summaries(r.stdout))
        found = _codec_findings(r.stdout)
        if codec == "zstd" and not deep:
            assert (r.returncode, found, unknown) == (0, [], 0)  # zstd is v2 only: headers suffice
            continue
        assert r.returncode == 3
        _assert_names_library(found, codec)
        assert unknown == (2 if codec == "lz4" and not deep else 3 if codec == "lz4" else 1)


def test_broken_library_and_pure_python(tmp_path: Path) -> None:
    """A library whose import raises something else than ImportError; the compiled walk and the
    reference path report the same."""
    hide = _hide(tmp_path, "zstd", BROKEN)
    args = [
        "verify",
        "--deep",
        "--format",
        "json",
        str(SAMPLES / "c-zstd-0"),
        str(SAMPLES / "mixed-formats-0"),
    ]
    compiled = _run(args, hide)
    pure = _run(args, hide, KDUMP_PURE_PYTHON="1")
    for r in (compiled, pure):
        assert r.returncode == 3, r.stderr
        _assert_names_library(_codec_findings(r.stdout), "zstd", "RuntimeError: simulated")
    assert _rows(compiled.stdout) == _rows(pure.stdout)
    summary = _summaries(compiled.stdout)[str(SAMPLES / "c-zstd-0")]
    assert (summary["records"], summary["records_counted"], summary["uncounted_batches"]) == (None, 0, 18)


def test_dump(tmp_path: Path) -> None:
    hide = _hide(tmp_path, "lz4")
    v2 = str(SAMPLES / "c-lz4-0")
    # Batches of v2 data need no decompression: the same output, exit 0.
    normal, hidden = _run(["dump", v2]), _run(["dump", v2], hide)
    assert (hidden.returncode, hidden.stdout) == (0, normal.stdout)
    for args in (["dump", "--records", v2], ["dump", "--records", "--format", "rich", v2]):
        r = _run(args, hide)
        assert r.returncode == 3, args
        assert "12 batches were not decompressed" in r.stderr
        assert (
            "unknown records (0 counted, 12 batches not decompressed), offsets 2655..2999"
            in r.stdout.replace("\n", " ").replace("  ", " ")
        )
    r = _run(["dump", "--records", "--format", "json", v2], hide)
    pure = _run(["dump", "--records", "--format", "json", v2], hide, KDUMP_PURE_PYTHON="1")
    assert r.returncode == pure.returncode == 3
    assert _rows(r.stdout) == _rows(pure.stdout)  # the compiled record path and the reference agree
    _assert_names_library(_codec_findings(r.stdout), "lz4")
    assert len(_codec_findings(r.stdout)) == 12
    s = _rows(r.stdout)[-1]
    assert (s["record_count"], s["records_counted"], s["uncounted_batches"]) == (None, 0, 12)
    # A legacy wrapper's records and first offset are unknown even for the batch listing: once each.
    legacy = str(SAMPLES / "legacy-v1-lz4-0")
    for args in (["dump", legacy], ["dump", "--records", legacy]):
        r = _run(args, hide)
        assert r.returncode == 3
        assert r.stdout.count("WARNING codec-unavailable") == 3
        assert r.stdout.splitlines()[-1].startswith(
            "Summary: 3 batches, unknown records (0 counted, 3 batches not decompressed), "
            "offsets ?..799 (the first unknown, at most 758)"
        )


def test_seek_by_time(tmp_path: Path) -> None:
    hide = _hide(tmp_path, "lz4")
    parts = [str(SAMPLES / "c-lz4-0"), str(SAMPLES / "legacy-v1-lz4-0")]
    for when in ("1795297227150", "max-timestamp"):
        assert _run(["seek-by-time", when, *parts]).returncode == 0
        r = _run(["seek-by-time", "--format", "json", when, *parts], hide)
        assert r.returncode == 3
        rows = _rows(r.stdout)
        assert [(x["offset"], x["unknown"]) for x in rows] == [(None, True), (None, True)]
        assert all("the answer may be among them: it is unknown" in x["notes"][-1] for x in rows)
        text = _run(["seek-by-time", when, *parts], hide).stdout
        assert text.count("offset: unknown") == 2
        assert "offset: none" not in text
    # The log's ends need no record: the same answers.
    for when in ("earliest", "latest"):
        normal = [
            (x["offset"], x["unknown"])
            for x in _rows(_run(["seek-by-time", "--format", "json", when, *parts]).stdout)
        ]
        r = _run(["seek-by-time", "--format", "json", when, *parts], hide)
        assert r.returncode == 0
        assert [(x["offset"], x["unknown"]) for x in _rows(r.stdout)] == normal


def test_repairs_and_compare_need_no_codec(tmp_path: Path) -> None:
    hide = _hide(tmp_path, "lz4")
    logdir = tmp_path / "logdir"
    shutil.copytree(SAMPLES, logdir)
    for name in ("legacy-v1-lz4-0", "c-lz4-0", "txn-1"):
        for args in (["reindex", "--rebuild-all"], ["trim-tail"]):
            call = [*args, str(logdir / name)]
            normal, hidden = _run(call), _run(call, hide)
            assert (hidden.returncode, hidden.stdout) == (normal.returncode, normal.stdout), call
    call = ["compare", "--format", "json", str(logdir / "legacy-v1-lz4-0"), str(SAMPLES / "legacy-v1-lz4-0")]
    normal, hidden = _run(call), _run(call, hide)
    assert hidden.returncode == normal.returncode == 0
    # Only batch headers are compared: the same rows but for the wrappers' warnings, which are counted.
    rows = _rows(hidden.stdout)
    found = [r for r in rows if r["type"] == "finding"]
    assert len(found) == 6
    assert {r["code"] for r in found} == {"codec-unavailable"}
    warnings = [r.pop("findings")["warning"] for r in rows if r["type"] != "finding" and "findings" in r]
    assert warnings == [3, 3, 6]  # each replica, then the partition
    expected = _rows(normal.stdout)
    for r in expected:
        assert r.pop("findings", {"warning": 0})["warning"] == 0
    # The wrappers' records are counted as verify counts them, which needs the codec: unknown here,
    # never the count of what could be read.
    replicas = [(r, e) for r, e in zip(rows, expected, strict=False) if r["type"] == "replica"]
    assert replicas
    assert all(r.pop("records") is None and e.pop("records") == 51 for r, e in replicas)
    assert [r for r in rows if r["type"] != "finding"] == expected


def test_salvage(tmp_path: Path) -> None:
    part = SAMPLES / "legacy-v1-lz4-0"
    r = _run(["salvage", str(part), "--out", str(tmp_path / "out")], _hide(tmp_path, "lz4"))
    assert r.returncode == 3
    assert "the records of 3 batches were not decompressed" in r.stderr
    assert "pip install lz4" in r.stdout
    # The clean partition is copied byte for byte: whole without the codec.
    log = "00000000000000000749.log"
    assert (tmp_path / "out" / part.name / log).read_bytes() == (part / log).read_bytes()
    assert (tmp_path / "out" / "records.jsonl").read_text() == ""


def test_dump_and_seek_corpus_subset(tmp_path: Path) -> None:
    if not SUBSET_ARCHIVE.exists():
        pytest.skip("tests/data/corpus-subset.tar.xz is absent")
    legacy = subset_root(tmp_path) / "kafka-3.8.0-zk-legacy"
    hide = _hide(tmp_path, "lz4")
    # The v0 lz4 wrapper of 30 records, offsets 770..799 (Kafka's old frame checksum).
    part = str(legacy / "legacy-v0-lz4-0")
    normal = _rows(_run(["dump", "--records", "--format", "json", part]).stdout)[-1]
    assert (normal["record_count"], normal["first_offset"], normal["last_offset"]) == (30, 770, 799)
    for args in (["dump", "--format", "json", part], ["dump", "--records", "--format", "json", part]):
        r = _run(args, hide)
        assert r.returncode == 3, args
        _assert_names_library(_codec_findings(r.stdout), "lz4")
        s = _rows(r.stdout)[-1]
        assert (s["record_count"], s["records_counted"], s["uncounted_batches"]) == (None, 0, 1)
        assert (s["first_offset"], s["first_offset_at_most"], s["last_offset"]) == (None, 799, 799)
    # zstd batches of mixed-formats-0 (v2): listed without the codec, their records not.
    mixed = str(legacy / "mixed-formats-0")
    zstd = _hide(tmp_path, "zstd")
    assert _run(["dump", mixed], zstd).stdout == _run(["dump", mixed]).stdout
    r = _run(["dump", "--records", mixed], zstd)
    assert r.returncode == 3
    assert "7 batches were not decompressed" in r.stderr
    # A time inside the v1 lz4 wrappers: unknown, never another answer.
    v1 = str(legacy / "legacy-v1-lz4-0")
    assert (
        _run(["seek-by-time", "earliest", v1], hide).stdout == _run(["seek-by-time", "earliest", v1]).stdout
    )
    r = _run(["seek-by-time", "--format", "json", "max-timestamp", v1], hide)
    assert r.returncode == 3
    assert [(x["offset"], x["unknown"]) for x in _rows(r.stdout)] == [(None, True)]


def test_another_package_under_the_codec_name(tmp_path: Path) -> None:
    """`pip install snappy` installs SnapPy (topology), whose module is also `snappy`: imported fine,
    it has no uncompress. That is the environment, not damaged data (no decompression-failed)."""
    hide = tmp_path / "other-snappy"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        'import sys, types\nsys.modules["snappy"] = types.ModuleType("snappy")\n', encoding="utf-8"
    )
    r = _run(["verify", "--deep", "--format", "json", str(SAMPLES / "c-snappy-0")], hide)
    assert r.returncode == 3
    assert {x["code"] for x in _rows(r.stdout) if x["type"] == "finding"} == {"codec-unavailable"}
    _assert_names_library(_codec_findings(r.stdout), "snappy", "has no compress, uncompress")
