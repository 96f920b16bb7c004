"""Imports point down: the informer stack does not reach up into the fake server.

``refimpl/cache/`` (the port of ``tools/cache``) may use the neutral modules
(``refimpl/meta.py``, ``refimpl/apierrors.py``, ``refimpl/watch.py``,
``refimpl/blocking.py``, ``refimpl/clock.py``, ``refimpl/_typing.py``) but not the
in-memory API server it is tested against, nor the work queue, the simulator, the
harness or the TLA+ tooling.
The neutral modules import nothing else of refimpl's but each other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "refimpl"
NEUTRAL = {
    "refimpl.meta",
    "refimpl.apierrors",
    "refimpl.watch",
    "refimpl.blocking",
    "refimpl.clock",
    "refimpl.eras",
    "refimpl._typing",
}


def _imports(path: Path, root: Path = ROOT) -> set[str]:
    """The refimpl modules ``path`` (a file below ``root``, the refimpl package folder)
    imports, absolute names, relative ones resolved."""
    package = ".".join(path.relative_to(root.parent).with_suffix("").parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            found.add(module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m == "refimpl" or m.startswith("refimpl.")}


@pytest.mark.parametrize("path", sorted((ROOT / "cache").glob("*.py")), ids=lambda p: p.name)
def test_the_cache_imports_only_itself_and_the_neutral_modules(path: Path) -> None:
    outside = {m for m in _imports(path) if not m.startswith("refimpl.cache")} - NEUTRAL
    assert outside == set(), f"{path.name} imports {sorted(outside)}"


@pytest.mark.parametrize("module", sorted(NEUTRAL))
def test_a_neutral_module_imports_only_neutral_modules(module: str) -> None:
    path = ROOT / (module.removeprefix("refimpl.") + ".py")
    assert _imports(path) <= NEUTRAL, sorted(_imports(path))


def test_the_check_sees_an_upward_and_a_relative_import(tmp_path: Path) -> None:
    bad = tmp_path / "refimpl" / "cache" / "bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("from refimpl.apiserver import ApiServer\nfrom .store import Indexer\n")
    assert _imports(bad, tmp_path / "refimpl") == {"refimpl.apiserver", "refimpl.cache.store"}


# The tooling's shape (CONTRIBUTING.md, "Size and shape"): no import cycle, small modules
# and functions. The cycle check counts every import statement, function-local and
# ``if TYPE_CHECKING:`` ones too: a cycle hidden behind a lazy import is still a cycle.


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the refimpl modules it imports anywhere in its file. ``from P import M``
    where ``P.M`` is a module counts as an import of ``P.M``, not of the package ``P``."""
    paths = {_module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                subs = {f"{node.module}.{alias.name}" for alias in node.names}
                found |= subs & paths.keys()
                if node.module in paths and not subs <= paths.keys():
                    found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name in paths)
        graph[name] = found - {name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_between_refimpl_modules() -> None:
    assert _cycles(_import_graph()) == []


def test_the_cycle_check_sees_a_function_local_import(tmp_path: Path) -> None:
    pkg = tmp_path / "refimpl"
    pkg.mkdir()
    (pkg / "a.py").write_text("from refimpl.b import f\n")
    (pkg / "b.py").write_text("def f() -> None:\n    from refimpl import a\n")
    assert _cycles(_import_graph(pkg)) == [["refimpl.a", "refimpl.b"]]


#: The tooling packages whose modules stay readable in one sitting.
TOOLING = ("conformance", "tla", "sim")
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 100


@pytest.mark.parametrize("package", TOOLING)
def test_no_tooling_module_over_800_lines(package: str) -> None:
    long = {
        str(p.relative_to(ROOT.parent)): n
        for p in (ROOT / package).rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def _long_functions(root: Path) -> dict[str, int]:
    long: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(root.parent)}:{node.lineno} {node.name}"] = n
    return long


def test_no_function_in_refimpl_over_100_lines() -> None:
    assert _long_functions(ROOT) == {}


def test_the_size_check_sees_a_long_function(tmp_path: Path) -> None:
    pkg = tmp_path / "refimpl"
    pkg.mkdir()
    body = "".join("    x = 1\n" for _ in range(MAX_FUNCTION_LINES))
    (pkg / "m.py").write_text(f"def long() -> None:\n{body}")
    assert _long_functions(pkg) == {"refimpl/m.py:1 long": MAX_FUNCTION_LINES + 1}
