"""The README's Python examples type-check under ``mypy --strict`` and run; the typed
handler API (issue #13, item 4) types what it promises.

Each fenced ``python`` block of README.md is written to its own file in a temporary
folder and checked with mypy's API (``--strict``, no project configuration, so the
examples are checked as a user's own code would be), then run with this interpreter.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

#: Each example must finish well within this (they take well under a second each).
RUN_TIMEOUT = 60.0


def readme_examples() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", README.read_text(), re.MULTILINE | re.DOTALL)


def run_mypy(tmp_path: Path, files: list[Path]) -> tuple[str, int]:
    """``mypy --strict`` on ``files`` with an empty configuration and a fresh cache."""
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\n")
    stdout, stderr, status = mypy_api.run(
        [
            "--strict",
            "--config-file",
            str(config),
            "--cache-dir",
            str(tmp_path / ".mypy_cache"),
            "--no-error-summary",
            "--hide-error-context",
            *map(str, files),
        ]
    )
    assert not stderr, stderr
    return stdout, status


def write_examples(tmp_path: Path) -> list[Path]:
    files = []
    for i, code in enumerate(readme_examples()):
        path = tmp_path / f"readme_example_{i}.py"
        path.write_text(code)
        files.append(path)
    return files


def test_readme_has_the_examples_this_file_checks() -> None:
    examples = readme_examples()
    # The work queue, the untyped informer and the typed (Pod) informer.
    assert len(examples) >= 3, examples
    assert any("SharedIndexInformer[Pod]" in code for code in examples)


def test_readme_examples_pass_mypy_strict(tmp_path: Path) -> None:
    files = write_examples(tmp_path)
    stdout, status = run_mypy(tmp_path, files)
    assert status == 0, stdout


def test_readme_examples_run(tmp_path: Path) -> None:
    outputs = []
    for path in write_examples(tmp_path):
        proc = subprocess.run(
            [sys.executable, str(path)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=False,
        )
        assert proc.returncode == 0, f"{path.name}:\n{proc.stdout}\n{proc.stderr}"
        outputs.append(proc.stdout)
    # Each example prints what its comments say it does.
    assert "reconcile default/my-app" in outputs[0]
    assert "add my-app" in outputs[1]
    typed = next(
        out for out, code in zip(outputs, readme_examples(), strict=True) if "Pod]" in code
    )
    assert "add web-1 on node-a" in typed
    assert "on node-a: web-1" in typed


# A user's code against the typed API. A comment ``# expect: TEXT`` says that mypy must
# report TEXT on the next line; it must report nothing on any other line. Without the
# generic types every revealed type below is ``object`` or ``Object`` and no error is
# reported, so this fails on the untyped API.
PROBE = """\
from typing import Any

import attrs

from refimpl.cache import (DeletedFinalStateUnknown, FilteringResourceEventHandler, Indexer,
                           ListerWatcher, ResourceEventHandlerFuncs, SharedIndexInformer)
from refimpl.meta import Object


@attrs.frozen
class PodSpec:
    node: str


Pod = Object[PodSpec]


def typed(lw: ListerWatcher) -> None:
    informer = SharedIndexInformer[Pod](lw, indexers={"node": lambda pod: [pod.data.node]})
    # expect: "list[refimpl.meta.Object[probe.PodSpec]]"
    reveal_type(informer.lister().list())
    # expect: "refimpl.meta.Object[probe.PodSpec] | None"
    reveal_type(informer.lister().get("ns", "n"))
    # expect: "list[refimpl.meta.Object[probe.PodSpec]]"
    reveal_type(informer.get_indexer().by_index("node", "a"))
    # expect: "tuple[refimpl.meta.Object[probe.PodSpec] | None, bool]"
    reveal_type(informer.get_indexer().get_by_key("ns/n"))
    # expect: "list[refimpl.meta.Object[probe.PodSpec]]"
    reveal_type(informer.get_store().list())
    # expect: "PodSpec" has no attribute "nodes"
    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=lambda p: print(p.data.nodes)))
    # expect: Item "DeletedFinalStateUnknown[Object[PodSpec]]" of
    informer.add_event_handler(ResourceEventHandlerFuncs(delete_func=lambda p: print(p.data)))
    informer.add_event_handler(FilteringResourceEventHandler(
        filter_func=lambda pod: isinstance(pod, DeletedFinalStateUnknown) or pod.data.node == "a",
        handler=ResourceEventHandlerFuncs(update_func=lambda old, new: print(new.data.node)),
    ))

    def on_delete(pod: Pod | DeletedFinalStateUnknown[Pod]) -> None:
        if isinstance(pod, DeletedFinalStateUnknown):
            # expect: "refimpl.meta.Object[probe.PodSpec] | None"
            reveal_type(pod.obj)
        else:
            # expect: "probe.PodSpec"
            reveal_type(pod.data)

    informer.add_event_handler(ResourceEventHandlerFuncs(delete_func=on_delete))
    # expect: expected "ResourceEventHandler[Object[PodSpec]]"
    informer.add_event_handler(ResourceEventHandlerFuncs[Object[int]]())


def untyped(lw: ListerWatcher) -> None:
    informer = SharedIndexInformer(lw)
    # expect: "refimpl.cache.shared_informer.SharedIndexInformer[refimpl.meta.Object[Any]]"
    reveal_type(informer)
    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=lambda o: print(o.name)))
    # expect: "list[object]"
    reveal_type(Indexer().list())
"""


def test_typed_api_infers_and_refuses(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    expected = {
        n + 1: line.split("# expect: ", 1)[1]
        for n, line in enumerate(PROBE.splitlines(), start=1)
        if "# expect: " in line
    }
    assert len(expected) == 12
    stdout, status = run_mypy(tmp_path, [probe])
    assert status == 1, stdout
    reported: dict[int, list[str]] = {}
    for out in stdout.splitlines():
        _, line, message = out.split(":", 2)
        reported.setdefault(int(line), []).append(message)
    for n, message in expected.items():
        assert any(message in out for out in reported.get(n, [])), (
            f"line {n}: expected {message!r}\n{stdout}"
        )
    # Nothing else: the filter, the typed on_delete and the untyped uses pass.
    assert set(reported) == set(expected), stdout
