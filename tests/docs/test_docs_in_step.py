"""The man pages and README stay in step with the code.

- every command has `man/kdump-<name>.1`, whose OPTIONS list every option exactly as `--help` spells
  it (and nothing else), with its default, and whose SYNOPSIS names its arguments;
- `man/kdump.1` lists every command and every exit code, and documents every JSON field that
  kdump writes (checked against rows built from `kdump.render` and against real CLI output);
- `man/kdump-findings.7` is exactly what `generate_findings_man.py` prints from the catalog;
- README.md mentions only commands that exist.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import click
import pytest

import kdump
from kdump.cli import cli
from kdump.cli.exit_codes import ExitCode
from kdump.findings import CATALOG, Finding, Severity, make_finding
from kdump.formats.batch import BatchHeader
from kdump.formats.internal import decode_offsets_record
from kdump.formats.records import Record
from kdump.ops.checks.verify import PartitionReport
from kdump.ops.dump.files import FileStart
from kdump.ops.dump.internal import InternalRecord
from kdump.ops.payloads.decode import Decoded, PayloadRecord
from kdump.ops.repair.trim import TrimPlan
from kdump.render import report, rows
from kdump.scan.events import ScanSummary, StopReason

REPO = Path(__file__).resolve().parents[2]
MAN = REPO / "man"
GENERATOR = Path(__file__).resolve().parent / "generate_findings_man.py"

# Commands whose page another helper writes; until it lands, their page checks skip.
PAGES_WRITTEN_ELSEWHERE = {"seek-by-time": "man/kdump-seek-by-time.1 is written by the seek-by-time work"}
# What `kdump.cli.main` exits with on a bug (not an ExitCode: nobody should return it on purpose).
INTERNAL_ERROR = 70
REQUIRED_SECTIONS = ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "EXAMPLES", "SEE ALSO")


# --- reading roff -----------------------------------------------------------------------------------

_ESCAPES = {
    "\\-": "-",
    "\\e": "\\",
    "\\&": "",
    "\\~": " ",
    "\\:": "",
    "\\(dq": '"',
    "\\(aq": "'",
    "\\(ga": "`",
    "\\(em": "\u2014",
    "\\(bu": "\u2022",
    "\\(ti": "~",
    "\\(lq": "\u201c",
    "\\(rq": "\u201d",
}
_ESCAPE = re.compile(r"\\f[BIRP]|\\\(..|\\[-e&~:]")
_ARG = re.compile(r'"((?:[^"]|"")*)"|(\S+)')
_ALTERNATING = {".BR", ".RB", ".IR", ".RI", ".BI", ".IB"}
_JOINED = {".B", ".I", ".SH", ".SS"}


def unescape(text: str) -> str:
    """Plain text of a roff text line: fonts dropped, escapes resolved."""
    return _ESCAPE.sub(
        lambda m: "" if m.group().startswith("\\f") else _ESCAPES.get(m.group(), m.group()), text
    )


def macro_args(rest: str) -> list[str]:
    """A macro's arguments, with roff's double quotes."""
    return [
        m.group(1).replace('""', '"') if m.group(1) is not None else m.group(2) for m in _ARG.finditer(rest)
    ]


def plain_line(line: str) -> str:
    """What one roff source line prints, as plain text (control lines without text give '')."""
    if line.startswith('.\\"'):
        return ""
    if line.startswith("."):
        name, _, rest = line.partition(" ")
        args = macro_args(rest)
        if name in _ALTERNATING:
            return unescape("".join(args))
        if name in _JOINED:
            return unescape(" ".join(args))
        return ""
    return unescape(line)


def sections(page: str) -> dict[str, list[str]]:
    """The page's source lines by `.SH` section title (the lines before the first are dropped)."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in page.splitlines():
        if line.startswith(".SH"):
            current = out.setdefault(plain_line(line), [])
        elif current is not None:
            current.append(line)
    return out


def tagged_items(lines: list[str]) -> list[tuple[str, str]]:
    """(tag, body) of every `.TP` item: the tag line's text, and the text up to the next item."""
    items: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(lines):
        if lines[i].startswith(".TP") and i + 1 < len(lines):
            items.append((plain_line(lines[i + 1]), []))
            i += 2
            continue
        if lines[i].startswith((".SS", ".PP")):
            items.append(("", []))  # a paragraph or subsection ends the item before it
        elif items:
            items[-1][1].append(plain_line(lines[i]))
        i += 1
    return [(tag, " ".join(t for t in body if t)) for tag, body in items if tag]


def subsections(lines: list[str]) -> dict[str, list[str]]:
    """A section's source lines by `.SS` title."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        if line.startswith(".SS"):
            current = out.setdefault(plain_line(line), [])
        elif current is not None:
            current.append(line)
    return out


def plain_text(lines: Iterable[str]) -> str:
    """All of the text, as one string."""
    return " ".join(t for t in (plain_line(line) for line in lines) if t)


@cache
def read_page(name: str) -> str:
    """A man page's source."""
    return (MAN / name).read_text(encoding="utf-8")


# --- the commands -----------------------------------------------------------------------------------


def root_context() -> click.Context:
    """The group's context, with its settings (`-h` as well as `--help`)."""
    return cli.make_context("kdump", [], resilient_parsing=True)


def command_names() -> list[str]:
    """Every command the group has (lazy groups list them without importing them all)."""
    return list(cli.list_commands(root_context()))


def command_context(name: str) -> tuple[click.Command, click.Context]:
    """A command and a context to ask it about its parameters."""
    root = root_context()
    command = cli.get_command(root, name)
    assert command is not None, name
    return command, click.Context(command, info_name=name, parent=root)


def long_flags(param: click.Option) -> list[str]:
    """Every `--long` spelling of an option."""
    return [o for o in [*param.opts, *param.secondary_opts] if o.startswith("--")]


def documented_default(param: click.Option) -> str | None:
    """The default a page must state, if any (flags, unset and None defaults state none)."""
    default = param.default
    if isinstance(default, bool) or not isinstance(default, int | str):
        return None
    return str(default)


def command_page(name: str) -> str:
    """The command's page, or skip when it belongs to work that has not landed yet."""
    path = MAN / f"kdump-{name}.1"
    if not path.exists() and name in PAGES_WRITTEN_ELSEWHERE:
        pytest.skip(f"{PAGES_WRITTEN_ELSEWHERE[name]} and is not there yet")
    assert path.exists(), f"{name} has no man page {path.relative_to(REPO)}"
    return read_page(path.name)


COMMANDS = command_names()


def test_commands_are_found() -> None:
    """The parametrized checks below are not silently empty."""
    assert {"dump", "verify", "reindex", "trim-tail", "restore"} <= set(COMMANDS)


@pytest.mark.parametrize("name", COMMANDS)
def test_command_page_has_the_sections(name: str) -> None:
    page = command_page(name)
    found = sections(page)
    missing = [s for s in REQUIRED_SECTIONS if s not in found]
    assert not missing, f"kdump-{name}.1 lacks {missing}"
    assert plain_text(found["NAME"]).startswith(f"kdump-{name} - ")
    assert f"kdump {name}" in plain_text(found["SYNOPSIS"])


@pytest.mark.parametrize("name", COMMANDS)
def test_command_page_lists_every_option_as_help_spells_it(name: str) -> None:
    page = command_page(name)
    command, ctx = command_context(name)
    items = dict(tagged_items(sections(page)["OPTIONS"]))
    for param in command.get_params(ctx):
        if not isinstance(param, click.Option) or param.hidden:
            continue
        record = param.get_help_record(ctx)
        assert record is not None
        spelled = record[0]
        assert spelled in items, f"kdump-{name}.1 OPTIONS lacks an item '{spelled}' (as --help spells it)"
        for flag in long_flags(param):
            assert flag in unescape(page.replace("\n", " ")), flag
        default = documented_default(param)
        if default is not None:
            assert f"Default: {default}" in items[spelled], (
                f"kdump-{name}.1: {spelled} must say 'Default: {default}'"
            )


@pytest.mark.parametrize("name", COMMANDS)
def test_command_page_lists_no_option_the_command_lacks(name: str) -> None:
    page = command_page(name)
    command, ctx = command_context(name)
    real = {
        o
        for p in command.get_params(ctx)
        if isinstance(p, click.Option)
        for o in [*p.opts, *p.secondary_opts]
    }
    for tag, _body in tagged_items(sections(page)["OPTIONS"]):
        for flag in re.findall(r"(?<![\w-])--?[a-z][a-z0-9-]*", tag):
            assert flag in real, f"kdump-{name}.1 documents {flag}, which `kdump {name}` does not have"


@pytest.mark.parametrize("name", COMMANDS)
def test_command_page_names_its_arguments(name: str) -> None:
    page = command_page(name)
    command, ctx = command_context(name)
    synopsis = plain_text(sections(page)["SYNOPSIS"])
    for param in command.get_params(ctx):
        if isinstance(param, click.Argument):
            metavar = param.make_metavar(ctx)
            assert metavar in synopsis, f"kdump-{name}.1 SYNOPSIS lacks {metavar}"


@pytest.mark.parametrize("name", COMMANDS)
def test_command_page_exit_codes_are_real(name: str) -> None:
    page = command_page(name)
    codes = {tag for tag, _ in tagged_items(sections(page)["EXIT STATUS"])}
    assert codes, f"kdump-{name}.1 lists no exit status"
    assert codes <= {str(int(c)) for c in ExitCode} | {str(INTERNAL_ERROR)}, codes


# --- kdump.1 ----------------------------------------------------------------------------------------


def test_overview_lists_every_command() -> None:
    found = sections(read_page("kdump.1"))
    listed = {tag for tag, _ in tagged_items(found["COMMANDS"])}
    missing = set(COMMANDS) - listed
    assert not missing, f"kdump.1 COMMANDS lacks {sorted(missing)}"
    unknown = listed - set(COMMANDS) - set(PAGES_WRITTEN_ELSEWHERE)
    assert not unknown, f"kdump.1 lists commands that do not exist: {sorted(unknown)}"
    see_also = plain_text(found["SEE ALSO"])
    for name in COMMANDS:
        assert f"kdump-{name}(1)" in see_also


def test_overview_lists_every_exit_code() -> None:
    listed = {tag for tag, _ in tagged_items(sections(read_page("kdump.1"))["EXIT STATUS"])}
    expected = {str(int(c)) for c in ExitCode} | {str(INTERNAL_ERROR)}
    assert listed == expected


def test_internal_error_code_is_what_main_exits_with(monkeypatch: pytest.MonkeyPatch) -> None:
    import kdump.cli as cli_module

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.delenv("KDUMP_DEBUG", raising=False)
    monkeypatch.setattr(cli_module.cli, "main", broken)
    with pytest.raises(SystemExit) as exited:
        cli_module.main()
    assert exited.value.code == INTERNAL_ERROR


def test_overview_lists_the_global_options() -> None:
    items = dict(tagged_items(sections(read_page("kdump.1"))["OPTIONS"]))
    ctx = root_context()
    for param in cli.get_params(ctx):
        if isinstance(param, click.Option):
            record = param.get_help_record(ctx)
            assert record is not None
            assert record[0] in items, record[0]


def test_overview_explains_shell_completion() -> None:
    text = plain_text(read_page("kdump.1").splitlines())
    variable = "_KDUMP_COMPLETE"  # click's name for a program called kdump
    for shell in ("bash", "zsh", "fish"):
        assert f"{variable}={shell}_source kdump" in text, shell


def test_pages_carry_the_version() -> None:
    """Every page's header names the version it documents (bump them with the version)."""
    for page in sorted(MAN.glob("kdump*.[17]")):
        th = next(line for line in page.read_text(encoding="utf-8").splitlines() if line.startswith(".TH"))
        assert kdump.__version__ in th, f"{page.name}: .TH does not name kdump {kdump.__version__}"


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_pages_render_without_warnings() -> None:
    pages = sorted(MAN.glob("kdump*.[17]"))
    assert pages
    for page in pages:
        done = subprocess.run(
            ["groff", "-man", "-Tutf8", "-ww", "-z", str(page)], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, f"{page.name}: {done.stderr}"
        assert not done.stderr.strip(), f"{page.name}: {done.stderr}"


# --- kdump-findings.7 -------------------------------------------------------------------------------


def load_generator() -> ModuleType:
    """tests/docs/generate_findings_man.py as a module."""
    spec = importlib.util.spec_from_file_location("generate_findings_man", GENERATOR)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_findings_page_is_the_generators_output() -> None:
    expected = load_generator().render_findings_man()
    assert read_page("kdump-findings.7") == expected, (
        "man/kdump-findings.7 is stale: run  python tests/docs/generate_findings_man.py > man/kdump-findings.7"
    )


def test_generator_runs_as_a_script() -> None:
    done = subprocess.run(
        [sys.executable, str(GENERATOR)], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert done.stdout == read_page("kdump-findings.7")


def test_findings_page_has_every_code_with_its_severity_and_repair() -> None:
    per_code: dict[str, list[str]] = {}
    for lines in sections(read_page("kdump-findings.7")).values():
        per_code.update(subsections(lines))
    assert set(per_code) == set(CATALOG)
    for code, kind in CATALOG.items():
        items = dict(tagged_items(per_code[code]))
        assert items["Severity"] == kind.severity.label, code
        assert items["Repair"] == (kind.repair or "None."), code
        assert items["Meaning"], code
        assert items["Broker"], code


# --- the JSON schema in kdump.1 ----------------------------------------------------------------------


@cache
def documented_fields() -> dict[str, set[str]]:
    """Fields per `type: NAME (variant)` subsection of kdump.1, plus the ones every object has."""
    subs = subsections(sections(read_page("kdump.1"))["JSON LINES SCHEMA"])
    common = {tag for tag, _ in tagged_items(subs["Fields of every object"])}
    assert common == {"type", "file"}
    out = {}
    for title, lines in subs.items():
        if title.startswith("type: "):
            out[title.removeprefix("type: ")] = common | {tag for tag, _ in tagged_items(lines)}
    return out


def fields_of(title: str) -> set[str]:
    """The documented fields of one object type (or variant)."""
    fields = documented_fields()
    assert title in fields, f"kdump.1 JSON LINES SCHEMA has no subsection 'type: {title}'"
    return fields[title]


def batch_header(**changes: Any) -> BatchHeader:
    """A plausible v2 batch header."""
    fields: dict[str, Any] = {
        "position": 0,
        "base_offset": 0,
        "last_offset": 2,
        "count": 3,
        "size": 120,
        "magic": 2,
        "crc": 1,
        "crc_ok": True,
        "computed_crc": 1,
        "attributes": 0,
        "compression": 0,
        "timestamp_type": 0,
        "base_timestamp": 1_700_000_000_000,
        "max_timestamp": 1_700_000_000_002,
        "producer_id": -1,
        "producer_epoch": -1,
        "base_sequence": -1,
        "partition_leader_epoch": 0,
        "is_transactional": False,
        "is_control": False,
        "has_delete_horizon": False,
    }
    fields.update(changes)
    return BatchHeader(**fields)


def scan_summary() -> ScanSummary:
    """A plausible summary of one log."""
    return ScanSummary(
        file="00000000000000000000.log",
        size=120,
        start=0,
        valid_bytes=120,
        scanned_bytes=120,
        batch_count=1,
        valid_batch_count=1,
        record_count=3,
        first_offset=0,
        last_offset=2,
        max_timestamp=1_700_000_000_002,
        offset_of_max_timestamp=2,
        stop_reason=StopReason.END,
        salvageable_batches=0,
        findings_info=0,
        findings_warning=0,
        findings_error=0,
        deep=True,
    )


def a_finding(**details: Any) -> Finding:
    """A finding, with code-specific details when given."""
    return make_finding(
        "crc-mismatch", "00000000000000000000.log", "checksum differs", position=0, offset=0, **details
    )


def test_schema_documents_exactly_the_batch_fields() -> None:
    for header in (batch_header(), batch_header(magic=0, base_offset=None, count=None, timestamp_type=-1)):
        assert set(rows.batch_row(header, "f.log")) == fields_of("batch")


def test_schema_documents_exactly_the_record_fields() -> None:
    plain = Record(5, 1_700_000_000_000, b"k", b"v", ((b"h", b"x"), (b"n", None)), 3)
    legacy = Record(5, -1, None, b"v", (), -1, crc=7, crc_ok=True)
    marker = Record(9, 1_700_000_000_000, b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x01", (), -1)
    samples = [
        rows.record_row(plain, batch_header(), "f.log", "utf8"),
        rows.record_row(plain, None, "f.log", "hex"),
        rows.record_row(legacy, batch_header(magic=0, base_offset=None, count=None), "f.log", "base64"),
        rows.record_row(marker, batch_header(is_control=True, is_transactional=True), "f.log", "utf8"),
        rows.internal_record_row(
            InternalRecord(plain, decode_offsets_record(b"\x00\x02\x00\x01g", None)),
            batch_header(),
            "f.log",
            "utf8",
        ),
        rows.payload_record_row(
            PayloadRecord(plain, Decoded(b"7", None, "int32"), Decoded(b'{"a":1}', 3, "avro")),
            batch_header(),
            "f.log",
            "utf8",
        ),
    ]
    documented = fields_of("record")
    for row in samples:
        assert set(row) <= documented, set(row) - documented
    assert set().union(*samples) == documented


def test_schema_documents_exactly_the_finding_fields() -> None:
    assert set(rows.finding_row(a_finding())) == fields_of("finding")
    detailed = rows.finding_row(a_finding(stored_crc=1, computed_crc=2))
    assert fields_of("finding") <= set(detailed)


def test_schema_documents_exactly_the_summary_fields() -> None:
    from dataclasses import replace

    from kdump.scan.events import Shown

    # `shown` only in a filtered dump's summary.
    assert set(rows.summary_row(scan_summary())) == fields_of("summary (dump)") - {"shown"}
    filtered = replace(scan_summary(), shown=Shown(1, 1, 5, 5))
    assert set(rows.summary_row(filtered)) == fields_of("summary (dump)")
    partition = PartitionReport("orders-0", "partition", [a_finding()], 1, 1, 3, 120, 120, 0, 2)
    assert set(report.report_summary_row(partition)) == fields_of("summary (verify)")
    assert set(report.overall_row([partition], 1)) == fields_of("summary (verify overall)")


def test_schema_documents_exactly_the_file_fields() -> None:
    assert set(rows.file_row(FileStart("f.log", "log", 120, 0))) == fields_of("file")


def test_schema_documents_exactly_the_trim_plan_fields() -> None:
    plan = TrimPlan(
        "orders-0",
        Path("orders-0"),
        None,
        None,
        0,
        0,
        0,
        0,
        None,
        None,
        None,
        None,
        0,
        "nothing",
        (),
        False,
        None,
    )
    # The command adds these: whether it applied, where the backup went, and the consumer groups' impact.
    produced = set(plan.to_row()) | {"applied", "backup_dir", "consumer_groups", "consumer_groups_read_from"}
    assert produced == fields_of("trim-plan")


def test_schema_names_every_type() -> None:
    named = {title.split(" ")[0] for title in documented_fields()}
    every = plain_text(
        subsections(sections(read_page("kdump.1"))["JSON LINES SCHEMA"])["Fields of every object"]
    )
    for kind in named:
        assert kind in every, f"'type' does not list {kind}"


# --- the JSON the CLI really writes ------------------------------------------------------------------

Run = Callable[..., Any]


def json_objects(output: str) -> list[dict[str, Any]]:
    """The objects of JSON Lines output."""
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def assert_documented(objects: list[dict[str, Any]], *, variant: Callable[[dict[str, Any]], str]) -> set[str]:
    """Every object's keys are documented for its type; returns the types seen."""
    seen = set()
    for obj in objects:
        title = variant(obj)
        seen.add(title)
        if title == "state":  # the file's own JSON document, copied as it is
            continue
        undocumented = set(obj) - fields_of(title)
        if title == "finding":
            undocumented -= set(obj) - set(rows.finding_row(a_finding()))  # code-specific details
        assert not undocumented, f"{title}: {sorted(undocumented)} not in kdump.1"
    return seen


def dump_variant(obj: dict[str, Any]) -> str:
    return "summary (dump)" if obj["type"] == "summary" else str(obj["type"])


def verify_variant(obj: dict[str, Any]) -> str:
    if obj["type"] == "summary":
        return "summary (verify overall)" if obj.get("scope") == "overall" else "summary (verify)"
    return str(obj["type"])


def test_dump_json_is_documented(kdump: Run, corpus_root: Path) -> None:
    base = corpus_root / "kafka-3.8.0"
    legacy = corpus_root / "kafka-3.8.0-zk-legacy"
    txn = base / "txn-1"
    paths = [
        base / "c-none-0",
        txn,
        legacy / "legacy-v0-none-0",
        *sorted(txn.glob("*.index"))[:1],
        *sorted(txn.glob("*.timeindex"))[:1],
        *sorted(txn.glob("*.txnindex"))[:1],
        *sorted(txn.glob("*.snapshot"))[:1],
        txn / "leader-epoch-checkpoint",
        txn / "partition.metadata",
        base / "_logdir-files" / "meta.properties",
        base / "_logdir-files" / "recovery-point-offset-checkpoint",
        base / "__cluster_metadata-0" / "quorum-state",
    ]
    result = kdump("dump", "--records", "--format", "json", *[str(p) for p in paths if p.exists()])
    assert result.exit_code == 0, result.stderr
    seen = assert_documented(json_objects(result.stdout), variant=dump_variant)
    assert {"file", "batch", "record", "summary (dump)"} <= seen


def test_verify_json_is_documented(kdump: Run, corpus_root: Path) -> None:
    result = kdump(
        "verify", "--format", "json", "--fail-on", "info", str(corpus_root / "kafka-3.8.0-running-copy")
    )
    seen = assert_documented(json_objects(result.stdout), variant=verify_variant)
    assert {"summary (verify)", "summary (verify overall)"} <= seen


@pytest.fixture
def damaged_partition(corpus_root: Path, tmp_path: Path) -> Path:
    """A copy of a real partition with a torn tail in its last segment and a missing time index."""
    part = tmp_path / "c-none-0"
    shutil.copytree(corpus_root / "kafka-3.8.0" / "c-none-0", part)
    last = sorted(part.glob("*.log"))[-1]
    with last.open("r+b") as f:
        f.truncate(last.stat().st_size - 100)
    sorted(part.glob("*.timeindex"))[0].unlink()
    return part


def test_reindex_json_is_documented(kdump: Run, damaged_partition: Path, tmp_path: Path) -> None:
    def variant(obj: dict[str, Any]) -> str:
        return str(obj["type"])

    planned = json_objects(kdump("reindex", "--format", "json", str(damaged_partition)).stdout)
    applied = kdump(
        "reindex", "--apply", "--backup-dir", str(tmp_path / "b"), "--format", "json", str(damaged_partition)
    )
    assert applied.exit_code == 0, applied.stderr
    objects = planned + json_objects(applied.stdout)
    assert assert_documented(objects, variant=variant) == {"reindex-change", "reindex-summary"}
    assert fields_of("reindex-change") - {"backup_dir"} <= set(planned[0])
    assert "backup_dir" in json_objects(applied.stdout)[0]


def test_trim_tail_json_is_documented(kdump: Run, damaged_partition: Path, tmp_path: Path) -> None:
    planned = json_objects(kdump("trim-tail", "--format", "json", str(damaged_partition)).stdout)
    applied = kdump(
        "trim-tail",
        "--apply",
        "--backup-dir",
        str(tmp_path / "b"),
        "--format",
        "json",
        str(damaged_partition),
    )
    assert applied.exit_code == 0, applied.stderr
    objects = planned + json_objects(applied.stdout)
    assert assert_documented(objects, variant=lambda obj: str(obj["type"])) == {"trim-plan"}
    assert set(json_objects(applied.stdout)[0]) == fields_of("trim-plan")


def compare_variant(obj: dict[str, Any]) -> str:
    if obj["type"] == "summary":
        return "summary (compare overall)" if obj.get("scope") == "overall" else "summary (compare)"
    return str(obj["type"])


def test_compare_json_is_documented(kdump: Run, corpus_root: Path, tmp_path: Path) -> None:
    """Every object compare writes, from a real replica pair that diverges and is damaged."""
    src = corpus_root / "kafka-3.8.0" / "txn-1"
    copies = []
    for broker in ("b1", "b2"):
        copies.append(tmp_path / broker / src.name)
        shutil.copytree(src, copies[-1])
        for p in [copies[-1], *copies[-1].iterdir()]:
            p.chmod(p.stat().st_mode | 0o200)
    last = sorted(copies[1].glob("*.log"))[-1]
    with last.open("r+b") as f:
        f.truncate(last.stat().st_size - 100)
    first = sorted(copies[0].glob("*.log"))[0]
    data = bytearray(first.read_bytes())
    data[70] ^= 0xFF
    first.write_bytes(bytes(data))
    result = kdump("compare", "--format", "json", *map(str, copies))
    objects = json_objects(result.stdout)
    seen = assert_documented(objects, variant=compare_variant)
    assert {
        "replica",
        "finding",
        "uncomparable",
        "truncation",
        "summary (compare)",
        "summary (compare overall)",
    } <= seen
    for obj in objects:
        if obj["type"] in ("replica", "divergence", "truncation", "uncomparable"):
            assert set(obj) == fields_of(obj["type"]), obj["type"]
        if obj["type"] == "summary":
            assert set(obj) == fields_of(compare_variant(obj))


def test_compare_divergence_and_fleet_rows_are_documented() -> None:
    from kdump.ops.replicas.compare import Divergence, Side
    from kdump.render.compare import divergence_row
    from kdump.spark.compare import COLUMNS

    side = Side("a/t-0", 0, 1, 1, 2, (0,), 1, 2, (), 0, 0)
    row = divergence_row("t-0", Divergence("lag", 0, 1, (side, side), "because"))
    assert set(row) == fields_of("divergence")
    assert set(side.to_row()) <= set(
        plain_text(subsections(sections(read_page("kdump.1"))["JSON LINES SCHEMA"])["type: divergence"])
        .replace(",", " ")
        .split()
    )
    assert {name for name, _ in COLUMNS} | {"type", "file"} == fields_of("fleet-divergence")


# --- README ------------------------------------------------------------------------------------------


def readme_commands(text: str) -> set[str]:
    """Words used as kdump commands in README's code: fenced blocks and `inline code`."""
    code: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            code.append(line)
        code.extend(re.findall(r"`([^`]+)`", line))
    found = set()
    for snippet in code:
        found.update(re.findall(r"(?:^|[\s$|;&(])kdump\s+([a-z][a-z0-9-]*)", snippet))
    return found


def test_readme_mentions_only_real_commands() -> None:
    readme = REPO / "README.md"
    if not readme.exists():
        pytest.skip("no README.md")
    named = readme_commands(readme.read_text(encoding="utf-8"))
    if not named:
        pytest.skip("README.md shows no kdump command yet")
    unknown = named - set(COMMANDS)
    assert not unknown, f"README.md mentions commands that do not exist: {sorted(unknown)}"


def test_readme_command_finder() -> None:
    text = "Run `kdump verify DIR`.\n```\n$ kdump dump x | kdump trim-tail y\n```\nkdump is a tool.\n"
    assert readme_commands(text) == {"verify", "dump", "trim-tail"}


def test_roff_reader() -> None:
    assert plain_line(r".BR \-\-encoding \(dq[utf8]\(dq") == '--encoding"[utf8]"'
    assert plain_line(r"\fB\-\-from\-offset\fR \fIINTEGER\fR") == "--from-offset INTEGER"
    assert plain_line('.B "two words"') == "two words"
    assert plain_line(r".\" a comment") == ""
    assert Severity.ERROR.label == "error"
