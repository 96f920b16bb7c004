"""Adapters that offer the informer's ``pause``/``resume`` (docs/protocol.md) stop its
processing loop while the reflector still queues: a paused informer's list stays in the
queue (nothing cached, no handler called), and ``resume`` lets it through. Checked on
aiok8s, whose adapter gates aiok8s' own DeltaFIFO.pop (adapters/aiok8s/adapter.py,
``GatedDeltaFIFO``). Skipped locally when the peer was not built; fails in CI.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from refimpl.conformance.process import AdapterProcess

AIOK8S = Path(__file__).resolve().parent.parent / "adapters" / "aiok8s"


def aiok8s() -> list[str]:
    if not (AIOK8S / ".venv" / ".installed").exists():
        message = "aiok8s is not built: run `make peers PEER=aiok8s`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return [str(AIOK8S / ".venv" / "bin" / "python"), str(AIOK8S / "adapter.py")]


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
