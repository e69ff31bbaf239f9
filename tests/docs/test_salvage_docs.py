"""`man/kdump-salvage.1` and README stay in step with the salvage report and its replay snippet."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from builders import build_partition
from corruptions import flip_body_byte
from test_docs_in_step import MAN, REPO, plain_text, sections, unescape

from kdump.ops.salvage.output import PARTIAL_JSONL, RECORDS_JSONL, RECORDS_PARQUET, REPORT_JSON
from kdump.ops.salvage.report import SPARK_REPLAY

PAGE = (MAN / "kdump-salvage.1").read_text(encoding="utf-8")


def _report(kdump: Callable[..., Any], tmp_path: Path) -> dict[str, Any]:
    part = tmp_path / "in" / "orders-0"
    logs = build_partition(part, segments=2, batches_per_segment=3)
    flip_body_byte(1).apply(logs[0])
    result = kdump("salvage", "--format", "json", str(part), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.stderr  # written whole; the loss is in the report
    report: dict[str, Any] = json.loads(result.stdout)
    assert report == json.loads((tmp_path / "out" / "report.json").read_text())
    return report


def test_the_page_documents_every_report_field(kdump: Callable[..., Any], tmp_path: Path) -> None:
    report = _report(kdump, tmp_path)
    text = plain_text(sections(PAGE)["REPORT"])
    words = set(re.findall(r"[a-z_]+", text))
    region = report["regions"][0]
    nested = [
        report,
        report["segments"][0],
        region,
        region["damaged_entries"][0],
        region["lost_offsets"],
        region["lost_time"],
        region["recovered_after"],
        region["batches_recovered"][0],
        report["batches"],
        report["records"],
        report["partial"],
        report["clean_partition"],
        report["clean_partition"]["verify"],
    ]
    undocumented = {k for obj in nested for k in obj if k not in words and k not in ("how_explained", "note")}
    assert not undocumented, f"kdump-salvage.1 REPORT does not mention {sorted(undocumented)}"


def _snippet(lines: list[str]) -> str:
    """The text of the first .nf block."""
    start = lines.index(".nf") + 1
    end = lines.index(".fi", start)
    return "\n".join(unescape(line) for line in lines[start:end])


def test_the_page_shows_the_replay_snippet_the_report_gives() -> None:
    lines = sections(PAGE)["PUTTING THE RECORDS BACK"]
    assert _snippet(lines) == SPARK_REPLAY.format(out="DIR")
    assert "kafka" in plain_text(lines)


def test_the_readme_shows_it_too() -> None:
    readme = (REPO / "README.md").read_text()
    # As the text report prints it, indented under its heading, in the README's replayed session
    # (tests/docs/test_sessions.py holds the whole session to a real run).
    printed = "\n".join(
        "  " + line if line else "" for line in SPARK_REPLAY.format(out="~/demo/salvaged").splitlines()
    )
    assert printed in readme
    assert "kdump salvage" in readme


def test_every_output_file_is_described() -> None:
    described = plain_text(sections(PAGE)["DESCRIPTION"])
    for name in (RECORDS_JSONL, RECORDS_PARQUET, PARTIAL_JSONL, REPORT_JSON):
        assert name in described, name
