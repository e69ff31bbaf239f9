"""The architecture holds: layers import downward only, and the library's rooms stay small.

formats -> scan -> model -> ops -> render -> cli | spark. Every `import` and `from ... import` of
every module is read with `ast` (the lazy ones inside functions and those under TYPE_CHECKING
too), so a layer cannot reach up even where the import would be cheap. `kdump.findings` and
`kdump.errors` are the shared vocabulary every layer uses. The command line may start a Spark run
(`verify --engine spark`); the Spark side never imports the command line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "kdump"
LAYERS = {"formats": 0, "scan": 1, "model": 2, "ops": 3, "render": 4, "cli": 5, "spark": 5}
SHARED = {"kdump", "kdump.findings", "kdump.errors"}
# Side by side at the top; the one direction allowed between them.
SIBLINGS_ALLOWED = {("cli", "spark")}
MAX_LINES = 500
SIZE_LIMITED = ("ops", "spark", "model")


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


def test_shared_modules_import_no_layer() -> None:
    for name in ("findings.py", "errors.py"):
        layered = [m for _, m in _imports(PACKAGE / name) if _layer(m) is not None]
        assert layered == [], name


def test_the_check_sees_upward_imports() -> None:
    # Relative, absolute and lazy imports are all resolved to the module they name.
    source = "from ..ops import seek\nimport kdump.render.text\ndef f():\n    from kdump.cli import dump\n"
    resolved = {m for _, m in _imports_of(source, "kdump.scan.log_scanner", is_package=False)}
    assert {"kdump.ops", "kdump.ops.seek", "kdump.render.text", "kdump.cli.dump"} <= resolved
    assert {_layer(m) for m in resolved} == {"ops", "render", "cli"}


@pytest.mark.parametrize("layer", SIZE_LIMITED)
def test_library_modules_stay_small(layer: str) -> None:
    long = {
        str(p.relative_to(PACKAGE.parent)): n
        for p in sorted((PACKAGE / layer).rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}, f"modules over {MAX_LINES} lines: split them by concern"
