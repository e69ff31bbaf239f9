"""Only `tests/corpus.py` knows where the corpus is (`../shared/corpus`, or `$KDUMP_CORPUS`).

A test that built the path itself would read `../shared` even when `KDUMP_CORPUS` points elsewhere,
so `.ci/run`'s pass without the corpus would not prove what a fresh clone without it does; and a
file that uses the corpus must be one of those that pass reruns (it selects them by what they use).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
# Scripts run by hand beside the corpus, not tests: they take the corpus path as an argument too.
NOT_TESTS = ("bench", "data")
SHARED = re.compile(r"""["']shared["']""")


def _sources() -> list[Path]:
    return [p for p in sorted(TESTS.rglob("*.py")) if p.relative_to(TESTS).parts[0] not in NOT_TESTS]


def test_only_corpus_py_names_the_shared_directory() -> None:
    named = [str(p.relative_to(REPO)) for p in _sources() if SHARED.search(p.read_text(encoding="utf-8"))]
    assert named == ["tests/corpus.py"]


def test_the_ci_pass_without_the_corpus_selects_every_file_that_uses_it() -> None:
    """The files `.ci/run` selects are those whose helpers or fixtures reach the corpus."""
    run = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    [pattern] = re.findall(r"grep -rlE '([^']+)' tests --include='test_\*\.py'", run)
    selected = set(
        subprocess.run(
            ["grep", "-rlE", pattern, "tests", "--include=test_*.py"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    )
    # Helper modules that reach the corpus: a test file importing one uses the corpus too.
    helpers = {"corpus", "corpus_paths", "raw_records", "corruption_matrix"}
    fixtures = ("corpus_root", "full_corpus", "corpus_logdirs")
    for path in sorted(TESTS.rglob("test_*.py")):
        text = path.read_text(encoding="utf-8")
        imports = set(re.findall(r"^\s*(?:from|import) (\w+)", text, re.MULTILINE))
        if imports & helpers or any(name in text for name in fixtures):
            assert str(path.relative_to(REPO)) in selected, path
    assert "tests/ops/salvage/test_salvage_corpus.py" in selected
