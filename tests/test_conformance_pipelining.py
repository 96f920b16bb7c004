"""Informer calls written before their answers are read (docs/protocol.md, "Informer
calls written before the answer they wait for") change nothing a seed generates or
finds: the same examples, the same requests judged against the same answers, the same
findings, and a hang reported at the same request, as a search that awaits each of
those answers. That search is the same code with the reference's predictions of those
calls turned off (``ReferenceDriver.predicts``) and the closing of an example judging
what is owed before it begins (``Example.close_steps``), as the search did before.

Seeds are fixed below; the searches are not shrunk (Hypothesis' shrinking is bounded
by time), but findings after the first are kept, so set-aside examples, whose requests
past their difference are dropped, are compared too.
"""

from __future__ import annotations

import io
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from refimpl.conformance.process import AdapterHung, AdapterProcess
from refimpl.conformance.reference.dispatch import ReferenceDriver
from refimpl.conformance.search.config import Config
from refimpl.conformance.search.run import run_component
from refimpl.conformance.search.session import AHEAD_LIMIT, Example, RunContext

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = [sys.executable, "-m", "refimpl.conformance.reference.adapter"]
BROKEN = [sys.executable, str(ROOT / "adapters" / "broken" / "adapter.py"), "--bug"]
FAKE = [sys.executable, str(ROOT / "tests" / "conformance_fake_adapter.py")]
#: The informer calls only a prediction writes before the previous answer is read.
PREDICTED = ("list_reply", "list_error", "watch_open", "watch_error", "watch_event", "watch_end")


def search(
    monkeypatch: pytest.MonkeyPatch, command: list[str], seed: int, log: Path, timeout: float = 5.0
) -> dict[str, Any]:
    """One unshrunk informer search: every step judged (example, request, both
    answers), the counts, the findings, and what the log shows of the pipe."""
    judged: list[str] = []
    judge = Example._judge

    def spy(ex: Example, request: dict[str, Any], expected: Any, actual: Any) -> Any:
        judged.append(json.dumps([ex.ctx.examples, request, expected, actual], sort_keys=True))
        return judge(ex, request, expected, actual)

    config = Config(
        command=command,
        budget=120.0,
        seed=seed,
        max_examples=120,
        shrink=False,
        progress=False,
        log=str(log),
        timeout=timeout,
    )
    ctx = RunContext(config, io.StringIO())
    with monkeypatch.context() as patch:
        patch.setattr(Example, "_judge", spy)
        try:
            ctx.start_adapter()
            result = run_component(ctx, "informer", config.budget)
        finally:
            ctx.close()
    lines = log.read_text(encoding="utf-8").splitlines()
    found = result.findings
    owed = most = 0
    for line in lines:
        owed += 1 if line.startswith("> ") else -1
        most = max(most, owed)
    return {
        "judged": judged,
        "examples": result.examples,
        "steps": result.steps,
        "findings": [[f.kind, f.signature, f.message, f.example, _steps(f)] for f in found],
        # A predicted call written before the answer to the one before it was read.
        "pipelined": any(
            a.startswith("> ") and b.startswith("> ") and _method(a) in PREDICTED
            for a, b in itertools.pairwise(lines)
        ),
        "most_owed": most,
    }


def _steps(failure: Any) -> list[Any]:
    return [[s.request, s.reference, s.adapter] for s in failure.steps]


def _method(line: str) -> Any:
    return json.loads(line[2:]).get("method")


def both(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, command: list[str], seed: int, **kw: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The search as it is, and the same search awaiting every answer it may steer by."""
    fast = search(monkeypatch, command, seed, tmp_path / "fast.log", **kw)
    with monkeypatch.context() as patch:
        patch.setattr(ReferenceDriver, "predicts", lambda driver, request: False)
        patch.setattr(Example, "close_steps", Example.settle)
        slow = search(monkeypatch, command, seed, tmp_path / "slow.log", **kw)
    assert not slow["pipelined"]
    return fast, slow


@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("bug", "seed"),
    [
        (None, 1),
        (None, 3),
        ("informer-handler-before-store", 1),
        ("informer-relist-keeps-vanished", 2),
        # Found only many steps into an example (15 to 24 before shrinking).
        ("informer-tombstones-only-known", 3),
    ],
)
def test_predicted_calls_change_nothing_a_seed_generates_or_finds(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, bug: str | None, seed: int
) -> None:
    command = REFERENCE if bug is None else [*BROKEN, bug]
    fast, slow = both(monkeypatch, tmp_path, command, seed)
    assert fast["pipelined"], "no call was written before an answer: this test compares nothing"
    assert bool(fast["findings"]) == (bug is not None)
    for key in ("examples", "steps", "findings", "judged"):
        assert fast[key] == slow[key], key
    assert fast["most_owed"] <= AHEAD_LIMIT


@pytest.mark.timeout(120)
def test_a_hung_adapter_is_reported_at_the_same_request(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fast, slow = both(monkeypatch, tmp_path, [*FAKE, "hang:watch_event"], 1, timeout=1.0)
    assert fast["findings"] == slow["findings"]
    [(kind, _, message, _, _)] = fast["findings"]
    assert kind == "adapter" and "adapter hung" in message


def test_surplus_answers_are_read_and_their_ids_used_again() -> None:
    with AdapterProcess(REFERENCE) as adapter:
        adapter.request({"op": "hello", "protocol": 2})
        ids = [adapter.send({"op": "reset"}) for _ in range(3)]
        assert adapter.drop_answers(1)
        assert adapter.outstanding == 0
        assert adapter.send({"op": "reset"}) == ids[1]
        assert adapter.receive() == {"id": ids[1], "result": None}


def test_a_failure_to_read_an_owed_answer_comes_when_it_would_have() -> None:
    with AdapterProcess([*FAKE, "hang:advance"], timeout=0.5) as adapter:
        adapter.request({"op": "hello", "protocol": 2})
        adapter.send({"op": "reset"})
        adapter.send({"op": "advance", "seconds": 1})
        # The hang is at an answer someone would have read: the next receive says so.
        assert adapter.drop_answers(2)
        with pytest.raises(AdapterHung):
            adapter.receive()
    with AdapterProcess([*FAKE, "hang:advance"], timeout=0.5) as adapter:
        adapter.request({"op": "hello", "protocol": 2})
        adapter.send({"op": "reset"})
        adapter.send({"op": "advance", "seconds": 1})
        # At a surplus answer: nobody is told, the adapter must be started again.
        assert not adapter.drop_answers(1)
