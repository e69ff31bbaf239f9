"""`kdump dump` given Kafka's own kafka-dump-log.sh flags prints what Kafka's tool prints, line for line.

Every oracle of the corpus (``expected/``: the full corpus when ``../shared`` is present, the bundled
real subset otherwise) is reproduced by the invocation its README names, run from the corpus root as
the oracles were: stdout byte for byte, stderr (Kafka's summaries, with its absolute paths made
relative as in the oracles) line for line, and the exit status. The oracles were written by Kafka
3.8's tool, so these runs ask for its text with ``--kafka-version 3.8``.
"""

from __future__ import annotations

import gzip
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import Result
from corpus import CORPUS_DIRS

from kdump.render.kafka_tool import _hash_order, shown_path

Kdump = Callable[..., Result]

_LOG_VARIANTS = {
    "shallow": [],
    "deep": ["--deep-iteration"],
    "deep-print-data-log": ["--deep-iteration", "--print-data-log"],
}
_INDEX_VARIANTS = {
    "dump": [],
    "verify-index-only": ["--verify-index-only"],
    "index-sanity-check": ["--index-sanity-check"],
}


def _flags(oracle: Path) -> tuple[str, list[str]] | None:
    """The file an oracle dumped (its name without the variant) and the flags that made it."""
    name = oracle.name.removesuffix(".gz").removesuffix(".txt")
    m = re.fullmatch(r"(\d{20}\.(?:log|index|timeindex|snapshot|txnindex|log\.deleted))\.(.+)", name)
    if m is None:
        return None
    file, variant = m.groups()
    if file.endswith((".index", ".timeindex")):
        flags = _INDEX_VARIANTS.get(variant)
    elif file.endswith((".snapshot", ".txnindex")):
        flags = [] if variant == "dump" else None
    elif variant.startswith("deep-print-data-log."):
        flags = [*_LOG_VARIANTS["deep-print-data-log"], f"--{variant.split('.', 1)[1]}"]
    else:
        flags = _LOG_VARIANTS.get(variant)
    return None if flags is None else (file, flags)


def _oracles(root: Path) -> Iterator[Path]:
    for corpus_dir in CORPUS_DIRS:
        expected = root / corpus_dir / "expected"
        if expected.is_dir():
            for part in sorted(p for p in expected.iterdir() if p.is_dir()):
                for oracle in sorted(part.iterdir()):
                    if oracle.name.endswith((".txt", ".txt.gz")) and _flags(oracle) is not None:
                        yield oracle


def _text(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") else data


def _sibling(oracle: Path, suffix: str) -> Path:
    return oracle.with_name(oracle.name.removesuffix(".gz") + suffix)


def _kafka_stderr(oracle: Path, root: Path) -> list[str]:
    """Kafka's stderr, without the Java stack trace lines kdump does not imitate."""
    path = _sibling(oracle, ".stderr")
    if not path.exists():
        return []
    lines = path.read_text().splitlines()
    return [line.replace(f"{root}/", "") for line in lines if not line.startswith("\tat ")]


def _run_oracle(kdump: Kdump, root: Path, oracle: Path, monkeypatch: pytest.MonkeyPatch, tmp: Path) -> None:
    found = _flags(oracle)
    assert found is not None
    file, flags = found
    part = oracle.parent.name
    corpus_dir = oracle.parent.parent.parent
    if file.endswith(".deleted"):
        # Made from a copy named <base>.log (the tool ignores other suffixes): its `Dumping` line has the
        # bare name.
        src = corpus_dir / part.removesuffix("-deleted-leftovers") / file
        if not src.exists():
            src = corpus_dir / part / file
        shutil.copyfile(src, tmp / file.removesuffix(".deleted"))
        monkeypatch.chdir(tmp)
        arg = file.removesuffix(".deleted")
    else:
        monkeypatch.chdir(root)
        arg = f"{corpus_dir.name}/{part}/{file}"
    result = kdump("dump", "--kafka-version", "3.8", *flags, "--files", arg)
    expected_rc = int(_sibling(oracle, ".rc").read_text()) if _sibling(oracle, ".rc").exists() else 0
    theirs = _text(oracle)
    ours = result.stdout_bytes
    stderr = [line.replace(f"{Path.cwd()}/", "") for line in result.stderr.splitlines()]
    kafka_stderr = _kafka_stderr(oracle, root)
    if file.endswith(".deleted"):
        # The running copy's leftovers captured Kafka's stderr summary at the end of stdout.
        head, sep, tail = theirs.partition(b"\nNon-consecutive offsets in ")
        if sep:
            theirs = head + b"\n"
            kafka_stderr = ("Non-consecutive offsets in " + tail.decode()).splitlines()
            stderr = [re.sub(r"^(Non-consecutive offsets in ).*/", r"\1", s) for s in stderr]
            kafka_stderr = [re.sub(r"^(Non-consecutive offsets in ).*/", r"\1", s) for s in kafka_stderr]
    assert ours == theirs, f"{oracle}: stdout differs"
    assert stderr == kafka_stderr, f"{oracle}: stderr differs"
    assert result.exit_code == expected_rc, oracle


def test_every_corpus_oracle_is_reproduced_by_kafkas_flags(
    kdump: Kdump, corpus_root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    oracles = list(_oracles(corpus_root))
    assert oracles, f"no oracle under {corpus_root}"
    kinds = set()
    for oracle in oracles:
        _run_oracle(kdump, corpus_root, oracle, monkeypatch, tmp_path)
        kinds.add(oracle.name.split(".", 1)[1].removesuffix(".gz"))
    # Every kind of oracle the corpus has was compared (the subset has fewer kinds than the full corpus).
    assert {"log.shallow.txt", "log.deep.txt", "index.dump.txt"} <= kinds


def test_paths_are_shown_as_javas_file_shows_them() -> None:
    assert shown_path("a//b/00000000000000000000.log") == "a/b/00000000000000000000.log"
    assert shown_path("dir/") == "dir"
    assert shown_path("/") == "/"


def test_summaries_follow_javas_hash_map_order() -> None:
    # "Aa" and "BB" share a String hash (2112): bucket 0, in insertion order;
    # "a" (97) is in bucket 1.
    assert _hash_order(["a", "BB", "Aa"], True) == ["BB", "Aa", "a"]
    assert _hash_order(["b", "a"], True) == ["a", "b"]
    # "q" (113) and "a" (97) share bucket 1 of 16, but not of 32: thirteen keys overflow 16 buckets at
    # Java's 0.75 load factor (Scala's map grows at twelve).
    assert _hash_order(["q", "a"], True) == ["q", "a"]
    others = [chr(c) for c in range(ord("b"), ord("b") + 10)]
    assert _hash_order(["q", "a", *others], True)[:2] == ["q", "a"]
    assert _hash_order(["q", "a", *others, "z"], True)[0] == "a"
    assert _hash_order(["q", "a", *others], False)[0] == "a"
