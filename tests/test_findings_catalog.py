"""The findings catalog is fully tested and fully documented.

Every code in `kdump.findings.CATALOG` must be produced by at least one test (the union of the
`COVERED_CODES` sets of tests/ops/checks/test_verify_findings.py and tests/scan/test_scanner_findings.py,
plus that of any other test module declaring a module-level `COVERED_CODES`, for codes outside
verify and the scanner) and described in `man/kdump-findings.7`. Adding a code without a test or
without documentation fails here.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from kdump.findings import CATALOG, SEVERITY_OF, Consequence, FindingKind, Severity, make_finding

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
COVERING_MODULES = {
    "verify": TESTS / "ops" / "checks" / "test_verify_findings.py",
    "scanner": TESTS / "scan" / "test_scanner_findings.py",
}
MAN_PAGE = REPO / "man" / "kdump-findings.7"


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_findings_catalog_{name}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _other_covering_modules() -> list[Path]:
    """Test modules besides the two above that declare a module-level COVERED_CODES."""
    declared = re.compile(r"^COVERED_CODES\b\s*(?::[^=]*)?=", re.MULTILINE)
    required = set(COVERING_MODULES.values()) | {Path(__file__).resolve()}
    return [
        p
        for p in sorted(TESTS.rglob("test_*.py"))
        if p.resolve() not in required and declared.search(p.read_text(encoding="utf-8"))
    ]


def _covered(name: str, path: Path | None = None) -> set[str]:
    path = path or COVERING_MODULES[name]
    if not path.exists():
        pytest.fail(f"{path.relative_to(REPO)} does not exist yet: it must define COVERED_CODES")
    codes = getattr(_load(name, path), "COVERED_CODES", None)
    assert isinstance(codes, (set, frozenset)), f"{path.relative_to(REPO)} must define a set COVERED_CODES"
    return set(codes)


def test_catalog_is_well_formed() -> None:
    assert len(CATALOG) >= 30
    for code, kind in CATALOG.items():
        assert code == kind.code
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", code), code
        assert isinstance(kind.severity, Severity)
        assert kind.meaning
        assert kind.broker
        assert kind.where
        assert kind.repair is None or kind.repair.startswith("kdump ")


def test_verify_findings_cover_only_catalogued_codes() -> None:
    assert _covered("verify") <= set(CATALOG)


def test_every_catalogued_code_is_covered_by_a_test() -> None:
    covered = _covered("verify") | _covered("scanner")
    for path in _other_covering_modules():
        covered |= _covered(path.stem, path)
    assert covered - set(CATALOG) == set(), "COVERED_CODES name codes the catalog lacks"
    missing = set(CATALOG) - covered
    assert missing == set(), (
        f"codes no test declares in a COVERED_CODES set: {sorted(missing)} (add the code to the "
        "COVERED_CODES of the test module that produces it)"
    )


def test_every_catalogued_code_is_in_the_findings_man_page() -> None:
    if not MAN_PAGE.exists():
        pytest.skip(f"{MAN_PAGE.relative_to(REPO)} is not written yet")
    text = MAN_PAGE.read_text(encoding="utf-8").replace("\\-", "-")  # roff escapes hyphens
    missing = [code for code in CATALOG if not re.search(rf"(?<![\w-]){re.escape(code)}(?![\w-])", text)]
    assert missing == [], f"codes missing from {MAN_PAGE.name}: {missing}"


# --- severity follows from the broker's consequence, by one rule -----------------------------------


def test_the_rule_gives_every_consequence_one_severity() -> None:
    assert set(SEVERITY_OF) == set(Consequence)
    by_severity = {s: {c for c, v in SEVERITY_OF.items() if v == s} for s in Severity}
    assert by_severity[Severity.ERROR] == {
        Consequence.REFUSES,
        Consequence.SERVES_WRONG,
        Consequence.LOSES,
        Consequence.UNCHECKED,
    }
    assert by_severity[Severity.WARNING] == {Consequence.REPAIRS, Consequence.OUTSIDE}
    assert by_severity[Severity.INFO] == {Consequence.LEGAL}


def test_a_kind_has_no_severity_of_its_own() -> None:
    # Only the consequence is set per code; the severity is derived, so it cannot disagree.
    names = [f.name for f in dataclasses.fields(FindingKind)]
    assert "consequence" in names
    assert "severity" not in names


@pytest.mark.parametrize("code", sorted(CATALOG))
def test_severity_is_the_rule_applied_to_the_consequence(code: str) -> None:
    kind = CATALOG[code]
    assert isinstance(kind.consequence, Consequence)
    assert kind.severity == SEVERITY_OF[kind.consequence]
    assert make_finding(code, "f", "m").severity == SEVERITY_OF[kind.consequence]


# Codes whose severity the review against Kafka's source changed (all were warnings before), with
# the broker behaviour that decides it.
REVIEWED = {
    # CheckpointFileWithFailureHandler.read / PartitionMetadataFile.read: an IOException puts the log
    # dir offline (LogDirFailureChannel) and raises KafkaStorageException.
    "checkpoint-corrupt": Consequence.REFUSES,
    # LogSegment.sanityCheck no longer checks offset or time indexes at load: fetches, ListOffsets by
    # timestamp and time retention use them as they are.
    "index-not-monotonic": Consequence.SERVES_WRONG,
    "index-offset-mismatch": Consequence.SERVES_WRONG,
    "index-entry-beyond-log": Consequence.SERVES_WRONG,
    "time-index-out-of-order": Consequence.SERVES_WRONG,
    "time-index-mismatch": Consequence.SERVES_WRONG,
    "time-index-offset-not-found": Consequence.SERVES_WRONG,
    "max-timestamp-mismatch": Consequence.SERVES_WRONG,
    # READ_COMMITTED fetches take their aborted transactions from the .txnindex.
    "txn-index-mismatch": Consequence.SERVES_WRONG,
    # LeaderEpochFileCache answers OffsetsForLeaderEpoch: followers truncate to the wrong offset.
    "leader-epoch-mismatch": Consequence.LOSES,
    "leader-epoch-checkpoint-contradicted": Consequence.LOSES,
}


@pytest.mark.parametrize("code", sorted(REVIEWED))
def test_reviewed_codes_are_errors(code: str) -> None:
    assert CATALOG[code].consequence == REVIEWED[code]
    assert CATALOG[code].severity == Severity.ERROR


def test_man_page_shows_each_codes_consequence() -> None:
    if not MAN_PAGE.exists():
        pytest.skip(f"{MAN_PAGE.relative_to(REPO)} is not written yet")
    text = MAN_PAGE.read_text(encoding="utf-8").replace("\\-", "-")
    for code, kind in CATALOG.items():
        entry = text.split(f".SS {code}\n", 1)[1].split(".SS ", 1)[0]
        assert f".B Consequence\n{kind.consequence.value}\n" in entry, code


# Every error code whose catalog entry names no repair, with why no kdump repair fixes it: reviewed
# code by code. A code that a repair does fix carries that repair in the catalog (and where it fixes
# only some of its findings, the others carry none: `leader-epoch-mismatch`, tests/ops/
# test_epoch_repair_hint.py). A new error code without a repair must be added here, with its reason.
_RECORDS_AS_WRITTEN = (
    "the batch's checksum holds, so the broker's recovery keeps it (LogSegment.recover checks size and "
    "checksum only): the records are as the producer wrote them, and cutting them loses valid data"
)
_PERSON = "an entry of the file system, not bytes of the log: a person decides what it should be"
_REMOTE = "remote storage: kdump repairs local files only"
NO_REPAIR = {
    "offset-hole": "the missing records are gone from this copy (a segment gone from between two others: on "
    "another replica or nowhere, and the finding names the files to copy back and a follower's cut); a trim "
    "to the hole would take the valid data after it on the leader",
    "offset-below-base": "the segment's name and its batches disagree: which is right is a person's call",
    "offset-overflow": "the segment's name and its batches disagree: which is right is a person's call",
    "unknown-codec": _RECORDS_AS_WRITTEN,
    "record-count-mismatch": _RECORDS_AS_WRITTEN,
    "wrapper-offset-mismatch": _RECORDS_AS_WRITTEN,
    "inner-message-too-short": _RECORDS_AS_WRITTEN,
    "record-decode-failed": _RECORDS_AS_WRITTEN,
    "record-offset-invalid": _RECORDS_AS_WRITTEN,
    "decompression-failed": _RECORDS_AS_WRITTEN,
    "max-timestamp-mismatch": _RECORDS_AS_WRITTEN,
    "checkpoint-corrupt": "no kdump repair rewrites a checkpoint; trim-tail reads none it cannot parse",
    "leader-epoch-checkpoint-contradicted": "found by compare across replicas: which replica is right is "
    "the controller's, not a file repair's",
    "topic-id-mismatch": "which topic id is right is the metadata log's: no file repair decides it",
    "unreadable-file": _PERSON,
    "wrong-file-type": _PERSON,
    "symlink-loop": _PERSON,
    "dangling-symlink": _PERSON,
    "unknown-entry": _PERSON,
    "segment-name-invalid": _PERSON,
    "partition-name-invalid": _PERSON,
    "nothing-to-check": "nothing is damaged: the path holds nothing kdump recognises",
    "incomplete-check": "nothing is damaged: the check stopped short of the bytes (run it again)",
    "remote-index-cache-name-invalid": _REMOTE,
    "remote-index-cache-corrupt": _REMOTE,
    "remote-segment-missing": _REMOTE,
    "remote-segment-mismatch": _REMOTE,
    "remote-log-gap": _REMOTE,
    "remote-metadata-missing": _REMOTE,
    "archive-damaged": "the archive holding the copy is damaged, not the log: fetch the copy again",
    "archive-member-truncated": "the archive holding the copy is damaged, not the log: fetch the copy again",
    "metadata-record-invalid": "the metadata log is the controller quorum's: the broker fetches it again, "
    "no file repair rewrites it",
    "metadata-log-gap": "the metadata log is the controller quorum's: the broker fetches a snapshot, no file "
    "repair invents the missing records",
    "topic-id-unknown": "which topic the data belongs to is the metadata's: the broker sets it aside as a "
    "stray, and keeping or deleting it is a person's call",
    "file-shrank-while-read": "nothing is known to be damaged: the file changed while it was read (run it "
    "again on a stopped broker's data or a copy)",
    "file-replaced-while-read": "nothing is known to be damaged: the file changed while it was read (run it "
    "again on a stopped broker's data or a copy)",
    "log-missing": "the segments are gone: no file repair brings them back (restore them from a copy)",
    "transaction-open": "the commit or abort marker is the transaction coordinator's to write: no file repair "
    "invents it",
}


def test_every_error_code_without_a_repair_is_one_no_repair_fixes() -> None:
    without = {c for c, k in CATALOG.items() if k.severity == Severity.ERROR and k.repair is None}
    assert without == set(NO_REPAIR), "review each error code: name its repair, or say here why none fixes it"
    # A repair named by the catalog is one kdump command line with a partition (and offset) to fill in.
    for code, kind in CATALOG.items():
        if kind.repair is not None:
            assert kind.repair.split()[:2] in (
                ["kdump", "trim-tail"],
                ["kdump", "reindex"],
                ["kdump", "quarantine"],
            ), code
            assert "PARTITION" in kind.repair, code


def test_leader_epoch_mismatch_names_the_trim_that_fixes_it_after_a_torn_tail() -> None:
    assert CATALOG["leader-epoch-mismatch"].repair == "kdump trim-tail --apply PARTITION"
