"""Adapters test their library as users run it (docs/conformance.md, "What the adapters
add to the libraries"):

- client-node's default adds no restart after an error, so INF-9 shows;
  ``--workaround=restart-after-error`` adds the restart, and the same trace passes;
- aiok8s offers the informer's ``pause``/``resume`` (docs/protocol.md): a paused
  informer's list stays in the queue (nothing cached, no handler called), and
  ``resume`` lets it through (the adapter gates aiok8s' own DeltaFIFO.pop,
  ``GatedDeltaFIFO``), which makes kubernetes#115620's ghost reachable through the
  informer.

Skipped locally when the peer was not built; fails in CI.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conform_helpers import run_conform

from refimpl.conformance.process import AdapterProcess

ADAPTERS = Path(__file__).resolve().parent.parent / "adapters"
AIOK8S = ADAPTERS / "aiok8s"
CLIENT_NODE = ADAPTERS / "client-node"


def built(folder: Path, stamp: str) -> None:
    if not (folder / stamp).exists():
        message = f"{folder.name} is not built: run `make peers PEER={folder.name}`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def aiok8s() -> list[str]:
    built(AIOK8S, ".venv/.installed")
    return [str(AIOK8S / ".venv" / "bin" / "python"), str(AIOK8S / "adapter.py")]


@pytest.mark.parametrize(
    ("flags", "status", "said"),
    [([], 1, "INF-9"), (["--workaround=restart-after-error"], 0, "agree")],
)
def test_client_node_restarts_after_an_error_only_as_a_workaround(
    flags: list[str], status: int, said: str
) -> None:
    built(CLIENT_NODE, "node_modules/.installed")
    trace = CLIENT_NODE / "traces" / "error-no-restart.jsonl"
    command = [str(CLIENT_NODE / "run"), "--raises=record", *flags]
    got, report = run_conform(command, replay=str(trace))
    assert (got, said in report) == (status, True), report


def call(adapter: AdapterProcess, method: str, **args: Any) -> dict[str, Any]:
    answer = adapter.request({"op": "call", "instance": "i", "method": method, "args": args})
    assert "result" in answer, answer
    result: dict[str, Any] = answer["result"]
    return result


def test_aiok8s_pause_holds_the_list_in_the_queue_until_resume() -> None:
    a2 = {"namespace": "", "name": "a", "rv": "2", "labels": {}}
    with AdapterProcess(aiok8s(), timeout=20.0) as adapter:
        hello = adapter.request({"op": "hello", "protocol": 2})
        assert {"pause", "resume"} <= set(hello["result"]["components"]["informer"]["methods"])
        adapter.request({"op": "create", "instance": "i", "component": "informer", "options": {}})
        call(adapter, "add_handler", name="h0", raises=False, resync=None)
        call(adapter, "pause")
        assert call(adapter, "start")["waiting"]["op"] == "list"
        paused = call(adapter, "list_reply", objects=[a2], rv="2")
        assert paused["cache"] == [] and paused["calls"] == []
        assert paused["waiting"]["op"] == "watch"  # the reflector went on
        resumed = call(adapter, "resume")
        assert resumed["cache"] == [a2]
        assert [(c["handler"], c["kind"], c["key"]) for c in resumed["calls"]] == [
            ("h0", "add", "a")
        ]


def test_aiok8s_pause_makes_the_queued_ghost_reachable_at_the_informer_level() -> None:
    # client-java's pinned ghost (kubernetes PR #115620): a@2 listed while processing is
    # paused, gone from the relist; aiok8s' DeltaFIFO keeps it, as client-java's does.
    trace = ADAPTERS / "client-java" / "traces" / "informer-relist-keeps-queued-ghost.jsonl"
    status, report = run_conform(aiok8s(), replay=str(trace))
    assert status == 1 and "INF-3" in report and "a@2 is a ghost" in report, report
