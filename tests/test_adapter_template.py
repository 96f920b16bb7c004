"""docs/adapters.md's template adapter works as the page says (issue 27).

Copied alone into an empty folder, docs/examples/queue_adapter.py passes
``refimpl conform --component queue``; with the page's buggy ``done`` in place of its own
it fails, and the finding shows the sequence the page explains. The template stays
under 100 lines, standalone (standard library only), ruff- and ``mypy --strict``-clean
(pyproject's mypy files, the Makefile's lint).
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from cli_helpers import REFIMPL

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "docs" / "examples" / "queue_adapter.py"
PAGE = ROOT / "docs" / "adapters.md"
MARKER = "<!-- buggy variant: replaces ToyQueue.done in examples/queue_adapter.py -->"


def _conform(folder: Path, script: str) -> subprocess.CompletedProcess[str]:
    argv = ["conform", "--component", "queue", "--budget", "5", "--seed", "1"]
    return subprocess.run(
        [*REFIMPL, *argv, "--", sys.executable, script],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_template_is_short_and_standalone() -> None:
    text = TEMPLATE.read_text()
    assert len(text.splitlines()) < 100
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (
            node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")]
        )
    }
    assert imported <= set(sys.stdlib_module_names), imported


def test_the_template_copied_into_an_empty_folder_passes(tmp_path: Path) -> None:
    shutil.copy(TEMPLATE, tmp_path / "queue_adapter.py")
    done = _conform(tmp_path, "queue_adapter.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^\s+queue\s+PASS\b", done.stdout, re.M), done.stdout


def _buggy_done() -> str:
    page = PAGE.read_text()
    after = page.split(MARKER, 1)[1]
    match = re.match(r"\s*```python\n(.*?)```", after, re.S)
    assert match, "the buggy variant's code block follows its marker"
    return match.group(1)


def test_the_pages_buggy_variant_fails_with_the_finding_it_explains(tmp_path: Path) -> None:
    text = TEMPLATE.read_text()
    start = text.index("    def done(")
    end = text.index("\n    def ", start + 1) + 1
    buggy = text[:start] + _buggy_done() + "\n" + text[end:]
    assert buggy != text
    (tmp_path / "queue_adapter.py").write_text(buggy)
    done = _conform(tmp_path, "queue_adapter.py")
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "FAIL queue: the adapter's answer differs from the reference" in out, out
    # The findings the page reads: a second add while handed out, then done, then
    # nothing queued: seen first at len (1 against 0), then at get_nowait (empty).
    first, second = out.split("finding 2 of", 1)
    for text, shown in ((first, ("len", "1", "0")), (second, ("get_nowait", "empty"))):
        rows = [line.split() for line in text.splitlines() if re.match(r"\s+\d+\s", line)]
        assert set(shown) <= set(rows[-1]) and "differs" in rows[-1], out
    assert 'done "a"' in out and "replay on a fresh adapter: reproduces" in out


def test_the_from_spec_table_names_each_models_component_and_options() -> None:
    """Issue 27: `--from-spec WorkQueue` against a queue-only adapter said NOT RUN with
    nothing up front; the page's table says which component and create options each
    model needs, as the walks' mappings do."""
    from refimpl.conformance.walks.models import SPEC_MAPPINGS

    section = PAGE.read_text().split("### What `--from-spec` needs", 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`") and cells[0] != "`--from-spec`":
            rows[cells[0].strip("`")] = cells[1:]
    assert set(rows) == set(SPEC_MAPPINGS)
    for model, (component, options) in rows.items():
        mapping = SPEC_MAPPINGS[model]
        assert component.split()[0] == f"`{mapping.component}`", (model, component)
        for name, value in mapping.options.items():
            assert f"{name}: {json.dumps(value).strip(chr(34))}" in options, (model, options)
