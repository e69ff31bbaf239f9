"""Read-only guarantee: dump, verify and seek-by-time work on a read-only copy and change nothing in it.

A log dir is built from real corpus partitions (v2 with transactions and `.txnindex`, the internal topics,
the KRaft metadata log with `quorum-state`, legacy v1, a running broker's copy with preallocated indexes,
and a copy with a damaged batch), with the log dir's checkpoints, `meta.properties` and a broker's `.lock`.
Then every file and directory loses its write permission (`chmod -R a-w`) and every command runs against it:
`dump` (text, JSON and rich; with `--records`; `--transactions`; each kind of non-log file on its own),
`verify` (with `--deep`, with a `--junit` report written elsewhere) and `seek-by-time` (earliest, latest,
max-timestamp, timestamps).

The tests run as root, which ignores permission bits, so the proof is the full tree state before and after:
every path (directories included) with its content hash, size, mode, mtime, ctime, inode and link count;
nothing may be created, removed or touched. The same commands then run as `nobody` (`os.setuid` in a
subprocess), where the permission bits do apply: they must succeed with the same exit codes and the same
output as root's run.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import Result

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corruptions import chmod_read_only, chmod_writable, copy_tree, flip_crc_byte, tree_state

PARTITIONS = {
    "txn-1": "kafka-3.8.0/txn-1",
    "__consumer_offsets-0": "kafka-3.8.0/__consumer_offsets-0",
    "__cluster_metadata-0": "kafka-3.8.0/__cluster_metadata-0",
    "legacy-v1-lz4-0": "kafka-3.8.0-zk-legacy/legacy-v1-lz4-0",
    "live-0": "kafka-3.8.0-running-copy/live-0",
    "damaged-0": "kafka-3.8.0/c-snappy-0",
}
ENV = {"COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}


def full_state(root: Path) -> dict[str, tuple[object, ...]]:
    """`tree_state` (hash, size, mode, mtime of every path) plus ctime, inode and link count: a chmod, a
    utime, a rename or a hard link would all show."""
    out: dict[str, tuple[object, ...]] = {}
    for rel, state in tree_state(root).items():
        st = (root / rel).lstat()
        out[rel] = (*state, st.st_ctime_ns, st.st_ino, st.st_nlink)
    return out


@pytest.fixture(scope="module")
def tree(corpus_root: Path) -> Iterator[Path]:
    """A read-only log dir, in a world-readable temporary directory (so `nobody` can reach it)."""
    top = Path(tempfile.mkdtemp(prefix="kdump-read-only-"))
    top.chmod(0o755)
    log_dir = top / "data"
    log_dir.mkdir()
    for name, rel in PARTITIONS.items():
        if (corpus_root / rel).is_dir():
            copy_tree(corpus_root / rel, log_dir / name)
    for f in sorted((corpus_root / "kafka-3.8.0" / "_logdir-files").iterdir()):
        shutil.copyfile(f, log_dir / f.name)
    (log_dir / ".lock").touch()  # a stopped broker leaves its lock file behind
    damaged = sorted((log_dir / "damaged-0").glob("*.log"))[-1]
    flip_crc_byte(0).apply(damaged)
    chmod_read_only(top)  # top itself becomes 0555: read-only, yet anyone can traverse it
    try:
        yield log_dir
    finally:
        chmod_writable(top)
        shutil.rmtree(top)


def commands(log_dir: Path, out_dir: Path) -> list[list[str]]:
    """Every read-only command to run (paths absolute; `out_dir` is outside the tree)."""
    d = str(log_dir)
    txn = log_dir / "txn-1"
    first_log = str(sorted(txn.glob("*.log"))[0])
    cmds: list[list[str]] = []
    for fmt in ("text", "json", "rich"):
        cmds.append(["dump", "--format", fmt, d])
        cmds.append(["dump", "--records", "--format", fmt, str(txn), str(log_dir / "__consumer_offsets-0")])
    cmds.append(
        [
            "dump",
            "--records",
            "--format",
            "json",
            "--encoding",
            "base64",
            str(log_dir / "__cluster_metadata-0"),
        ]
    )
    cmds.append(
        [
            "dump",
            "--records",
            "--format",
            "json",
            str(log_dir / "legacy-v1-lz4-0"),
            str(log_dir / "damaged-0"),
        ]
    )
    cmds.append(["dump", "--records", "--from-offset", "560", "--to-offset", "580", first_log])
    cmds.append(["dump", "--transactions", str(txn)])
    singles = [
        *sorted(txn.glob("*.index"))[:1],
        *sorted(txn.glob("*.timeindex"))[:1],
        *sorted(txn.glob("*.txnindex"))[:1],
        *sorted(txn.glob("*.snapshot"))[:1],
        *sorted((log_dir / "live-0").glob("*.index")),
        txn / "leader-epoch-checkpoint",
        txn / "partition.metadata",
        log_dir / "__cluster_metadata-0" / "quorum-state",
        *sorted(p for p in log_dir.iterdir() if p.is_file() and p.name != ".lock"),
    ]
    for f in singles:
        if f.exists():
            cmds.append(["dump", "--format", "json", str(f)])
    cmds.append(["verify", d])
    cmds.append(["verify", "--deep", "--format", "json", d])
    cmds.append(["verify", "--junit", str(out_dir / "kdump.xml"), "--format", "json", str(txn)])
    for when in ("earliest", "latest", "max-timestamp", "1700000000000", "2026-11-21T21:40:44.500Z"):
        cmds.append(["seek-by-time", "--format", "json", when, d])
    cmds.append(["seek-by-time", "1795297244045", str(txn), str(log_dir / "live-0")])
    return cmds


def _has_seek() -> bool:
    from kdump.cli import COMMANDS

    return "seek-by-time" in COMMANDS


def _expected_exit(cmd: list[str]) -> set[int]:
    # verify exits 1 for the damaged partition (and the whole log dir that holds it); everything else is clean.
    if cmd[0] == "verify" and cmd[-1].endswith("data"):
        return {1}
    return {0}


@pytest.fixture(scope="module")
def root_run(
    tree: Path, kdump_module: Callable[..., Result], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, object]:
    """Every command as root; the tree state before and after."""
    out_dir = tmp_path_factory.mktemp("read-only-out")
    before = full_state(tree.parent)
    results = {}
    for cmd in commands(tree, out_dir):
        if cmd[0] == "seek-by-time" and not _has_seek():
            continue
        r = kdump_module(*cmd)
        results[" ".join(cmd)] = (r.exit_code, r.stdout)
    after = full_state(tree.parent)
    return {"before": before, "after": after, "results": results, "out_dir": out_dir}


@pytest.fixture(scope="module")
def kdump_module() -> Callable[..., Result]:
    from click.testing import CliRunner

    from kdump.cli import cli

    def run(*args: str) -> Result:
        return CliRunner(env=ENV).invoke(cli, list(args), catch_exceptions=False)

    return run


def test_commands_succeed_on_the_read_only_tree(root_run: dict[str, object]) -> None:
    results = root_run["results"]
    assert isinstance(results, dict)
    assert len(results) >= 25
    for cmd, (code, stdout) in results.items():
        assert code in _expected_exit(cmd.split(" ")), f"{cmd}: exit {code}\n{stdout[-2000:]}"
        assert stdout, cmd
    junit = Path(str(root_run["out_dir"])) / "kdump.xml"
    assert junit.is_file()


def test_nothing_in_the_tree_changed(root_run: dict[str, object]) -> None:
    before, after = root_run["before"], root_run["after"]
    assert isinstance(before, dict)
    assert isinstance(after, dict)
    assert set(after) == set(before), (
        f"paths created {set(after) - set(before)}, removed {set(before) - set(after)}"
    )
    changed = {p: (before[p], after[p]) for p in before if before[p] != after[p]}
    assert not changed, changed
    modes = {s[3] & 0o777 for s in before.values()}
    assert modes <= {0o444, 0o555}, modes  # the whole tree really is read-only


def test_seek_by_time_answers(root_run: dict[str, object]) -> None:
    if not _has_seek():
        pytest.skip("kdump seek-by-time does not exist in this tree")
    results = root_run["results"]
    assert isinstance(results, dict)
    seeks = {cmd: out for cmd, (_code, out) in results.items() if cmd.startswith("seek-by-time")}
    assert len(seeks) == 6
    for cmd, out in seeks.items():
        assert "offset" in out, cmd


# The interpreter may live where `nobody` cannot read (here under /root): every command runs once as root
# first, only so that every module it imports lazily is loaded, then again after dropping privileges.
_AS_NOBODY = """
import json, os, sys
from click.testing import CliRunner
from kdump.cli import cli

cmds, env, tree, out_dir = json.loads(sys.argv[3]), json.loads(sys.argv[4]), sys.argv[5], sys.argv[6]

def run_all():
    out = {}
    for cmd in cmds:
        r = CliRunner(env=env).invoke(cli, cmd)
        err = None if r.exception is None or isinstance(r.exception, SystemExit) else repr(r.exception)
        out[" ".join(cmd)] = [r.exit_code, r.stdout, err]
    return out

run_all()
for name in os.listdir(out_dir):  # the warm-up's JUnit report: nobody writes its own
    os.remove(os.path.join(out_dir, name))
os.setgroups([])
os.setgid(int(sys.argv[1]))
os.setuid(int(sys.argv[2]))
assert os.geteuid() != 0
try:
    open(os.path.join(tree, "probe"), "x").close()
except PermissionError:
    pass
else:
    raise SystemExit("the tree is writable by nobody")
print(json.dumps(run_all()))
"""


def test_as_an_unprivileged_user(tree: Path, root_run: dict[str, object]) -> None:
    """As `nobody`, permission bits apply: nothing can be written, and every command still works, with
    root's exit codes and output."""
    if os.geteuid() != 0:
        pytest.skip("not running as root: the tests already ran without write permission")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no `nobody` user on this system")
    out_dir = Path(tempfile.mkdtemp(prefix="kdump-read-only-out-"))
    out_dir.chmod(0o777)
    try:
        cmds = [c for c in commands(tree, out_dir) if c[0] != "seek-by-time" or _has_seek()]
        before = full_state(tree.parent)
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                _AS_NOBODY,
                str(nobody.pw_gid),
                str(nobody.pw_uid),
                json.dumps(cmds),
                json.dumps(ENV),
                str(tree),
                str(out_dir),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
            cwd="/",
            env={**os.environ, "HOME": "/nonexistent", "PYTHONDONTWRITEBYTECODE": "1"},
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        results = json.loads(proc.stdout)
        assert full_state(tree.parent) == before
        assert (out_dir / "kdump.xml").is_file()
    finally:
        shutil.rmtree(out_dir)
    root_results = root_run["results"]
    assert isinstance(root_results, dict)
    assert len(results) == len(root_results)
    for cmd, (code, stdout, err) in results.items():
        assert err is None, f"{cmd}: {err}"
        root_cmd = cmd.replace(str(out_dir), str(root_run["out_dir"]))
        assert code == root_results[root_cmd][0], f"{cmd}: exit {code} as nobody\n{stdout[-2000:]}"
        assert stdout.replace(str(out_dir), "OUT") == root_results[root_cmd][1].replace(
            str(root_run["out_dir"]), "OUT"
        ), cmd
