"""The architecture holds: layers import downward only, no module imports itself round a circle,
and the library's rooms stay small.

formats -> store -> scan -> model -> ops -> render -> cli | spark. Every `import` and `from ...
import` of every module is read with `ast` (the lazy ones inside functions and those under
TYPE_CHECKING too), so a layer cannot reach up even where the import would be cheap, and a circle
cannot hide in a function. `kdump.findings` and `kdump.errors` are the shared vocabulary every
layer uses; they import nothing above `formats`. The command line may start a Spark run (`verify
--engine spark`); the Spark side never imports the command line.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "kdump"
LAYERS = {"formats": 0, "store": 1, "scan": 2, "model": 3, "ops": 4, "render": 5, "cli": 6, "spark": 6}
SHARED = {"kdump", "kdump.findings", "kdump.errors"}
# Side by side at the top; the one direction allowed between them.
SIBLINGS_ALLOWED = {("cli", "spark")}
MAX_LINES = 500
# Every module but the decoders' tables and codecs (formats) is held to the size limit.
NOT_SIZE_LIMITED = ("formats",)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every kdump import in a module."""
    return _imports_of(path.read_text(encoding="utf-8"), _module_name(path), path.name == "__init__.py")


def _imports_of(source: str, module_name: str, is_package: bool) -> list[tuple[int, str]]:
    package = module_name if is_package else module_name.rpartition(".")[0]
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            out.append((node.lineno, module))
            # `from kdump.spark import datasource` imports a submodule.
            out.extend((node.lineno, f"{module}.{alias.name}") for alias in node.names)
    return [(line, m) for line, m in out if m == "kdump" or m.startswith("kdump.")]


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_the_package_is_where_the_test_looks() -> None:
    names = {_module_name(p) for p in _modules()}
    assert {"kdump.formats.batch", "kdump.scan.log_scanner", "kdump.model.segment_view"} <= names
    assert {"kdump.ops.seek", "kdump.render.text", "kdump.cli.dump", "kdump.spark.datasource"} <= names


def test_layers_import_downward_only() -> None:
    wrong: list[str] = []
    for path in _modules():
        own = _layer(_module_name(path))
        for line, module in _imports(path):
            target = _layer(module)
            if own is None or target is None or module in SHARED:
                # The package root and the shared vocabulary; a layer importing kdump.cli's
                # entry point would still show up below through its layer name.
                continue
            if LAYERS[target] < LAYERS[own] or target == own:
                continue
            if LAYERS[target] == LAYERS[own] and (own, target) in SIBLINGS_ALLOWED:
                continue
            wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({own}) imports {module} ({target})")
    assert wrong == []


def _shared_modules() -> list[Path]:
    return [PACKAGE / "errors.py", *sorted((PACKAGE / "findings").glob("*.py"))]


def test_shared_modules_import_nothing_above_formats() -> None:
    above = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {m}"
        for path in _shared_modules()
        for line, m in _imports(path)
        if not (m in SHARED or m.startswith("kdump.findings.") or _layer(m) == "formats")
    ]
    assert above == []


def test_the_check_sees_upward_imports() -> None:
    # Relative, absolute and lazy imports are all resolved to the module they name.
    source = "from ..ops import seek\nimport kdump.render.text\ndef f():\n    from kdump.cli import dump\n"
    resolved = {m for _, m in _imports_of(source, "kdump.scan.log_scanner", is_package=False)}
    assert {"kdump.ops", "kdump.ops.seek", "kdump.render.text", "kdump.cli.dump"} <= resolved
    assert {_layer(m) for m in resolved} == {"ops", "render", "cli"}


def test_modules_stay_small() -> None:
    long = {
        str(p.relative_to(PACKAGE.parent)): n
        for p in _modules()
        if p.relative_to(PACKAGE).parts[0] not in NOT_SIZE_LIMITED
        and (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}, f"modules over {MAX_LINES} lines: split them by concern"


def _dependencies_of(source: str, module_name: str, is_package: bool, names: set[str]) -> set[str]:
    """The modules of `names` that a module's imports load: `from P import m` names the module
    P.m when there is one (not its package P, whose own imports are P's), else P."""
    package = module_name if is_package else module_name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                targets.append(sub if sub in names else module)
        for target in targets:
            while target and target not in names:
                target = target.rpartition(".")[0]
            if target and target != module_name:
                found.add(target)
    return found


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every set of modules that import each other round a loop (strongly connected, more than one)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next(edges, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    found.append(sorted(members))
    return found


def _graph_of(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    names = set(sources)
    return {
        name: _dependencies_of(text, name, is_package, names) for name, (text, is_package) in sources.items()
    }


def test_no_import_circle() -> None:
    sources = {_module_name(p): (p.read_text(encoding="utf-8"), p.name == "__init__.py") for p in _modules()}
    assert _circles(_graph_of(sources)) == []


def test_the_circle_check_sees_a_planted_circle() -> None:
    # a -> b at the top, b -> c inside a function, c -> a under TYPE_CHECKING: one circle.
    planted = {
        "kdump.ops": ("", True),
        "kdump.ops.a": ("from kdump.ops import b\n", False),
        "kdump.ops.b": ("def f():\n    from .c import x\n", False),
        "kdump.ops.c": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import kdump.ops.a\n",
            False,
        ),
        "kdump.ops.d": ("from kdump.ops.a import y\n", False),
    }
    assert _circles(_graph_of(planted)) == [["kdump.ops.a", "kdump.ops.b", "kdump.ops.c"]]
    # A package that imports its modules, one of which takes a sibling from it: no circle.
    package = {
        "kdump.formats.p": ("from kdump.formats.p.one import x\nfrom kdump.formats.p.two import y\n", True),
        "kdump.formats.p.one": ("from kdump.formats.p import two\n", False),
        "kdump.formats.p.two": ("X = 1\n", False),
    }
    assert _circles(_graph_of(package)) == []
    package["kdump.formats.p.two"] = ("from kdump.formats.p import x\n", False)
    assert _circles(_graph_of(package)) == [["kdump.formats.p", "kdump.formats.p.one", "kdump.formats.p.two"]]


def _may_use(package: Path) -> set[str]:
    """The ops sub-packages a sub-package's docstring says it may use (its "May use:" line)."""
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    allowed = doc.partition("May use:")[2]
    return set(re.findall(r"`ops\.(\w+)`", allowed))


def test_ops_sub_packages_use_only_what_their_docstring_allows() -> None:
    packages = sorted(p for p in (PACKAGE / "ops").iterdir() if (p / "__init__.py").is_file())
    assert {p.name for p in packages} >= {"checks", "repair", "salvage", "seek", "dump", "payloads"}
    wrong: list[str] = []
    for package in packages:
        allowed = _may_use(package) | {package.name}
        for path in sorted(package.rglob("*.py")):
            for line, module in _imports(path):
                parts = module.split(".")
                if len(parts) > 2 and parts[1] == "ops" and parts[2] not in allowed:
                    wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}")
    assert wrong == []
