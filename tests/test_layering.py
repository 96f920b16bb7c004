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
