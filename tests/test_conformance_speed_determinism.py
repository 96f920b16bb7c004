"""Sending requests ahead (docs/protocol.md, "Requests sent ahead") changes nothing in
what a seed generates and finds: the same seed gives the same requests, examples, steps
and failing example as a search that waits for every answer.

The waiting search is the same code with every example begun without ``ahead``, so
each request (the example's ``reset`` too) takes the path that reads the adapter's
answer before the reference is asked. Seeds are fixed below. Also: the answers to an
example's requests are all read within it (its last requests may be sent ahead).
"""

from __future__ import annotations

import io
import itertools
import sys
from pathlib import Path
from typing import Any

import pytest

from refimpl.conformance.search.config import Config
from refimpl.conformance.search.run import run_component
from refimpl.conformance.search.session import RunContext

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = [sys.executable, "-m", "refimpl.conformance.reference.adapter"]
BROKEN = [sys.executable, str(ROOT / "adapters" / "broken" / "adapter.py"), "--bug"]


def search(command: list[str], component: str, seed: int, log: Path) -> dict[str, Any]:
    """One search of ``component``, unshrunk: the requests sent (in order), the counts,
    and the failure found (its example, its steps' requests and message), if any.
    Unshrunk because Hypothesis' shrinking is bounded by time, and a difference read a
    few requests late moves where its example raises, so shrinking may take another
    path (benchmarks/conformance.py compares the shrunk lengths)."""
    config = Config(
        command=command,
        budget=120.0,
        seed=seed,
        max_examples=25,
        shrink=False,
        progress=False,
        log=str(log),
        # The first finding: after it, set-aside examples end where their difference
        # is read, which sending ahead moves by a few requests.
        max_findings=1,
    )
    ctx = RunContext(config, io.StringIO())
    try:
        ctx.start_adapter()
        result = run_component(ctx, component, config.budget)
    finally:
        ctx.close()
    lines = log.read_text(encoding="utf-8").splitlines()
    failure = result.failure
    return {
        "sent": [line for line in lines if line.startswith("> ")],
        # Two requests in a row without an answer between them: one was sent ahead.
        "ahead": any(a[:2] == b[:2] == "> " for a, b in itertools.pairwise(lines)),
        "examples": result.examples,
        "steps": result.steps,
        "failure": None
        if failure is None
        else [
            failure.kind,
            failure.example,
            [step.request for step in failure.steps],
            failure.message,
        ],
    }


def both(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, command: list[str], component: str, seed: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The search with requests sent ahead, and the same search waiting for each answer."""
    fast = search(command, component, seed, tmp_path / "ahead.log")
    begin = RunContext.begin_example
    with monkeypatch.context() as patch:
        patch.setattr(
            RunContext, "begin_example", lambda ctx, component, ahead=False: begin(ctx, component)
        )
        waiting = search(command, component, seed, tmp_path / "waiting.log")
    assert fast["ahead"], "no request was sent ahead: this test compares nothing"
    assert not waiting["ahead"]
    return fast, waiting


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("component", "seed"), [("queue", 1), ("delaying_queue", 2), ("informer", 1)]
)
def test_a_passing_search_sends_the_same_requests(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, component: str, seed: int
) -> None:
    fast, waiting = both(monkeypatch, tmp_path, REFERENCE, component, seed)
    assert fast["failure"] is None and waiting["failure"] is None
    for key in ("sent", "examples", "steps"):
        assert fast[key] == waiting[key], key


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("bug", "component", "seed"),
    [
        ("len-counts-processing", "queue", 1),
        ("add-after-no-dedup", "delaying_queue", 3),
        ("informer-relist-keeps-vanished", "informer", 2),
    ],
)
def test_a_failing_search_finds_the_same_example(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, bug: str, component: str, seed: int
) -> None:
    fast, waiting = both(monkeypatch, tmp_path, [*BROKEN, bug], component, seed)
    assert waiting["failure"] is not None, f"seed {seed} no longer finds {bug}"
    assert fast["failure"] == waiting["failure"]
    assert fast["examples"] == waiting["examples"]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("component", ["queue", "informer"])
def test_every_answer_is_read_within_its_example(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, component: str
) -> None:
    """An example's last requests may be sent ahead (an informer's closing ``state`` or
    ``resume``): their answers are judged before the next example begins, or that one
    would read them as answers to its own requests."""
    begin = RunContext.begin_example
    owed: list[int] = []

    def checked(ctx: RunContext, component: str, ahead: bool = False) -> Any:
        owed.append(ctx.adapter.outstanding)
        return begin(ctx, component, ahead=ahead)

    monkeypatch.setattr(RunContext, "begin_example", checked)
    found = search(REFERENCE, component, 3, tmp_path / "ahead.log")
    assert found["ahead"] and found["failure"] is None
    assert len(owed) == found["examples"] and not any(owed)
