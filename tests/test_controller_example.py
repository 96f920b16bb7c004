"""docs/controller.md's controller over two kinds runs, and the page shows its code.

The program (docs/examples/controller.py) is under ``mypy --strict`` with the rest
(pyproject's mypy files); here it runs to the end, every code block of the page is a
verbatim piece of it, and the typed server it relies on rejects the wrong kind.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "docs" / "examples" / "controller.py"
PAGE = ROOT / "docs" / "controller.md"


def test_the_controller_catches_up_with_each_change() -> None:
    done = subprocess.run(
        [sys.executable, str(PROGRAM)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    shown = re.search(r"```text\n(.*?)```", PAGE.read_text(), re.S)
    assert shown and done.stdout == shown.group(1), done.stdout


def test_every_code_block_of_the_page_is_in_the_program() -> None:
    program = PROGRAM.read_text()
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)
    assert len(blocks) >= 4
    missing = [block for block in blocks if block not in program]
    assert not missing, missing


SNIPPET = """\
from refimpl.apiserver import ApiServer
from refimpl.meta import Object

Pod = Object[int]
App = Object[str]

pods: ApiServer[Pod] = ApiServer()
pods.create(Pod("web-0", data=1))  # ok
replicas: int = pods.objects()["/web-0"].data  # ok
pods.create(App("web", data="x"))  # wrong: an App given to the Pod server
name: str = pods.get("", "web-0").data  # wrong: a Pod's data is an int
"""


def test_a_typed_server_rejects_the_wrong_kind(tmp_path: Path) -> None:
    # Issue 27: ApiServer took and gave plain Object, so objects() was untyped.
    path = tmp_path / "kinds.py"
    path.write_text(SNIPPET)
    lines = SNIPPET.splitlines()
    wrong = {n for n, line in enumerate(lines, 1) if "# wrong" in line}
    stdout, _, _ = api.run(
        ["--strict", "--no-error-summary", "--cache-dir", str(tmp_path / "cache"), str(path)]
    )
    flagged = {int(m) for m in re.findall(r"^[^:\n]*kinds\.py:(\d+): error", stdout, re.M)}
    assert flagged == wrong, stdout
