"""A seed generates the same examples whatever else the process has imported.

Hypothesis draws, now and then, a constant it found in the source of the process's
"local" modules; before the search turned that off (search/run.py,
``_only_hypothesis_constants``), the informer's seed 3 generated 60 examples in a
fresh process and 54 after ``import refimpl.conformance.peers.checking``, and editing
any literal in refimpl could move every pinned seed. Each run below is a fresh process;
one of them first imports a module of its own, full of small numbers and short names
like the generators draw.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

GENERATE = """
import json, sys
sys.path.insert(0, {tests!r})
if {extra!r}:
    sys.path.insert(0, {extra!r})
    import many_constants
from generated_requests import digest, generated
print(json.dumps([digest(r) for r in generated({component!r}, 3, 30)]))
"""

#: A module whose literals a Hypothesis that reads local constants would draw from.
CONSTANTS = "VALUES = [{}]\nNAMES = [{}]\n".format(
    ", ".join(str(n) for n in range(-3, 200)),
    ", ".join(repr(f"{c}{n}") for c in "abhx" for n in range(40)),
)


def digests(component: str, extra: Path | None) -> list[str]:
    script = GENERATE.format(
        tests=str(ROOT / "tests"), extra=str(extra) if extra else "", component=component
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True
    )
    result: list[str] = json.loads(done.stdout.splitlines()[-1])
    return result


@pytest.mark.parametrize("component", ["queue", "informer"])
def test_a_seed_generates_the_same_examples_whatever_the_process_imported(
    component: str, tmp_path: Path
) -> None:
    (tmp_path / "many_constants.py").write_text(CONSTANTS)
    plain = digests(component, None)
    assert len(plain) >= 30
    assert digests(component, tmp_path) == plain
