"""Write `man/kdump-findings.7` from `kdump.findings.CATALOG`, so the page never drifts from the code.

Usage, from the repository root::

    python tests/docs/generate_findings_man.py > man/kdump-findings.7

`tests/docs/test_docs_in_step.py` fails when the page differs from what this prints.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable

from kdump import __version__
from kdump.findings import CATALOG, SEVERITY_OF, Consequence, FindingKind, Severity

# Sections of the page, in order, keyed by `FindingKind.where`. A `where` not listed here still
# gets a section of its own (after these), so a new kind of finding is never left out.
SECTIONS: dict[str, tuple[str, str]] = {
    "log": (
        "IN THE LOG",
        "the segment's .log, on every scan",
    ),
    "log (deep)": (
        "IN THE LOG, WHEN RECORDS ARE DECODED",
        "the segment's .log, when records are decoded (`kdump verify --deep`, `kdump dump --records`)",
    ),
    "index": (
        "IN THE INDEXES",
        "the segment's index files (.index; size checks also .timeindex and .txnindex)",
    ),
    "timeindex": (
        "IN THE TIME INDEX",
        "the segment's .timeindex, checked against its .log",
    ),
    "txnindex": (
        "IN THE TRANSACTION INDEX",
        "the segment's .txnindex, checked against the ABORT markers of the partition",
    ),
    "partition": (
        "IN THE PARTITION",
        "the partition directory: across its segments, or its snapshot, checkpoint and leftover files",
    ),
    "log-dir": (
        "IN THE LOG DIR",
        "the log dir: its partition directories and log-dir-level files",
    ),
    "path": (
        "IN THE PATHS GIVEN",
        "any entry under the paths a command is given: what it is on disk, whether it is recognised, "
        "and whether anything was there to check",
    ),
    "remote index cache": (
        "IN THE REMOTE INDEX CACHE",
        "a tiered-storage broker's <log dir>/remote-log-index-cache/, checked as the broker checks it at start-up",
    ),
    "remote store": (
        "IN A REMOTE STORE",
        "a tiered-storage remote store in LocalTieredStorage's layout (a directory or a URL), checked "
        "against __remote_log_metadata",
    ),
    "archive": (
        "IN A BROKER TARBALL",
        "a .tar, .tar.gz or .tar.zst of a log dir read in place, when it is listed",
    ),
    "payload": (
        "IN KEYS AND VALUES",
        "keys and values decoded by `kdump dump --key-type/--value-type`, and the `_schemas` topic "
        "read by `kdump schemas` or as a schema source",
    ),
}

SEVERITY_MEANING = {
    Severity.ERROR: "Data a broker loses, refuses to load or serves wrongly, or that kdump could not check. "
    "`kdump verify` exits 1 by default.",
    Severity.WARNING: "Something stale, missing or left over that a broker repairs or sets aside without a "
    "data effect, or a matter of clients rather than brokers. `kdump verify --fail-on warning` exits 1.",
    Severity.INFO: "Normal in a healthy log, shown so that it is not mistaken for damage. "
    "`kdump verify --fail-on info` exits 1.",
}

CONSEQUENCE_MEANING = {
    Consequence.REFUSES: "The broker refuses to start or to load the partition, or takes its log dir offline.",
    Consequence.SERVES_WRONG: "The broker serves wrong records or none, or answers a lookup (by offset, "
    "timestamp or leader epoch) with a wrong offset.",
    Consequence.LOSES: "Records are lost: recovery truncates them, a follower truncates them away, or "
    "they are gone from the files.",
    Consequence.UNCHECKED: "kdump could not check what it was given; a gate that did not look must not pass.",
    Consequence.REPAIRS: "The broker repairs it or sets it aside, at start-up or later, with no effect on "
    "the data (a start-up may take longer).",
    Consequence.OUTSIDE: "Not the broker's matter: it concerns clients, a schema registry, or kdump's own "
    "environment.",
    Consequence.LEGAL: "What a healthy broker writes or leaves.",
}

_OPTION = re.compile(r"(?<![\w\\])(--?)(?=[A-Za-z0-9])")


def escape_literal(text: str) -> str:
    """Escape text meant to be typed (codes, commands, file names): every hyphen is a real minus."""
    return text.replace("\\", "\\e").replace("-", "\\-")


def escape_prose(text: str) -> str:
    """Escape a sentence: backslashes, `literal` spans in bold, option and minus signs made typeable."""
    parts = re.split(r"`([^`]*)`", text.replace("\\", "\\e"))
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append("\\fB" + part.replace("-", "\\-") + "\\fR")
        else:
            out.append(_OPTION.sub(lambda m: m.group(1).replace("-", "\\-"), part))
    line = "".join(out)
    return "\\&" + line if line.startswith((".", "'")) else line


def format_command(command: str) -> str:
    """A kdump command line: literal words in bold, upper-case placeholders in italics."""
    pieces = []
    for word in command.split():
        font = "I" if word.isupper() else "B"
        pieces.append(f"\\f{font}{escape_literal(word)}\\fR")
    return " ".join(pieces)


def short_repair(kind: FindingKind) -> str:
    """The repairing command's name, for the summary list."""
    if kind.repair is None:
        return "-"
    words = kind.repair.split()
    return words[1] if len(words) > 1 and words[0] == "kdump" else words[0]


def _sections(kinds: Iterable[FindingKind]) -> list[tuple[str, list[FindingKind]]]:
    order = list(SECTIONS)
    groups: dict[str, list[FindingKind]] = {}
    for kind in kinds:
        groups.setdefault(kind.where, []).append(kind)
    extra = [w for w in groups if w not in SECTIONS]
    return [(w, groups[w]) for w in order + extra if w in groups]


def _section_title(where: str) -> str:
    return SECTIONS[where][0] if where in SECTIONS else f"IN {where.upper()}"


def _found_in(where: str) -> str:
    return escape_prose(SECTIONS[where][1]) if where in SECTIONS else escape_prose(where)


def render_findings_man() -> str:
    """The whole roff page."""
    kinds = list(CATALOG.values())
    lines = [
        '.\\" kdump-findings(7). GENERATED by tests/docs/generate_findings_man.py from',
        '.\\" kdump.findings.CATALOG: do not edit by hand; run',
        '.\\"   python tests/docs/generate_findings_man.py > man/kdump-findings.7',
        f'.TH KDUMP\\-FINDINGS 7 "" "kdump {__version__}" "kdump manual"',
        ".nh",
        ".ad l",
        ".SH NAME",
        "kdump\\-findings \\- every finding kdump reports: severity, meaning, what a broker does, the repair",
        ".SH DESCRIPTION",
        "A",
        ".I finding",
        "is damage, or something notable, in the bytes of a Kafka log dir.",
        "Bad data is always a finding and never an error of kdump itself:",
        ".BR kdump\\-dump (1)",
        "shows findings in its stream exactly where they occur, and",
        ".BR kdump\\-verify (1)",
        "collects them and sets its exit status from the worst.",
        ".PP",
        "Each finding has a stable kebab\\-case",
        ".IR code ,",
        "part of kdump's interface like its exit statuses: codes are added, never renamed.",
        "It also has a severity, the file it is in, where known the byte",
        ".I position",
        "in that file and the Kafka",
        ".IR offset ,",
        "and a one\\-sentence message.",
        "In text output a finding is one line,",
        ".PP",
        ".RS",
        ".nf",
        "SEVERITY code at FILE:POSITION offset N: message (repair: command)",
        ".fi",
        ".RE",
        ".PP",
        "and in JSON Lines a",
        ".B finding",
        "object (see",
        ".BR kdump (1)).",
        ".PP",
        "The codes are grouped by where they are found.",
        "Each entry gives the broker's consequence and the severity that follows from it, what the",
        "finding means, what an Apache Kafka broker does",
        "when it meets it (on start\\-up, during recovery, or when clients read), and the kdump",
        "command that repairs it, if there is one.",
        ".SH SEVERITIES",
    ]
    for severity in sorted(Severity, reverse=True):
        lines += [".TP", f".B {severity.label}", escape_prose(SEVERITY_MEANING[severity])]
    lines += [
        ".SH CONSEQUENCES",
        "A finding's severity is never chosen code by code: it follows from what a broker does when it",
        "meets the condition, by one rule for every code, so that the exit status of",
        ".B kdump verify",
        "is the broker's verdict.",
    ]
    for consequence in Consequence:
        lines += [
            ".TP",
            f".B {escape_literal(consequence.value)}",
            f"{escape_prose(CONSEQUENCE_MEANING[consequence])} Severity: {SEVERITY_OF[consequence].label}.",
        ]
    lines += [
        ".SH REPAIRS",
        "In a repair command,",
        ".I PARTITION",
        "is the partition directory (or the segment file) and",
        ".I OFFSET",
        "the first offset to remove.",
        "Every repair is a dry run until",
        ".B \\-\\-apply",
        "is added: run it without first and read what it would change.",
        "With",
        ".B \\-\\-apply",
        "it refuses while a broker holds the log dir, and keeps every byte it removes or replaces;",
        ".BR kdump\\-restore (1)",
        "undoes it.",
        "See",
        ".BR kdump\\-trim\\-tail (1)",
        "and",
        ".BR kdump\\-reindex (1).",
        ".PP",
        "Findings without a repair are left for a person to judge: kdump has no safe automatic fix",
        "for them, or none is needed.",
        ".SH SUMMARY",
        ".RS",
        ".nf",
    ]
    width = max(len(k.code) for k in kinds) + 2
    for kind in kinds:
        row = f"{kind.code:<{width}}{kind.severity.label:<9}{kind.consequence.value:<14}{short_repair(kind)}"
        lines.append(escape_literal(row.rstrip()))
    lines += [".fi", ".RE"]
    for where, group in _sections(kinds):
        lines.append(f'.SH "{_section_title(where)}"')
        lines += ["Found in:", _found_in(where) + "."]
        for kind in group:
            repair = format_command(kind.repair) if kind.repair else "None."
            lines += [
                f".SS {escape_literal(kind.code)}",
                ".TP 10",
                ".B Severity",
                kind.severity.label,
                ".TP",
                ".B Consequence",
                escape_literal(kind.consequence.value),
                ".TP",
                ".B Meaning",
                escape_prose(kind.meaning),
                ".TP",
                ".B Broker",
                escape_prose(kind.broker),
                ".TP",
                ".B Repair",
                repair,
            ]
    lines += [
        '.SH "SEE ALSO"',
        ".BR kdump (1),",
        ".BR kdump\\-dump (1),",
        ".BR kdump\\-verify (1),",
        ".BR kdump\\-reindex (1),",
        ".BR kdump\\-trim\\-tail (1),",
        ".BR kdump\\-restore (1)",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    """Print the page to standard output."""
    sys.stdout.write(render_findings_man())


if __name__ == "__main__":
    main()
